/* sim/outputs.c -- platform.xml, trace.json, summary.json (see sim/outputs.h). */
#include "sim/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "topology/plat_xml.h"

static void plat_params(const struct cfg_scenario *sc, struct plat_params *p)
{
    p->cores = sc->chip.cores;
    p->core_flops = sc->chip.peak_flops[DT_BF16];
    p->hbm_bw_Bps = hbm_bw_Bps(&sc->chip);
    p->ici_bw_Bps = ici_link_Bps(&sc->chip);
    p->ici_lat_s = sc->chip.ici_hop_lat_s;
    p->pcie_Bps = cfg_uses_kind(sc, OP_HOST_COPY) ? sc->chip.pcie_bw_Bps : 0;
}

int outputs_platform(const struct cfg_scenario *sc, FILE *f)
{
    struct plat_params p;
    plat_params(sc, &p);
    return plat_write_xml(f, &sc->sim, &p);
}

int outputs_platform_file(const struct cfg_scenario *sc, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    if (outputs_platform(sc, a.f) != 0) {
        fs_atomic_abort(&a);
        return -1;
    }
    return fs_atomic_commit(&a);
}

int outputs_run(const struct trace *t, const struct summary *s, const char *dir,
                struct diag *d)
{
    char *tp = xasprintf("%s/trace.json", dir), *sp = xasprintf("%s/summary.json", dir);
    int rc = 0;
    if (trace_write(t, tp) != 0 || summary_write_json(s, sp) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write outputs: %s", strerror(errno));
        rc = -1;
    }
    free(tp);
    free(sp);
    return rc;
}
