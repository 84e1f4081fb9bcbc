/* tests/unit/test_flash.c -- the flash attention kernels (kernels/flash.c):
 * functional results against naive attention and its gradient, upstream's
 * error messages, causal skipping (MXU work, grid steps, DMAs), grids and
 * the VMEM footprint. In-process runs use a recording executor (pl_rec.h); summary
 * counters come from SimGrid runs in a forked child (sim_fork.h). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "config/op_table.h"
#include "sim_fork.h"

/* flash_attention with upstream's default block sizes (all 128, block_b 1). */
static struct op flash_op(int64_t B, int64_t H, int64_t Sq, int64_t Skv, int64_t D)
{
    struct op o;
    memset(&o, 0, sizeof o);
    o.kind = OP_FLASH;
    o.name = (char *)"flash";
    struct op_flash *f = &o.u.flash;
    f->batch = B, f->heads = H, f->q_seq_len = Sq, f->kv_seq_len = Skv, f->head_dim = D;
    f->dt = DT_BF16, f->sm_scale = 1.0, f->mode = ATTN_FWD;
    f->bs = (struct flash_block_sizes){128, 128, 128, 1, 128, 128, 128, 128, 128, 128, 128};
    return o;
}

static void segments(struct op_flash *f, int n, const int64_t *lens)
{
    f->nseg_q = f->nseg_kv = n;
    memcpy(f->seg_q, lens, sizeof(int64_t) * (size_t)n);
    memcpy(f->seg_kv, lens, sizeof(int64_t) * (size_t)n);
}

/* Runs 'op' functionally in process and verifies; returns the worst error. */
static double functional(const char *what, const struct op *op)
{
    struct chip_params ch = test_chip();
    struct kern k;
    bool ok;
    char msg[512];
    double e = rec_run_functional(&k, op, &ch, 11, &ok, msg, sizeof msg);
    kern_fini(&k);
    print_message("  %-40s worst error %.2e\n", what, e);
    if (!ok)
        fail_msg("%s: %s", what, msg);
    return e;
}

/* ---- functional results ---- */

static void test_flash_fwd_matches_reference(void **state)
{
    (void)state;
    static const int64_t seg2[] = {100, 156}, seg3[] = {60, 200, 252};
    struct op o = flash_op(1, 2, 256, 256, 64);
    functional("fwd", &o);
    o.u.flash.causal = true;
    functional("fwd causal", &o);
    segments(&o.u.flash, 2, seg2);
    o.u.flash.sm_scale = 0.125;
    functional("fwd causal segments sm_scale", &o);

    o = flash_op(1, 1, 512, 512, 64);
    o.u.flash.bias = o.u.flash.causal = true;
    o.u.flash.bs.block_k_major = 256; /* two block_k sub-blocks per step */
    segments(&o.u.flash, 3, seg3);
    functional("fwd bias causal segments bk<bkM", &o);

    o = flash_op(1, 2, 320, 256, 64); /* block_q 128 does not divide 320 */
    o.u.flash.bias = o.u.flash.causal = true;
    functional("fwd block_q not dividing Sq", &o);

    o = flash_op(3, 1, 256, 128, 64); /* block_k == kv_seq_len: single step */
    o.u.flash.causal = true;
    o.u.flash.bs.block_b = 2; /* does not divide batch */
    functional("fwd single-step block_b=2 of 3", &o);

    o = flash_op(1, 1, 256, 256, 256);
    o.u.flash.dt = DT_F32;
    o.u.flash.causal = true;
    assert_true(functional("fwd f32 head_dim 256", &o) < 1e-5);
}

static void test_flash_bwd_matches_reference(void **state)
{
    (void)state;
    static const int64_t seg2[] = {300, 212};
    struct op o = flash_op(1, 2, 256, 256, 64);
    o.u.flash.mode = ATTN_FWD_BWD;
    functional("fwd_bwd", &o);
    o.u.flash.causal = true;
    functional("fwd_bwd causal", &o);

    o = flash_op(1, 1, 512, 512, 64);
    o.u.flash.mode = ATTN_FWD_BWD;
    o.u.flash.causal = o.u.flash.bias = true;
    o.u.flash.sm_scale = 0.125;
    segments(&o.u.flash, 2, seg2);
    struct flash_block_sizes *b = &o.u.flash.bs;
    b->block_q_major_dkv = b->block_k_major_dkv = b->block_k_major_dq = 256;
    functional("fwd_bwd bias causal segments sub-blocks", &o);

    o.u.flash.mode = ATTN_BWD;
    functional("bwd only, residuals from the host", &o);

    o = flash_op(1, 1, 256, 256, 128);
    o.u.flash.mode = ATTN_FWD_BWD;
    o.u.flash.dt = DT_F32;
    o.u.flash.causal = true;
    assert_true(functional("fwd_bwd f32", &o) < 1e-5);
}

/* ---- upstream's checks and messages ---- */

struct err_case {
    void (*set)(struct op_flash *);
    const char *want; /* NULL: accepted */
};

static void e_bk_gt(struct op_flash *f)
{
    f->bs.block_k = 256;
}
static void e_bk_div(struct op_flash *f)
{
    f->bs.block_k_major = 384, f->bs.block_k = 256;
}
static void e_bq_dkv(struct op_flash *f)
{
    f->bs.block_q_dkv = 256;
}
static void e_bk_dq(struct op_flash *f)
{
    f->bs.block_k_dq = 256;
}
static void e_bq_big(struct op_flash *f)
{
    f->bs.block_q = 1024;
}
static void e_bkm_div(struct op_flash *f)
{
    f->bs.block_k_major = 384;
}
static void e_bb(struct op_flash *f)
{
    f->bs.block_b = 4;
}
static void e_bk64(struct op_flash *f)
{
    f->bs.block_k = 64;
}
static void e_hd(struct op_flash *f)
{
    f->head_dim = 192;
}
static void e_seg(struct op_flash *f)
{
    static const int64_t lens[] = {512};
    f->nseg_q = f->nseg_kv = 1, f->seg_q[0] = f->seg_kv[0] = lens[0];
    f->bs.block_k = 64;
}
static void e_nobwd(struct op_flash *f)
{
    f->mode = ATTN_FWD_BWD, f->bs.block_q_dq = 0;
}
static void e_fwd_none(struct op_flash *f)
{
    f->bs.block_q_dq = 0, f->bs.block_k_dkv = 0;
}
static void e_dkv_div(struct op_flash *f)
{
    f->mode = ATTN_BWD, f->bs.block_q_major_dkv = 384;
}
static void e_dq_big(struct op_flash *f)
{
    f->mode = ATTN_BWD, f->kv_seq_len = 256, f->bs.block_k_major_dq = 512;
}
static void e_dkv_bk(struct op_flash *f)
{
    f->mode = ATTN_FWD_BWD, f->bs.block_k_dkv = 64;
}
static void e_dq_seg(struct op_flash *f)
{
    e_seg(f);
    f->mode = ATTN_FWD_BWD, f->bs.block_k = 128, f->bs.block_k_dq = 64;
}
static void e_single(struct op_flash *f)
{
    f->kv_seq_len = 64, f->bs.block_k_major = f->bs.block_k = 64, f->head_dim = 192;
}

static void test_flash_errors_match_upstream(void **state)
{
    (void)state;
    static const struct err_case cases[] = {
        {e_bk_gt, "block_k=256 should be smaller than block_k_major=128"},
        {e_bk_div, "block_k=256 should divide block_k_major=384"},
        {e_bq_dkv, "block_q_dkv=256 should be smaller than block_q_major_dkv=128"},
        {e_bk_dq, "block_k_dq=256 should be smaller than block_k_major_dq=128"},
        {e_bq_big, "block_q=1024 should be smaller or equal to q_seq_len=512"},
        {e_bkm_div, "kv_seq_len=512 should be divisible by block_k_major=384"},
        {e_bb, "block_b=4 should be smaller or equal to batch=2"},
        {e_bk64, "block_k=64 should be a multiple of 128"},
        {e_hd, "head_dim=192 should be a multiple of 128 if larger"},
        {e_seg, "kv block size must be a multiple of 128"},
        {e_nobwd, "Program is being differentiated, but not all backward blocks are specified"},
        {e_fwd_none, NULL},
        {e_dkv_div, "q_seq_len=512 should be divisible by block_q_major_dkv=384"},
        {e_dq_big, "block_k_major_dq=512 should be smaller or equal to kv_seq_len=256"},
        {e_dkv_bk, "Incompatible shapes for broadcasting: shapes=[(128, 64), (128, 0)]"},
        {e_dq_seg, "kv block size must be a multiple of 128"},
        {e_single, NULL}, /* the single-step kernel checks neither block_k nor head_dim */
    };
    struct chip_params ch = test_chip();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct op o = flash_op(2, 2, 512, 512, 64);
        cases[i].set(&o.u.flash);
        struct kern k;
        char err[512] = "";
        int rc = kern_init(&k, op_row(o.kind)->kern, &o, &ch, false, err, sizeof err);
        kern_fini(&k);
        if (!cases[i].want && rc != 0)
            fail_msg("case %zu: unexpected error: %s", i, err);
        if (cases[i].want && (rc == 0 || strcmp(err, cases[i].want) != 0))
            fail_msg("case %zu: got '%s', want '%s'", i, err, cases[i].want);
    }
}

/* ---- grids, operands and VMEM ---- */

static void test_flash_calls_grids_and_operands(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct op o = flash_op(3, 4, 320, 512, 64);
    struct op_flash *f = &o.u.flash;
    f->mode = ATTN_FWD_BWD;
    f->bs.block_b = 2, f->bs.block_k_major = 256;
    f->bs.block_q_dq = 64, f->bs.block_k_major_dq = 256;
    f->bs.block_q_major_dkv = 64, f->bs.block_q_dkv = 64, f->bs.block_k_major_dkv = 512;
    struct kern k;
    rec_init_ok(&k, &o, &ch, false);
    assert_int_equal(k.ncalls, 4);
    const struct pl_call *fw = &k.calls[0], *dkv = &k.calls[2], *dq = &k.calls[3];
    int64_t want_fwd[4] = {2, 4, 3, 2}, want_dkv[4] = {3, 4, 1, 5}, want_dq[4] = {3, 4, 5, 2};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fw->grid[i], want_fwd[i]);
        assert_int_equal(dkv->grid[i], want_dkv[i]);
        assert_int_equal(dq->grid[i], want_dq[i]);
        int sem = i < 3 ? PL_PARALLEL : PL_ARBITRARY;
        assert_int_equal(fw->sem[i], sem);
        assert_int_equal(dkv->sem[i], sem);
        assert_int_equal(dq->sem[i], sem);
    }
    assert_int_equal(fw->noperands, 6); /* q k v | o l m */
    assert_int_equal(fw->nscratch, 3);
    assert_int_equal(fw->operands[rec_op_index(fw, "l")].shape[3], 128);
    assert_int_equal(dkv->noperands, 9); /* q k v l m do di | dk dv (no ab, segment ids) */
    /* di is broadcast to bkM_dq lanes */
    assert_int_equal(dq->operands[rec_op_index(dq, "di")].shape[3], 256);
    assert_int_equal(dq->operands[rec_op_index(dq, "di")].block[3], 128); /* only 128 fetched */
    kern_fini(&k);

    f->mode = ATTN_FWD;
    f->kv_seq_len = 256, f->bs.block_k = f->bs.block_k_major = 256;
    rec_init_ok(&k, &o, &ch, false);
    assert_int_equal(k.ncalls, 1);
    assert_int_equal(k.calls[0].nscratch, 0);  /* single-step variant */
    assert_int_equal(k.calls[0].noperands, 4); /* no residuals */
    kern_fini(&k);
}

/* docs/pallas-semantics.md section 3 (residuals and scratch) with the minor dims padded to (8, 128) tiles. */
static void test_flash_vmem_footprint_matches_formula(void **state)
{
    (void)state;
    static const int64_t lens[] = {1024};
    struct chip_params ch = test_chip();
    ch.vpu_sublanes = 8, ch.vpu_lanes = 128; /* the (8, 128) tiles of the formula */
    struct op o = flash_op(4, 2, 1024, 1024, 64);
    struct op_flash *f = &o.u.flash;
    f->mode = ATTN_FWD_BWD, f->bias = true;
    segments(f, 1, lens);
    f->bs.block_b = 2, f->bs.block_q = 256, f->bs.block_k_major = 512;
    struct kern k;
    rec_init_ok(&k, &o, &ch, false);
    uint64_t bb = 2, bq = 256, bkM = 512, Dp = 128, s = 2, f32 = 4;
    uint64_t want = 2 * bb * bq * Dp * s                            /* q */
                    + 2 * 2 * bb * bkM * Dp * s                     /* k, v */
                    + 2 * bb * bq * Dp * s                          /* o */
                    + 2 * bb * bq * bkM * s                         /* ab */
                    + 2 * bb * bq * 128 * f32                       /* q segment ids */
                    + 2 * bb * 8 * bkM * f32                        /* kv segment ids */
                    + 2 * 2 * bb * bq * 128 * f32                   /* l, m residuals */
                    + 2 * bb * bq * 128 * f32 + bb * bq * Dp * f32; /* scratch m, l, acc */
    assert_int_equal(pl_vmem_bytes(&k.calls[0], &ch), want);
    kern_fini(&k);
}

/* ---- causal skipping ---- */

/* fwd 4x4 blocks: kv index per step 0000 0100 0120 0123 -> 9 fetches of k
 * (prologue + 8 changes); non-causal fetches all 16. Skipped steps (kj > qi)
 * report no MXU work. */
static void test_flash_causal_skipped_steps_fetch_no_kv(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    for (int causal = 0; causal < 2; causal++) {
        struct op o = flash_op(1, 1, 512, 512, 64);
        o.u.flash.causal = causal;
        struct kern k;
        rec_init_ok(&k, &o, &ch, false);
        struct rec r;
        struct pl_stats st;
        memset(&r, 0, sizeof r), memset(&st, 0, sizeof st);
        rec_run_call(&k.calls[0], &ch, &r, &st);
        const struct pl_call *c = &k.calls[0];
        assert_int_equal(st.steps, 16);
        assert_int_equal(r.fetches[rec_op_index(c, "k")], causal ? 9 : 16);
        assert_int_equal(r.fetches[rec_op_index(c, "v")], causal ? 9 : 16);
        assert_int_equal(r.fetches[rec_op_index(c, "q")], 4);
        for (int s = 0; s < 16; s++)
            assert_true((r.step_flops[s] > 0) == (!causal || s % 4 <= s / 4));
        kern_fini(&k);
    }
}

/* bwd 4x4 blocks, causal: dkv's q walks 0123 0123 0023 0003 (13 fetches) but
 * l and m, not remapped, are fetched on all 16 steps; dq remaps k like fwd
 * (9) and fetches ab on every step. */
static void test_flash_bwd_causal_remaps(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct op o = flash_op(1, 1, 512, 512, 64);
    o.u.flash.causal = o.u.flash.bias = true;
    o.u.flash.mode = ATTN_BWD;
    struct kern k;
    rec_init_ok(&k, &o, &ch, false);
    assert_int_equal(k.ncalls, 3);
    struct rec r;
    struct pl_stats st;
    memset(&r, 0, sizeof r), memset(&st, 0, sizeof st);
    const struct pl_call *dkv = &k.calls[1], *dq = &k.calls[2];
    rec_run_call(dkv, &ch, &r, &st);
    assert_int_equal(r.fetches[rec_op_index(dkv, "q")], 13);
    assert_int_equal(r.fetches[rec_op_index(dkv, "do")], 13);
    assert_int_equal(r.fetches[rec_op_index(dkv, "l")], 16);
    assert_int_equal(r.fetches[rec_op_index(dkv, "m")], 16);
    assert_int_equal(r.fetches[rec_op_index(dkv, "ab")], 16);
    assert_int_equal(r.fetches[rec_op_index(dkv, "k")], 4);
    memset(&r, 0, sizeof r);
    rec_run_call(dq, &ch, &r, &st);
    assert_int_equal(r.fetches[rec_op_index(dq, "k")], 9);
    assert_int_equal(r.fetches[rec_op_index(dq, "ab")], 16);
    assert_int_equal(r.writes[rec_op_index(dq, "ds")], 16); /* zeroed on skipped steps */
    assert_int_equal(r.fetches[rec_op_index(dq, "l")], 4);
    kern_fini(&k);
}

/* In process: the causal MXU FLOPs are those of the blocks on or below the
 * diagonal, full blocks each (16 x 16 blocks: 136 of 256). */
static void test_flash_causal_flops_count_run_blocks(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct op o = flash_op(1, 1, 2048, 2048, 64);
    o.u.flash.causal = true;
    struct kern k;
    rec_init_ok(&k, &o, &ch, false);
    struct rec r;
    struct pl_stats st;
    memset(&r, 0, sizeof r), memset(&st, 0, sizeof st);
    rec_run_call(&k.calls[0], &ch, &r, &st);
    assert_true(st.flops == 136.0 * 4 * 128 * 128 * 64);
    assert_int_equal(st.steps, 256);
    kern_fini(&k);
}

/* Through SimGrid: a causal run does about half the MXU FLOPs of the
 * non-causal one, with the same grid steps, and takes less time. */
static void test_flash_causal_summary_counters(void **state)
{
    (void)state;
#define CAUSAL_YAML(c)                                                                             \
    "chip: v5e\nworkload:\n  - {op: flash_attention, batch: 1, heads: 2, q_seq_len: 2048, "        \
    "head_dim: 64, causal: " c "}\n"
    struct result full = run(CAUSAL_YAML("false"), NULL, 0);
    struct result half = run(CAUSAL_YAML("true"), NULL, 0);
    assert_int_equal(full.rc, 0);
    assert_int_equal(half.rc, 0);
    assert_int_equal(full.steps[0], 2 * 16 * 16);
    assert_int_equal(half.steps[0], full.steps[0]);
    assert_true(half.flops[0] == full.flops[0] * 136.0 / 256.0);
    double tf = full.end[0] - full.start[0], th = half.end[0] - half.start[0];
    assert_true(th < tf && th > 0.5 * tf);
    print_message("  v5e B=1 H=2 S=2048 D=64: %.1f us non-causal, %.1f us causal\n", tf * 1e6,
                  th * 1e6);
}

/* Through SimGrid: fwd_bwd runs four calls and its functional check passes. */
static void test_flash_fwd_bwd_scenario_functional(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\nworkload:\n  - {op: flash_attention, batch: 1, heads: 1, "
                          "q_seq_len: 256, head_dim: 64, causal: true, mode: fwd_bwd, "
                          "functional: true, segment_ids: {q: [100, 156]}}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    /* fwd 2x2 + di precompute 1 + dkv 2x2 + dq 2x2 */
    assert_int_equal(r.steps[0], 4 + 1 + 4 + 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flash_fwd_matches_reference),
        cmocka_unit_test(test_flash_bwd_matches_reference),
        cmocka_unit_test(test_flash_errors_match_upstream),
        cmocka_unit_test(test_flash_calls_grids_and_operands),
        cmocka_unit_test(test_flash_vmem_footprint_matches_formula),
        cmocka_unit_test(test_flash_causal_skipped_steps_fetch_no_kv),
        cmocka_unit_test(test_flash_bwd_causal_remaps),
        cmocka_unit_test(test_flash_causal_flops_count_run_blocks),
        cmocka_unit_test(test_flash_causal_summary_counters),
        cmocka_unit_test(test_flash_fwd_bwd_scenario_functional),
    };
    return cmocka_run_group_tests_name("flash", tests, NULL, NULL);
}
