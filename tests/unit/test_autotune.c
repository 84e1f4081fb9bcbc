/* tests/unit/test_autotune.c -- `block: auto`: the candidates (kernels/tune.h)
 * and the search (study/autotune.h): the choice is the best point of a sweep
 * over the candidates it timed, run through the same engine, and never worse
 * than the default blocks; identical ops search once; no feasible blocks is
 * a precise error; the search is deterministic. */
#include "test_util.h"

#include <math.h>

#include "kernels/tune.h"
#include "study/autotune.h"
#include "config/op_table.h"
#include "sim_fork.h"

/* Loads 'yaml' and resolves its auto ops with 'cache'. */
static int resolve(const char *yaml, struct cfg_scenario *sc, struct autotune_cache *cache,
                   struct diag *d)
{
    assert_int_equal(cfg_load_scenario_text(yaml, strlen(yaml), "t.yaml", NULL, 0, sc, d), 0);
    char *flags = getenv("TPUSIM_SIMFLAGS");
    char *argv[1] = {flags};
    struct autotune_opts o = {.sg_argc = flags && *flags ? 1 : 0, .sg_argv = argv};
    return autotune_resolve(sc, cache, &o, d);
}

/* The time of 'op' (a flow mapping without its closing brace) with the
 * blocks 'v' written out under 'key', run as a sweep point would be. */
static double point(const char *chip, const char *op, const char *key,
                    const struct tune_choice *ch, const int64_t *v)
{
    char yaml[1024];
    int len = snprintf(yaml, sizeof yaml, "chip: %s\nworkload:\n  - %s, %s: {", chip, op, key);
    for (int i = 0; i < ch->nparams; i++) {
        char val[24];
        snprintf(val, sizeof val, "%lld", (long long)v[i]);
        len += snprintf(yaml + len, sizeof yaml - (size_t)len, "%s%s: %s", i ? ", " : "",
                        ch->names[i], v[i] ? val : "null");
    }
    snprintf(yaml + len, sizeof yaml - (size_t)len, "}}\n");
    struct result r = run(yaml, NULL, 0);
    assert_int_equal(r.rc, 0);
    return r.time[0];
}

/* The choice equals the best of a sweep over the candidates it timed, and the
 * default blocks are not faster. */
static void check_sweep(const char *chip, const char *op, const char *key)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml, "chip: %s\nworkload:\n  - %s, %s: auto}\n", chip, op, key);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct autotune_cache *cache = autotune_cache_new();
    assert_int_equal(resolve(yaml, &sc, cache, d), 0);
    const struct tune_choice *ch = &sc.plan.tuned[0];
    assert_true(ch->tuned && ch->ntimed >= 2);
    double best = 1e300;
    int at = -1;
    for (int i = 0; i < ch->ntimed; i++) {
        double t = point(chip, op, key, ch, ch->timed[i]);
        assert_time(t, ch->timed_s[i]); /* a candidate's time is its sweep point's */
        if (t < best)
            best = t, at = i;
    }
    assert_time(ch->time_s, best);
    assert_memory_equal(ch->v, ch->timed[at], sizeof ch->timed[at]);
    struct tune_choice got = *ch;
    cfg_scenario_fini(&sc);
    assert_int_equal(cfg_load_scenario_text(yaml, strlen(yaml), "t.yaml", NULL, 0, &sc, d), 0);
    int64_t v[TUNE_MAX_PARAMS];
    op_row(sc.ops[0].kind)->tune->get(&sc.ops[0], v); /* as loaded: the kernel's defaults */
    assert_true(got.time_s <= point(chip, op, key, &got, v));
    cfg_scenario_fini(&sc);
    autotune_cache_free(cache);
    diag_free(d);
}

static void test_autotune_resolve_equals_best_of_sweep_v5e(void **state)
{
    (void)state;
    check_sweep("v5e", "{op: matmul, m: 1024, k: 2048, n: 1024", "block");
}

/* Two TensorCores per chip (no megacore) run every candidate side by side. */
static void test_autotune_resolve_equals_best_of_sweep_v7(void **state)
{
    (void)state;
    check_sweep("v7", "{op: matmul, m: 512, k: 4096, n: 1024", "block");
}

static void test_autotune_resolve_equals_best_of_sweep_flash(void **state)
{
    (void)state;
    check_sweep("v5e",
                "{op: flash_attention, batch: 2, heads: 4, q_seq_len: 2048, head_dim: 128, "
                "causal: true, mode: fwd",
                "block_sizes");
}

static void test_autotune_resolve_equals_best_of_sweep_splash(void **state)
{
    (void)state;
    check_sweep("v5p",
                "{op: splash_attention, q_heads: 4, q_seq_len: 2048, head_dim: 128, "
                "mask: {type: causal}, mode: fwd_bwd",
                "block_sizes");
}

/* Two identical ops search once (one search, its child runs), a third with
 * another shape searches again; the copy reports the reused result. */
static void test_autotune_resolve_searches_identical_ops_once(void **state)
{
    (void)state;
    const char *yaml = "chip: v5e\nworkload:\n"
                       "  - {op: matmul, name: q, m: 2048, k: 1024, n: 1024, block: auto}\n"
                       "  - {op: matmul, name: k, m: 2048, k: 1024, n: 1024, block: auto}\n"
                       "  - {op: matmul, name: o, m: 1024, k: 1024, n: 2048, block: auto}\n";
    struct result r = run(yaml, NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.auto_stats.ops, 3);
    assert_int_equal(r.auto_stats.searches, 2);
    assert_true(r.auto_stats.runs >= 2 && r.auto_stats.runs <= 4);
    assert_false(r.auto_cached[0]);
    assert_true(r.auto_cached[1]);
    assert_false(r.auto_cached[2]);
    assert_memory_equal(r.auto_v[0], r.auto_v[1], sizeof r.auto_v[0]);
    assert_time(r.time[0], r.time[1]);
    assert_time(r.time[0], r.auto_time[0]); /* the run gives the time the search found */
}

/* Splash ops own their masks: two ops whose masks are equal (upstream's
 * mask __eq__) search once, another mask searches again, and the cache keeps
 * its own copies, so a second scenario (the first freed, as a sweep's points
 * are) still finds the search. */
static void test_autotune_splash_equal_masks_search_once(void **state)
{
    (void)state;
    const char *yaml =
        "chip: v5e\nworkload:\n"
        "  - {op: splash_attention, name: a, q_heads: 2, q_seq_len: 1024, head_dim: 128, "
        "mode: fwd, mask: {type: causal}, block_sizes: auto}\n"
        "  - {op: splash_attention, name: b, q_heads: 2, q_seq_len: 1024, head_dim: 128, "
        "mode: fwd, mask: {type: causal}, block_sizes: auto}\n"
        "  - {op: splash_attention, name: c, q_heads: 2, q_seq_len: 1024, head_dim: 128, "
        "mode: fwd, mask: {type: full}, block_sizes: auto}\n";
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct autotune_cache *cache = autotune_cache_new();
    assert_int_equal(resolve(yaml, &sc, cache, d), 0);
    struct autotune_stats st;
    autotune_stats(cache, &st);
    assert_int_equal(st.ops, 3);
    assert_int_equal(st.searches, 2);
    assert_false(sc.plan.tuned[0].cached);
    assert_true(sc.plan.tuned[1].cached);
    assert_false(sc.plan.tuned[2].cached);
    assert_memory_equal(sc.plan.tuned[0].v, sc.plan.tuned[1].v, sizeof sc.plan.tuned[0].v);
    cfg_scenario_fini(&sc);
    assert_int_equal(resolve(yaml, &sc, cache, d), 0); /* the first scenario's masks are gone */
    autotune_stats(cache, &st);
    assert_int_equal(st.searches, 2);
    assert_true(sc.plan.tuned[0].cached && sc.plan.tuned[1].cached && sc.plan.tuned[2].cached);
    cfg_scenario_fini(&sc);
    autotune_cache_free(cache);
    diag_free(d);
}

static void test_autotune_resolve_no_feasible_blocks_is_bad_input(void **state)
{
    (void)state;
    const char *yaml = "chip: v5e\nworkload:\n"
                       "  - {op: matmul, m: 4096, k: 4096, n: 4096, block: auto,\n"
                       "     vmem_limit_bytes: 64KiB}\n";
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct autotune_cache *cache = autotune_cache_new();
    assert_int_equal(resolve(yaml, &sc, cache, d), 2);
    assert_int_equal(diag_count(d), 1);
    const char *m = diag_message(d, 0);
    assert_non_null(strstr(m, "t.yaml:3:5: workload.0: matmul: block: auto: no feasible blocks "
                              "among 360 candidates; the default (bm=128 bk=128 bn=128): VMEM "
                              "footprint 262144 bytes exceeds the scoped limit 65536 bytes"));
    assert_non_null(strstr(m, "the smallest other candidate (bm=8 bk=128 bn=128): VMEM footprint"));
    struct autotune_stats st;
    autotune_stats(cache, &st);
    assert_int_equal(st.runs, 0); /* nothing to time */
    cfg_scenario_fini(&sc);
    autotune_cache_free(cache);
    diag_free(d);
}

/* Two searches of the same scenario (fresh caches) agree on everything. */
static void test_autotune_resolve_is_deterministic(void **state)
{
    (void)state;
    const char *yaml = "chip: v6e\nworkload:\n"
                       "  - {op: matmul, m: 2048, k: 4096, n: 2048, block: auto}\n";
    struct tune_choice ch[2];
    for (int i = 0; i < 2; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        struct autotune_cache *cache = autotune_cache_new();
        assert_int_equal(resolve(yaml, &sc, cache, d), 0);
        ch[i] = sc.plan.tuned[0];
        cfg_scenario_fini(&sc);
        autotune_cache_free(cache);
        diag_free(d);
    }
    assert_memory_equal(ch[0].v, ch[1].v, sizeof ch[0].v);
    assert_int_equal(ch[0].ntimed, ch[1].ntimed);
    assert_memory_equal(ch[0].timed, ch[1].timed, sizeof ch[0].timed);
    assert_memory_equal(ch[0].timed_s, ch[1].timed_s, sizeof ch[0].timed_s);
}

/* Every timed candidate takes at least its lower bound. */
static void test_autotune_bounds_are_below_times(void **state)
{
    (void)state;
    const char *yaml = "chip: v7\nworkload:\n"
                       "  - {op: matmul, m: 1024, k: 1024, n: 1024, block: auto}\n";
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct autotune_cache *cache = autotune_cache_new();
    assert_int_equal(resolve(yaml, &sc, cache, d), 0);
    struct tune_point pts[64];
    int tried;
    char err[512];
    struct op op = sc.ops[0];
    const int64_t dflt[3] = {128, 128, 128};
    kern_matmul_tune.set(&op, dflt);
    int n = tune_candidates(&kern_matmul_tune, &kern_matmul_kind, &op, &sc.chip, pts, 64, &tried,
                            err, sizeof err);
    const struct tune_choice *ch = &sc.plan.tuned[0];
    for (int i = 0; i < ch->ntimed; i++)
        for (int j = 0; j < n; j++)
            if (memcmp(pts[j].v, ch->timed[i], sizeof pts[j].v) == 0)
                assert_true(pts[j].bound_s <= ch->timed_s[i]);
    cfg_scenario_fini(&sc);
    autotune_cache_free(cache);
    diag_free(d);
}

/* Candidates are feasible, ordered by bound, bounded in number, and hold
 * the kernel's default blocks. */
static void test_tune_candidates_hold_default_in_bound_order(void **state)
{
    (void)state;
    struct chip_params chip = test_chip();
    struct op op = {.kind = OP_MATMUL};
    op.u.matmul = (struct op_matmul){.m = 8192, .k = 8192, .n = 8192, .dt = DT_BF16,
                                     .bm = 128, .bk = 128, .bn = 128};
    chip.step_overhead_s = 0.2e-6, chip.hbm_efficiency = 1;
    struct tune_point pts[8];
    int tried;
    char err[256];
    int n = tune_candidates(&kern_matmul_tune, &kern_matmul_kind, &op, &chip, pts, 8, &tried,
                            err, sizeof err);
    assert_int_equal(n, 8);
    assert_int_equal(tried, 1 + 11 * 7 * 7 - 1); /* the default is listed twice */
    bool dflt = false;
    for (int i = 0; i < n; i++) {
        dflt |= pts[i].dflt;
        if (i > 0 && i < n - 1)
            assert_true(pts[i - 1].bound_s <= pts[i].bound_s);
    }
    assert_true(dflt && pts[n - 1].dflt); /* far from the best: it takes the last place */
    int64_t d[64];
    assert_int_equal(tune_divisors(384, 8, 384, d), 6); /* 8 .. 128, 384 */
    assert_int_equal(d[0], 8);
    assert_int_equal(d[5], 384);
}

/* A matmul's contraction block bk is every multiple of 128 dividing k, not only its
 * powers of two (the Pallas TPU block rule: the last two dims divisible by 8 and 128): the
 * logits' gradient and a one-hot embedding of Llama 3's vocabulary contract over k = 128256 =
 * 2^8 x 3 x 167. By hand on v6e, [256, 128256] x [128256, 256] reads 2 x 256 x 128256 x 2 B =
 * 131.3 MB: 80.2 us at 1.638 TB/s. bk = 768 runs within 10 % of it; the powers of two (bk
 * 256: 501 k steps of 128 KiB blocks) took 169.1 us. */
static void test_tune_contraction_blocks_any_multiple_of_128(void **state)
{
    (void)state;
    int64_t d[64];
    static const int64_t want[] = {128, 256, 384, 768, 21376, 42752, 64128, 128256};
    assert_int_equal(tune_multiples(128256, 128, d), 8);
    assert_memory_equal(d, want, sizeof want);
    assert_int_equal(tune_multiples(96, 128, d), 1); /* a dim under the quantum: whole */
    assert_int_equal(d[0], 96);
    assert_int_equal(tune_multiples(576, 128, d), 1); /* no multiple of 128 divides 576 */
    assert_int_equal(d[0], 576);
    const char *yaml = "chip: v6e\nworkload:\n  - {op: matmul, m: 256, k: 128256, n: 256, "
                       "block: auto}\n";
    struct diag *d2 = diag_new();
    struct cfg_scenario sc;
    struct autotune_cache *cache = autotune_cache_new();
    assert_int_equal(resolve(yaml, &sc, cache, d2), 0);
    const struct tune_choice *ch = &sc.plan.tuned[0];
    assert_int_equal(ch->v[1], 768);
    assert_true(ch->time_s > 80.2e-6 && ch->time_s < 1.1 * 80.2e-6);
    cfg_scenario_fini(&sc);
    autotune_cache_free(cache);
    diag_free(d2);
}

/* ---- lazy bounds: the search picks what an exhaustive one picks ---- */

static int by_bound_then_order(const void *a, const void *b)
{
    const struct tune_point *x = a, *y = b;
    if (x->bound_s != y->bound_s)
        return x->bound_s < y->bound_s ? -1 : 1;
    return x->order - y->order;
}

/* The search before lazy bounds: every feasible candidate (the default, then
 * those the kernel lists, each once) built and bounded, sorted by bound and
 * listing order. 'out' has room for TUNE_MAX_ENUM + 1. */
static int exhaustive(const struct op *op, const struct chip_params *chip, struct tune_point *out)
{
    const struct op_row *row = op_row(op->kind);
    const struct kern_tune *t = row->tune;
    int64_t (*v)[TUNE_MAX_PARAMS] = calloc(TUNE_MAX_ENUM + 1, sizeof *v);
    t->get(op, v[0]);
    int nv = 1 + t->enumerate(op, chip, v + 1, TUNE_MAX_ENUM), n = 0;
    struct op tmp = *op;
    for (int i = 0; i < nv; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = memcmp(v[i], v[j], sizeof v[i]) == 0;
        if (seen)
            continue;
        t->set(&tmp, v[i]);
        struct kern k;
        char err[512];
        if (kern_init(&k, row->kern, &tmp, chip, false, err, sizeof err) == 0) {
            memset(&out[n], 0, sizeof out[n]);
            memcpy(out[n].v, v[i], sizeof out[n].v);
            out[n].bound_s = t->bound(&k);
            out[n].order = i;
            out[n].dflt = i == 0;
            n++;
        }
        kern_fini(&k);
    }
    free(v);
    qsort(out, (size_t)n, sizeof *out, by_bound_then_order);
    return n;
}

/* The ops the lazy search is checked on: flash and splash, causal and not, a
 * few sizes, a chip with one core and one whose two cores split the grid. */
static const char *const lazy_ops[] = {
    "chip: v5e\nworkload:\n  - {op: splash_attention, q_heads: 2, q_seq_len: 1024, "
    "head_dim: 128, mode: fwd, mask: {type: causal}, block_sizes: auto}\n",
    "chip: v5e\nworkload:\n  - {op: splash_attention, q_heads: 4, kv_heads: 2, q_seq_len: 2048, "
    "head_dim: 128, mode: fwd_bwd, mask: {type: causal}, block_sizes: auto}\n",
    "chip: v5p\nworkload:\n  - {op: splash_attention, q_heads: 4, q_seq_len: 2048, "
    "head_dim: 128, mode: fwd_bwd, mask: {type: full}, block_sizes: auto}\n",
    "chip: v5p\nworkload:\n  - {op: splash_attention, q_heads: 2, q_seq_len: 2048, "
    "head_dim: 64, mode: fwd_bwd, mask: {type: local, left: 256, right: 256}, "
    "block_sizes: auto}\n",
    "chip: v5e\nworkload:\n  - {op: splash_attention, batch: 2, q_heads: 4, kv_heads: 1, "
    "q_seq_len: 1024, head_dim: 128, mode: fwd_bwd, segment_ids: [384, 640], "
    "mask: {type: causal}, block_sizes: auto}\n",
    "chip: v7\nworkload:\n  - {op: splash_attention, q_heads: 2, q_seq_len: 2048, "
    "head_dim: 128, mode: fwd_bwd, mask: {type: chunked, chunk: 512}, block_sizes: auto}\n",
    "chip: v5e\nworkload:\n  - {op: flash_attention, batch: 2, heads: 4, q_seq_len: 2048, "
    "head_dim: 128, causal: true, mode: fwd, block_sizes: auto}\n",
    "chip: v5p\nworkload:\n  - {op: flash_attention, batch: 1, heads: 2, q_seq_len: 1024, "
    "head_dim: 128, causal: false, mode: fwd_bwd, block_sizes: auto}\n",
    "chip: v5p\nworkload:\n  - {op: splash_attention, q_heads: 8, kv_heads: 4, q_seq_len: 2048, "
    "head_dim: 128, mode: bwd, mask: {type: full}, block_sizes: auto}\n",
    "chip: v4\nworkload:\n  - {op: flash_attention, batch: 2, heads: 2, q_seq_len: 1024, "
    "head_dim: 64, causal: true, mode: bwd, block_sizes: auto}\n",
    "chip: v5e\nworkload:\n  - {op: matmul, m: 4096, k: 2048, n: 1024, block: auto}\n",
};

/* Handed out one by one, the candidates come in the exhaustive order with the
 * same bounds, and no floor is above its bound. */
static void test_tune_order_equals_exhaustive_order(void **state)
{
    (void)state;
    struct tune_point *ref = calloc(TUNE_MAX_ENUM + 1, sizeof *ref);
    for (size_t c = 0; c < sizeof lazy_ops / sizeof lazy_ops[0]; c++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        assert_int_equal(cfg_load_scenario_text(lazy_ops[c], strlen(lazy_ops[c]), "t.yaml", NULL,
                                                0, &sc, d), 0);
        const struct op *op = &sc.ops[0];
        int n = exhaustive(op, &sc.chip, ref), tried;
        char err[1400];
        struct tune_order *o = tune_order_new(op_row(op->kind)->tune, op_row(op->kind)->kern, op,
                                              &sc.chip, &tried, err, sizeof err);
        assert_int_equal(tune_order_feasible(o), n);
        struct tune_point p;
        for (int i = 0; i < n; i++) {
            assert_true(tune_order_next(o, INFINITY, &p));
            assert_memory_equal(p.v, ref[i].v, sizeof p.v);
            assert_true(p.bound_s == ref[i].bound_s && p.order == ref[i].order);
            assert_true(p.floor_s <= p.bound_s);
        }
        assert_false(tune_order_next(o, INFINITY, &p));
        tune_order_free(o);
        cfg_scenario_fini(&sc);
        diag_free(d);
    }
    free(ref);
}

/* The search times the candidates an exhaustive one would: the first N in
 * bound order, then those beyond whose bound is below the best time (the
 * default first, at most N), and picks the same; on the attention kernels it
 * computes the bounds of fewer candidates than are feasible. */
static void test_autotune_lazy_search_equals_exhaustive(void **state)
{
    (void)state;
    struct tune_point *ref = calloc(TUNE_MAX_ENUM + 1, sizeof *ref);
    for (size_t c = 0; c < sizeof lazy_ops / sizeof lazy_ops[0]; c++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        struct autotune_cache *cache = autotune_cache_new();
        assert_int_equal(cfg_load_scenario_text(lazy_ops[c], strlen(lazy_ops[c]), "t.yaml", NULL,
                                                0, &sc, d), 0);
        int n = exhaustive(&sc.ops[0], &sc.chip, ref);
        cfg_scenario_fini(&sc);
        assert_int_equal(resolve(lazy_ops[c], &sc, cache, d), 0);
        const struct tune_choice *ch = &sc.plan.tuned[0];
        assert_int_equal(ch->feasible, n);
        int first = n < AUTOTUNE_N ? n : AUTOTUNE_N, at = 0;
        assert_true(ch->ntimed >= first);
        double best = 1e300;
        for (int i = 0; i < first; i++) {
            assert_memory_equal(ch->timed[i], ref[i].v, sizeof ref[i].v);
            best = ch->timed_s[i] < best ? ch->timed_s[i] : best;
        }
        int more[AUTOTUNE_N], nmore = 0; /* the second run, as the exhaustive search picks it */
        for (int pass = 0; pass < 2; pass++)
            for (int i = first; i < n && nmore < AUTOTUNE_N; i++)
                if (ref[i].bound_s < best && (pass == 0) == ref[i].dflt)
                    more[nmore++] = i;
        assert_int_equal(ch->ntimed, first + nmore);
        assert_int_equal(ch->runs, nmore ? 2 : 1);
        for (int i = 0; i < nmore; i++)
            assert_memory_equal(ch->timed[first + i], ref[more[i]].v, sizeof ref[0].v);
        for (int i = 1; i < ch->ntimed; i++)
            at = ch->timed_s[i] < ch->timed_s[at] * (1 - 1e-12) ? i : at;
        assert_memory_equal(ch->v, ch->timed[at], sizeof ch->v);
        assert_true(ch->bounds <= n);
        if (sc.ops[0].kind == OP_SPLASH || sc.ops[0].kind == OP_FLASH)
            assert_true(ch->bounds < n);
        cfg_scenario_fini(&sc);
        autotune_cache_free(cache);
        diag_free(d);
    }
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_autotune_resolve_equals_best_of_sweep_v5e),
        cmocka_unit_test(test_autotune_resolve_equals_best_of_sweep_v7),
        cmocka_unit_test(test_autotune_resolve_equals_best_of_sweep_flash),
        cmocka_unit_test(test_autotune_resolve_equals_best_of_sweep_splash),
        cmocka_unit_test(test_autotune_resolve_searches_identical_ops_once),
        cmocka_unit_test(test_autotune_splash_equal_masks_search_once),
        cmocka_unit_test(test_autotune_resolve_no_feasible_blocks_is_bad_input),
        cmocka_unit_test(test_autotune_resolve_is_deterministic),
        cmocka_unit_test(test_autotune_bounds_are_below_times),
        cmocka_unit_test(test_tune_candidates_hold_default_in_bound_order),
        cmocka_unit_test(test_tune_contraction_blocks_any_multiple_of_128),
        cmocka_unit_test(test_tune_order_equals_exhaustive_order),
        cmocka_unit_test(test_autotune_lazy_search_equals_exhaustive),
    };
    return cmocka_run_group_tests_name("autotune", tests, NULL, NULL);
}
