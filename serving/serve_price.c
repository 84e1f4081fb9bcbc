/* serving/serve_price.c -- engine steps priced by simulating the model's
 * forward over their batch, memoized by signature (serving/serve_price.h). */
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

/* A signature: padded tokens and rows, the decodes' count and kv total, the
 * SIG_CHUNKS largest prefill chunks one by one (q, kv), the others' count and
 * q and kv totals. */
#define SIG_CHUNKS 4
enum { SIG_TOKENS, SIG_ROWS, SIG_ND, SIG_KD, SIG_NP, SIG_CHUNK,
       SIG_NREST = SIG_CHUNK + 2 * SIG_CHUNKS, SIG_QREST, SIG_KREST, SIG_N };
/* Prefill chunks' q and kv take buckets this many times finer than the
 * decodes' kv total (which is interpolated, not rounded). */
#define SIG_CHUNK_FINER 4

struct memo_entry {
    int64_t k[SIG_N];
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
    int64_t *q, *kv; /* the batch priced */
    int64_t *chunks; /* a batch's prefill chunks, (q, kv) pairs */
};

struct child_result {
    int rc;
    double time_s;
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

/* The step of 'n' sequences q[i] over kv[i], simulated. Returns its time or -1. */
static double simulate(struct serve_pricer *p, int n, const int64_t *q, const int64_t *kv,
                       int64_t tokens)
{
    const struct serve_cfg *c = p->c;
    struct model m = p->base->model->m;
    m.nseqs = n, m.q_lens = q, m.kv_lens = kv;
    m.tokens = pad_pow2(tokens, 16, c->max_num_batched_tokens);
    m.rows = pad_pow2(n, 8, c->max_num_seqs);
    m.batch = n, m.seq_len = 1, m.kv_len = c->max_model_len - 1;
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
        if (rc == 0)
            return res.time_s;
    }
    p->rc = rc ? rc : 1;
    return -1;
}

/* ---------------- the memo ---------------- */

static uint64_t sig_hash(const int64_t *k)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < SIG_N; i++)
        h = (h ^ (uint64_t)k[i]) * 1099511628211ull;
    return h;
}

static struct memo_entry *memo_slot(struct serve_pricer *p, const int64_t *k)
{
    size_t i = (size_t)sig_hash(k) & (p->cap - 1);
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

/* Spreads 'total' over 'n' values at least 'floor_v[i]' (or 1). */
static void spread(int64_t *v, int n, int64_t total, const int64_t *floor_v)
{
    for (int i = 0; i < n; i++) {
        v[i] = total / n + (i < total % n ? 1 : 0);
        int64_t lo = floor_v ? floor_v[i] : 1;
        v[i] = v[i] < lo ? lo : v[i];
    }
}

/* The time of signature 'k': the batch it stands for, simulated once. */
static double sig_time(struct serve_pricer *p, const int64_t *k)
{
    if (p->n * 2 >= p->cap)
        memo_grow(p);
    struct memo_entry *e = memo_slot(p, k);
    if (e->used)
        return e->time_s;
    int nd = (int)k[SIG_ND], np = (int)k[SIG_NP], nr = (int)k[SIG_NREST];
    spread(p->q, nd, nd, NULL);
    spread(p->kv, nd, k[SIG_KD], NULL);
    for (int j = 0; j < np; j++)
        p->q[nd + j] = k[SIG_CHUNK + 2 * j], p->kv[nd + j] = k[SIG_CHUNK + 2 * j + 1];
    spread(p->q + nd + np, nr, k[SIG_QREST], NULL);
    spread(p->kv + nd + np, nr, k[SIG_KREST], p->q + nd + np);
    double t = simulate(p, nd + np + nr, p->q, p->kv, k[SIG_TOKENS]);
    if (t < 0)
        return t;
    memcpy(e->k, k, sizeof e->k);
    e->time_s = t, e->used = true;
    p->n++;
    p->st.signatures++;
    return t;
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

static int cmp_chunk(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0]) - (x[0] > y[0]) : (x[1] < y[1]) - (x[1] > y[1]);
}

/* The prefill chunks' part of signature 'k': the largest one by one, bucketed;
 * their q never past the padded batch's room. */
static void sig_chunks(struct serve_pricer *p, const struct serve_batch *b, int64_t *k)
{
    int bo = p->c->buckets_per_octave * SIG_CHUNK_FINER, n = 0;
    int64_t *ch = p->chunks;
    for (int i = 0; i < b->n; i++)
        if (b->q[i] > 1)
            ch[2 * n] = b->q[i], ch[2 * n + 1] = b->kv[i], n++;
    qsort(ch, (size_t)n, 2 * sizeof *ch, cmp_chunk);
    int64_t room = k[SIG_TOKENS] - k[SIG_ND];
    for (int j = 0; j < n; j++) {
        int64_t q = bucket_nearest(ch[2 * j], bo, 2), kv;
        q = q > room - 2 * (n - 1 - j) ? room - 2 * (n - 1 - j) : q;
        q = q < 2 ? 2 : q;
        room -= q;
        kv = bucket_nearest(ch[2 * j + 1], bo, q);
        if (j < SIG_CHUNKS) {
            k[SIG_CHUNK + 2 * j] = q, k[SIG_CHUNK + 2 * j + 1] = kv, k[SIG_NP]++;
        } else {
            k[SIG_NREST]++, k[SIG_QREST] += q, k[SIG_KREST] += kv;
        }
    }
}

double serve_price(void *ctx, const struct serve_batch *b)
{
    struct serve_pricer *p = ctx;
    const struct serve_cfg *c = p->c;
    p->st.lookups++;
    if (c->buckets_per_octave == 0)
        return simulate(p, b->n, b->q, b->kv, b->tokens);
    int64_t k[SIG_N] = {0}, kd = 0;
    k[SIG_TOKENS] = pad_pow2(b->tokens, 16, c->max_num_batched_tokens);
    k[SIG_ROWS] = pad_pow2(b->n, 8, c->max_num_seqs);
    for (int i = 0; i < b->n; i++)
        if (b->q[i] == 1)
            k[SIG_ND]++, kd += b->kv[i];
    sig_chunks(p, b, k);
    if (k[SIG_ND] == 0)
        return sig_time(p, k);
    int64_t lo, hi;
    bucket_edges(kd, c->buckets_per_octave, &lo, &hi);
    lo = lo < k[SIG_ND] ? k[SIG_ND] : lo;
    hi = hi <= lo ? lo + 1 : hi;
    k[SIG_KD] = lo;
    double t_lo = sig_time(p, k);
    if (kd == lo || t_lo < 0)
        return t_lo;
    k[SIG_KD] = hi;
    double t_hi = sig_time(p, k);
    if (t_hi < 0)
        return t_hi;
    return t_lo + (t_hi - t_lo) * (double)(kd - lo) / (double)(hi - lo);
}

struct serve_pricer *serve_pricer_new(const struct cfg_scenario *base, int sg_argc,
                                      char **sg_argv, struct diag *d)
{
    struct serve_pricer *p = xcalloc(1, sizeof *p);
    p->base = base, p->c = base->serve, p->d = d;
    p->sg_argc = sg_argc, p->sg_argv = sg_argv;
    p->tune = autotune_cache_new();
    p->q = xcalloc((size_t)p->c->max_num_seqs, sizeof *p->q);
    p->kv = xcalloc((size_t)p->c->max_num_seqs, sizeof *p->kv);
    p->chunks = xcalloc(2 * (size_t)p->c->max_num_seqs, sizeof *p->chunks);
    return p;
}

void serve_pricer_free(struct serve_pricer *p)
{
    if (!p)
        return;
    autotune_cache_free(p->tune);
    free(p->memo);
    free(p->q);
    free(p->kv);
    free(p->chunks);
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
