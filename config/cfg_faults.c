/* config/cfg_faults.c -- the faults: and goodput: sections (config/cfg_faults.h).
 * Each faults: entry is a link ({link: {chip, axis, direction},
 * bandwidth_factor}), a chip ({chip, compute_factor, hbm_factor} or {chip,
 * dead: true}) or a lost slice ({slice_lost: N}); link and chip entries may
 * name their slice and a start time ('at_s'). Uses base/ and the config stages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg_faults.h"
#include "config/cfg_int.h"
#include "config/cfg_tree.h"
#include "topology/topo_fault.h"

/* What the section is read against: the slice, the slices, where it goes. */
struct fault_ctx {
    const struct topo *topo;
    int slices;
    struct cfg_faults *faults;
};

bool cfg_faults_asymmetric(const struct cfg_faults *f)
{
    for (int i = 0; i < f->n; i++)
        if (f->f[i].kind != CFG_FAULT_SLICE)
            return true;
    return false;
}

bool cfg_faults_links(const struct cfg_faults *f)
{
    for (int i = 0; i < f->n; i++)
        if (f->f[i].kind == CFG_FAULT_LINK)
            return true;
    return false;
}

bool cfg_slice_lost(const struct cfg_faults *f, int s)
{
    for (int i = 0; i < f->n; i++)
        if (f->f[i].kind == CFG_FAULT_SLICE && f->f[i].slice == s)
            return true;
    return false;
}

static void shape_text(const struct topo *t, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "[");
    for (int a = 0; a < t->ndims && at < n; a++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", a ? ", " : "", t->shape[a]);
    if (at < n)
        snprintf(buf + at, n - at, "]");
}

/* chip: [x, y, z] -> its rank in the slice, or -1 after reporting. */
static int read_chip(struct walk *w, const struct cfg_node *m, const char *p,
                     const struct topo *t)
{
    const struct cfg_node *c = walk_field(w, m, p, "chip", true);
    if (!c)
        return -1;
    char *q = walk_join(p, "chip");
    int co[TOPO_MAX_DIMS] = {0, 0, 0}, bad = 0;
    if (c->type != CFG_SEQ || c->n != t->ndims) {
        char shape[48], want[128];
        shape_text(t, shape, sizeof shape);
        snprintf(want, sizeof want, "the coordinates of a chip of the slice %s (%d numbers)",
                 shape, t->ndims);
        walk_type_error(w, c, q, want);
        free(q);
        return -1;
    }
    for (int a = 0; a < t->ndims; a++) {
        int64_t v = 0;
        bad |= walk_item(w, c, q, a, 0, t->shape[a] - 1, &v) != 0;
        co[a] = (int)v;
    }
    free(q);
    return bad ? -1 : topo_rank(t, co);
}

/* at_s: a start time, >= 0. */
static void read_at(struct walk *w, const struct cfg_node *m, const char *p, struct cfg_fault *f)
{
    const char *want = "a start time in seconds, 0 or from 1e-12 to 1e7";
    if (walk_real(w, m, p, "at_s", false, 0, 1e7, want, &f->at_s) == 0 && f->at_s > 0 &&
        f->at_s < 1e-12) { /* a subnormal sleep aborted SimGrid */
        char *q = walk_join(p, "at_s");
        walk_type_error(w, cfg_get(m, "at_s"), q, want);
        free(q);
    }
}

static void read_slice(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                       bool required, const struct fault_ctx *sc, struct cfg_fault *f)
{
    int64_t s = 0;
    int slices = sc->slices > 1 ? sc->slices : 1;
    walk_int(w, m, p, key, required, 0, slices - 1, &s);
    f->slice = (int)s;
}

static void read_link(struct walk *w, const struct cfg_node *e, const char *p,
                      const struct fault_ctx *sc, struct cfg_fault *f)
{
    static const char *const keys[] = {"link", "bandwidth_factor", "slice", "at_s", NULL};
    walk_check_keys(w, e, p, keys);
    f->kind = CFG_FAULT_LINK;
    read_slice(w, e, p, "slice", false, sc, f);
    read_at(w, e, p, f);
    walk_real(w, e, p, "bandwidth_factor", true, 0, 1,
              "a fraction of the link's bandwidth in [0, 1] (0: the link is down)", &f->bw_factor);
    char *lp = walk_join(p, "link");
    const struct cfg_node *l = cfg_get(e, "link");
    if (walk_is_map(w, l, lp)) {
        static const char *const lk[] = {"chip", "axis", "direction", NULL};
        walk_check_keys(w, l, lp, lk);
        const struct topo *t = sc->topo;
        f->chip = read_chip(w, l, lp, t);
        walk_int32(w, l, lp, "axis", true, 0, t->ndims - 1, &f->axis);
        const struct cfg_node *d = walk_field(w, l, lp, "direction", true);
        char *dp = walk_join(lp, "direction");
        if (d && (d->type != CFG_SCALAR ||
                  (strcmp(d->value, "+1") && strcmp(d->value, "1") && strcmp(d->value, "-1"))))
            walk_type_error(w, d, dp, "+1 or -1");
        else if (d)
            f->dir = strcmp(d->value, "-1") == 0 ? -1 : 1;
        free(dp);
        if (f->chip >= 0 && f->dir && f->axis < t->ndims &&
            topo_neighbor(t, f->chip, f->axis, f->dir) < 0) {
            char want[160];
            snprintf(want, sizeof want, "a link the slice has (chip %d has no neighbour in "
                     "direction %+d along axis %d, which does not wrap)", f->chip, f->dir,
                     f->axis);
            walk_type_error(w, l, lp, want);
        }
    }
    free(lp);
}

static void read_chip_fault(struct walk *w, const struct cfg_node *e, const char *p,
                            const struct fault_ctx *sc, struct cfg_fault *f)
{
    static const char *const keys[] = {"chip", "compute_factor", "hbm_factor", "dead",
                                       "slice", "at_s", NULL};
    walk_check_keys(w, e, p, keys);
    f->kind = CFG_FAULT_CHIP;
    f->compute_factor = f->hbm_factor = 1;
    read_slice(w, e, p, "slice", false, sc, f);
    read_at(w, e, p, f);
    f->chip = read_chip(w, e, p, sc->topo);
    const char *want = "a fraction of the chip's rate in [0.001, 1] (0.9: it runs at 90 % of its rate)";
    walk_real(w, e, p, "compute_factor", false, 1e-3, 1, want, &f->compute_factor);
    walk_real(w, e, p, "hbm_factor", false, 1e-3, 1, want, &f->hbm_factor);
    walk_bool(w, e, p, "dead", &f->dead);
    bool slow = cfg_get(e, "compute_factor") || cfg_get(e, "hbm_factor");
    struct diag_loc loc;
    walk_loc(e, &loc);
    if (slow == f->dead)
        diag_error(w->d, &loc, p, "expected a slow chip (compute_factor, hbm_factor) or a dead "
                   "one (dead: true), got %s", slow ? "both" : "neither");
    else if (f->dead && cfg_get(e, "at_s"))
        diag_error(w->d, &loc, p, "expected no 'at_s' for a dead chip (the run is the step "
                   "without it)");
}

static void read_entry(struct walk *w, const struct cfg_node *e, const char *p,
                       struct fault_ctx *sc, struct cfg_fault *f)
{
    if (!walk_is_map(w, e, p))
        return;
    int kinds = !!cfg_get(e, "link") + !!cfg_get(e, "chip") + !!cfg_get(e, "slice_lost");
    if (kinds != 1) {
        walk_type_error(w, e, p, "one of link:, chip: or slice_lost:");
    } else if (cfg_get(e, "link")) {
        read_link(w, e, p, sc, f);
    } else if (cfg_get(e, "chip")) {
        read_chip_fault(w, e, p, sc, f);
    } else {
        static const char *const keys[] = {"slice_lost", NULL};
        walk_check_keys(w, e, p, keys);
        f->kind = CFG_FAULT_SLICE;
        read_slice(w, e, p, "slice_lost", true, sc, f);
    }
}

/* A dead chip: with one slice the program cannot run; with several its slice is lost. */
static void dead_chips(struct walk *w, const struct cfg_node *list, struct fault_ctx *sc)
{
    struct cfg_faults *fs = sc->faults;
    for (int i = 0; i < fs->n; i++) {
        struct cfg_fault *f = &fs->f[i];
        if (f->kind != CFG_FAULT_CHIP || !f->dead)
            continue;
        struct diag_loc loc;
        walk_loc(list->kids[i], &loc);
        char p[32];
        snprintf(p, sizeof p, "faults.%d", i);
        if (sc->slices <= 1) {
            diag_error(w->d, &loc, p, "chip %d is dead: the program spans every chip of the "
                       "slice (each SPMD step needs all its devices), so it cannot run; re-plan "
                       "it on a slice without that chip, or run topology.slices > 1 to drop "
                       "its slice", f->chip);
            continue;
        }
        f->kind = CFG_FAULT_SLICE; /* the job goes on without its slice */
    }
}

static void count_lost(struct walk *w, const struct cfg_node *list, struct fault_ctx *sc)
{
    struct cfg_faults *fs = sc->faults;
    for (int i = 0; i < fs->n; i++) {
        if (fs->f[i].kind != CFG_FAULT_SLICE)
            continue;
        bool again = false;
        for (int j = 0; j < i; j++)
            again |= fs->f[j].kind == CFG_FAULT_SLICE && fs->f[j].slice == fs->f[i].slice;
        fs->slices_lost += !again;
    }
    int slices = sc->slices > 1 ? sc->slices : 1;
    if (fs->slices_lost > 0 && fs->slices_lost >= slices) {
        struct diag_loc loc;
        walk_loc(list, &loc);
        diag_error(w->d, &loc, "faults", "expected at least one slice left, got all %d of "
                   "them lost: nothing can run", slices);
    }
}

static void read_goodput(struct walk *w, const struct cfg_node *g, struct cfg_goodput *c)
{
    const char *p = "goodput";
    if (!walk_is_map(w, g, p))
        return;
    static const char *const keys[] = {"mtbf_per_chip_hours", "checkpoint_period",
                                       "checkpoint_size", "checkpoint_bandwidth",
                                       "restart_time_s", NULL};
    walk_check_keys(w, g, p, keys);
    double hours = 0;
    walk_real(w, g, p, "mtbf_per_chip_hours", true, 1e-3, 1e9,
              "hours in [0.001, 1e9]", &hours);
    c->mtbf_chip_s = hours * 3600;
    /* (the checkpoint keys may come from train:, cfg_goodput_from_train) */
    walk_int(w, g, p, "checkpoint_period", false, 1, 1000000000, &c->checkpoint_period);
    walk_qty(w, g, p, "checkpoint_size", false, UNITS_BYTES, true, &c->checkpoint_bytes);
    walk_qty(w, g, p, "checkpoint_bandwidth", false, UNITS_BANDWIDTH, false, &c->checkpoint_Bps);
    walk_real(w, g, p, "restart_time_s", true, 0, 1e7, "seconds in [0, 1e7]", &c->restart_s);
    c->present = true;
}

/* Every down link, whenever it starts, in slice 'ctx''s faults. */
struct down_all {
    const struct cfg_faults *fs;
    const struct topo *t;
    int slice;
};

static bool down_all(const void *ctx, int from, int axis, int dir)
{
    const struct down_all *c = ctx;
    for (int i = 0; i < c->fs->n; i++) {
        const struct cfg_fault *f = &c->fs->f[i];
        if (f->kind == CFG_FAULT_LINK && f->bw_factor == 0 && f->slice == c->slice &&
            f->axis == axis &&
            ((f->chip == from && f->dir == dir) ||
             (topo_neighbor(c->t, f->chip, axis, f->dir) == from && dir == -f->dir)))
            return true;
    }
    return false;
}

/* The two ends of each down link must still reach each other (a route of
 * topology/topo_fault.h), or the collectives across it cannot run. */
static void check_cuts(struct walk *w, const struct cfg_node *list, const struct fault_ctx *sc)
{
    const struct topo *t = sc->topo;
    int max = t->shape[0] + t->shape[1] + t->shape[2] + 6;
    struct topo_hop *h = xcalloc((size_t)max, sizeof *h);
    for (int i = 0; i < sc->faults->n; i++) {
        const struct cfg_fault *f = &sc->faults->f[i];
        if (f->kind != CFG_FAULT_LINK || f->bw_factor > 0)
            continue;
        struct down_all c = {sc->faults, t, f->slice};
        int nb = topo_neighbor(t, f->chip, f->axis, f->dir);
        if (topo_route_around(t, f->chip, nb, down_all, &c, h, max) >= 0 &&
            topo_route_around(t, nb, f->chip, down_all, &c, h, max) >= 0)
            continue;
        struct diag_loc loc;
        walk_loc(list->kids[i], &loc);
        char p[32];
        snprintf(p, sizeof p, "faults.%d", i);
        diag_error(w->d, &loc, p, "the down links cut the slice: no route from chip %d to chip "
                   "%d around them (an axis without wraparound has no other way round), so the "
                   "collectives across the cut cannot run", f->chip, nb);
        break;
    }
    free(h);
}

void cfg_load_faults(struct walk *w, const struct cfg_node *root, const struct topo *topo,
                     int slices, struct cfg_faults *out)
{
    struct fault_ctx ctx = {topo, slices, out}, *sc = &ctx;
    const struct cfg_node *g = cfg_get(root, "goodput");
    if (g)
        read_goodput(w, g, &sc->faults->goodput);
    const struct cfg_node *list = cfg_get(root, "faults");
    if (!list)
        return;
    if (cfg_get(root, "serve")) {
        struct diag_loc loc;
        walk_loc(list, &loc);
        diag_error(w->d, &loc, "faults", "expected no faults: beside serve: (a serving run's "
                   "steps are priced without faults)");
        return;
    }
    if (list->type != CFG_SEQ) {
        walk_type_error(w, list, "faults", "a list of faults");
        return;
    }
    if (list->n > CFG_MAX_FAULTS) {
        struct diag_loc loc;
        walk_loc(list, &loc);
        diag_error(w->d, &loc, "faults", "expected at most %d faults, got %d", CFG_MAX_FAULTS,
                   list->n);
        return;
    }
    for (int i = 0; i < list->n; i++) {
        char p[32];
        snprintf(p, sizeof p, "faults.%d", i);
        read_entry(w, list->kids[i], p, sc, &sc->faults->f[i]);
    }
    sc->faults->n = list->n;
    if (diag_count(w->d) == 0)
        dead_chips(w, list, sc);
    if (diag_count(w->d) == 0)
        count_lost(w, list, sc);
    if (diag_count(w->d) == 0)
        check_cuts(w, list, sc);
}
