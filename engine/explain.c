/* engine/explain.c -- per-core, per-sub-kernel and collective explanations
 * (see engine/explain.h). */
#include "engine/explain.h"

#include <stdio.h>
#include <string.h>

#include "base/xalloc.h"
#include "kernels/collective.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "config/op_table.h"

const char *explain_phase(const char *name)
{
    /* upstream's names: flash "<op>.fwd"/".di"/".dkv"/".dq", splash
     * "splash_mha_dkv_no_residuals", the fused backward "..._bwd_..." */
    static const char *const phases[] = {"dkv", "dq", "di", "fwd", "bwd", NULL};
    for (int i = 0; phases[i]; i++) {
        size_t n = strlen(phases[i]);
        for (const char *p = strstr(name, phases[i]); p; p = strstr(p + 1, phases[i])) {
            bool start = p == name || p[-1] == '.' || p[-1] == '_';
            bool end = p[n] == 0 || p[n] == '.' || p[n] == '_';
            if (start && end)
                return phases[i];
        }
    }
    return "";
}

/* The devices of one group of collective 'op' and its data size S (nccl-tests). */
static void coll_size(const struct cfg_scenario *sc, const struct op *op, int *n, double *S)
{
    const struct op_collective *c = &op->u.coll;
    struct topo group;
    const struct topo *t = coll_topo(op, &sc->topo, 0, &group);
    *n = 1;
    for (int a = 0; a < c->naxes; a++)
        *n *= t->shape[c->axes[a]];
    *S = op->kind == OP_ALL_GATHER ? (double)*n * (double)c->bytes : (double)c->bytes;
}

static void explain_coll(const struct cfg_scenario *sc, const struct op *op, struct summary_op *o)
{
    int n;
    double S, factor = 1;
    int axes = 1;
    switch (op->kind) {
    case OP_ALL_GATHER:
    case OP_REDUCE_SCATTER:
    case OP_ALL_REDUCE:
    case OP_ALL_TO_ALL:
        coll_size(sc, op, &n, &S);
        axes = op->u.coll.naxes;
        factor = op->kind == OP_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
        break;
    case OP_PPERMUTE:
        n = 2, S = (double)op->u.ppermute.bytes;
        break;
    default:
        return;
    }
    struct summary_coll *k = &o->coll;
    double t = o->instances > 0 ? o->time_s / (double)o->instances : o->time_s;
    k->present = true;
    k->n = n;
    k->data_bytes = S;
    k->algbw_Bps = t > 0 ? S / t : 0;
    k->busbw_Bps = k->algbw_Bps * factor;
    k->link_peak_Bps = ici_axes_peak_Bps(&sc->chip, axes);
    k->link_share = k->link_peak_Bps > 0 ? k->busbw_Bps / k->link_peak_Bps : 0;
}

void explain_op(const struct cfg_scenario *sc, const struct kern *k, int opi,
                const struct summary_core_work *core_op, const struct summary_core_work *core_sub,
                struct summary_op *o)
{
    int cores = sc->chip.cores < SUMMARY_MAX_CORES ? sc->chip.cores : SUMMARY_MAX_CORES;
    o->ncore = cores;
    for (int c = 0; c < cores; c++)
        o->core[c] = core_op[opi * sc->chip.cores + c];
    double busy[BOUND_COUNT] = {o->mxu_s,      o->vpu_s,     o->hbm_s,  o->ici_s,
                                o->overhead_s, o->latency_s, o->pcie_s, o->dcn_s};
    summary_rank_units(busy, &o->bound, &o->runner_up);
    double t = o->time_s > 0 ? o->time_s : 1;
    o->bound_frac = busy[o->bound] / t;
    o->runner_up_frac = busy[o->runner_up] / t;
    if (k && k->ncalls > 1) {
        o->nsub = k->ncalls < SUMMARY_MAX_SUB ? k->ncalls : SUMMARY_MAX_SUB;
        o->sub = xcalloc((size_t)o->nsub, sizeof *o->sub);
        for (int i = 0; i < o->nsub; i++) {
            struct summary_sub *s = &o->sub[i];
            snprintf(s->name, sizeof s->name, "%s", k->calls[i].name ? k->calls[i].name : "");
            snprintf(s->phase, sizeof s->phase, "%s", explain_phase(s->name));
            for (int c = 0; c < cores; c++)
                s->core[c] = core_sub[((size_t)opi * KERN_MAX_CALLS + (size_t)i) *
                                          (size_t)sc->chip.cores + (size_t)c];
        }
    }
    explain_coll(sc, &sc->ops[opi], o);
}

void explain_run(const struct cfg_scenario *sc, struct summary *s)
{
    int cores = sc->chip.cores < SUMMARY_MAX_CORES ? sc->chip.cores : SUMMARY_MAX_CORES;
    s->ntc = cores;
    for (int c = 0; c < cores; c++) {
        struct summary_tc *tc = &s->tc[c];
        double hbm_bytes = 0;
        for (int i = 0; i < s->nops; i++) {
            const struct summary_core_work *w = &s->ops[i].core[c];
            tc->mxu_s += w->mxu_s, tc->vpu_s += w->vpu_s, tc->overhead_s += w->overhead_s;
            hbm_bytes += w->hbm_bytes;
            if (!op_row(sc->ops[i].kind)->async)
                tc->compute_s += w->time_s;
        }
        tc->hbm_s = hbm_busy_s(&sc->chip, hbm_bytes);
        tc->idle_s = s->total_time_s > tc->compute_s ? s->total_time_s - tc->compute_s : 0;
        double busy[BOUND_COUNT] = {tc->mxu_s, tc->vpu_s, tc->hbm_s, 0, tc->overhead_s, 0};
        summary_rank_units(busy, &tc->bound, &tc->runner_up);
    }
}
