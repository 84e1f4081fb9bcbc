/* sim/outputs.c -- platform.xml, trace.json, summary.json (see sim/outputs.h). */
#include "sim/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "sim/sim.h"
#include "sim/spmd.h"
#include "topology/plat_xml.h"

static void plat_params(const struct cfg_scenario *sc, struct plat_params *p)
{
    p->cores = sc->chip.cores;
    p->core_flops = sc->chip.peak_flops[DT_BF16];
    p->hbm_bw_Bps = hbm_bw_Bps(&sc->chip);
    p->ici_bw_Bps = ici_link_Bps(&sc->chip);
    p->ici_lat_s = sc->chip.ici_hop_lat_s;
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

/* Marks in 'keep' (per simulated chip) the chips of "distinct" or a list
 * "0,17". Returns 0, or -1 with a message in 'd'. */
static int trace_chip_set(const struct cfg_scenario *sc, const char *spec, bool *keep,
                          struct diag *d)
{
    if (strcmp(spec, "distinct") == 0) {
        struct cfg_scenario fold = *sc; /* only .sim and .sim_mult change */
        spmd_fold(&fold, false);
        for (int i = 0; i < sc->sim.nchips; i++) {
            int c[TOPO_MAX_DIMS] = {0};
            topo_coords(&sc->sim, i, c);
            keep[i] = true;
            for (int a = 0; a < sc->sim.ndims; a++)
                keep[i] = keep[i] && c[a] < fold.sim.shape[a];
        }
        return 0;
    }
    const char *p = spec;
    for (;;) {
        char *end;
        errno = 0;
        long n = strtol(p, &end, 10);
        if (end == p || errno || n < 0 || n >= sc->topo.nchips || (*end && *end != ',')) {
            diag_error(d, NULL, "--trace-chips",
                       "expected chip numbers from 0 to %d separated by commas, or distinct, got "
                       "'%s'", sc->topo.nchips - 1, spec);
            return -1;
        }
        keep[topo_fold_rank(&sc->topo, &sc->sim, (int)n)] = true;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

struct trace *outputs_trace_new(const struct cfg_scenario *sc, const struct sim_opts *o,
                                struct diag *d)
{
    struct trace_opts to = {.max_events = o->max_trace_events, .window = o->trace_window,
                            .window_t0_s = o->trace_t0_s, .window_t1_s = o->trace_t1_s};
    to.level = o->trace_set  ? o->trace
               : o->out_dir ? (enum trace_level)sc->trace_level
                            : TRACE_NONE;
    bool *keep = NULL;
    if (o->trace_chips) {
        keep = xcalloc((size_t)sc->sim.nchips, sizeof *keep);
        if (trace_chip_set(sc, o->trace_chips, keep, d) != 0) {
            free(keep);
            return NULL;
        }
        to.chips = keep, to.nchips = sc->sim.nchips;
    }
    struct trace *t = trace_new(&to);
    free(keep);
    return t;
}

int outputs_trace_open(struct trace *t, const struct sim_opts *o, struct diag *d)
{
    if (!o->out_dir || trace_level(t) == TRACE_NONE)
        return 0;
    char *tp = xasprintf("%s/trace.json", o->out_dir);
    int rc = trace_open(t, tp);
    if (rc != 0) {
        struct diag_loc loc = {tp, 0, 0};
        diag_error(d, &loc, NULL, "cannot write the trace: %s", strerror(errno));
    }
    free(tp);
    return rc;
}

int outputs_run(struct trace *t, struct summary *s, const struct sim_opts *o, struct diag *d)
{
    const char *dir = o->out_dir;
    char *sp = xasprintf("%s/summary.json", dir);
    int rc = 0;
    if (trace_close(t) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write trace.json: %s", strerror(errno));
        rc = -1;
    }
    if (trace_level(t) == TRACE_NONE) { /* no trace.json: not an earlier run's either */
        char *tp = xasprintf("%s/trace.json", dir);
        remove(tp);
        free(tp);
    }
    s->trace.present = true;
    trace_stats(t, &s->trace.st);
    s->trace.chips = o->trace_chips ? xstrdup(o->trace_chips) : NULL;
    s->trace.window = o->trace_window;
    s->trace.window_t0_s = o->trace_t0_s, s->trace.window_t1_s = o->trace_t1_s;
    if (rc == 0 && !o->no_summary && summary_write_json(s, sp) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write outputs: %s", strerror(errno));
        rc = -1;
    }
    free(sp);
    return rc;
}
