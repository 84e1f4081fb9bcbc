/* serving/serve_spec.c -- speculative decoding: the draft model's passes in
 * a step's price (serving/serve_spec.h); the engine's acceptance draws are
 * serving/serve.c's. */
#include "serving/serve_spec.h"

#include <stdlib.h>

#include "base/xalloc.h"

void serve_spec_pricer_init(struct serve_spec_pricer *sp, serve_price_fn target_fn, void *target,
                            serve_price_fn draft_fn, void *draft, int64_t max_seqs)
{
    *sp = (struct serve_spec_pricer){.target_fn = target_fn, .draft_fn = draft_fn,
                                     .target = target, .draft = draft, .max_seqs = max_seqs};
    size_t n = (size_t)(max_seqs > 0 ? max_seqs : 1);
    sp->pass.q = xcalloc(n, sizeof *sp->pass.q);
    sp->pass.kv = xcalloc(n, sizeof *sp->pass.kv);
    sp->pass.draft = xcalloc(n, sizeof *sp->pass.draft);
}

void serve_spec_pricer_fini(struct serve_spec_pricer *sp)
{
    free(sp->pass.q);
    free(sp->pass.kv);
    free(sp->pass.draft);
}

static void pass_add(struct serve_batch *p, int64_t q, int64_t kv)
{
    p->q[p->n] = q, p->kv[p->n] = kv, p->draft[p->n] = 0;
    p->n++;
    p->tokens += q;
}

/* Draft pass 'j' (1..k) of batch 'b': a drafting sequence's token j - 1 after
 * its cache (the step's own token at j = 1) over the cache and the j tokens;
 * pass 1 also takes the other entries as they are. */
static void build_pass(struct serve_batch *p, const struct serve_batch *b, int64_t j)
{
    p->n = 0, p->tokens = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->draft[i] >= j)
            pass_add(p, 1, b->kv[i] - 1 - b->draft[i] + j);
        else if (j == 1 && b->draft[i] == 0)
            pass_add(p, b->q[i], b->kv[i]);
    }
}

double serve_spec_price(void *ctx, const struct serve_batch *b)
{
    struct serve_spec_pricer *sp = ctx;
    double t = sp->target_fn(sp->target, b);
    int64_t k = 0;
    for (int i = 0; i < b->n; i++)
        k = b->draft[i] > k ? b->draft[i] : k;
    for (int64_t j = 1; t >= 0 && j <= (k > 0 ? k : 1); j++) {
        build_pass(&sp->pass, b, j);
        if (sp->pass.n == 0)
            continue;
        double td = sp->draft_fn(sp->draft, &sp->pass);
        if (!(td >= 0))
            return -1;
        t += td;
        sp->draft_s += td;
        sp->draft_passes++;
    }
    return t;
}
