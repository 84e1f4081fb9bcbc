/* engine/spmd.c -- folding a slice onto its distinct chips (see engine/spmd.h). */
#include "engine/spmd.h"

#include "config/op_table.h"

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

int spmd_fold_slices(int slices)
{
    for (int d = 2; d < slices; d++)
        if (slices % d == 0)
            return d;
    return slices > 1 ? slices : 1;
}

void spmd_fold(struct cfg_scenario *sc, bool all)
{
    const struct topo *t = &sc->topo;
    int hops[TOPO_MAX_DIMS] = {0, 0, 0}, roles[TOPO_MAX_DIMS] = {1, 1, 1}, period[TOPO_MAX_DIMS];
    /* a faulted link or chip breaks the symmetry of what it touches: every chip is simulated */
    bool symmetric = !all && !cfg_faults_asymmetric(&sc->faults);
    for (int i = 0; symmetric && i < sc->nops; i++) {
        op_reach_fn *reach = op_row(sc->ops[i].kind)->reach;
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
    if (topo_fold(t, period, &sc->plan.sim) != 0)
        sc->plan.sim = *t;
    sc->plan.sim_mult = t->nchips / sc->plan.sim.nchips;
    sc->plan.sim_slices = symmetric && sc->faults.slices_lost == 0
                              ? spmd_fold_slices(sc->dcn.slices) : 0;
}
