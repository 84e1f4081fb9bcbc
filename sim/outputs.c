/* sim/outputs.c -- platform.xml, trace.json, summary.json (see sim/outputs.h). */
#include "sim/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "topology/dcn.h"
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
    if (sc->dcn.slices > 1)
        return dcn_write_xml(f, &sc->dcn, &sc->topo, &sc->sim, &p);
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

#define STAGE_PREFIX FS_STAGE_PREFIX

static int dir_error(struct diag *d, const char *dir, const char *what)
{
    struct diag_loc loc = {dir, 0, 0};
    diag_error(d, &loc, NULL, "%s: %s", what, strerror(errno));
    return -1;
}

static int lock_out(struct outputs_dir *od, struct diag *d)
{
    if (fs_mkdirs(od->out) != 0)
        return dir_error(d, od->out, "cannot create output directory");
    char holder[96];
    od->lock_fd = fs_dir_lock(od->out, "run", holder, sizeof holder);
    if (od->lock_fd < 0 && errno == EWOULDBLOCK) {
        struct diag_loc loc = {od->out, 0, 0};
        diag_error(d, &loc, NULL,
                   "in use by another %s: wait for it to finish, or write to another "
                   "directory with -o",
                   holder);
        return -1;
    }
    if (od->lock_fd < 0)
        return dir_error(d, od->out, "cannot create the lock file " FS_LOCK_NAME);
    fs_remove_stages(od->out); /* a killed run's: the lock is ours */
    return 0;
}

int outputs_dir_open(struct outputs_dir *od, const char *out, struct diag *d)
{
    od->out = out ? xstrdup(out) : NULL;
    od->stage = NULL;
    od->lock_fd = -1;
    if (out && lock_out(od, d) != 0) {
        outputs_dir_close(od);
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    char *tmpl = out ? xasprintf("%s/" STAGE_PREFIX "XXXXXX", out)
                     : xasprintf("%s/tpusim-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        dir_error(d, out ? out : tmpl, "cannot create a staging directory");
        free(tmpl);
        outputs_dir_close(od);
        return -1;
    }
    od->stage = tmpl;
    return 0;
}

char *outputs_dir_staged(const struct outputs_dir *od, const char *name)
{
    return xasprintf("%s/%s", od->stage, name);
}

/* Renames the staged 'name' into the output directory. */
static int move_in(struct outputs_dir *od, const char *name, struct diag *d)
{
    char *from = outputs_dir_staged(od, name), *to = xasprintf("%s/%s", od->out, name);
    int rc = rename(from, to) == 0 ? 0 : dir_error(d, to, "cannot move the output into place");
    free(from);
    free(to);
    return rc;
}

int outputs_dir_commit(struct outputs_dir *od, struct diag *d)
{
    char *sp = xasprintf("%s/summary.json", od->out);
    int rc = 0;
    if (unlink(sp) != 0 && errno != ENOENT)
        rc = dir_error(d, sp, "cannot replace the previous summary");
    free(sp);
    static const char *const names[] = {"platform.xml", "trace.json", "summary.json"};
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = move_in(od, names[i], d);
    return rc;
}

void outputs_dir_close(struct outputs_dir *od)
{
    if (od->stage)
        fs_remove_tree(od->stage);
    if (od->out)
        fs_dir_unlock(od->out, od->lock_fd);
    free(od->stage);
    free(od->out);
    memset(od, 0, sizeof *od);
    od->lock_fd = -1;
}
