/* engine/outputs.c -- platform.xml, trace.json, summary.json (see engine/outputs.h). */
#include "engine/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "outputs/report_html.h"
#include "engine/spmd.h"
#include "engine/trace_auto.h"
#include "topology/dcn.h"
#include "topology/plat_dir.h"
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

/* The compute factors of the slow chips: pstate 1 + i is fault i's (eng_fault.c). */
static void plat_pstates(const struct cfg_scenario *sc, struct plat_params *p, double *factors)
{
    p->npstates = 0;
    p->pstate_factors = factors;
    for (int i = 0; i < sc->faults.n; i++)
        if (sc->faults.f[i].kind == CFG_FAULT_CHIP)
            factors[p->npstates++] = sc->faults.f[i].compute_factor;
}

int outputs_platform(const struct cfg_scenario *sc, FILE *f)
{
    struct plat_params p;
    double factors[CFG_MAX_FAULTS];
    plat_params(sc, &p);
    plat_pstates(sc, &p, factors);
    if (sc->dcn.slices > 1)
        return dcn_write_xml(f, &sc->dcn, &sc->topo, &sc->plan.sim, sc->plan.sim_dirs,
                             cfg_sim_slices(sc), &p);
    if (sc->plan.sim_dirs)
        return plat_dir_write_xml(f, &sc->plan.sim, sc->plan.sim_dirs, &p);
    return plat_write_xml(f, &sc->plan.sim, &p);
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

/* Marks in 'keep' (per engine chip: every slice's simulated chips) the
 * chips of "distinct" or a list "0,17" (in every slice). Returns 0, or -1
 * with a message in 'd'. */
static int trace_chip_set(const struct cfg_scenario *sc, const char *spec, bool *keep,
                          struct diag *d)
{
    int per = sc->plan.sim.nchips, all = cfg_engine_chips(sc);
    if (strcmp(spec, "distinct") == 0) {
        struct cfg_scenario fold = *sc; /* only .plan.sim and .plan.sim_mult change */
        spmd_fold(&fold, false);
        for (int i = 0; i < all; i++) {
            int c[TOPO_MAX_DIMS] = {0};
            topo_coords(&sc->plan.sim, i % per, c);
            keep[i] = true;
            for (int a = 0; a < sc->plan.sim.ndims; a++)
                keep[i] = keep[i] && c[a] < fold.plan.sim.shape[a];
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
        for (int base = 0; base < all; base += per)
            keep[base + topo_fold_rank(&sc->topo, &sc->plan.sim, (int)n)] = true;
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
    const char *chips = o->trace_chips;
    if (!o->trace_set && o->out_dir && !sc->trace_level_set) {
        struct trace_auto a;
        trace_auto_pick(sc, o->trace_chips != NULL, trace_auto_max_bytes(), &a);
        to.level = a.level;
        snprintf(to.chosen, sizeof to.chosen, "%s", a.why);
        if (a.chip0)
            snprintf(to.chosen_chips, sizeof to.chosen_chips, "0"), chips = to.chosen_chips;
    }
    bool *keep = NULL;
    if (chips) {
        keep = xcalloc((size_t)cfg_engine_chips(sc), sizeof *keep);
        if (trace_chip_set(sc, chips, keep, d) != 0) {
            free(keep);
            return NULL;
        }
        to.chips = keep, to.nchips = cfg_engine_chips(sc);
    }
    struct trace *t = trace_new(&to);
    free(keep);
    return t;
}

int outputs_trace_open(struct trace *t, const struct outputs_dir *od, struct diag *d)
{
    if (!od->out || trace_level(t) == TRACE_NONE)
        return 0;
    char *tp = outputs_dir_staged(od, "trace.json");
    int rc = trace_open(t, tp);
    if (rc != 0) {
        struct diag_loc loc = {tp, 0, 0};
        diag_error(d, &loc, NULL, "cannot write the trace: %s", strerror(errno));
    }
    free(tp);
    return rc;
}

int outputs_run(struct trace *t, struct summary *s, const struct sim_opts *o, const char *dir,
                struct diag *d)
{
    char *sp = xasprintf("%s/summary.json", dir);
    int rc = 0;
    if (trace_close(t) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write trace.json: %s", strerror(errno));
        rc = -1;
    }
    s->trace.present = true;
    trace_stats(t, &s->trace.st);
    s->trace.chips = o->trace_chips           ? xstrdup(o->trace_chips)
                     : s->trace.st.chosen_chips[0] ? xstrdup(s->trace.st.chosen_chips)
                                                   : NULL;
    s->trace.window = o->trace_window;
    s->trace.window_t0_s = o->trace_t0_s, s->trace.window_t1_s = o->trace_t1_s;
    if (rc == 0 && !o->no_summary && summary_write_json(s, sp) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write outputs: %s", strerror(errno));
        rc = -1;
    }
    free(sp);
    char *hp = xasprintf("%s/report.html", dir);
    if (rc == 0 && !o->no_summary && report_html_run(s, o->command, hp) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write report.html: %s", strerror(errno));
        rc = -1;
    }
    free(hp);
    return rc;
}

#define STAGE_PREFIX FS_STAGE_PREFIX

static int dir_error(struct diag *d, const char *dir, const char *what)
{
    struct diag_loc loc = {dir, 0, 0};
    diag_error(d, &loc, NULL, "%s: %s", what, strerror(errno));
    return -1;
}

int outputs_dir_lock(const char *out, struct diag *d)
{
    if (fs_mkdirs(out) != 0)
        return dir_error(d, out, "cannot create output directory");
    char holder[96];
    int fd = fs_dir_lock(out, "run", holder, sizeof holder);
    if (fd < 0 && errno == EWOULDBLOCK) {
        struct diag_loc loc = {out, 0, 0};
        diag_error(d, &loc, NULL,
                   "in use by another %s: wait for it to finish, or write to another "
                   "directory with -o",
                   holder);
        return -1;
    }
    if (fd < 0)
        return dir_error(d, out, "cannot create the lock file " FS_LOCK_NAME);
    fs_remove_stages(out); /* a killed run's: the lock is ours */
    return fd;
}

static int open_dir(struct outputs_dir *od, const char *out, bool locked, struct diag *d)
{
    od->out = out ? xstrdup(out) : NULL;
    od->stage = NULL;
    od->lock_fd = -1;
    if (out && !locked && (od->lock_fd = outputs_dir_lock(out, d)) < 0) {
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

int outputs_dir_open(struct outputs_dir *od, const char *out, struct diag *d)
{
    return open_dir(od, out, false, d);
}

int outputs_dir_open_locked(struct outputs_dir *od, const char *out, struct diag *d)
{
    return open_dir(od, out, true, d);
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

/* True when the stage holds 'name'. */
static bool staged(const struct outputs_dir *od, const char *name)
{
    char *p = outputs_dir_staged(od, name);
    bool yes = fs_exists(p);
    free(p);
    return yes;
}

int outputs_dir_commit(struct outputs_dir *od, struct diag *d)
{
    /* a run without a trace (--trace none) leaves no earlier run's trace
     * beside its summary; a run without a summary (a sweep's re-run for the
     * trace) keeps the summary there, the same scenario's */
    bool summary = staged(od, "summary.json"), trace = staged(od, "trace.json");
    static const char *const old[] = {"summary.json", "trace.json", "report.html"};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (!summary || (i == 1 && trace))
            continue;
        char *p = xasprintf("%s/%s", od->out, old[i]);
        if (unlink(p) != 0 && errno != ENOENT)
            rc = dir_error(d, p, "cannot replace the previous output");
        free(p);
    }
    static const char *const names[] = {"platform.xml", "trace.json", "report.html",
                                        "summary.json"};
    for (int i = 0; i < 4 && rc == 0; i++)
        if (staged(od, names[i]))
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

void outputs_auto_summary(const struct tune_choice *ch, struct summary_auto *a)
{
    memset(a, 0, sizeof *a);
    a->n = ch->nparams < SUMMARY_MAX_AUTO ? ch->nparams : SUMMARY_MAX_AUTO;
    for (int i = 0; i < a->n; i++)
        a->names[i] = ch->names[i], a->values[i] = ch->v[i];
    a->candidates = ch->ntimed;
    a->feasible = ch->feasible;
    a->time_s = ch->time_s;
    a->lower_bound_s = ch->bound_s;
    a->default_s = ch->default_s;
    snprintf(a->bound, sizeof a->bound, "%s", ch->bound);
    a->cached = ch->cached;
}
