/* serving/serve_price.c -- engine steps priced by simulating the model's
 * forward over their batch, from memoized parts (serving/serve_price.h). */
#include "serving/serve_price.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "config/cfg_serve.h"
#include "engine/sim.h"
#include "engine/spmd.h"
#include "study/autotune.h"
#include "workload/model.h"
#include "engine/sim_child.h"
#include "outputs/progress.h"
#include "serving/serve_rpa.h"

/* A memo key: what was priced (enum part), the padded tokens and rows, a
 * sequence's q and kv. */
enum part { PART_DENSE, PART_COPIES, PART_SEQ, PART_JETSTREAM };
/* Positions of a sequence in a step priced apart: first, second, the rest. */
#define SEQ_POS 3
enum { KEY_PART, KEY_TOKENS, KEY_ROWS, KEY_Q, KEY_KV, KEY_N };
/* Decodes' kv pages are exact up to EXACT_PAGES, then the nearest of buckets
 * CHUNK_FINER times finer than step_memo.buckets_per_octave (prefill chunks'
 * q and cached tokens are interpolated between buckets instead). */
#define CHUNK_FINER 8
#define EXACT_PAGES 64

struct memo_entry {
    int64_t k[KEY_N];
    double time_s;
    bool used;
};

struct serve_pricer {
    const struct cfg_scenario *base;
    const struct serve_cfg *c;
    struct autotune_cache *tune;
    int sg_argc;
    char **sg_argv;
    struct diag *d;
    struct memo_entry *memo;
    size_t cap, n;
    struct serve_price_stats st;
    int rc;
};

struct child_result {
    int rc;
    double time_s, attn_s; /* the step; its attention ops' share */
    char err[512];
};

static void child_run(const struct serve_pricer *p, const struct cfg_scenario *sc,
                      struct child_result *res)
{
    struct diag *d = diag_new();
    struct sim_opts so = {.sg_argc = p->sg_argc, .sg_argv = p->sg_argv, .max_trace_events = 1};
    struct summary s = {0};
    res->rc = sim_run(sc, &so, &s, d);
    res->time_s = s.total_time_s;
    for (int i = 0; i < s.nops; i++)
        if (s.ops[i].category && strcmp(s.ops[i].category, "attention") == 0)
            res->attn_s += s.ops[i].time_s;
    summary_fini(&s);
    if (diag_count(d))
        snprintf(res->err, sizeof res->err, "%s", diag_message(d, 0));
    diag_free(d);
}

struct child_args {
    const struct serve_pricer *p;
    const struct cfg_scenario *sc;
};

static void child_body(void *arg, void *out)
{
    const struct child_args *a = arg;
    child_run(a->p, a->sc, out);
}

/* Runs 'sc' in a forked child; its step time in '*res'. */
static void run_forked(const struct serve_pricer *p, const struct cfg_scenario *sc,
                       struct child_result *res)
{
    memset(res, 0, sizeof *res);
    struct child_args a = {p, sc};
    int rc = sim_child_run(child_body, &a, res, sizeof *res, "step's run", res->err,
                           sizeof res->err);
    if (rc != 0)
        res->rc = rc;
}

static int64_t pad_pow2(int64_t x, int64_t lo, int64_t hi)
{
    int64_t v = lo;
    while (v < x)
        v *= 2;
    return v < hi ? v : hi > x ? hi : x;
}

/* SGLang-JAX's mixed-call block sizes for a step of 'tokens' (padded) of
 * model 'm', unless the model gives its own (serving/serve_rpa.h). */
static void sglang_m_blocks(const struct serve_pricer *p, struct model *m, int64_t tokens)
{
    const struct model_shard *sh = &p->base->model->shard;
    struct serve_rpa_shape s = {.generation = p->base->chip.generation,
                                .q_heads = sh->heads, .kv_heads = sh->kv_heads,
                                .head_dim = m->head_dim, .page_size = p->c->page_size,
                                .kv_packing = 4 / dtype_bytes(m->dtype), .tokens = tokens,
                                .max_model_len = p->c->max_model_len};
    serve_rpa_sglang_m_blocks(&s, m->rpa_m_blocks);
}

/* The step of 'n' sequences q[i] over kv[i] with its matmuls over 'tokens'
 * and its logits over 'rows' (padded), of 'layers' layers (0: the model's),
 * simulated. Returns its time or -1; its attention ops' time in '*attn_s'. */
static double simulate_layers(struct serve_pricer *p, int n, const int64_t *q, const int64_t *kv,
                              int64_t tokens, int64_t rows, int layers, double *attn_s)
{
    const struct serve_cfg *c = p->c;
    struct model m = p->base->model->m;
    m.layers = layers ? layers : m.layers;
    m.nseqs = n, m.q_lens = q, m.kv_lens = kv;
    m.tokens = tokens, m.rows = rows;
    m.batch = n, m.seq_len = 1, m.kv_len = c->max_model_len - 1;
    m.rpa_v3 = c->rpa_v3;
    if (c->sglang && c->rpa_v3 && !m.rpa_m_blocks[0])
        sglang_m_blocks(p, &m, tokens);
    m.dense_kv = c->dense_kv;
    m.batch *= c->replicas; /* every replica (data group) steps this batch: one replica's time */
    double t0 = progress_now_s();
    struct cfg_scenario sc;
    int rc = cfg_serve_step(p->base, &m, &sc, p->d);
    if (rc == 0) {
        spmd_fold(&sc, sc.all_chips);
        struct autotune_opts ao = {.sg_argc = p->sg_argc, .sg_argv = p->sg_argv};
        rc = autotune_resolve(&sc, p->tune, &ao, p->d);
        struct child_result res = {.rc = rc};
        if (rc == 0)
            run_forked(p, &sc, &res);
        if (res.rc != 0 && res.rc != 130 && res.err[0])
            diag_error(p->d, NULL, "serve", "an engine step: %s", res.err);
        rc = res.rc;
        cfg_scenario_fini(&sc);
        p->st.runs++;
        p->st.wall_s += progress_now_s() - t0;
        if (rc == 0) {
            *attn_s = res.attn_s;
            return res.time_s;
        }
    }
    p->rc = rc ? rc : 1;
    return -1;
}

/* As simulate_layers, the model's layers. */
static double simulate_padded(struct serve_pricer *p, int n, const int64_t *q, const int64_t *kv,
                              int64_t tokens, int64_t rows, double *attn_s)
{
    return simulate_layers(p, n, q, kv, tokens, rows, 0, attn_s);
}

/* The step of 'n' sequences q[i] over kv[i], simulated. Returns its time or -1. */
static double simulate(struct serve_pricer *p, int n, const int64_t *q, const int64_t *kv,
                       int64_t tokens)
{
    const struct serve_cfg *c = p->c;
    double attn_s;
    return simulate_padded(p, n, q, kv, pad_pow2(tokens, 16, c->max_num_batched_tokens),
                           pad_pow2(n, 8, c->max_num_seqs), &attn_s);
}

/* ---------------- the memo ---------------- */

static uint64_t key_hash(const int64_t *k)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < KEY_N; i++)
        h = (h ^ (uint64_t)k[i]) * 1099511628211ull;
    return h;
}

static struct memo_entry *memo_slot(struct serve_pricer *p, const int64_t *k)
{
    size_t i = (size_t)key_hash(k) & (p->cap - 1);
    while (p->memo[i].used && memcmp(p->memo[i].k, k, sizeof p->memo[i].k) != 0)
        i = (i + 1) & (p->cap - 1);
    return &p->memo[i];
}

static void memo_grow(struct serve_pricer *p)
{
    struct memo_entry *old = p->memo;
    size_t ocap = p->cap;
    p->cap = ocap ? 2 * ocap : 256;
    p->memo = xcalloc(p->cap, sizeof *p->memo);
    for (size_t i = 0; i < ocap; i++)
        if (old[i].used)
            *memo_slot(p, old[i].k) = old[i];
    free(old);
}

/* Whether the memo holds 'k'; its time in '*t'. */
static bool memo_find(struct serve_pricer *p, const int64_t *k, double *t)
{
    if (p->n * 2 >= p->cap)
        memo_grow(p);
    struct memo_entry *e = memo_slot(p, k);
    *t = e->time_s;
    return e->used;
}

static double memo_put(struct serve_pricer *p, const int64_t *k, double t)
{
    struct memo_entry *e = memo_slot(p, k);
    memcpy(e->k, k, sizeof e->k);
    e->time_s = t, e->used = true;
    p->n++;
    p->st.signatures++;
    return t;
}

/* A probe: 'pre' (at most SEQ_POS) sequences of q0 over kv0, then, if 'q' > 0,
 * one of q over kv, in a step of 'tokens' and 'rows'; its time, its
 * attention's in '*attn_s'. 'attn_only': the attention only is wanted, from
 * a step of one layer (every layer runs the same kernel over the same
 * sequences; it is the model's layers times that one's). */
static double probe(struct serve_pricer *p, int pre, int64_t q0, int64_t kv0, int64_t q,
                    int64_t kv, int64_t tokens, int64_t rows, bool attn_only, double *attn_s)
{
    int64_t qs[SEQ_POS + 1], kvs[SEQ_POS + 1];
    for (int i = 0; i < pre; i++)
        qs[i] = q0, kvs[i] = kv0;
    qs[pre] = q, kvs[pre] = kv;
    int layers = attn_only ? 1 : 0;
    double t = simulate_layers(p, pre + (q > 0), qs, kvs, tokens, rows, layers, attn_s);
    if (attn_only)
        *attn_s *= (double)p->base->model->m.layers;
    return t;
}

/* All but attention of a step of 'tokens' and 'rows' (padded): the matmuls,
 * norms, collectives and logits do not look at the sequences' lengths.
 * These parts return NAN on failure (a share may be negative). */
static double dense_s(struct serve_pricer *p, int64_t tokens, int64_t rows)
{
    int64_t k[KEY_N] = {PART_DENSE, tokens, rows};
    double t, attn;
    if (memo_find(p, k, &t))
        return t;
    t = probe(p, 1, 1, 1, 0, 0, tokens, rows, false, &attn);
    return t < 0 ? NAN : memo_put(p, k, t - attn);
}

/* The attention of a step of 'tokens' whose sequences are 'n' (1..SEQ_POS)
 * of q over kv: the kernel's grid, its fixed costs, the sequences' blocks. */
static double copies_s(struct serve_pricer *p, int64_t tokens, int64_t q, int64_t kv, int n)
{
    int64_t k[KEY_N] = {PART_COPIES, tokens, n, q, kv};
    double t, attn;
    if (memo_find(p, k, &t))
        return t;
    return probe(p, n, q, kv, 0, 0, tokens, 8, true, &attn) < 0 ? NAN : memo_put(p, k, attn);
}

/* What a decode over kv at position 'pos' of a step (of 'tokens') adds to
 * its attention: the first alone; the second and then every further one
 * after SEQ_POS - 1 like it (the kernel prefetches a sequence's first blocks
 * during the one before: the second overlaps differently than the third;
 * from the third on, they add alike). */
static double decode_s(struct serve_pricer *p, int64_t tokens, int64_t kv, int pos)
{
    pos = pos < SEQ_POS ? pos : SEQ_POS - 1;
    if (pos == 0)
        return copies_s(p, tokens, 1, kv, 1);
    int64_t k[KEY_N] = {PART_SEQ, tokens, pos, 1, kv};
    double t;
    if (memo_find(p, k, &t))
        return t;
    double a = copies_s(p, tokens, 1, kv, pos), b = copies_s(p, tokens, 1, kv, pos + 1);
    return isnan(a) || isnan(b) ? NAN : memo_put(p, k, b - a);
}

/* What a prefill chunk of q over kv adds to a step's attention (of
 * 'tokens') at 'where': first, what it takes alone; after a chunk, what a
 * second copy adds to one (when two fit); after a decode (or a chunk when two
 * copies do not fit), what it adds after a decode of one token (a token
 * shorter if it would not fit). */
enum where { FIRST, AFTER_DECODE, AFTER_CHUNK };
static double chunk_at(struct serve_pricer *p, int64_t tokens, int64_t q, int64_t kv,
                       enum where w)
{
    if (w == FIRST)
        return copies_s(p, tokens, q, kv, 1);
    w = w == AFTER_CHUNK && 2 * q <= tokens ? AFTER_CHUNK : AFTER_DECODE;
    int64_t k[KEY_N] = {PART_SEQ, tokens, SEQ_POS + w, q, kv};
    double t, attn;
    if (memo_find(p, k, &t))
        return t;
    if (w == AFTER_CHUNK) {
        double a = copies_s(p, tokens, q, kv, 1), b = copies_s(p, tokens, q, kv, 2);
        return isnan(a) || isnan(b) ? NAN : memo_put(p, k, b - a);
    }
    double a = copies_s(p, tokens, 1, 1, 1);
    int64_t q2 = q < tokens ? q : tokens - 1;
    if (isnan(a) || probe(p, 1, 1, 1, q2, kv, tokens, 8, true, &attn) < 0)
        return NAN;
    return memo_put(p, k, attn - a);
}

/* The bucket edges around 'x' (>= 1): lo <= x <= hi, 2^(i/b) rounded down. */
static void bucket_edges(int64_t x, int b, int64_t *lo, int64_t *hi)
{
    int i = (int)floor((double)b * log2((double)x));
    while (i > 0 && (int64_t)floor(exp2((double)i / b)) > x)
        i--;
    while ((int64_t)floor(exp2((double)(i + 1) / b)) <= x)
        i++;
    *lo = (int64_t)floor(exp2((double)i / b));
    *hi = (int64_t)floor(exp2((double)(i + 1) / b));
}

/* 'x' to the nearest bucket value (at least 'min'). */
static int64_t bucket_nearest(int64_t x, int b, int64_t min)
{
    if (x <= 0)
        return x;
    int64_t lo, hi;
    bucket_edges(x, b, &lo, &hi);
    int64_t v = x - lo <= hi - x ? lo : hi;
    return v < min ? min : v;
}

/* 'x' in [lo, hi]: linear between 'a' (at lo) and 'b' (at hi). */
static double lerp(double a, double b, double x, double lo, double hi)
{
    return hi > lo ? a + (b - a) * (x - lo) / (hi - lo) : a;
}

/* A decode's kv in whole pages: exact up to EXACT_PAGES, then the nearest of
 * the chunks' buckets (at most max_model_len). */
static int64_t decode_kv(const struct serve_pricer *p, int64_t kv)
{
    const struct serve_cfg *c = p->c;
    int64_t pages = (kv + c->page_size - 1) / c->page_size;
    if (pages > EXACT_PAGES)
        pages = bucket_nearest(pages, c->buckets_per_octave * CHUNK_FINER, 1);
    kv = pages * c->page_size;
    return kv < c->max_model_len ? kv : c->max_model_len;
}

/* A prefill chunk of q over kv (kv - q cached before it): bilinear in q and
 * in the cached tokens between their buckets' edges (none cached: exact), at
 * most 'tokens' new ones and max_model_len in all. */
static double chunk_s(struct serve_pricer *p, int64_t tokens, int64_t q, int64_t kv, enum where w)
{
    const struct serve_cfg *c = p->c;
    int b = c->buckets_per_octave;
    int64_t qe[2], ce[2] = {0, 0}, ctx = kv - q;
    bucket_edges(q, b, &qe[0], &qe[1]);
    qe[1] = qe[1] < tokens ? qe[1] : tokens;
    qe[0] = qe[0] < qe[1] ? qe[0] : qe[1];
    if (ctx > 0) {
        bucket_edges(ctx, 1, &ce[0], &ce[1]);
        int64_t room = c->max_model_len - qe[1] > 0 ? c->max_model_len - qe[1] : 0;
        ce[1] = ce[1] < room ? ce[1] : room;
        ce[0] = ce[0] < ce[1] ? ce[0] : ce[1];
    }
    double v[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            v[i][j] = (i && qe[1] == qe[0]) ? v[0][j] : (j && ce[1] == ce[0]) ? v[i][0]
                    : chunk_at(p, tokens, qe[i], qe[i] + ce[j], w);
    double a = lerp(v[0][0], v[0][1], (double)ctx, (double)ce[0], (double)ce[1]);
    double z = lerp(v[1][0], v[1][1], (double)ctx, (double)ce[0], (double)ce[1]);
    return lerp(a, z, (double)q, (double)qe[0], (double)qe[1]);
}

/* The memo's price of batch 'b': its dense part at its padded tokens and rows,
 * the attention of its first sequence alone, and each other sequence's share
 * at its position (the kernel walks the sequences one after the other,
 * fetching the next one's blocks during the current one's work), all at the
 * step's padded tokens (the kernel's grid and blocks follow them). */
static double memo_price(struct serve_pricer *p, const struct serve_batch *b)
{
    const struct serve_cfg *c = p->c;
    int64_t tokens = pad_pow2(b->tokens, 16, c->max_num_batched_tokens);
    int64_t rows = pad_pow2(b->n, 8, c->max_num_seqs);
    double t = dense_s(p, tokens, rows);
    for (int i = 0; i < b->n && !isnan(t); i++)
        t += b->q[i] == 1 ? decode_s(p, tokens, decode_kv(p, b->kv[i]), i)
                          : chunk_s(p, tokens, b->q[i], b->kv[i],
                                    i == 0 ? FIRST : b->q[i - 1] > 1 ? AFTER_CHUNK : AFTER_DECODE);
    return isnan(t) ? -1 : t;
}

/* Every 'verify_every'th step priced exactly as well: the memo's error. */
static void verify(struct serve_pricer *p, const struct serve_batch *b, double t)
{
    double exact = simulate(p, b->n, b->q, b->kv, b->tokens);
    if (exact <= 0)
        return;
    double e = fabs(t / exact - 1);
    p->st.verified++;
    p->st.error_sum += e;
    p->st.error_max = e > p->st.error_max ? e : p->st.error_max;
}

/* The insert that follows a prefill of JetStream's shard_on_batch engine
 * (serve.mesh data D > 1): jetstream-pytorch's `insert` writes the prompt's K
 * and V into its slot with one dynamic_update_slice per layer and K/V
 * (`_insert_no_wrap`, jetstream_pt/engine.py at f3cf2b7), into a dense cache
 * sharded on the slot axis (environment.py: cache_sharding_axis 0 under
 * shard_on_batch). The slot is a traced index on a sharded axis, which XLA's
 * SPMD partitioner lowers as each shard's clamped update under a
 * select(owns the slot, updated, old) over its whole local shard (checked on
 * jax 0.10.2's partitioner, docs/reference.md "JetStream's engine"): every
 * chip reads and writes its group's whole cache, max_num_seqs / D slots of
 * max_model_len tokens, at the HBM rate. With the cache sharded on heads
 * (tensor parallelism) the update stays in place and its bytes are the
 * prompt's, left out. The fusions' fixed costs are left out too. */
static double jetstream_insert_s(const struct serve_pricer *p)
{
    const struct serve_cfg *c = p->c;
    if (c->replicas <= 1)
        return 0;
    const struct chip_params *chip = &p->base->chip;
    double cache_bytes = c->kv_bytes_per_token * (double)(c->max_num_seqs / c->replicas) *
                         (double)c->max_model_len;
    return 2 * cache_bytes / (chip->hbm_bw_Bps * chip->hbm_efficiency);
}

/* A step of JetStream's engine (scheduler: jetstream), simulated once per
 * shape: a prefill is one request's prompt padded to a power of two (its
 * prefill buckets) with the logits of every position (JetStream-PyTorch's
 * prefill returns them all), then its insert (jetstream_insert_s); a
 * generate step runs the decode state's fixed shapes: a data group's every
 * slot (max_num_seqs / data), with the dense
 * cache (attention_kernel: dense) each over max_model_len, else (ragged
 * attention) at their real lengths. */
static double jetstream_price(struct serve_pricer *p, const struct serve_batch *b)
{
    const struct serve_cfg *c = p->c;
    bool prefill = b->n == 1 && b->q[0] > 1;
    int64_t slots = c->max_num_seqs / c->replicas;
    int64_t tokens = prefill ? pad_pow2(b->tokens, 16, c->max_num_batched_tokens) : slots;
    if (!prefill && !c->dense_kv) /* ragged: the slots' own lengths, not memoized */
        return simulate_padded(p, b->n, b->q, b->kv, tokens, tokens, &(double){0});
    int64_t k[KEY_N] = {PART_JETSTREAM, tokens, prefill};
    double t;
    if (memo_find(p, k, &t))
        return t;
    int n = prefill ? 1 : (int)slots;
    int64_t *q = xcalloc((size_t)n, sizeof *q), *kv = xcalloc((size_t)n, sizeof *kv);
    for (int i = 0; i < n; i++)
        q[i] = prefill ? tokens : 1, kv[i] = prefill ? tokens : c->max_model_len;
    double attn;
    t = simulate_padded(p, n, q, kv, tokens, tokens, &attn);
    free(q);
    free(kv);
    return t < 0 ? -1 : memo_put(p, k, t + (prefill ? jetstream_insert_s(p) : 0));
}

double serve_price(void *ctx, const struct serve_batch *b)
{
    struct serve_pricer *p = ctx;
    const struct serve_cfg *c = p->c;
    p->st.lookups++;
    if (c->jetstream)
        return jetstream_price(p, b);
    if (c->buckets_per_octave == 0)
        return simulate(p, b->n, b->q, b->kv, b->tokens);
    double t = memo_price(p, b);
    if (t >= 0 && c->memo_verify_every && (p->st.lookups - 1) % c->memo_verify_every == 0)
        verify(p, b, t);
    return t;
}

struct serve_pricer *serve_pricer_new(const struct cfg_scenario *base, int sg_argc,
                                      char **sg_argv, struct diag *d)
{
    struct serve_pricer *p = xcalloc(1, sizeof *p);
    p->base = base, p->c = base->serve, p->d = d;
    p->sg_argc = sg_argc, p->sg_argv = sg_argv;
    p->tune = autotune_cache_new();
    return p;
}

void serve_pricer_free(struct serve_pricer *p)
{
    if (!p)
        return;
    autotune_cache_free(p->tune);
    free(p->memo);
    free(p);
}

void serve_pricer_stats(const struct serve_pricer *p, struct serve_price_stats *st)
{
    *st = p->st;
}

int serve_pricer_rc(const struct serve_pricer *p)
{
    return p->rc;
}
