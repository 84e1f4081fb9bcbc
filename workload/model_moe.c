/* workload/model_moe.c -- a mixture-of-experts layer sized as MaxText runs
 * it (see workload/model_moe_int.h).
 *
 * Dropless with the grouped matmul (MaxText's defaults: capacity_factor -1,
 * sparse_matmul and megablox true): each device routes its T tokens to top_k
 * experts, T k rows; the dispatch all-to-all over the expert axis (N_e
 * devices) sends them to the devices that hold their experts (a buffer of
 * T k D bytes per chip, of which (N_e - 1) / N_e leave the chip), where each
 * of the E / N_e local experts runs on T k N_e / E rows on average. The
 * busiest device gets 'expert_load_imbalance' times the mean: its grouped
 * matmul and what it receives set the layer's time (an all-to-all ends when
 * its busiest receiver has its rows), so both scale by it.
 * With a capacity factor c > 0 an expert takes at most c x the mean rows:
 * the rest are dropped (the busiest device's load is min(imbalance, c)).
 * The dense einsum dispatch (sparse_matmul: false) builds MaxText's dispatch
 * mask [B, S, E, C], C = S k c / E rows per expert and sequence (MaxText's
 * expert_capacity_per_batch), padded whatever the load: the dispatch einsum
 * BSM,BSEC->EBCM is per sequence [E C, S] x [S, D], the buffer exchanged is
 * [E, B, C, D] and each local expert runs N_e B C rows; the combine einsum
 * costs the dispatch's. */
#include "workload/model_moe_int.h"

#include <math.h>
#include <stdio.h>

#include "base/diag.h"

int moe_check(const struct model *m, char *err, size_t n)
{
    if (m->arch != MODEL_MIXTRAL)
        return 0;
    if (m->dense_matmul && !(m->capacity_factor > 0))
        return diag_fail(err, n, "the dense einsum dispatch (sparse_matmul: false) needs a "
                         "capacity_factor above 0 (without one MaxText runs every expert on "
                         "every token, which the expansion does not model)");
    if (m->expert_load_imbalance > (double)m->experts)
        return diag_fail(err, n, "expected an expert_load_imbalance of at most experts (%lld): "
                         "one expert cannot take more than every routed token, got %g",
                         (long long)m->experts, m->expert_load_imbalance);
    return 0;
}

double moe_dropped_share(double imbalance, double capacity_factor, int64_t experts)
{
    if (!(capacity_factor > 0) || experts < 2)
        return 0;
    double I = imbalance >= 1 ? imbalance : 1, E = (double)experts, c = capacity_factor;
    double rest = (E - I) / (E - 1); /* each other expert's load over the mean */
    return (fmax(0, I - c) + (E - 1) * fmax(0, rest - c)) / E;
}

static void plan_dense(const struct model *m, const struct model_shard *s, struct moe_plan *p)
{
    int64_t b = s->b > 0 ? s->b : 1, S = s->tokens / b, E = m->experts;
    int64_t C = (int64_t)floor((double)S * (double)m->top_k / (double)E * m->capacity_factor);
    /* at least a row; at most the sequence's tokens (a token picks an expert once) */
    p->capacity = C < 1 ? 1 : C > S ? S : C;
    p->disp_batch = b, p->disp_m = E * p->capacity, p->disp_k = S, p->disp_n = m->d_model;
    p->rows_per_expert = (int64_t)s->expert * b * p->capacity;
    p->load = 1;
    p->a2a_bytes = (double)E * (double)b * (double)p->capacity * (double)m->d_model *
                   (double)dtype_bytes(m->dtype) * s->dev_per_chip;
}

void moe_plan(const struct model *m, const struct model_shard *s, struct moe_plan *p)
{
    *p = (struct moe_plan){0};
    double I = m->expert_load_imbalance >= 1 ? m->expert_load_imbalance : 1;
    p->routed = s->tokens * m->top_k;
    p->dropped = moe_dropped_share(I, m->capacity_factor, m->experts);
    if (m->dense_matmul) {
        plan_dense(m, s, p);
        return;
    }
    p->load = m->capacity_factor > 0 ? fmin(I, m->capacity_factor) : I;
    double mean = (double)p->routed / (double)(s->experts > 0 ? s->experts : 1);
    p->rows_per_expert = (int64_t)ceil(mean * p->load);
    if (p->rows_per_expert < 1)
        p->rows_per_expert = 1;
    p->a2a_bytes = (double)p->routed * (double)m->d_model * (double)dtype_bytes(m->dtype) *
                   s->dev_per_chip * p->load;
}

double model_moe_dropped_share(const struct model *m)
{
    if (m->arch != MODEL_MIXTRAL)
        return 0;
    return moe_dropped_share(m->expert_load_imbalance, m->capacity_factor, m->experts);
}
