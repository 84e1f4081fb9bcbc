/* tests/unit/test_maskinfo.c -- splash-attention masks and MaskInfo.
 * Ports jax tests/pallas/tpu_splash_attention_mask_test.py: every expected array
 * of the upstream test is transcribed as a grid string in which '.' stands for the
 * -1 "not checked" entries, and checked the way upstream's _assert_mask_info_match
 * does.  Each such array also has a FULL table with those entries filled in; the
 * fill values were obtained by running upstream's _process_mask (numpy) on the
 * same input, so the padding/wrap-around entries the kernel never reads are
 * pinned too (they decide which blocks get DMA'd). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/maskinfo.h"
#include "config/mask_file.h"

#define ERRN 512

/* ---- helpers ---- */

/* Parses a grid string: each digit is one value, '.' is -1 (upstream's "don't
 * care"), anything else separates.  Returns the number of values. */
static size_t grid_parse(const char *s, int32_t *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        if ((*s >= '0' && *s <= '9') || *s == '.') {
            if (n < cap)
                out[n] = *s == '.' ? -1 : *s - '0';
            n++;
        }
    }
    return n;
}

static void print_grid(const int32_t *a, size_t cells, int nk)
{
    for (size_t i = 0; i < cells; i++)
        print_message("%d%s", a[i], (i + 1) % (size_t)nk ? " " : " | ");
    print_message("\n");
}

/* Checks 'got' ('cells' values, rows of 'nk') against the grid string 'want'. */
static void check_grid(const char *what, const int32_t *got, size_t cells, int nk, const char *want)
{
    int32_t *w = calloc(cells + 1, sizeof *w);
    size_t n = grid_parse(want, w, cells + 1);
    if (n != cells) {
        free(w);
        fail_msg("%s: table has %zu values, array has %zu", what, n, cells);
    }
    for (size_t i = 0; i < cells; i++) {
        if (w[i] >= 0 && got[i] != w[i]) {
            print_message("%s: got    ", what);
            print_grid(got, cells, nk);
            print_message("%s: wanted %s\n", what, want);
            int32_t expected = w[i];
            free(w);
            fail_msg("%s: entry %zu is %d, expected %d", what, i, got[i], expected);
        }
    }
    free(w);
}

/* Upstream expectations of one MaskInfo.  *_up: the upstream table ('.' = -1);
 * the others: the full table.  mn_up == NULL means mask_next is None. */
struct want {
    int rows, nq, nk;
    const char *bm;
    const char *dn_up, *dn;
    const char *mn_up, *mn;
    int num_partial;
    bool computable;
};

/* A want for a non-computable result (see check_variant for the lazy ones). */
static struct want want_of(int rows, int nq, int nk, const char *bm, const char *dn_up,
                           const char *dn, const char *mn_up, const char *mn, int num_partial)
{
    return (struct want){rows, nq, nk, bm, dn_up, dn, mn_up, mn, num_partial, false};
}

static void check_info(const struct mask_info *mi, const struct want *w)
{
    assert_int_equal(mi->rows, w->rows);
    assert_int_equal(mi->nq, w->nq);
    assert_int_equal(mi->nk, w->nk);
    size_t cells = (size_t)mi->rows * (size_t)mi->nq * (size_t)mi->nk;
    for (size_t i = 0; i < cells; i++) { /* assert_array_is_positive */
        assert_true(mi->block_mask[i] >= 0 && mi->data_next[i] >= 0);
        assert_true(!mi->mask_next || mi->mask_next[i] >= 0);
    }
    check_grid("block_mask", mi->block_mask, cells, mi->nk, w->bm);
    check_grid("data_next (upstream)", mi->data_next, cells, mi->nk, w->dn_up);
    check_grid("data_next", mi->data_next, cells, mi->nk, w->dn);
    if (!w->mn_up) {
        assert_null(mi->mask_next);
    } else {
        assert_non_null(mi->mask_next);
        check_grid("mask_next (upstream)", mi->mask_next, cells, mi->nk, w->mn_up);
        check_grid("mask_next", mi->mask_next, cells, mi->nk, w->mn);
    }
    assert_int_equal(mi->num_partial, w->num_partial);
    assert_int_equal(mi->computable, w->computable);
    assert_int_equal(mi->partial_blocks != NULL, w->num_partial > 0);
}

static void check_want(const struct mask_info *mi, struct want w)
{
    check_info(mi, &w);
}

/* As check_info, but for the lazy variant of a single computable mask upstream
 * returns mask_next = partial_mask_blocks = None and a q_sequence. */
static void check_variant(const struct mask_info *mi, const struct want *w, bool computable)
{
    struct want v = *w;
    if (computable) {
        v.mn_up = v.mn = NULL;
        v.num_partial = 0;
        v.computable = true;
    }
    check_info(mi, &v);
}

/* Partial block patterns of the upstream tests, as [16][16] predicates. */
enum pat {
    PAT_TRIL,    /* np.tril(np.ones(B)): j <= i */
    PAT_BAND8,   /* np.triu(np.tri(*B, 8), -8): i - 8 <= j <= i + 8 */
    PAT_LOWER8,  /* np.tri(*B, -8): j <= i - 8 */
    PAT_UPPER8,  /* np.triu(np.ones(B), 8): j >= i + 8 */
    PAT_NARROW8, /* np.triu(np.tri(*B, 0), -8): i - 8 <= j <= i */
};

static bool pat_at(enum pat p, int i, int j)
{
    switch (p) {
    case PAT_TRIL:
        return j <= i;
    case PAT_BAND8:
        return j >= i - 8 && j <= i + 8;
    case PAT_LOWER8:
        return j <= i - 8;
    case PAT_UPPER8:
        return j >= i + 8;
    default:
        return j >= i - 8 && j <= i;
    }
}

/* Checks partial_blocks against 'pats' (16x16 blocks; dkv blocks are transposed). */
static void check_partials(const struct mask_info *mi, const enum pat *pats, int n)
{
    assert_int_equal(mi->num_partial, n);
    for (int b = 0; b < n; b++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                bool want = mi->is_dkv ? pat_at(pats[b], j, i) : pat_at(pats[b], i, j);
                if (mi->partial_blocks[(size_t)b * 256 + (size_t)i * 16 + (size_t)j] != want)
                    fail_msg("partial block %d differs at (%d, %d)", b, i, j);
            }
}

/* Test-side dense masks, written independently of the library like upstream's
 * make_causal_mask / make_local_attention_mask / make_chunk_attention_mask. */
static struct mask *make_causal(int64_t q, int64_t k, int64_t offset)
{
    uint8_t *d = malloc((size_t)(q * k));
    for (int64_t i = 0; i < q; i++)
        for (int64_t j = 0; j < k; j++)
            d[i * k + j] = i + offset >= j;
    struct mask *m = mask_new_dense(q, k, d);
    free(d);
    return m;
}

static struct mask *make_local(int64_t q, int64_t k, int64_t left, int64_t right, int64_t offset)
{
    uint8_t *d = malloc((size_t)(q * k));
    for (int64_t i = 0; i < q; i++)
        for (int64_t j = 0; j < k; j++)
            d[i * k + j] =
                (left < 0 || i - left + offset <= j) && (right < 0 || i + right + offset >= j);
    struct mask *m = mask_new_dense(q, k, d);
    free(d);
    return m;
}

static struct mask *make_chunk(int64_t q, int64_t k, int64_t chunk)
{
    uint8_t *d = malloc((size_t)(q * k));
    for (int64_t i = 0; i < q; i++)
        for (int64_t j = 0; j < k; j++)
            d[i * k + j] = i / chunk == j / chunk && i >= j;
    struct mask *m = mask_new_dense(q, k, d);
    free(d);
    return m;
}

/* Builds the mask of the upstream test in its lazy (mask class) or dense
 * (NumpyMask of make_*) form.  'spec' is a mask_parse_spec() string. */
static struct mask *mk(const char *spec, int64_t q, int64_t k, bool lazy)
{
    char err[ERRN] = "";
    struct mask *m = mask_parse_spec(spec, q, k, err, sizeof err);
    if (!m)
        fail_msg("mask_parse_spec(%s): %s", spec, err);
    if (lazy)
        return m;
    struct mask *d;
    if (m->kind == MASK_CAUSAL)
        d = make_causal(q, k, m->offset);
    else if (m->kind == MASK_LOCAL)
        d = make_local(q, k, m->left, m->right, m->offset);
    else if (m->kind == MASK_CHUNKED)
        d = make_chunk(q, k, m->chunk);
    else
        d = mask_dense_from(m);
    mask_free(m);
    return d;
}

/* Dense rows of 'a' on top of rows of 'b' (np.concatenate(..., axis=0)). */
static struct mask *stack_rows(struct mask *a, struct mask *b)
{
    int64_t k = a->kv_len, qa = a->q_len, qb = b->q_len;
    uint8_t *d = malloc((size_t)((qa + qb) * k));
    for (int64_t i = 0; i < qa + qb; i++)
        for (int64_t j = 0; j < k; j++)
            d[i * k + j] = i < qa ? mask_at(a, i, j) : mask_at(b, i - qa, j);
    struct mask *m = mask_new_dense(qa + qb, k, d);
    free(d);
    mask_free(a);
    mask_free(b);
    return m;
}

static void process_p(struct mask **heads, int n, const struct maskinfo_params *p,
                      struct mask_info *mi)
{
    char err[ERRN] = "";
    if (maskinfo_process(heads, n, p, mi, err, sizeof err))
        fail_msg("maskinfo_process: %s", err);
}

/* _process_mask with upstream's defaults except for what is given. */
static void process(struct mask **heads, int n, int bq, int bkv, bool dkv, int head_shards,
                    int q_seq_shards, struct mask_info *mi)
{
    struct maskinfo_params p;
    maskinfo_params_init(&p, bq, bkv);
    p.is_dkv = dkv;
    p.head_shards = head_shards;
    p.q_seq_shards = q_seq_shards;
    process_p(heads, n, &p, mi);
}

static void free_heads(struct mask **heads, int n)
{
    for (int i = 0; i < n; i++)
        mask_free(heads[i]);
}

/* Returns the error of maskinfo_process (which must fail) in 'err'. */
static void process_err(struct mask **heads, int n, const struct maskinfo_params *p, char *err)
{
    struct mask_info mi;
    assert_int_equal(maskinfo_process(heads, n, p, &mi, err, ERRN), -1);
    assert_null(mi.block_mask);
}

/* Checks every element of 'm' (mask_at and mask_dense_from) against 'want'. */
static void check_mask(const struct mask *m, const char *want)
{
    size_t cells = (size_t)(m->q_len * m->kv_len);
    int32_t *w = calloc(cells + 1, sizeof *w), *got = calloc(cells, sizeof *got);
    assert_int_equal(grid_parse(want, w, cells + 1), cells);
    struct mask *d = mask_dense_from(m);
    for (int64_t i = 0; i < m->q_len; i++)
        for (int64_t j = 0; j < m->kv_len; j++) {
            got[i * m->kv_len + j] = mask_at(m, i, j);
            assert_int_equal(d->dense[i * m->kv_len + j], got[i * m->kv_len + j]);
        }
    check_grid("mask", got, cells, (int)m->kv_len, want);
    mask_free(d);
    free(w);
    free(got);
}

#define LAZY_AND_DENSE(name)                                                                       \
    static void name##_lazy(void **state)                                                          \
    {                                                                                              \
        (void)state;                                                                               \
        name(true);                                                                                \
    }                                                                                              \
    static void name##_dense(void **state)                                                         \
    {                                                                                              \
        (void)state;                                                                               \
        name(false);                                                                               \
    }

/* ---- SplashAttentionMaskTest ---- */

static void test_causal_mask(bool lazy)
{
    struct {
        int64_t q, k, offset;
        const char *want;
    } cases[] = {
        {1, 1, 0, "1"},
        {4, 4, 0, "1000 1100 1110 1111"},           /* square */
        {4, 6, 0, "100000 110000 111000 111100"},   /* wide_rectangle */
        {6, 4, 0, "1000 1100 1110 1111 1111 1111"}, /* tall_rectangle */
        {4, 4, -1, "0000 1000 1100 1110"},          /* negative_offset */
        {4, 4, 1, "1100 1110 1111 1111"},           /* positive_offset */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char spec[64];
        snprintf(spec, sizeof spec, "causal:%lld", (long long)cases[c].offset);
        struct mask *m = mk(spec, cases[c].q, cases[c].k, lazy);
        check_mask(m, cases[c].want);
        mask_free(m);
    }
}
LAZY_AND_DENSE(test_causal_mask)

struct local_case {
    int64_t q, k;
    const char *window; /* "LEFT,RIGHT" */
    const char *want;
};

static void run_local_cases(const struct local_case *cases, size_t n, bool lazy)
{
    for (size_t c = 0; c < n; c++) {
        char spec[64];
        snprintf(spec, sizeof spec, "local:%s:0", cases[c].window);
        struct mask *m = mk(spec, cases[c].q, cases[c].k, lazy);
        check_mask(m, cases[c].want);
        mask_free(m);
    }
}

static void test_local_attention_mask(bool lazy)
{
    static const struct local_case cases[] = {
        {1, 1, "0,none", "1"},
        {4, 4, "1,none", "1111 1111 0111 0011"}, /* left_1 */
        {4, 4, "none,2", "1110 1111 1111 1111"}, /* right_2 */
        {4, 4, "1,1", "1100 1110 0111 0011"},    /* left_1_right_1 */
        {4, 4, "1,0", "1000 1100 0110 0011"},    /* left_1_right_0 */
        {4, 4, "0,2", "1110 0111 0011 0001"},    /* left_0_right_2 */
    };
    run_local_cases(cases, sizeof cases / sizeof cases[0], lazy);
}
LAZY_AND_DENSE(test_local_attention_mask)

static void test_local_attention_mask_wide_rectangle(bool lazy)
{
    static const struct local_case cases[] = {
        {4, 6, "1,none", "111111 111111 011111 001111"},
        {4, 6, "none,2", "111000 111100 111110 111111"},
        {4, 6, "1,1", "110000 111000 011100 001110"},
        {4, 6, "1,0", "100000 110000 011000 001100"},
        {4, 6, "0,2", "111000 011100 001110 000111"},
    };
    run_local_cases(cases, sizeof cases / sizeof cases[0], lazy);
}
LAZY_AND_DENSE(test_local_attention_mask_wide_rectangle)

static void test_local_attention_mask_tall_rectangle(bool lazy)
{
    static const struct local_case cases[] = {
        {6, 4, "1,none", "1111 1111 0111 0011 0001 0000"},
        {6, 4, "none,2", "1110 1111 1111 1111 1111 1111"},
        {6, 4, "1,1", "1100 1110 0111 0011 0001 0000"},
        {6, 4, "1,0", "1000 1100 0110 0011 0001 0000"},
        {6, 4, "0,2", "1110 0111 0011 0001 0000 0000"},
    };
    run_local_cases(cases, sizeof cases / sizeof cases[0], lazy);
}
LAZY_AND_DENSE(test_local_attention_mask_tall_rectangle)

static void test_chunked_causal_mask(bool lazy)
{
    struct {
        int64_t q, k, chunk;
        const char *want;
    } cases[] = {
        {1, 1, 1, "1"},
        {1, 1, 2, "1"},                             /* unit */
        {4, 4, 2, "1000 1100 0010 0011"},           /* square_exact_chunks */
        {5, 5, 3, "10000 11000 11100 00010 00011"}, /* square_uneven_chunks */
        {4, 6, 3, "100000 110000 111000 000100"},   /* wide_rectangle */
        {6, 4, 3, "1000 1100 1110 0001 0001 0001"}, /* tall_rectangle */
        {4, 4, 1, "1000 0100 0010 0001"},           /* chunk_size_1 */
        {4, 4, 4, "1000 1100 1110 1111"},           /* chunk_size == seqlen */
        {4, 4, 5, "1000 1100 1110 1111"},           /* chunk_size > seqlen */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char spec[64];
        snprintf(spec, sizeof spec, "chunked:%lld", (long long)cases[c].chunk);
        struct mask *m = mk(spec, cases[c].q, cases[c].k, lazy);
        check_mask(m, cases[c].want);
        mask_free(m);
    }
}
LAZY_AND_DENSE(test_chunked_causal_mask)

/* _compare_masks: the lazy mask equals the dense one as a whole and block by
 * block.  Here "block by block" means the MaskInfo (block classes, data_next)
 * from the lazy mask's per-row intervals equals the one from scanning the dense
 * mask, for each block size. */
static void compare_masks(struct mask *dense, struct mask *lazy, const int (*blocks)[2], int nb)
{
    struct mask *d = mask_dense_from(lazy);
    size_t cells = (size_t)(dense->q_len * dense->kv_len);
    assert_int_equal(d->q_len, dense->q_len);
    assert_int_equal(d->kv_len, dense->kv_len);
    assert_memory_equal(d->dense, dense->dense, cells);
    mask_free(d);
    for (int b = 0; b < nb; b++) {
        struct maskinfo_params p;
        maskinfo_params_init(&p, blocks[b][0], blocks[b][1]);
        p.shrink_grid = false; /* an all-empty q shard is legal here */
        struct mask_info ml, md;
        process_p(&lazy, 1, &p, &ml);
        process_p(&dense, 1, &p, &md);
        size_t n = (size_t)ml.rows * (size_t)ml.nq * (size_t)ml.nk;
        assert_int_equal(ml.nq * ml.nk, md.nq * md.nk);
        assert_memory_equal(ml.block_mask, md.block_mask, n * sizeof(int32_t));
        assert_memory_equal(ml.data_next, md.data_next, n * sizeof(int32_t));
        maskinfo_free(&ml);
        maskinfo_free(&md);
    }
}

static const int64_t CHUNKING_SHAPES[3][2] = {{1024, 1024}, {1024, 2048}, {2048, 1024}};

static void test_lazy_causal_mask_chunking(void **state)
{
    (void)state;
    static const int blocks[3][2] = {{256, 256}, {256, 128}, {128, 256}};
    for (int s = 0; s < 3; s++) {
        int64_t q = CHUNKING_SHAPES[s][0], k = CHUNKING_SHAPES[s][1];
        struct mask *dense = make_causal(q, k, 0), *lazy = mask_new_causal(q, k, 0);
        compare_masks(dense, lazy, blocks, 3);
        mask_free(dense);
        mask_free(lazy);
    }
}

static void test_lazy_local_mask_chunking(void **state)
{
    (void)state;
    /* upstream parameters: (block_size, shape, window_size, offset) for each shape */
    static const struct {
        int block[2];
        int64_t left, right, offset;
    } params[] = {
        {{256, 256}, 128, -1, 0},  {{256, 128}, 128, -1, 16}, {{128, 256}, 128, -1, 16},
        {{256, 256}, 128, 256, 0}, {{256, 128}, 128, 256, 0}, {{128, 256}, 128, 256, 16},
        {{256, 256}, -1, 256, 0},  {{256, 128}, -1, 256, 32}, {{128, 256}, -1, 256, 32},
    };
    for (int s = 0; s < 3; s++) {
        for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
            int64_t q = CHUNKING_SHAPES[s][0], k = CHUNKING_SHAPES[s][1];
            struct mask *dense =
                make_local(q, k, params[i].left, params[i].right, params[i].offset);
            struct mask *lazy =
                mask_new_local(q, k, params[i].left, params[i].right, params[i].offset);
            compare_masks(dense, lazy, &params[i].block, 1);
            mask_free(dense);
            mask_free(lazy);
        }
    }
}

static void test_lazy_chunked_causal_mask_chunking(void **state)
{
    (void)state;
    static const int blocks[3][2] = {{128, 128}, {256, 128}, {128, 256}};
    static const int64_t shapes[3][2] = {{512, 512}, {512, 1024}, {1024, 512}};
    static const int64_t chunks[] = {64, 128, 256, 512, 1024};
    for (int s = 0; s < 3; s++) {
        for (int c = 0; c < 5; c++) {
            int64_t q = shapes[s][0], k = shapes[s][1];
            struct mask *dense = make_chunk(q, k, chunks[c]);
            struct mask *lazy = mask_new_chunked(q, k, chunks[c]);
            compare_masks(dense, lazy, blocks, 3);
            mask_free(dense);
            mask_free(lazy);
        }
    }
}

static void test_chunked_causal_mask_invalid_chunk_size(void **state)
{
    (void)state;
    char err[ERRN];
    assert_null(mask_new_chunked(10, 10, 0));
    assert_null(mask_new_chunked(10, 10, -1));
    assert_null(mask_parse_spec("chunked:0", 10, 10, err, sizeof err));
    assert_non_null(strstr(err, "chunk_size must be positive"));
    assert_null(mask_parse_spec("chunked:-1", 10, 10, err, sizeof err));
    assert_non_null(strstr(err, "chunk_size must be positive"));
}

static void test_chunked_causal_mask_minimal_equality_hash(void **state)
{
    (void)state;
    struct mask *m1 = mask_new_chunked(128, 256, 16), *m2 = mask_new_chunked(128, 256, 16);
    struct mask *diff_shape = mask_new_chunked(128, 128, 16);
    struct mask *diff_chunk = mask_new_chunked(128, 256, 32);
    struct mask *other = mask_new_causal(128, 256, 0);
    assert_true(mask_equal(m1, m2));
    assert_false(mask_equal(m1, diff_shape));
    assert_false(mask_equal(m1, diff_chunk));
    assert_false(mask_equal(m1, other));
    /* {mask1, mask2, mask_diff_chunk} has 2 elements: as heads, 2 unique masks */
    struct mask *heads[3] = {m1, m2, diff_chunk};
    struct mask_info mi;
    process(heads, 3, 128, 128, false, 1, 1, &mi);
    assert_int_equal(mi.rows, 3); /* more than one mask in the head shard */
    assert_false(mi.computable);
    maskinfo_free(&mi);
    struct mask *same[2] = {m1, m2};
    process(same, 2, 128, 128, false, 1, 1, &mi);
    assert_int_equal(mi.rows, 1);
    assert_true(mi.computable);
    maskinfo_free(&mi);
    mask_free(m1);
    mask_free(m2);
    mask_free(diff_shape);
    mask_free(diff_chunk);
    mask_free(other);
}

/* make_random_mask(shape, 0.5, seed) uses numpy's generator; an xorshift stands
 * in for it (only the lazy-vs-dense comparison matters). */
static struct mask *random_mask(int64_t q, int64_t k, uint64_t seed)
{
    uint8_t *d = malloc((size_t)(q * k));
    uint64_t x = seed * 0x9E3779B97F4A7C15u + 1;
    for (int64_t i = 0; i < q * k; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d[i] = (uint8_t)(x >> 63);
    }
    struct mask *m = mask_new_dense(q, k, d);
    free(d);
    return m;
}

static const int64_t LOGICAL_SHAPES[3][2] = {{256, 256}, {512, 256}, {512, 256}};
static const int BLOCK_256[1][2] = {{256, 256}};

static void lazy_logical(enum mask_kind kind)
{
    for (int s = 0; s < 3; s++) {
        int64_t q = LOGICAL_SHAPES[s][0], k = LOGICAL_SHAPES[s][1];
        struct mask *m1 = random_mask(q, k, 1), *m2 = random_mask(q, k, 2);
        uint8_t *d = malloc((size_t)(q * k));
        for (int64_t i = 0; i < q * k; i++)
            d[i] = kind == MASK_OR ? (m1->dense[i] | m2->dense[i]) : (m1->dense[i] & m2->dense[i]);
        struct mask *dense = mask_new_dense(q, k, d);
        char err[ERRN];
        struct mask *lazy = mask_new_logical(kind, m1, m2, err, sizeof err);
        assert_non_null(lazy);
        for (int64_t i = 0; i < q; i += 37)
            for (int64_t j = 0; j < k; j += 11)
                assert_int_equal(mask_at(lazy, i, j), d[i * k + j]);
        compare_masks(dense, lazy, BLOCK_256, 1);
        free(d);
        mask_free(dense);
        mask_free(lazy);
    }
}

static void test_lazy_mask_or(void **state)
{
    (void)state;
    lazy_logical(MASK_OR);
}

static void test_lazy_mask_and(void **state)
{
    (void)state;
    lazy_logical(MASK_AND);
}

static void test_lazy_multi_head_mask(void **state)
{
    (void)state;
    for (int s = 0; s < 3; s++) {
        int64_t q = LOGICAL_SHAPES[s][0], k = LOGICAL_SHAPES[s][1];
        struct mask *heads[2] = {random_mask(q, k, 1), random_mask(q, k, 2)};
        struct mask_info mi;
        process(heads, 2, 256, 256, false, 1, 1, &mi);
        assert_int_equal(mi.rows, 2);
        for (int h = 0; h < 2; h++) /* a random 256x256 block is always partial */
            for (int i = 0; i < mi.nq * mi.nk; i++)
                assert_int_equal(mi.block_mask[h * mi.nq * mi.nk + i], 1);
        assert_int_equal(mi.num_partial, 2 * mi.nq * mi.nk);
        assert_memory_equal(mi.partial_blocks, heads[0]->dense, 256 * 256); /* first block */
        maskinfo_free(&mi);
        free_heads(heads, 2);
    }
}

static void test_lazy_full_mask(void **state)
{
    (void)state;
    for (int s = 0; s < 3; s++) {
        int64_t q = LOGICAL_SHAPES[s][0], k = LOGICAL_SHAPES[s][1];
        uint8_t *ones = malloc((size_t)(q * k));
        memset(ones, 1, (size_t)(q * k));
        struct mask *dense = mask_new_dense(q, k, ones), *lazy = mask_new_full(q, k);
        compare_masks(dense, lazy, BLOCK_256, 1);
        assert_false(mask_equal(dense, lazy)); /* NumpyMask != FullMask */
        free(ones);
        mask_free(dense);
        mask_free(lazy);
    }
}

/* ---- SplashAttentionMaskInfoTest: class-level expectations ---- */

#define FULL_BM "2222 2222 2222 2222"
#define FULL_DN "0123 0123 0123 0123"
#define FULL_DN_DKV "0000 1111 2222 3333"
#define FULL_MN_UP ".... .... .... ...."
#define CAUSAL_BM "1000 2100 2210 2221"
#define CAUSAL_DN_UP "0... 01.. 012. 0123"
#define CAUSAL_DN_DKV_UP "0... 11.. 222. 3333"
#define CAUSAL_MN0_UP "0... .0.. ..0. ...0"
#define LOCAL_BM "1100 1110 0111 0011"
#define LOCAL_DN_UP "01.. 012. .123 ..23"
#define LOCAL_DN_DKV_UP "00.. 111. .222 ..33"
#define LOCAL_MN1_UP "12.. 312. .312 ..31"
#define ZEROS4 "0000 0000 0000 0000"

static void test_full_mask(bool lazy)
{
    struct mask *heads[1] = {mk("full", 64, 64, lazy)};
    struct mask_info mi;
    process(heads, 1, 16, 16, false, 1, 1, &mi);
    check_want(&mi, want_of(1, 4, 4, FULL_BM, FULL_DN, FULL_DN, NULL, NULL, 0));
    assert_int_equal(mi.elem_bytes, 1);
    maskinfo_free(&mi);
    process(heads, 1, 16, 16, true, 1, 1, &mi);
    check_want(&mi, want_of(1, 4, 4, FULL_BM, FULL_DN_DKV, FULL_DN_DKV, NULL, NULL, 0));
    maskinfo_free(&mi);
    free_heads(heads, 1);
}
LAZY_AND_DENSE(test_full_mask)

static const enum pat PATS_CAUSAL[] = {PAT_TRIL};
static const enum pat PATS_LOCAL[] = {PAT_BAND8, PAT_LOWER8, PAT_UPPER8};
static const enum pat PATS_NARROW[] = {PAT_NARROW8, PAT_UPPER8};
static const enum pat PATS_CAUSAL_LOCAL[] = {PAT_TRIL, PAT_BAND8, PAT_LOWER8, PAT_UPPER8};
static const enum pat PATS_WIDE_NARROW[] = {PAT_BAND8, PAT_LOWER8, PAT_UPPER8, PAT_NARROW8};

/* Runs fwd and dkv on 'heads' and checks both against 'fwd' / 'dkv'. */
static void fwd_and_dkv(struct mask **heads, int n, int head_shards, int q_seq_shards,
                        struct want fwd, struct want dkv, bool computable, const enum pat *pats,
                        int npats)
{
    for (int d = 0; d < 2; d++) {
        struct mask_info mi;
        process(heads, n, 16, 16, d == 1, head_shards, q_seq_shards, &mi);
        check_variant(&mi, d ? &dkv : &fwd, computable);
        if (!computable)
            check_partials(&mi, pats, npats);
        maskinfo_free(&mi);
    }
}

static void test_two_causal_masks(bool lazy)
{
    struct mask *heads[2] = {mk("causal", 64, 64, lazy), mk("causal", 64, 64, lazy)};
    struct want fwd =
        want_of(1, 4, 4, CAUSAL_BM, CAUSAL_DN_UP, "0000 0100 0120 0123", CAUSAL_MN0_UP, ZEROS4, 1);
    struct want dkv = want_of(1, 4, 4, CAUSAL_BM, CAUSAL_DN_DKV_UP, "0000 1100 2220 3333",
                              CAUSAL_MN0_UP, ZEROS4, 1);
    fwd_and_dkv(heads, 2, 1, 1, fwd, dkv, lazy, PATS_CAUSAL, 1);
    free_heads(heads, 2);
}
LAZY_AND_DENSE(test_two_causal_masks)

static void test_rectangular_wide_causal_mask(bool lazy)
{
    struct mask *heads[1] = {mk("causal", 64, 128, lazy)};
    struct want fwd =
        want_of(1, 4, 4, CAUSAL_BM, CAUSAL_DN_UP, "0000 0100 0120 0123", CAUSAL_MN0_UP, ZEROS4, 1);
    struct want dkv =
        want_of(1, 4, 8, "10000000 21000000 22100000 22210000",
                "0....... 11...... 222..... 3333....", "00000000 11000000 22200000 33330000",
                "0....... .0...... ..0..... ...0....", "00000000 00000000 00000000 00000000", 1);
    fwd_and_dkv(heads, 1, 1, 1, fwd, dkv, lazy, PATS_CAUSAL, 1);
    free_heads(heads, 1);
}
LAZY_AND_DENSE(test_rectangular_wide_causal_mask)

static void test_rectangular_tall_causal_mask(bool lazy)
{
    struct mask *heads[1] = {mk("causal", 128, 64, lazy)};
    const char *bm = "1000 2100 2210 2221 2222 2222 2222 2222";
    const char *mn_up = "0... .0.. ..0. ...0 .... .... .... ....";
    const char *mn = ZEROS4 " " ZEROS4;
    struct want fwd = want_of(1, 8, 4, bm, "0... 01.. 012. 0123 0123 0123 0123 0123",
                              "0000 0100 0120 0123 0123 0123 0123 0123", mn_up, mn, 1);
    struct want dkv = want_of(1, 8, 4, bm, "0... 11.. 222. 3333 4444 5555 6666 7777",
                              "0000 1100 2220 3333 4444 5555 6666 7777", mn_up, mn, 1);
    fwd_and_dkv(heads, 1, 1, 1, fwd, dkv, lazy, PATS_CAUSAL, 1);
    free_heads(heads, 1);
}
LAZY_AND_DENSE(test_rectangular_tall_causal_mask)

static struct want local_fwd(void)
{
    return want_of(1, 4, 3, "110 111 111 110", "01. 012 123 23.", "010 012 123 230",
                   "01. 201 201 20.", "010 201 201 200", 3);
}
static struct want local_dkv(void)
{
    return want_of(1, 3, 4, "0110 1111 1111", ".01. 0122 1233", "0010 0122 1233", ".11. 0001 2220",
                   "0110 0001 2220", 3);
}

static void test_local_mask(bool lazy)
{
    struct mask *heads[1] = {mk("local:8,8", 64, 64, lazy)};
    fwd_and_dkv(heads, 1, 1, 1, local_fwd(), local_dkv(), lazy, PATS_LOCAL, 3);
    free_heads(heads, 1);
}
LAZY_AND_DENSE(test_local_mask)

static void test_local_mask_narrow(bool lazy)
{
    struct mask *heads[1] = {mk("local:8,0", 64, 64, lazy)};
    struct want fwd = want_of(1, 4, 2, "10 11 11 11", "0. 01 12 23", "00 01 12 23", "0. 10 10 10",
                              "00 10 10 10", 2);
    struct want dkv =
        want_of(1, 2, 4, "1110 1111", "012. 1233", "0120 1233", "000. 1110", "0000 1110", 2);
    fwd_and_dkv(heads, 1, 1, 1, fwd, dkv, lazy, PATS_NARROW, 2);
    free_heads(heads, 1);
}
LAZY_AND_DENSE(test_local_mask_narrow)

/* Expectations shared by the causal+local tests with one mask per head shard. */
static struct want causal_local_fwd(void)
{
    return want_of(2, 4, 4, CAUSAL_BM " " LOCAL_BM, CAUSAL_DN_UP " " LOCAL_DN_UP,
                   "0000 0100 0120 0123  0100 0121 1123 2223", CAUSAL_MN0_UP " " LOCAL_MN1_UP,
                   ZEROS4 "  1233 3123 3312 3331", 4);
}
static struct want causal_local_dkv(void)
{
    return want_of(2, 4, 4, CAUSAL_BM " " LOCAL_BM, CAUSAL_DN_DKV_UP " " LOCAL_DN_DKV_UP,
                   "0123 1123 2223 3333  0012 1112 0222 0133", CAUSAL_MN0_UP " " LOCAL_MN1_UP,
                   ZEROS4 "  1222 3122 2312 2231", 4);
}

static void test_two_head_shards_one_causal_one_local(bool lazy)
{
    struct mask *heads[2] = {mk("causal", 64, 64, lazy), mk("local:8,8", 64, 64, lazy)};
    fwd_and_dkv(heads, 2, 2, 1, causal_local_fwd(), causal_local_dkv(), false, PATS_CAUSAL_LOCAL,
                4);
    free_heads(heads, 2);
}
LAZY_AND_DENSE(test_two_head_shards_one_causal_one_local)

static void test_two_head_shards_causal_full(bool lazy)
{
    struct mask *heads[2] = {mk("causal", 64, 64, lazy), mk("full", 64, 64, lazy)};
    struct want fwd =
        want_of(2, 4, 4, CAUSAL_BM " " FULL_BM, CAUSAL_DN_UP " " FULL_DN,
                "0000 0100 0120 0123 " FULL_DN, CAUSAL_MN0_UP " " FULL_MN_UP, ZEROS4 " " ZEROS4, 1);
    struct want dkv = want_of(2, 4, 4, CAUSAL_BM " " FULL_BM, CAUSAL_DN_DKV_UP " " FULL_DN_DKV,
                              "0123 1123 2223 3333 " FULL_DN_DKV, CAUSAL_MN0_UP " " FULL_MN_UP,
                              ZEROS4 " " ZEROS4, 1);
    fwd_and_dkv(heads, 2, 2, 1, fwd, dkv, false, PATS_CAUSAL, 1);
    free_heads(heads, 2);
}
LAZY_AND_DENSE(test_two_head_shards_causal_full)

static void test_two_qseq_shards_causal_local(bool lazy)
{
    struct mask *heads[2] = {mk("causal", 64, 64, lazy), mk("local:8,8", 64, 64, lazy)};
    struct want fwd =
        want_of(2, 4, 4, CAUSAL_BM " " LOCAL_BM, CAUSAL_DN_UP " " LOCAL_DN_UP,
                "0000 0100 0120 0123  0100 0120 1123 2223", CAUSAL_MN0_UP " " LOCAL_MN1_UP,
                "0000 0011 0000 0000  1233 3120 3312 3331", 4);
    /* data_next of dkv is relative to the q shard: upstream spells it out */
    struct want dkv =
        want_of(2, 4, 4, CAUSAL_BM " " LOCAL_BM, "0... 11.. 000. 1111  00.. 111. .000 ..11",
                "0110 1110 0001 1111  0010 1110 0000 0011", CAUSAL_MN0_UP " " LOCAL_MN1_UP,
                "0020 1020 3300 3310  1220 3120 3312 3031", 4);
    fwd_and_dkv(heads, 2, 1, 2, fwd, dkv, false, PATS_CAUSAL_LOCAL, 4);
    free_heads(heads, 2);
}
LAZY_AND_DENSE(test_two_qseq_shards_causal_local)

static void test_two_qseq_shards_causal_local_stacked(void **state)
{
    (void)state;
    struct mask *heads[1] = {stack_rows(make_causal(64, 64, 0), make_local(64, 64, 8, 8, 0))};
    struct want fwd =
        want_of(1, 8, 4, CAUSAL_BM " 1100 1110 1110 1100", CAUSAL_DN_UP " 01.. 012. 123. 23..",
                "0000 0100 0120 0123  0100 0122 1233 2300", CAUSAL_MN0_UP " 12.. 312. 312. 31..",
                ZEROS4 "  1200 3122 3122 3100", 4);
    /* TODO upstream: "this mask can be improved by bringing all the padding on one side" */
    struct want dkv =
        want_of(1, 8, 4, CAUSAL_BM " 0110 1111 1111 0000", CAUSAL_DN_DKV_UP " .01. 0122 1233 ....",
                "0000 1100 2220 3333  0010 0122 1233 1233", CAUSAL_MN0_UP " .22. 1112 3331 ....",
                ZEROS4 "  0220 1112 3331 3331", 4);
    fwd_and_dkv(heads, 1, 1, 2, fwd, dkv, false, PATS_CAUSAL_LOCAL, 4);
    free_heads(heads, 1);
}

static void test_two_qseq_shards_local_wide_local_narrow_stacked(void **state)
{
    (void)state;
    struct mask *heads[1] = {stack_rows(make_local(64, 64, 8, 8, 0), make_local(64, 64, 8, 0, 0))};
    struct want fwd =
        want_of(1, 8, 3, "110 111 111 110  100 110 110 110", "01. 012 123 23.  0.. 01. 12. 23.",
                "010 012 123 230  000 011 122 233", "01. 201 201 20.  3.. 23. 23. 23.",
                "010 201 201 200  300 233 233 233", 4);
    struct want dkv =
        want_of(1, 6, 4, "0110 1111 1111  1110 1111 0000", ".01. 0122 1233  012. 1233 ....",
                "0010 0122 1233  0120 1233 1233", ".11. 0001 2220  333. 2223 ....",
                "0110 0001 2220  3330 2223 2223", 4);
    fwd_and_dkv(heads, 1, 1, 2, fwd, dkv, false, PATS_WIDE_NARROW, 4);
    free_heads(heads, 1);
}

static void test_two_head_shards_causal_mask(bool lazy)
{
    struct mask *heads[2] = {mk("causal", 64, 64, lazy), mk("causal", 64, 64, lazy)};
    struct want fwd = want_of(2, 4, 4, CAUSAL_BM " " CAUSAL_BM, CAUSAL_DN_UP " " CAUSAL_DN_UP,
                              "0000 0100 0120 0123  0000 0100 0120 0123",
                              CAUSAL_MN0_UP " " CAUSAL_MN0_UP, ZEROS4 " " ZEROS4, 1);
    struct want dkv =
        want_of(2, 4, 4, CAUSAL_BM " " CAUSAL_BM, CAUSAL_DN_DKV_UP " " CAUSAL_DN_DKV_UP,
                "0000 1100 2220 3333  0000 1100 2220 3333", CAUSAL_MN0_UP " " CAUSAL_MN0_UP,
                ZEROS4 " " ZEROS4, 1);
    fwd_and_dkv(heads, 2, 2, 1, fwd, dkv, lazy, PATS_CAUSAL, 1);
    free_heads(heads, 2);
}
LAZY_AND_DENSE(test_two_head_shards_causal_mask)

static void test_two_head_shards_two_causal_two_local(bool lazy)
{
    struct mask *heads[4] = {mk("causal", 64, 64, lazy), mk("causal", 64, 64, lazy),
                             mk("local:8,8", 64, 64, lazy), mk("local:8,8", 64, 64, lazy)};
    fwd_and_dkv(heads, 4, 2, 1, causal_local_fwd(), causal_local_dkv(), false, PATS_CAUSAL_LOCAL,
                4);
    free_heads(heads, 4);
}
LAZY_AND_DENSE(test_two_head_shards_two_causal_two_local)

static void test_huge_mask(void **state)
{
    (void)state;
    struct mask *heads[64];
    for (int h = 0; h < 64; h++)
        heads[h] = mask_new_causal(32 * 1024, 32 * 1024, 0);
    struct mask_info mi;
    process(heads, 64, 512, 1024, false, 8, 16, &mi);
    assert_true(mi.computable);
    assert_non_null(mi.block_mask);
    assert_non_null(mi.data_next);
    assert_null(mi.mask_next);
    assert_null(mi.partial_blocks);
    /* shape from upstream's implementation: one row per head shard, width 32 */
    assert_int_equal(mi.rows, 8);
    assert_int_equal(mi.nq, 64);
    assert_int_equal(mi.nk, 32);
    maskinfo_free(&mi);
    free_heads(heads, 64);
}

static void test_huge_mask2(void **state)
{
    (void)state;
    struct mask *heads[32];
    for (int h = 0; h < 32; h++)
        heads[h] = mask_new_local(32 * 1024, 32 * 1024, 8, 8, 0);
    struct mask_info mi;
    process(heads, 32, 1024, 1024, false, 1, 1, &mi);
    assert_true(mi.computable);
    assert_null(mi.mask_next);
    assert_null(mi.partial_blocks);
    assert_int_equal(mi.rows, 1);
    assert_int_equal(mi.nq, 32);
    assert_int_equal(mi.nk, 3);
    maskinfo_free(&mi);
    free_heads(heads, 32);
}

static void test_process_invalid_mask(void **state)
{
    (void)state;
    uint8_t ones[32 * 32];
    memset(ones, 1, sizeof ones);
    char err[ERRN] = "";
    int failed = 0;
    for (int h = 0; h < 4; h++) {
        if (h == 2)
            memset(ones + 14 * 32, 0, 32); /* invalid_mask[2, 14, :] = False */
        struct mask *m = mask_new_dense(32, 32, ones);
        if (mask_check_rows(m, err, sizeof err))
            failed++;
        mask_free(m);
        memset(ones, 1, sizeof ones);
    }
    assert_int_equal(failed, 1);
    assert_non_null(strstr(err, "softmax"));
}

static void check_dynamic_blocks(const struct mask_info *mi, const char *const *blocks)
{
    assert_int_equal(mi->num_partial, 8);
    for (int b = 0; b < 8; b++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                uint8_t got = mi->is_dkv ? mi->partial_blocks[b * 8 + j * 2 + i]
                                         : mi->partial_blocks[b * 8 + i * 4 + j];
                assert_int_equal(got, blocks[b][i * 5 + j] - '0');
            }
}

static void test_dynamic_mask(bool dkv)
{
    static const char *const blocks[8] = {"1000 1100", "0000 0000", "1110 1111", "0000 0000",
                                          "1111 1111", "1000 1100", "1111 1111", "1110 1111"};
    struct mask *heads[1] = {make_causal(8, 8, 0)};
    struct maskinfo_params p;
    maskinfo_params_init(&p, 2, 4);
    p.is_dkv = dkv;
    p.dynamic = true;
    struct mask_info mi;
    process_p(heads, 1, &p, &mi);
    assert_true(mi.dynamic);
    assert_int_equal(mi.rows, 1);
    assert_int_equal(mi.nq, 4);
    assert_int_equal(mi.nk, 2);
    check_grid("block_mask", mi.block_mask, 8, 2, "10 10 21 21");
    check_dynamic_blocks(&mi, blocks);
    check_grid("mask_next", mi.mask_next, 8, 2, "00 20 05 07");
    check_grid("data_next", mi.data_next, 8, 2, dkv ? "00 10 22 33" : "00 00 01 01");
    assert_int_equal(mi.block_mask_bytes, 1);
    assert_int_equal(mi.data_next_bytes, 1);
    assert_int_equal(mi.mask_next_bytes, 1);
    maskinfo_free(&mi);
    free_heads(heads, 1);
}

static void test_dynamic_mask_fwd(void **state)
{
    (void)state;
    test_dynamic_mask(false);
}

static void test_dynamic_mask_dkv(void **state)
{
    (void)state;
    test_dynamic_mask(true);
}

/* ---- beyond the upstream test file ---- */

/* docs/pallas-semantics.md section 4 (MaskInfo): local window (8,8), 64x64, block
 * 16x16; full arrays including the entries the kernel does not read. */
static void test_maskinfo_process_doc_worked_example(void **state)
{
    (void)state;
    struct mask *m = mask_new_local(64, 64, 8, 8, 0);
    struct maskinfo_params p;
    maskinfo_params_init(&p, 16, 16);
    struct mask_info mi;
    process_p(&m, 1, &p, &mi);
    check_grid("fwd block_mask", mi.block_mask, 12, 3, "[[1,1,0],[1,1,1],[1,1,1],[1,1,0]]");
    check_grid("fwd data_next", mi.data_next, 12, 3, "[[0,1,0],[0,1,2],[1,2,3],[2,3,0]]");
    assert_null(mi.mask_next); /* computable: the kernel evaluates the mask */
    maskinfo_free(&mi);
    struct mask *d = mask_dense_from(m);
    process_p(&d, 1, &p, &mi);
    check_grid("fwd mask_next", mi.mask_next, 12, 3, "[[0,1,0],[2,0,1],[2,0,1],[2,0,0]]");
    assert_int_equal(mi.num_partial, 3);
    maskinfo_free(&mi);
    p.is_dkv = true;
    process_p(&d, 1, &p, &mi);
    check_grid("dkv block_mask", mi.block_mask, 12, 4, "[[0,1,1,0],[1,1,1,1],[1,1,1,1]]");
    check_grid("dkv data_next", mi.data_next, 12, 4, "[[0,0,1,0],[0,1,2,2],[1,2,3,3]]");
    check_grid("dkv mask_next", mi.mask_next, 12, 4, "[[0,1,1,0],[0,0,0,1],[2,2,2,0]]");
    assert_int_equal(maskinfo_grid_width(&mi), 3);
    maskinfo_free(&mi);
    mask_free(d);
    mask_free(m);
}

/* S = 8192 causal with 512 blocks: 16 x 16 grid, 136 blocks on or below the diagonal. */
static void test_maskinfo_process_causal_8192(void **state)
{
    (void)state;
    struct mask *m = mask_new_causal(8192, 8192, 0);
    for (int dkv = 0; dkv < 2; dkv++) {
        struct mask_info mi;
        process(&m, 1, 512, 512, dkv, 1, 1, &mi);
        assert_int_equal(maskinfo_nonempty_blocks(&mi), 136);
        assert_int_equal(mi.nq * mi.nk, 256); /* the widest row/column keeps all 16 */
        assert_int_equal(maskinfo_grid_width(&mi), 16);
        assert_float_equal(maskinfo_skipped_fraction(&mi), 120.0 / 256.0, 1e-12);
        assert_true(mi.computable);
        assert_int_equal(mi.elem_bytes, 1);
        maskinfo_free(&mi);
    }
    mask_free(m);
}

static void test_maskinfo_process_errors(void **state)
{
    (void)state;
    struct mask *heads[2] = {mask_new_causal(64, 64, 0), mask_new_causal(64, 64, 0)};
    struct maskinfo_params p;
    char err[ERRN];
    static const struct {
        int bq, bkv, hs, qs;
        const char *msg;
    } cases[] = {
        {48, 16, 1, 1, "q_block_size=48 should divide q_seq_len=64."},
        {16, 48, 1, 1, "kv_block_size=48 should divide kv_seq_len=64."},
        {16, 16, 1, 3, "q_seq_shards=3 should divide q_seq_len=64."},
        {64, 16, 1, 2, "q_block_size=64 should divide q_seq_len_per_shard=32."},
        {16, 16, 3, 1, "head_shards=3 should divide head_count=2."},
    };
    for (int dyn = 0; dyn < 2; dyn++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            maskinfo_params_init(&p, cases[c].bq, cases[c].bkv);
            p.head_shards = cases[c].hs;
            p.q_seq_shards = cases[c].qs;
            p.dynamic = dyn;
            process_err(heads, 2, &p, err);
            assert_string_equal(err, cases[c].msg);
        }
    }
    maskinfo_params_init(&p, 16, 16);
    process_err(heads, 0, &p, err);
    assert_string_equal(err, "Unsupported empty tuple of masks");
    p.bq = 0;
    process_err(heads, 2, &p, err);
    assert_non_null(strstr(err, "must be positive"));
    mask_free(heads[1]);
    heads[1] = mask_new_causal(64, 32, 0);
    maskinfo_params_init(&p, 16, 16);
    process_err(heads, 2, &p, err);
    assert_string_equal(err, "Unexpected mask shape, got: (64, 32), expected: (64, 64)");
    free_heads(heads, 2);
}

/* Issue 18.9: heads x (Q/bq) x (K/bkv) overflowed int64 (UBSan) and the
 * wrapped count passed the size check, then asked for 2^64 bytes. */
static void test_maskinfo_process_huge_shapes(void **state)
{
    (void)state;
    struct maskinfo_params p;
    char err[ERRN];
    static const int64_t shapes[][2] = {{4294967297LL, 4294967295LL},
                                        {INT64_MAX, INT64_MAX},
                                        {(int64_t)1 << 40, (int64_t)1 << 40}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct mask *m = mask_new_full(shapes[i][0], shapes[i][1]);
        maskinfo_params_init(&p, 1, 1);
        process_err(&m, 1, &p, err);
        assert_non_null(strstr(err, "mask info too large"));
        mask_free(m);
    }
}

/* Where upstream's numpy code fails rather than raising a ValueError. */
static void test_maskinfo_process_upstream_failures(void **state)
{
    (void)state;
    struct maskinfo_params p;
    char err[ERRN];
    struct mask *m = mask_new_causal(64, 64, -64); /* all empty: shrinking asserts */
    maskinfo_params_init(&p, 16, 16);
    process_err(&m, 1, &p, err);
    assert_non_null(strstr(err, "assert current_block_mask.size > 0"));
    p.shrink_grid = false; /* without shrinking it is fine: all zeros */
    struct mask_info mi;
    process_p(&m, 1, &p, &mi);
    check_grid("block_mask", mi.block_mask, 16, 4, ZEROS4);
    check_grid("data_next", mi.data_next, 16, 4, ZEROS4);
    maskinfo_free(&mi);
    mask_free(m);
    m = mask_new_full(64, 64); /* no partial block, two q shards: nothing to concatenate */
    maskinfo_params_init(&p, 16, 16);
    p.q_seq_shards = 2;
    process_err(&m, 1, &p, err);
    assert_non_null(strstr(err, "need at least one array to concatenate"));
    mask_free(m);
}

static void test_maskinfo_process_no_shrink(void **state)
{
    (void)state;
    struct mask *m = make_local(64, 64, 8, 8, 0);
    struct maskinfo_params p;
    maskinfo_params_init(&p, 16, 16);
    p.shrink_grid = false;
    struct mask_info mi;
    process_p(&m, 1, &p, &mi);
    check_want(&mi, want_of(1, 4, 4, LOCAL_BM, LOCAL_DN_UP, "0100 0121 1123 2223",
                            "01.. 201. .201 ..20", "0122 2012 2201 2220", 3));
    assert_false(mi.shrunk);
    maskinfo_free(&mi);
    p.is_dkv = true;
    process_p(&m, 1, &p, &mi);
    check_want(&mi, want_of(1, 4, 4, LOCAL_BM, LOCAL_DN_DKV_UP, "0012 1112 0222 0133",
                            "01.. 201. .201 ..20", "0111 2011 1201 1120", 3));
    maskinfo_free(&mi);
    mask_free(m);
}

/* Steps after the last non-empty block wrap to the FIRST non-empty block, which
 * here is not block (0, 0): a diagonal shifted by one block. */
static void test_maskinfo_process_wraps_to_first_nonempty(void **state)
{
    (void)state;
    struct mask *up = make_local(64, 64, 0, 0, 16), *down = make_local(64, 64, 0, 0, -16);
    struct maskinfo_params p;
    maskinfo_params_init(&p, 16, 16);
    p.shrink_grid = false;
    struct mask_info mi;
    process_p(&up, 1, &p, &mi);
    check_want(&mi, want_of(1, 4, 4, "0100 0010 0001 0000", ".1.. ..2. ...3 ....",
                            "1122 2223 3333 1111", ".0.. ..0. ...0 ....", ZEROS4, 1));
    maskinfo_free(&mi);
    p.is_dkv = true;
    process_p(&down, 1, &p, &mi);
    check_want(&mi, want_of(1, 4, 4, "0000 1000 0100 0010", ".... 1... .2.. ..3.",
                            "1231 1231 2231 2331", ".... 0... .0.. ..0.", ZEROS4, 1));
    maskinfo_free(&mi);
    p.shrink_grid = true; /* the empty last q row keeps one padded step */
    p.is_dkv = false;
    process_p(&up, 1, &p, &mi);
    check_want(&mi, want_of(1, 4, 1, "1 1 1 0", "1 2 3 .", "1 2 3 0", "0 0 0 .", "0 0 0 0", 1));
    maskinfo_free(&mi);
    mask_free(up);
    mask_free(down);
}

/* Head shards and q shards together, one (different) mask per head shard. */
static void test_maskinfo_process_head_and_q_shards(void **state)
{
    (void)state;
    struct mask *heads[4] = {make_local(64, 64, 8, 0, 0), make_local(64, 64, 8, 0, 0),
                             make_causal(64, 64, 0), make_causal(64, 64, 0)};
    struct want fwd = want_of(2, 4, 4, "1000 1100 0110 0011  1000 2100 2210 2221", NULL,
                              "0000 0100 1122 2223  0000 0100 0120 0123", NULL,
                              "0111 1000 1101 1110  2222 2222 2222 2222", 3);
    struct want dkv = want_of(2, 4, 4, "1000 1100 0110 0011  1000 2100 2210 2221", NULL,
                              "0100 1100 0001 0011  0100 1100 0001 1111", NULL,
                              "0000 1000 1100 1010  2222 2222 2222 2222", 3);
    fwd.dn_up = fwd.dn;
    fwd.mn_up = fwd.mn;
    dkv.dn_up = dkv.dn;
    dkv.mn_up = dkv.mn;
    static const enum pat pats[] = {PAT_NARROW8, PAT_UPPER8, PAT_TRIL};
    fwd_and_dkv(heads, 4, 2, 2, fwd, dkv, false, pats, 3);
    free_heads(heads, 4);
}

/* Identical partial blocks of different masks share one id (dedup by content). */
static void test_maskinfo_process_dedup_across_masks(void **state)
{
    (void)state;
    struct mask *heads[2] = {mask_new_causal(64, 64, 0), make_causal(64, 64, 0)};
    struct mask_info mi;
    process(heads, 2, 16, 16, false, 1, 1, &mi);
    assert_int_equal(mi.rows, 2); /* CausalMask != NumpyMask: two masks in the shard */
    assert_false(mi.computable);
    check_partials(&mi, PATS_CAUSAL, 1);
    check_grid("mask_next", mi.mask_next, 32, 4, ZEROS4 " " ZEROS4);
    maskinfo_free(&mi);
    free_heads(heads, 2);
}

/* local(8,8) & causal is not computable; its MaskInfo is that of NumpyMask(local(8,0)). */
static void test_maskinfo_process_and_mask(void **state)
{
    (void)state;
    char err[ERRN];
    struct mask *m = mask_new_logical(MASK_AND, mask_new_local(64, 64, 8, 8, 0),
                                      mask_new_causal(64, 64, 0), err, sizeof err);
    struct mask *narrow = make_local(64, 64, 8, 0, 0);
    for (int dkv = 0; dkv < 2; dkv++) {
        struct mask_info a, b;
        process(&m, 1, 16, 16, dkv, 1, 1, &a);
        process(&narrow, 1, 16, 16, dkv, 1, 1, &b);
        size_t n = (size_t)a.rows * (size_t)a.nq * (size_t)a.nk * sizeof(int32_t);
        assert_int_equal(a.nq * a.nk, b.nq * b.nk);
        assert_memory_equal(a.block_mask, b.block_mask, n);
        assert_memory_equal(a.data_next, b.data_next, n);
        assert_memory_equal(a.mask_next, b.mask_next, n);
        assert_int_equal(a.num_partial, 2);
        assert_memory_equal(a.partial_blocks, b.partial_blocks, 2 * 256);
        maskinfo_free(&a);
        maskinfo_free(&b);
    }
    mask_free(m);
    mask_free(narrow);
    m = mask_new_logical(MASK_OR, mask_new_full(4, 4), mask_new_full(4, 8), err, sizeof err);
    assert_null(m);
    assert_string_equal(err, "Invalid shape for other: (4, 8), expected: (4, 4)");
}

/* Dynamic masks with head and q shards: mask_next is the flat block index
 * within each (head shard, q shard) slice; dkv data_next is shard-relative. */
static void test_maskinfo_process_dynamic_shards(void **state)
{
    (void)state;
    struct mask *heads[2] = {mask_new_causal(64, 64, 0), mask_new_local(64, 64, 8, 8, 0)};
    struct maskinfo_params p;
    maskinfo_params_init(&p, 16, 16);
    p.dynamic = true;
    p.head_shards = 2;
    p.q_seq_shards = 2;
    struct mask_info mi;
    for (int dkv = 0; dkv < 2; dkv++) {
        p.is_dkv = dkv;
        process_p(heads, 2, &p, &mi);
        check_grid("block_mask", mi.block_mask, 32, 4, CAUSAL_BM " " LOCAL_BM);
        check_grid("data_next", mi.data_next, 32, 4,
                   dkv ? "0000 1100 0000 1111  0000 1110 0000 0011"
                       : "0000 0100 0120 0123  0100 0120 0123 0023");
        check_grid("mask_next", mi.mask_next, 32, 4, "0000 0500 0020 0007  0100 4560 0123 0067");
        assert_int_equal(mi.num_partial, 32);
        assert_false(mi.shrunk);
        maskinfo_free(&mi);
    }
    free_heads(heads, 2);
}

static void test_maskinfo_process_downcast(void **state)
{
    (void)state;
    struct mask *m = mask_new_causal(2048, 2048, 0);
    struct maskinfo_params p;
    maskinfo_params_init(&p, 8, 8); /* 256 kv blocks: data_next up to 255 */
    struct mask_info mi;
    process_p(&m, 1, &p, &mi);
    assert_int_equal(mi.block_mask_bytes, 1);
    assert_int_equal(mi.data_next_bytes, 2);
    assert_int_equal(mi.mask_next_bytes, 0);
    assert_int_equal(mi.elem_bytes, 2);
    maskinfo_free(&mi);
    p.downcast = false;
    process_p(&m, 1, &p, &mi);
    assert_int_equal(mi.block_mask_bytes, 4);
    assert_int_equal(mi.elem_bytes, 4);
    maskinfo_free(&mi);
    mask_free(m);
    /* dynamic: the type comes from the bound (128 kv blocks), not the values (<= 127) */
    m = mask_new_causal(8, 1024, 0);
    maskinfo_params_init(&p, 8, 8);
    p.dynamic = true;
    process_p(&m, 1, &p, &mi);
    assert_int_equal(mi.block_mask_bytes, 1);
    assert_int_equal(mi.data_next_bytes, 2);
    assert_int_equal(mi.mask_next_bytes, 2);
    maskinfo_free(&mi);
    mask_free(m);
}

static char *print_to_string(const struct mask_info *mi, bool json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    maskinfo_print(f, mi, json);
    fclose(f);
    return buf;
}

static void test_maskinfo_print(void **state)
{
    (void)state;
    struct mask *m = mask_new_local(64, 64, 8, 8, 0);
    struct mask *d = mask_dense_from(m);
    struct maskinfo_params p;
    maskinfo_params_init(&p, 16, 16);
    struct mask_info mi;
    process_p(&m, 1, &p, &mi);
    char *s = print_to_string(&mi, true);
    assert_string_equal(s, "{\"block_mask\":[[[1,1,0],[1,1,1],[1,1,1],[1,1,0]]],"
                           "\"data_next\":[[[0,1,0],[0,1,2],[1,2,3],[2,3,0]]],"
                           "\"mask_next\":null,\"num_partial_blocks\":0,\"grid_width\":3,"
                           "\"skipped_fraction\":0.375}\n");
    free(s);
    maskinfo_free(&mi);
    process_p(&d, 1, &p, &mi);
    s = print_to_string(&mi, true);
    assert_non_null(strstr(s, "\"mask_next\":[[[0,1,0],[2,0,1],[2,0,1],[2,0,0]]],"
                              "\"num_partial_blocks\":3,"));
    free(s);
    s = print_to_string(&mi, false);
    assert_non_null(strstr(s, "block_mask [1][4][3]:\n  row 0:\n    1 1 0\n    1 1 1\n"));
    assert_non_null(strstr(s, "mask_next [1][4][3]:\n"));
    assert_non_null(strstr(s, "num_partial_blocks: 3\n"));
    assert_non_null(strstr(s, "grid_width: 3\n"));
    assert_non_null(strstr(s, "skipped_fraction: 0.375000 (10 of 16 blocks computed)\n"));
    free(s);
    maskinfo_free(&mi);
    mask_free(m);
    mask_free(d);
}

static void test_mask_parse_spec_valid(void **state)
{
    (void)state;
    char err[ERRN];
    struct mask *m = mask_parse_spec("causal", 8, 16, err, sizeof err);
    assert_int_equal(m->kind, MASK_CAUSAL);
    assert_int_equal(m->offset, 0);
    assert_int_equal(m->q_len, 8);
    assert_int_equal(m->kv_len, 16);
    mask_free(m);
    m = mask_parse_spec("causal:-3", 8, 8, err, sizeof err);
    assert_int_equal(m->offset, -3);
    mask_free(m);
    m = mask_parse_spec("local:none,4:2", 8, 8, err, sizeof err);
    assert_int_equal(m->kind, MASK_LOCAL);
    assert_int_equal(m->left, -1);
    assert_int_equal(m->right, 4);
    assert_int_equal(m->offset, 2);
    mask_free(m);
    m = mask_parse_spec("local:3,none", 8, 8, err, sizeof err);
    assert_int_equal(m->left, 3);
    assert_int_equal(m->right, -1);
    assert_int_equal(m->offset, 0);
    mask_free(m);
    m = mask_parse_spec("chunked:4", 8, 8, err, sizeof err);
    assert_int_equal(m->kind, MASK_CHUNKED);
    assert_int_equal(m->chunk, 4);
    mask_free(m);
    m = mask_parse_spec("full", 8, 8, err, sizeof err);
    assert_int_equal(m->kind, MASK_FULL);
    assert_true(mask_at(m, 0, 7));
    assert_false(mask_is_computable(m));
    mask_free(m);
}

static void test_mask_parse_spec_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *msg;
    } cases[] = {
        {"", "expected full, causal[:OFFSET]"},
        {"causl", "expected full, causal[:OFFSET]"},
        {"full:1", "expected full, causal[:OFFSET]"},
        {"causal:", "OFFSET '' is not an integer"},
        {"causal:x", "OFFSET 'x' is not an integer"},
        {"causal:1.5", "OFFSET '1.5' is not an integer"},
        {"causal:99999999999999999999", "is not an integer"},
        {"local", "expected full, causal[:OFFSET]"},
        {"local:8", "expected local:LEFT,RIGHT[:OFFSET]"},
        {"local:-1,2", "LEFT and RIGHT must be 'none' or integers"},
        {"local:1,", "LEFT and RIGHT must be 'none' or integers"},
        {"local:1,2:z", "OFFSET 'z' is not an integer"},
        {"chunked", "expected chunked:C"},
        {"chunked:x", "expected chunked:C"},
        {"chunked:0", "chunk_size must be positive"},
    };
    char err[ERRN];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        err[0] = '\0';
        assert_null(mask_parse_spec(cases[c].spec, 8, 8, err, sizeof err));
        if (!strstr(err, cases[c].msg))
            fail_msg("spec '%s': got '%s', expected '%s'", cases[c].spec, err, cases[c].msg);
        assert_non_null(strstr(err, "bad mask spec '"));
    }
    assert_null(mask_parse_spec("causal", 0, 8, err, sizeof err));
    assert_string_equal(err, "mask shape (0, 8) must be positive");
}

static void test_mask_equal(void **state)
{
    (void)state;
    char err[ERRN];
    struct mask *a = mask_new_local(8, 8, 2, -1, 0), *b = mask_new_local(8, 8, 2, -1, 0);
    struct mask *c = mask_new_local(8, 8, 2, -1, 1);
    assert_true(mask_equal(a, b));
    assert_false(mask_equal(a, c));
    struct mask *ab = mask_new_logical(MASK_AND, a, c, err, sizeof err);
    struct mask *ba =
        mask_new_logical(MASK_AND, mask_new_local(8, 8, 2, -1, 1), b, err, sizeof err);
    struct mask *ab2 = mask_new_logical(MASK_AND, mask_new_local(8, 8, 2, -1, 0),
                                        mask_new_local(8, 8, 2, -1, 1), err, sizeof err);
    struct mask *ab_or = mask_new_logical(MASK_OR, mask_new_local(8, 8, 2, -1, 0),
                                          mask_new_local(8, 8, 2, -1, 1), err, sizeof err);
    assert_true(mask_equal(ab, ab2));
    assert_false(mask_equal(ab, ba)); /* operands in order, as the dataclass __eq__ */
    assert_false(mask_equal(ab, ab_or));
    struct mask *d1 = mask_dense_from(ab), *d2 = mask_dense_from(ba);
    assert_true(mask_equal(d1, d2)); /* NumpyMask: by content */
    assert_false(mask_equal(d1, ab));
    mask_free(ab);
    mask_free(ba);
    mask_free(ab2);
    mask_free(ab_or);
    mask_free(d1);
    mask_free(d2);
}

/* Writes 'len' bytes to a new temporary file and returns its path (caller frees
 * and unlinks). */
static char *temp_file(const void *data, size_t len)
{
    char *path = strdup("/tmp/test_maskinfo_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

static struct mask *load_bytes(const void *data, size_t len, char *err)
{
    char *path = temp_file(data, len);
    struct mask *m = mask_load_file(path, err, ERRN);
    unlink(path);
    free(path);
    return m;
}

static struct mask *load_text(const char *text, char *err)
{
    return load_bytes(text, strlen(text), err);
}

static void test_mask_load_file_text(void **state)
{
    (void)state;
    char err[ERRN] = "";
    struct mask *m = load_text("4 6\n100000\n110000\n111000 \r\n111100\n\n", err);
    assert_non_null(m);
    assert_int_equal(m->kind, MASK_DENSE);
    check_mask(m, "100000 110000 111000 111100");
    mask_free(m);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"", ":1: expected a first line \"Q K\""},
        {"4\n", ":1: expected a first line \"Q K\""},
        {"0 4\n", ":1: expected a first line \"Q K\""},
        {"2 2 2\n11\n11\n", ":1: expected a first line \"Q K\""},
        {"2 2\n11\n1\n", ":3: expected 2 characters '0' or '1'"},
        {"2 2\n11\n12\n", ":3: expected 2 characters '0' or '1'"},
        {"2 2\n11\n", ":3: expected 2 characters '0' or '1', got end of file"},
        {"2 2\n11\n11\n11\n", ":4: unexpected data after 2 rows"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        err[0] = '\0';
        assert_null(load_text(bad[c].text, err));
        if (!strstr(err, bad[c].msg))
            fail_msg("case %zu: got '%s', expected '%s'", c, err, bad[c].msg);
    }
    assert_null(mask_load_file("/nonexistent/mask.txt", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/mask.txt: "));
}

/* Issue 18.4: a header "Q K" was only checked against the file size on each
 * side, so a 200 KB file asked for a 40 GB mask; /dev/zero was read forever. */
static void test_mask_load_file_header_bounded_by_the_data(void **state)
{
    (void)state;
    size_t n = 200000;
    char *t = malloc(n + 32);
    int h = snprintf(t, 32, "%zu %zu\n", n, n);
    memset(t + h, '1', n);
    t[h + n] = '\0';
    char err[ERRN] = "";
    assert_null(load_text(t, err));
    assert_non_null(strstr(err, ":1: expected a first line \"Q K\" that the file can hold"));
    free(t);
    assert_null(mask_load_file("/dev/zero", err, ERRN));
    assert_string_equal(err, "/dev/zero: expected a regular file, got a device");
}

/* The bytes numpy.save writes: magic, version, header length, the header dict
 * padded with spaces to a multiple of 64 bytes and ended by '\n', then data. */
static size_t npy_bytes(uint8_t *out, int version, const char *dict, const uint8_t *data, size_t n)
{
    size_t pre = version == 1 ? 10 : 12, hlen = strlen(dict) + 1;
    hlen += (64 - (pre + hlen) % 64) % 64;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)version;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        out[8 + i] = (uint8_t)(hlen >> (8 * i));
    memset(out + pre, ' ', hlen);
    memcpy(out + pre, dict, strlen(dict));
    out[pre + hlen - 1] = '\n';
    memcpy(out + pre + hlen, data, n);
    return pre + hlen + n;
}

static void test_mask_load_file_npy(void **state)
{
    (void)state;
    static const uint8_t c_order[24] = {1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0,
                                        1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0};
    static const uint8_t f_order[24] = {1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1,
                                        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t bad_value[4] = {1, 2, 0, 1};
    uint8_t buf[256];
    char err[ERRN] = "";
    const char *want = "100000 110000 111000 111100";
    size_t n = npy_bytes(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4, 6), }",
                         c_order, 24);
    assert_int_equal(n, 152); /* as numpy 1.24 writes np.tril(np.ones((4, 6), bool)) */
    struct mask *m = load_bytes(buf, n, err);
    assert_non_null(m);
    check_mask(m, want);
    mask_free(m);
    n = npy_bytes(buf, 1, "{'descr': '|u1', 'fortran_order': True, 'shape': (4, 6), }", f_order,
                  24);
    m = load_bytes(buf, n, err);
    assert_non_null(m);
    check_mask(m, want);
    mask_free(m);
    n = npy_bytes(buf, 2, "{'descr': '|b1', 'fortran_order': False, 'shape': (4, 6), }", c_order,
                  24);
    m = load_bytes(buf, n, err);
    assert_non_null(m);
    check_mask(m, want);
    mask_free(m);
    static const struct {
        const char *dict;
        const uint8_t *data;
        size_t n;
        const char *msg;
    } bad[] = {
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2, 1), }", c_order, 4,
         "expected a 2-D array"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", c_order, 16,
         "dtype must be bool"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }", bad_value, 4,
         "element (0, 1) is 2, expected 0 or 1"},
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (4, 6), }", c_order, 20,
         "fewer than 4 x 6 bytes"},
        {"{'descr': '|b1', 'fortran_order': False}", c_order, 4, "malformed header"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        n = npy_bytes(buf, 1, bad[c].dict, bad[c].data, bad[c].n);
        err[0] = '\0';
        assert_null(load_bytes(buf, n, err));
        if (!strstr(err, bad[c].msg))
            fail_msg("case %zu: got '%s', expected '%s'", c, err, bad[c].msg);
    }
    assert_null(load_bytes("\x93NUMPY\x09\x00", 8, err));
    assert_non_null(strstr(err, "unsupported or truncated .npy header"));
}

/* tests/data/masks/ holds the doc's local (8,8) 64x64 mask in both formats. */
static void test_mask_load_file_data(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/data/masks/local_64x64_w8.txt",
                                        "tests/data/masks/local_64x64_w8.npy"};
    if (access(files[0], R_OK) != 0)
        skip(); /* not run from the repository root */
    struct mask *want = make_local(64, 64, 8, 8, 0);
    for (int f = 0; f < 2; f++) {
        char err[ERRN] = "";
        struct mask *m = mask_load_file(files[f], err, sizeof err);
        if (!m)
            fail_msg("%s", err);
        assert_true(mask_equal(m, want));
        struct mask_info mi;
        process(&m, 1, 16, 16, false, 1, 1, &mi);
        check_want(&mi, local_fwd());
        maskinfo_free(&mi);
        mask_free(m);
    }
    mask_free(want);
}

/* The interval kinds (causal, local, chunked, full) classify a block from its
 * first and last rows and a binary search; their dense copies go a row at a
 * time. Random shapes, offsets, windows and blocks, fwd and dkv: the same block
 * classes, data_next and grid, or the same failure. */
static struct mask *random_interval_mask(unsigned *seed, int64_t q, int64_t kv)
{
    int64_t off = (int64_t)(rand_r(seed) % 97) - 48;
    switch (rand_r(seed) % 5) {
    case 0:
        return mask_new_full(q, kv);
    case 1:
        return mask_new_causal(q, kv, rand_r(seed) % 3 ? off : (int64_t)1 << 49);
    case 2:
        return mask_new_chunked(q, kv, 1 + rand_r(seed) % 40);
    case 3:
        return mask_new_local(q, kv, rand_r(seed) % 50, rand_r(seed) % 4 ? rand_r(seed) % 50 : -1,
                              off);
    default:
        return mask_new_local(q, kv, -1, rand_r(seed) % 30, off);
    }
}

static void test_maskinfo_interval_classes_match_dense(void **state)
{
    (void)state;
    unsigned seed = 12345;
    int compared = 0;
    for (int it = 0; it < 400; it++) {
        int64_t q = (int64_t)8 << (rand_r(&seed) % 5), kv = (int64_t)8 << (rand_r(&seed) % 5);
        int bq = (int)(q >> (rand_r(&seed) % 3)), bkv = (int)(kv >> (rand_r(&seed) % 3));
        struct mask *lazy = random_interval_mask(&seed, q, kv), *dense = mask_dense_from(lazy);
        struct maskinfo_params p;
        maskinfo_params_init(&p, bq, bkv);
        p.is_dkv = rand_r(&seed) % 2;
        p.shrink_grid = rand_r(&seed) % 2;
        struct mask_info a, b;
        char ea[512], eb[512];
        int ra = maskinfo_process(&lazy, 1, &p, &a, ea, sizeof ea);
        int rb = maskinfo_process(&dense, 1, &p, &b, eb, sizeof eb);
        assert_int_equal(ra, rb);
        if (ra == 0) {
            assert_int_equal(a.nq, b.nq);
            assert_int_equal(a.nk, b.nk);
            size_t cells = (size_t)a.rows * (size_t)a.nq * (size_t)a.nk;
            assert_memory_equal(a.block_mask, b.block_mask, cells * sizeof *a.block_mask);
            assert_memory_equal(a.data_next, b.data_next, cells * sizeof *a.data_next);
            compared++;
        }
        maskinfo_free(&a);
        maskinfo_free(&b);
        mask_free(lazy);
        mask_free(dense);
    }
    assert_true(compared > 200);
}

#define LD(name) cmocka_unit_test(name##_lazy), cmocka_unit_test(name##_dense)

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* SplashAttentionMaskTest */
        LD(test_causal_mask),
        LD(test_local_attention_mask),
        LD(test_local_attention_mask_wide_rectangle),
        LD(test_local_attention_mask_tall_rectangle),
        LD(test_chunked_causal_mask),
        cmocka_unit_test(test_lazy_causal_mask_chunking),
        cmocka_unit_test(test_lazy_local_mask_chunking),
        cmocka_unit_test(test_lazy_chunked_causal_mask_chunking),
        cmocka_unit_test(test_chunked_causal_mask_invalid_chunk_size),
        cmocka_unit_test(test_chunked_causal_mask_minimal_equality_hash),
        cmocka_unit_test(test_lazy_mask_or),
        cmocka_unit_test(test_lazy_mask_and),
        cmocka_unit_test(test_lazy_multi_head_mask),
        cmocka_unit_test(test_lazy_full_mask),
        /* SplashAttentionMaskInfoTest */
        LD(test_full_mask),
        LD(test_two_causal_masks),
        LD(test_rectangular_wide_causal_mask),
        LD(test_rectangular_tall_causal_mask),
        LD(test_local_mask),
        LD(test_local_mask_narrow),
        LD(test_two_head_shards_one_causal_one_local),
        LD(test_two_head_shards_causal_full),
        LD(test_two_qseq_shards_causal_local),
        cmocka_unit_test(test_two_qseq_shards_causal_local_stacked),
        cmocka_unit_test(test_two_qseq_shards_local_wide_local_narrow_stacked),
        LD(test_two_head_shards_causal_mask),
        LD(test_two_head_shards_two_causal_two_local),
        cmocka_unit_test(test_huge_mask),
        cmocka_unit_test(test_huge_mask2),
        cmocka_unit_test(test_process_invalid_mask),
        cmocka_unit_test(test_dynamic_mask_fwd),
        cmocka_unit_test(test_dynamic_mask_dkv),
        /* beyond upstream */
        cmocka_unit_test(test_maskinfo_process_doc_worked_example),
        cmocka_unit_test(test_maskinfo_process_causal_8192),
        cmocka_unit_test(test_maskinfo_interval_classes_match_dense),
        cmocka_unit_test(test_maskinfo_process_errors),
        cmocka_unit_test(test_maskinfo_process_huge_shapes),
        cmocka_unit_test(test_maskinfo_process_upstream_failures),
        cmocka_unit_test(test_maskinfo_process_no_shrink),
        cmocka_unit_test(test_maskinfo_process_wraps_to_first_nonempty),
        cmocka_unit_test(test_maskinfo_process_head_and_q_shards),
        cmocka_unit_test(test_maskinfo_process_dedup_across_masks),
        cmocka_unit_test(test_maskinfo_process_and_mask),
        cmocka_unit_test(test_maskinfo_process_dynamic_shards),
        cmocka_unit_test(test_maskinfo_process_downcast),
        cmocka_unit_test(test_maskinfo_print),
        cmocka_unit_test(test_mask_parse_spec_valid),
        cmocka_unit_test(test_mask_parse_spec_errors),
        cmocka_unit_test(test_mask_equal),
        cmocka_unit_test(test_mask_load_file_text),
        cmocka_unit_test(test_mask_load_file_header_bounded_by_the_data),
        cmocka_unit_test(test_mask_load_file_npy),
        cmocka_unit_test(test_mask_load_file_data),
    };
    return cmocka_run_group_tests_name("maskinfo", tests, NULL, NULL);
}
