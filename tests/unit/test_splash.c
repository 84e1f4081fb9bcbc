/* tests/unit/test_splash.c -- splash attention kernels: functional results
 * against naive masked attention and its gradient, upstream's error messages,
 * and timing that follows the MaskInfo (skipped steps, shrunk grids, data_next
 * prefetch, mask-block DMAs), in-process and on SimGrid. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/maskinfo.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "config/op_table.h"
#include "sim_fork.h"

/* ---- ops ---- */

struct tcase {
    struct op op;
    struct mask *m[8];
};

static void tc_init(struct tcase *t, int64_t hq, int64_t hkv, int64_t s, int64_t d,
                    enum attn_mode mode, int nmasks)
{
    memset(t, 0, sizeof *t);
    t->op.kind = OP_SPLASH;
    t->op.name = (char *)"splash";
    struct op_splash *p = &t->op.u.splash;
    p->batch = 1, p->q_heads = hq, p->kv_heads = hkv, p->q_seq_len = p->kv_seq_len = s;
    p->head_dim = d, p->dt = DT_BF16, p->mode = mode;
    p->nmasks = nmasks;
    p->masks = t->m;
    p->bs = (struct splash_block_sizes){128, 128, 0, 128, 128, 0, 128, 128, false};
}

static void tc_fini(struct tcase *t)
{
    for (int i = 0; i < 8; i++)
        mask_free(t->m[i]);
}

/* Runs every call of 'op' in functional mode and returns the verified error. */
static double functional(const struct op *op, bool *ok, char *msg, size_t n)
{
    struct chip_params ch = test_chip();
    struct kern k;
    double e = rec_run_functional(&k, op, &ch, 7, ok, msg, n);
    kern_fini(&k);
    return e;
}

static void expect_match(const struct op *op, const char *what)
{
    bool ok;
    char msg[256] = "";
    double e = functional(op, &ok, msg, sizeof msg);
    if (!ok || e > 2e-2)
        print_error("%s: %s (error %g)\n", what, msg, e);
    assert_true(ok);
    assert_true(e > 0); /* the outputs were written */
}

static void expect_error(const struct op *op, const char *want)
{
    struct chip_params ch = test_chip();
    rec_expect_error(op, &ch, want);
}

/* A seeded random dense mask with the diagonal set (no empty rows). */
static struct mask *random_mask(int64_t s, double density, uint64_t seed)
{
    uint8_t *d = malloc((size_t)(s * s));
    for (int64_t i = 0; i < s * s; i++)
        d[i] = (kern_rand(seed, (uint64_t)i) + 1) / 2 < density || i / s == i % s;
    struct mask *m = mask_new_dense(s, s, d);
    free(d);
    return m;
}

/* ---- functional ---- */

static void test_splash_fwd_matches_naive_attention(void **state)
{
    (void)state;
    struct tcase t;
    char err[128];
    tc_init(&t, 2, 2, 512, 64, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(512, 512, 0);
    expect_match(&t.op, "causal");
    tc_fini(&t);

    tc_init(&t, 2, 2, 512, 64, ATTN_FWD, 1);
    t.m[0] = mask_new_local(512, 512, 100, 30, 0); /* shrunk grid */
    t.op.u.splash.bs.block_kv = 256;               /* two compute sub-blocks */
    t.op.u.splash.bs.block_kv_compute = 128;
    expect_match(&t.op, "local");
    tc_fini(&t);

    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    t.m[0] = mask_new_chunked(512, 512, 96);
    expect_match(&t.op, "chunked");
    tc_fini(&t);

    tc_init(&t, 2, 2, 384, 64, ATTN_FWD, 1); /* random dense: a mask operand */
    t.m[0] = random_mask(384, 0.3, 11);
    expect_match(&t.op, "random dense");
    tc_fini(&t);

    tc_init(&t, 2, 1, 512, 64, ATTN_FWD, 1); /* MQA, (local | chunked) & causal */
    t.m[0] = mask_new_logical(MASK_AND,
                              mask_new_logical(MASK_OR, mask_new_local(512, 512, 40, 0, 0),
                                               mask_new_chunked(512, 512, 200), err, sizeof err),
                              mask_new_causal(512, 512, 0), err, sizeof err);
    expect_match(&t.op, "and/or");
    tc_fini(&t);

    tc_init(&t, 4, 2, 256, 64, ATTN_FWD, 4); /* multi-head masks with GQA */
    t.m[0] = mask_new_causal(256, 256, 0);
    t.m[1] = mask_new_local(256, 256, 64, 64, 0);
    t.m[2] = mask_new_full(256, 256);
    t.m[3] = random_mask(256, 0.5, 3);
    expect_match(&t.op, "multi-head");
    tc_fini(&t);

    tc_init(&t, 2, 2, 256, 64, ATTN_FWD, 1); /* dynamic mask, batch, segment ids */
    t.m[0] = mask_new_causal(256, 256, 0);
    t.op.u.splash.dynamic = true;
    t.op.u.splash.batch = 2;
    t.op.u.splash.nseg = 3;
    t.op.u.splash.seg[0] = 100, t.op.u.splash.seg[1] = 60, t.op.u.splash.seg[2] = 96;
    expect_match(&t.op, "dynamic, batch, segments");
    tc_fini(&t);
}

static void test_splash_bwd_matches_gradient(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 2, 2, 512, 64, ATTN_FWD_BWD, 1); /* fwd residuals feed dkv, dq */
    t.m[0] = mask_new_causal(512, 512, 0);
    t.op.u.splash.bs.block_kv_dkv = 256;
    t.op.u.splash.bs.block_kv_dkv_compute = 128;
    expect_match(&t.op, "causal fwd_bwd");
    tc_fini(&t);

    tc_init(&t, 4, 2, 512, 64, ATTN_BWD, 1); /* GQA, shrunk dkv grid */
    t.m[0] = mask_new_local(512, 512, 128, 0, 0);
    expect_match(&t.op, "local bwd GQA");
    tc_fini(&t);

    tc_init(&t, 2, 1, 384, 64, ATTN_FWD_BWD, 2); /* MQA, multi-head dense */
    t.m[0] = random_mask(384, 0.4, 5);
    t.m[1] = mask_new_chunked(384, 384, 128);
    expect_match(&t.op, "MQA multi-head");
    tc_fini(&t);

    tc_init(&t, 2, 2, 256, 128, ATTN_FWD_BWD, 1); /* fused kernel, bkv_compute < bkv */
    t.m[0] = mask_new_causal(256, 256, 0);
    t.op.u.splash.bs = (struct splash_block_sizes){128, 256, 128, 128, 256, 128, 0, 0, true};
    t.op.u.splash.nseg = 2;
    t.op.u.splash.seg[0] = 100, t.op.u.splash.seg[1] = 156;
    expect_match(&t.op, "fused, segments");
    tc_fini(&t);

    tc_init(&t, 2, 2, 256, 64, ATTN_FWD_BWD, 1); /* fused, bkv == bkv_compute; dynamic */
    t.m[0] = random_mask(256, 0.3, 9);
    t.op.u.splash.bs = (struct splash_block_sizes){128, 128, 0, 128, 128, 0, 0, 0, true};
    t.op.u.splash.dynamic = true;
    t.op.u.splash.batch = 2;
    expect_match(&t.op, "fused dynamic batch");
    tc_fini(&t);
}

/* A wrong result is caught: the reference sees a different mask than the one
 * the MaskInfo was built from (the dense mask's bytes change after init). */
static void test_splash_verify_detects_wrong_mask(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 1, 1, 256, 64, ATTN_FWD, 1);
    struct mask *causal = mask_new_causal(256, 256, 0);
    t.m[0] = mask_dense_from(causal);
    mask_free(causal);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, true, err, sizeof err), 0);
    kern_data(&k, 1);
    memset(t.m[0]->dense, 1, 256 * 256);
    struct rec r = {0};
    rec_run_core(&k, &ch, 0, 1, &r);
    bool ok;
    char msg[256];
    kern_verify(&k, &ok, msg, sizeof msg);
    kern_fini(&k);
    tc_fini(&t);
    assert_false(ok);
    assert_non_null(strstr(msg, "out differs from naive masked attention"));
}

/* ---- upstream's checks and messages ---- */

static void test_splash_block_size_errors(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 2, 2, 768, 64, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(768, 768, 0);
    struct splash_block_sizes *b = &t.op.u.splash.bs;
    b->block_kv = 256, b->block_kv_compute = 192;
    expect_error(&t.op, "bkv=256 must be a multiple of bkv_compute=192.");
    b->block_kv = 128, b->block_kv_compute = 64;
    expect_error(&t.op, "bkv_compute=64 must be a multiple of 128.");
    b->block_kv_compute = 0, b->block_q = 100;
    expect_error(&t.op, "q_block_size=100 should divide q_seq_len=768.");
    b->block_q = 128, b->block_kv_dkv = 512;
    expect_error(&t.op, "kv_block_size=512 should divide kv_seq_len=768.");
    b->block_kv_dkv = 128;

    t.op.u.splash.mode = ATTN_FWD_BWD;
    b->block_kv_dkv = 256, b->block_kv_dkv_compute = 384;
    expect_error(&t.op, "bkv_compute=384 should not be greater than bkv=256");
    b->block_kv_dkv = 384, b->block_kv_dkv_compute = 256;
    expect_error(&t.op, "bkv=384 should be a multiple of bkv_compute=256");
    b->block_kv_dkv = 128, b->block_kv_dkv_compute = 0;
    b->block_kv_dq = 64;
    expect_error(&t.op, "bkv=64 must be a multiple of 128.");
    b->block_kv_dq = 0;
    expect_error(&t.op, "Need to specify backward blocks.");
    b->block_kv_dq = 128;
    b->use_fused_bwd_kernel = true;
    expect_error(&t.op, "Block sizes for dq kernel are not needed with a fused kernel.");
    tc_fini(&t);
}

static void test_splash_head_and_segment_errors(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 6, 4, 256, 64, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(256, 256, 0);
    expect_error(&t.op, "In MHA, expected number of 'key' heads (4) to be a multiple of the "
                        "number of 'query' heads (6)");
    tc_fini(&t);

    tc_init(&t, 2, 2, 256, 64, ATTN_FWD, 1);
    t.op.u.splash.kv_seq_len = 512;
    t.m[0] = mask_new_full(256, 512);
    t.op.u.splash.nseg = 1, t.op.u.splash.seg[0] = 256;
    expect_error(&t.op, "Invalid shape for kv segment_ids: (256,). Expected: (512,)");
    tc_fini(&t);
}

/* ---- timing that follows the metadata ---- */

static struct pl_call *find_call(struct kern *k, const char *prefix)
{
    for (int i = 0; i < k->ncalls; i++)
        if (strncmp(k->calls[i].name, prefix, strlen(prefix)) == 0)
            return &k->calls[i];
    return NULL;
}

/* S=8192 causal, 512 blocks: 136 of the 256 blocks of each head run compute;
 * the grid keeps all 256 steps (the last q row has 16 blocks). */
static void test_splash_causal_8k_visits_136_of_256_blocks(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 16, 16, 8192, 128, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(8192, 8192, 0);
    t.op.u.splash.bs.block_q = t.op.u.splash.bs.block_kv = 512;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.ncalls, 1);
    struct pl_call *c = &k.calls[0];
    assert_string_equal(c->name, "splash_mha_fwd_no_residuals");
    assert_int_equal(pl_num_steps(c), 16 * 256);
    assert_int_equal(c->sem[0], PL_PARALLEL);
    assert_int_equal(c->sem[1], PL_ARBITRARY);
    /* computed mask: q_sequence instead of mask blocks; int8 MaskInfo in SMEM */
    assert_true(rec_find_op(c, "q_sequence") >= 0);
    assert_true(rec_find_op(c, "mask") < 0);
    assert_int_equal(c->smem_prefetch_bytes, 256 * 2); /* block_mask, data_next; no mask_next */
    struct rec r = {0};
    rec_run_call(c, &ch, &r, NULL);
    assert_int_equal(r.computes, 16 * 256);
    assert_int_equal(r.busy, 16 * 136);
    assert_float_equal(r.flops, 16 * 136 * 4.0 * 512 * 512 * 128, 0);
    kern_fini(&k);
    tc_fini(&t);
}

/* One causal 512 x 512 block (one head, S=512, blocks 512: a single grid step
 * that initialises, computes one sub-block and finalises) on the test chip
 * (4 MXUs of 128 at 1 GHz; VPU per cycle 4 ALU, 3 loads, 1 store, 1 EUP,
 * 0.5 XLU). Tiles: (512, 512) f32 = 256 vregs, (512, 128) = 64.
 *   MXU: QK (512, 128, 512) and PV (512, 512, 128), 512 rows + 128 fill each:
 *     1280 ns
 *   init (o; m, l): 64 + 128 stores = 192 ns
 *   QK's feed (q, k: 128 loads) and drain (the logits' 256 stores): 256 ns
 *     under its 640 ns pass
 *   softmax, serial: causal mask (iota 64 loads; 4 ALU, load, store per
 *     vreg), m_curr, cross-lane max, exp, row sum, cross-lane sum with alpha
 *     and l: ALU 2048 / 4, loads 1216 / 3, stores 640, EUP 320, XLU 128 / 0.5:
 *     the stores bound, 640 ns
 *   PV's feed (s and v cast and loaded: ALU 320 / 4, loads 320 / 3): 107 ns
 *     under its pass
 *   o update, 1 / l, o * l_inv, zeroing: ALU 256, loads 192, stores 320,
 *     EUP 64: 320 ns
 * VPU 192 + 640 + 320 = 1152 ns (with the feeds and drain in series: 1408). */
static void test_splash_fwd_block_overlaps_mxu_io(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(512, 512, 0);
    t.op.u.splash.bs.block_q = t.op.u.splash.bs.block_kv = 512;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    assert_int_equal(pl_num_steps(&k.calls[0]), 1);
    struct rec r = {0};
    struct pl_exec ex = {&rec_ops, &r, false};
    struct pl_stats st = {0};
    pl_run(&k.calls[0], &ch, 0, 1, &ex, &st);
    assert_float_equal(st.mxu_s, 1280e-9, 1e-15);
    assert_float_equal(st.vpu_s, 1152e-9, 1e-15);
    kern_fini(&k);
    tc_fini(&t);
}

/* Causal 512x512, blocks of 128: block_mask rows [1000][1100][1110][1111]. A
 * skipped step's k/v index is data_next, the next real block: row 1's skipped
 * steps hold kv block 0 of row 2, fetched during step 5 and not again. */
static void test_splash_data_next_prefetches_next_block(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    t.m[0] = mask_new_causal(512, 512, 0);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    struct pl_call *c = &k.calls[0];
    int ko = rec_find_op(c, "k");
    assert_int_equal(ko, 1);
    static const int64_t want_idx[16] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 2, 0, 0, 1, 2, 3};
    for (int64_t s = 0; s < 16; s++) {
        int64_t g[3] = {0, s / 4, s % 4}, b[PL_MAX_RANK] = {0};
        c->operands[ko].index(g, c->user, b);
        assert_int_equal(b[1], want_idx[s]);
    }
    struct rec r = {0};
    rec_run_call(c, &ch, &r, NULL);
    /* k fetches: prologue (kv0), then at steps 4 (kv1), 5 (kv0 for row 2),
     * 8, 9, 10 (kv0 for row 3), 12, 13, 14 */
    static const int64_t want_at[9] = {0, 4, 5, 8, 9, 10, 12, 13, 14};
    int nk = 0;
    for (int i = 0; i < r.nrec; i++) {
        if (r.op[i] != ko || !r.in[i])
            continue;
        if (nk < 9)
            assert_int_equal(r.at[i], want_at[nk]);
        nk++;
    }
    assert_int_equal(nk, 9); /* 16 steps, 10 real blocks, 9 k DMAs */
    assert_int_equal(r.busy, 10);
    kern_fini(&k);
    tc_fini(&t);
}

/* A dense (non-computable) mask: partial blocks DMA their int32 mask block via
 * mask_next; full and empty blocks point at the next partial one. */
static void test_splash_partial_blocks_fetch_mask(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    struct mask *causal = mask_new_causal(512, 512, 0);
    t.m[0] = mask_dense_from(causal);
    mask_free(causal);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    struct pl_call *c = &k.calls[0];
    int mo = rec_find_op(c, "mask");
    assert_true(mo >= 0);
    assert_true(rec_find_op(c, "q_sequence") < 0);
    assert_int_equal(c->operands[mo].dt, DT_INT32);
    /* the 4 diagonal blocks are one deduplicated block */
    assert_int_equal(c->operands[mo].shape[0], 1);
    struct rec r = {0};
    rec_run_call(c, &ch, &r, NULL);
    int nm = 0;
    for (int i = 0; i < r.nrec; i++)
        nm += r.op[i] == mo;
    assert_int_equal(nm, 1);
    kern_fini(&k);
    tc_fini(&t);

    /* a random mask: distinct partial blocks; one DMA per change of mask_next */
    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    t.m[0] = random_mask(512, 0.02, 4);
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    c = &k.calls[0];
    mo = rec_find_op(c, "mask");
    int changes = 1;
    int64_t prev = -1;
    for (int64_t s = 0; s < pl_num_steps(c); s++) {
        int64_t g[3] = {0, s / c->grid[2], s % c->grid[2]}, b[PL_MAX_RANK] = {0};
        c->operands[mo].index(g, c->user, b);
        changes += s > 0 && b[0] != prev;
        prev = b[0];
    }
    memset(&r, 0, sizeof r);
    rec_run_call(c, &ch, &r, NULL);
    nm = 0;
    for (int i = 0; i < r.nrec; i++)
        nm += r.op[i] == mo;
    assert_int_equal(nm, changes);
    assert_true(c->operands[mo].shape[0] > 1);
    kern_fini(&k);
    tc_fini(&t);
}

/* A dynamic mask: no shrinking, no lookahead (an empty step's data_next is 0,
 * so it moves k/v back to block 0), and every block is a mask block. */
static void test_splash_dynamic_mask_has_no_lookahead(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 1, 1, 512, 128, ATTN_FWD, 1);
    t.m[0] = mask_new_local(512, 512, 128, 0, 0); /* row i: kv blocks i-1, i */
    t.op.u.splash.dynamic = true;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    struct pl_call *c = &k.calls[0];
    assert_int_equal(c->grid[2], 4);
    int ko = rec_find_op(c, "k"), mo = rec_find_op(c, "mask");
    assert_int_equal(c->operands[mo].shape[0], 16);
    static const int64_t want[16] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 2, 0, 0, 0, 2, 3};
    for (int64_t s = 0; s < 16; s++) {
        int64_t g[3] = {0, s / 4, s % 4}, b[PL_MAX_RANK] = {0};
        c->operands[ko].index(g, c->user, b);
        assert_int_equal(b[1], want[s]);
    }
    kern_fini(&k);
    tc_fini(&t);
}

/* A local window shrinks the fwd grid to the widest q row and the dkv grid
 * to the tallest kv column; steps drop accordingly. */
static void test_splash_shrunk_grid_removes_steps(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 2, 2, 1024, 64, ATTN_FWD_BWD, 1);
    t.m[0] = mask_new_local(1024, 1024, 128, 0, 0);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.ncalls, 4); /* fwd, di glue, dkv, dq */
    struct pl_call *f = find_call(&k, "splash_mha_fwd_residuals");
    struct pl_call *dkv = find_call(&k, "splash_mha_dkv");
    struct pl_call *dq = find_call(&k, "splash_mha_dq");
    assert_non_null(f);
    assert_non_null(dkv);
    assert_non_null(dq);
    assert_int_equal(f->grid[2], 2); /* each q row touches 2 kv blocks */
    assert_int_equal(pl_num_steps(f), 2 * 8 * 2);
    assert_int_equal(dkv->grid[0], 8);
    assert_int_equal(dkv->grid[2], 2);
    assert_int_equal(dq->grid[2], 2);
    for (int i = 0; i < 3; i++) /* dq, dkv fully arbitrary */
        assert_int_equal(dq->sem[i], PL_ARBITRARY), assert_int_equal(dkv->sem[i], PL_ARBITRARY);
    kern_fini(&k);
    tc_fini(&t);
}

/* Coalesced (fast) runs wait on every DMA they start: a one-sided local window
 * (512 left, 512 blocks: every q row visits kv blocks i-1 and i, the first
 * row one) left 4 DMAs of the fwd pipeline unwaited, found under valgrind. */
static void test_splash_fast_waits_every_dma(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 2, 2, 4096, 64, ATTN_FWD, 1);
    t.m[0] = mask_new_local(4096, 4096, 512, 0, 0);
    t.op.u.splash.bs = (struct splash_block_sizes){512, 512, 512, 128, 128, 0, 0, 0, false};
    struct chip_params ch = test_chip();
    ch.hbm_efficiency = 1;
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    for (int i = 0; i < k.ncalls; i++) {
        struct rec r = {0};
        struct pl_stats st = {0};
        struct pl_exec x = {&rec_ops, &r, true};
        pl_run(&k.calls[i], &ch, 0, pl_num_steps(&k.calls[i]), &x, &st);
        assert_int_equal(r.waited, r.ndmas);
    }
    kern_fini(&k);
    tc_fini(&t);
}

/* GQA: dk/dv accumulate over the q heads of a kv head and are written once per
 * (kv block, kv head); fused: dq_unreduced is written every step. */
static void test_splash_dkv_writes_once_per_group(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 4, 2, 512, 64, ATTN_BWD, 1);
    t.m[0] = mask_new_full(512, 512);
    t.op.u.splash.bs = (struct splash_block_sizes){128, 128, 0, 128, 128, 0, 0, 0, true};
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.ncalls, 3); /* di glue, dkv, dq sum */
    struct pl_call *c = find_call(&k, "splash_mha_dkv");
    assert_non_null(c);
    assert_int_equal(rec_find_op(c, "dq_scratch"), -1); /* bkv == bkv_compute: no scratch */
    int dk = rec_find_op(c, "dk"), dq = rec_find_op(c, "dq_unreduced");
    struct rec r = {0};
    rec_run_call(c, &ch, &r, NULL);
    int ndk = 0, ndq = 0;
    for (int i = 0; i < r.nrec; i++)
        ndk += r.op[i] == dk && !r.in[i], ndq += r.op[i] == dq && !r.in[i];
    assert_int_equal(ndk, 4 * 2);                 /* kv blocks x kv heads */
    assert_int_equal(ndq, 4 * 4 * 4);             /* every (kv, h, q) step */
    assert_int_equal(pl_num_steps(c), 4 * 4 * 4); /* no shrinking with the fused kernel */
    kern_fini(&k);
    tc_fini(&t);
}

/* vmap over the batch: a leading parallel grid dim; m/l/acc get the batch index. */
static void test_splash_batch_is_a_parallel_grid_dim(void **state)
{
    (void)state;
    struct tcase t;
    tc_init(&t, 2, 2, 256, 64, ATTN_FWD_BWD, 1);
    t.m[0] = mask_new_causal(256, 256, 0);
    t.op.u.splash.batch = 3;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(t.op.kind)->kern, &t.op, &ch, false, err, sizeof err), 0);
    struct pl_call *f = find_call(&k, "splash_mha_fwd"), *dq = find_call(&k, "splash_mha_dq");
    assert_int_equal(f->ngrid, 4);
    assert_int_equal(f->grid[0], 3);
    assert_int_equal(f->sem[0], PL_PARALLEL);
    assert_int_equal(f->sem[1], PL_PARALLEL);
    assert_int_equal(dq->sem[0], PL_PARALLEL);
    assert_int_equal(dq->sem[1], PL_ARBITRARY);
    int m = rec_find_op(f, "m_scratch");
    assert_non_null(f->operands[m].index);
    struct rec r = {0};
    rec_run_call(f, &ch, &r, NULL);
    int nw = 0;
    for (int i = 0; i < r.nrec; i++)
        nw += r.op[i] == m && !r.in[i];
    assert_int_equal(nw, 3); /* written back once per batch row */
    kern_fini(&k);
    tc_fini(&t);
}

/* ---- on SimGrid: the summary of S=8192 causal vs full ---- */

static const char *const SIM8K =
    "chip: v5e\ntopology: {shape: [1]}\nworkload:\n"
    "  - {op: splash_attention, name: causal, q_heads: 16, q_seq_len: 8192, head_dim: 128,\n"
    "     mask: {type: causal}, block_sizes: {block_q: 512, block_kv: 512}}\n"
    "  - {op: splash_attention, name: full, q_heads: 16, q_seq_len: 8192, head_dim: 128,\n"
    "     mask: {type: full}, block_sizes: {block_q: 512, block_kv: 512}}\n";

static void test_splash_causal_8k_summary_on_simgrid(void **state)
{
    (void)state;
    struct result r = run(SIM8K, NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.nops, 2);
    double block_flops = 4.0 * 512 * 512 * 128;
    /* both visit 256 steps per head; causal computes 136 of them */
    assert_int_equal(r.steps[0], 16 * 256);
    assert_int_equal(r.steps[1], 16 * 256);
    assert_int_equal(r.compute_steps[0], 16 * 136); /* blocks visited, in the summary */
    assert_int_equal(r.compute_steps[1], 16 * 256);
    assert_float_equal(r.flops[0], 16 * 136 * block_flops, 0);
    assert_float_equal(r.flops[1], 16 * 256 * block_flops, 0);
    assert_float_equal(r.mxu_s[0] / r.mxu_s[1], 136.0 / 256.0, 1e-9);
    double tc = r.end[0] - r.start[0], tf = r.end[1] - r.start[1];
    /* skipped steps still cost their step overhead and the mask is computed
     * in-kernel, so causal takes more than 136/256 of full, and less than 3/4 */
    assert_true(tc > tf * 136.0 / 256.0);
    assert_true(tc < tf * 0.75);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splash_fwd_matches_naive_attention),
        cmocka_unit_test(test_splash_bwd_matches_gradient),
        cmocka_unit_test(test_splash_verify_detects_wrong_mask),
        cmocka_unit_test(test_splash_block_size_errors),
        cmocka_unit_test(test_splash_head_and_segment_errors),
        cmocka_unit_test(test_splash_causal_8k_visits_136_of_256_blocks),
        cmocka_unit_test(test_splash_fwd_block_overlaps_mxu_io),
        cmocka_unit_test(test_splash_data_next_prefetches_next_block),
        cmocka_unit_test(test_splash_partial_blocks_fetch_mask),
        cmocka_unit_test(test_splash_dynamic_mask_has_no_lookahead),
        cmocka_unit_test(test_splash_shrunk_grid_removes_steps),
        cmocka_unit_test(test_splash_fast_waits_every_dma),
        cmocka_unit_test(test_splash_dkv_writes_once_per_group),
        cmocka_unit_test(test_splash_batch_is_a_parallel_grid_dim),
        cmocka_unit_test(test_splash_causal_8k_summary_on_simgrid),
    };
    return cmocka_run_group_tests_name("splash", tests, NULL, NULL);
}
