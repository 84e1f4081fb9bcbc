/* engine/spmd.c -- folding a slice onto its distinct chips (see engine/spmd.h). */
#include "engine/spmd.h"

#include "config/op_table.h"
#include "topology/plat_dir.h"

/* The shortest divisor of 'len' that is a multiple of 'period' and longer
 * than twice 'hops' ('len' if none). */
static int fold_period(int len, int hops, int period)
{
    if (hops == 0)
        return 1;
    for (int p = 2 * hops + 1; p < len; p++)
        if (len % p == 0 && p % period == 0)
            return p;
    return len;
}

/* The shortest divisor of 'len' that is a multiple of 'period' and longer
 * than 'hops' ('len' if none): a fold whose transfers keep their direction
 * (topology/plat_dir.h) needs only that no transfer goes a whole ring round. */
static int directed_period(int len, int hops, int period)
{
    if (hops == 0)
        return 1;
    for (int p = hops + 1; p < len; p++)
        if (len % p == 0 && p % period == 0)
            return p;
    return len;
}

/* Folds sc->topo to the directed periods when they fold some axis further
 * than the plain periods do: an axis the plain fold keeps whole (the period
 * problem: +h and -h reaching one chip), or one whose plain period is above 2
 * hops but whose directed one is shorter (ring neighbours: 2 rather than 4; as
 * data 48 x fsdp 16 x tensor 8 on 16x16x24: x stays whole either way, y and z
 * fold to 2 rather than 4 and 3; fsdp 128 x tensor 8 on 8x8x16: 2x2x2 rather
 * than 4x4x4), without faults and within PLAT_DIR_MAX_ROUTES (in all the
 * simulated slices: each is a directed zone); 0 if it does. */
static int fold_directed(struct cfg_scenario *sc, const int *hops, const int *roles,
                         const int *period)
{
    const struct topo *t = &sc->topo;
    int dp[TOPO_MAX_DIMS] = {1, 1, 1};
    bool gains = false;
    unsigned dirs = 0;
    if (sc->faults.n > 0)
        return -1;
    for (int a = 0; a < t->ndims; a++) {
        dp[a] = period[a];
        if (!t->wrap[a] || hops[a] == 0)
            continue;
        dp[a] = directed_period(t->shape[a], hops[a], roles[a]);
        gains |= dp[a] < period[a];
        if (dp[a] < t->shape[a] && dp[a] <= 2 * hops[a])
            dirs |= 1u << a;
    }
    struct topo q;
    if (!gains || topo_fold(t, dp, &q) != 0 ||
        plat_dir_routes(&q, dirs) * spmd_fold_slices(sc->dcn.slices) > PLAT_DIR_MAX_ROUTES)
        return -1;
    sc->plan.sim = q;
    sc->plan.sim_dirs = dirs;
    return 0;
}

int spmd_fold_slices(int slices)
{
    (void)slices;
    return 1;
}

/* A slice whose chips a translation maps onto each other: one slice, every
 * axis longer than 1 wrapped, no faults. */
static bool translation_symmetric(const struct cfg_scenario *sc)
{
    if (sc->dcn.slices > 1 || cfg_faults_asymmetric(&sc->faults))
        return false;
    for (int a = 0; a < sc->topo.ndims; a++)
        if (sc->topo.shape[a] > 1 && !sc->topo.wrap[a])
            return false;
    return true;
}

/* An all-to-all over mesh axes or torus axes of such a slice: what a
 * stand-in may replace (its reach, which is every chip of its axes, is left
 * out of the fold). */
static bool standin_kind(const struct cfg_scenario *sc, const struct op *op)
{
    int hops[TOPO_MAX_DIMS] = {0, 0, 0}, roles[TOPO_MAX_DIMS] = {1, 1, 1};
    op_reach_fn *reach = op_row(op->kind)->reach;
    return op->kind == OP_ALL_TO_ALL && reach && reach(op, &sc->topo, hops, roles) == 0 &&
           translation_symmetric(sc);
}

/* True if some op is not such an all-to-all (a program of all-to-alls alone
 * gains nothing from stand-ins: their lone runs are the whole run). */
static bool standins_pay(const struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        if (!standin_kind(sc, &sc->ops[i]))
            return true;
    return false;
}

bool spmd_standin(const struct cfg_scenario *sc, int i)
{
    const struct op *op = &sc->ops[i];
    if (sc->plan.sim.nchips >= sc->topo.nchips || !standin_kind(sc, op))
        return false;
    int hops[TOPO_MAX_DIMS] = {0, 0, 0}, roles[TOPO_MAX_DIMS] = {1, 1, 1};
    op_row(op->kind)->reach(op, &sc->topo, hops, roles);
    for (int a = 0; a < sc->topo.ndims; a++)
        if (hops[a] > 0 && sc->plan.sim.shape[a] < sc->topo.shape[a])
            return true; /* the fold cut an axis it crosses */
    return false;
}

void spmd_fold(struct cfg_scenario *sc, bool all)
{
    const struct topo *t = &sc->topo;
    int hops[TOPO_MAX_DIMS] = {0, 0, 0}, roles[TOPO_MAX_DIMS] = {1, 1, 1}, period[TOPO_MAX_DIMS];
    /* a faulted link or chip breaks the symmetry of what it touches: every chip is simulated */
    bool symmetric = !all && !cfg_faults_asymmetric(&sc->faults);
    bool standins = symmetric && standins_pay(sc);
    for (int i = 0; symmetric && i < sc->nops; i++) {
        op_reach_fn *reach = op_row(sc->ops[i].kind)->reach;
        if (standins && standin_kind(sc, &sc->ops[i]))
            continue;
        if (reach && reach(&sc->ops[i], t, hops, roles) != 0)
            symmetric = false;
    }
    for (int a = 0; a < t->ndims; a++) {
        period[a] = t->shape[a];
        if (symmetric && hops[a] == 0)
            period[a] = 1;
        else if (symmetric && t->wrap[a])
            period[a] = fold_period(t->shape[a], hops[a], roles[a]);
    }
    sc->plan.sim_dirs = 0;
    if (!(symmetric && fold_directed(sc, hops, roles, period) == 0) &&
        topo_fold(t, period, &sc->plan.sim) != 0)
        sc->plan.sim = *t;
    sc->plan.sim_mult = t->nchips / sc->plan.sim.nchips;
    sc->plan.sim_slices = symmetric && sc->faults.slices_lost == 0
                              ? spmd_fold_slices(sc->dcn.slices) : 0;
}
