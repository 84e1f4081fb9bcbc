/* tests/unit/test_kernel_edges.c -- kernels and unit models at their edges,
 * with hand figures: the functional matmul's check at large K (a correct f32
 * accumulation passes, a wrong one fails), the pushes of a collective whose
 * pieces round to nothing, the MXU's minimum rows per pass, the ICI link
 * directions a chip's busy time divides by, HBM's peak fraction and DMA
 * time, a wrapped ring of 3, and an einsum's batch block (bb dots a step, one
 * MXU chain). */
#include "test_util.h"

#include <math.h>

#include "kernels/collective.h"
#include "kernels/tune.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "models/mxu.h"
#include "pl_rec.h"
#include "topology/topo.h"

/* ---- functional matmul: the tolerance grows with K ---- */

/* A [64, K] x [K, 128] f32 matmul run functionally (inputs uniform in [-1, 1)).
 * The kernel sums K f32 products in f32, in order: by the standard bound its
 * error is at most gamma_K sum_k |x_ik y_kj|, gamma_K = K u / (1 - K u), u =
 * 2^-24 -- at K = 4096 with sum |x y| ~ K / 4 = 1024, up to 0.25 -- while the
 * old check allowed 1e-5 x (|ref| + 1), about 2e-4 at |ref| ~ sqrt(K / 9) =
 * 21: correct results were refused from K = 1024 on. A wrong result still
 * fails: one element 1.0 off, or missing the largest of its K products. */
static void check_matmul_k(int64_t K)
{
    struct chip_params ch = test_chip();
    struct op op = {.kind = OP_MATMUL, .name = (char *)"mm"};
    op.u.matmul = (struct op_matmul){.m = 64, .k = K, .n = 128, .dt = DT_F32,
                                     .bm = 64, .bk = 512, .bn = 128};
    struct kern k;
    bool ok = false;
    char msg[256] = "";
    rec_run_functional(&k, &op, &ch, 11, &ok, msg, sizeof msg);
    if (!ok)
        print_error("K = %lld: %s\n", (long long)K, msg);
    assert_true(ok);
    float *x = k.calls[0].operands[0].data, *y = k.calls[0].operands[1].data;
    float *o = k.calls[0].operands[2].data;
    float keep = o[5];
    o[5] += 1.0f;
    kern_verify(&k, &ok, msg, sizeof msg);
    assert_false(ok);
    assert_non_null(strstr(msg, "o differs from the reference matmul"));
    o[5] = keep;
    double big = 0; /* element (0, 0) without its largest product */
    for (int64_t kk = 0; kk < K; kk++)
        big = fabs((double)x[kk] * y[kk * 128]) > fabs(big) ? (double)x[kk] * y[kk * 128] : big;
    assert_true(fabs(big) > 0.5);
    o[0] -= (float)big;
    kern_verify(&k, &ok, msg, sizeof msg);
    assert_false(ok);
    kern_fini(&k);
}

static void test_matmul_functional_k1024(void **state)
{
    (void)state;
    check_matmul_k(1024);
}

static void test_matmul_functional_k4096(void **state)
{
    (void)state;
    check_matmul_k(4096);
}

/* ---- a collective whose pieces round to nothing ---- */

struct zrec {
    int rdmas, zero_rdmas;
    double sent, taken;
};

static void *z_rdma(void *ex, int dst, uint64_t bytes, int sem)
{
    struct zrec *z = ex;
    (void)dst, (void)sem;
    z->rdmas++;
    z->zero_rdmas += bytes == 0;
    z->sent += (double)bytes;
    return z;
}

static void z_wait_send(void *ex, void *h)
{
    (void)ex, (void)h;
}

static void z_wait_recv(void *ex, int sem, uint64_t bytes)
{
    (void)sem;
    ((struct zrec *)ex)->taken += (double)bytes;
}

static void z_signal(void *ex, int dst, int sem, int inc)
{
    (void)ex, (void)dst, (void)sem, (void)inc;
}

static void z_wait(void *ex, int sem, int value)
{
    (void)ex, (void)sem, (void)value;
}

static void z_reduce(void *ex, uint64_t bytes, enum dtype dt, int times)
{
    (void)ex, (void)bytes, (void)dt, (void)times;
}

static void z_bytes(void *ex, uint64_t bytes)
{
    (void)ex, (void)bytes;
}

static void z_delay(void *ex, double s)
{
    (void)ex, (void)s;
}

static const struct coll_exec_ops z_ops = {.rdma = z_rdma, .wait_send = z_wait_send,
                                           .wait_recv = z_wait_recv, .signal = z_signal,
                                           .wait = z_wait, .reduce = z_reduce,
                                           .local_copy = z_bytes, .delay = z_delay,
                                           .rdma_dcn = z_rdma};

/* Chip 0's part of 'kind' moving 'bytes' over both axes of a 4 x 4 torus. */
static struct zrec run_coll(enum op_kind kind, uint64_t bytes, enum coll_algo algo)
{
    struct topo t;
    int shape[2] = {4, 4};
    bool wrap[2] = {true, true};
    assert_int_equal(topo_init(&t, 2, shape, wrap), 0);
    struct chip_params ch = test_chip();
    struct op op = {.kind = kind, .name = (char *)"c"};
    op.u.coll.bytes = bytes, op.u.coll.naxes = 2, op.u.coll.axes[0] = 0, op.u.coll.axes[1] = 1;
    op.u.coll.algo = algo;
    struct coll_plan plan;
    coll_plan(&op, &t, &plan);
    struct zrec z = {0};
    for (int p = 0; p < plan.nparts; p++) {
        struct coll_ctx c = {.topo = &t, .chip = &ch, .op = &op, .me = 0, .part = p,
                             .ops = &z_ops, .ex = &z, .nslices = 1};
        coll_run_part(&c, &plan);
    }
    return z;
}

/* An all_to_all of 1 byte over a 4 x 4 torus, one pass per axis: each of the
 * 3 pieces a pass pushes is 1 / 4 of a byte, nothing. A zero-byte push still
 * posted a semaphore message that no wait took (0 bytes are taken at once):
 * 96 bytes of them leaked per run (LeakSanitizer). No push of nothing; 32
 * bytes: 8 per piece, 3 pieces per pass, 2 passes = 6 pushes of 48 bytes,
 * as many taken. The ring psum (an all_reduce of 1 byte in two parts of 0
 * bytes) likewise. */
static void test_collective_pieces_of_nothing_push_nothing(void **state)
{
    (void)state;
    struct zrec z = run_coll(OP_ALL_TO_ALL, 1, COLL_ALGO_DEFAULT);
    assert_int_equal(z.zero_rdmas, 0);
    assert_float_equal(z.sent, 0, 0);
    z = run_coll(OP_ALL_TO_ALL, 32, COLL_ALGO_DEFAULT);
    assert_int_equal(z.rdmas, 6);
    assert_int_equal(z.zero_rdmas, 0);
    assert_float_equal(z.sent, 48, 0);
    assert_float_equal(z.taken, 48, 0);
    z = run_coll(OP_ALL_REDUCE, 1, COLL_ALGO_RING_PSUM);
    assert_int_equal(z.zero_rdmas, 0);
}

/* An all-gather of S bytes over both axes of a 2x2 (no wraparound: axes of 2
 * never wrap) runs in two parts, one starting on each axis, as over a torus:
 * part 0 gathers S/2 over axis 0, then 2 x S/2 = S over axis 1. By hand, each
 * link then carries S/2 + S = 1.5 S each way, against 3 S in one part (S over
 * axis 0, then 2 S over axis 1, one link at a time): the published v7 2x2x1
 * all-gather reaches two links' worth into each chip (178.8 GB/s). A 2x4's
 * line of 4 still makes it one part; an all-gather over one axis is one part. */
static void test_all_gather_pairs_run_in_parts(void **state)
{
    (void)state;
    struct topo t;
    int shape[2] = {2, 2};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&t, 2, shape, wrap), 0);
    struct op op = {.kind = OP_ALL_GATHER, .name = (char *)"ag"};
    op.u.coll.bytes = 1024, op.u.coll.naxes = 2, op.u.coll.axes[0] = 0, op.u.coll.axes[1] = 1;
    struct coll_plan plan;
    coll_plan(&op, &t, &plan);
    assert_int_equal(plan.nparts, 2);
    for (int p = 0; p < 2; p++) {
        assert_int_equal(plan.parts[p].nphases, 2);
        assert_int_equal(plan.parts[p].phases[0].axis, p);
        assert_int_equal(plan.parts[p].phases[0].bytes, 512);
        assert_int_equal(plan.parts[p].phases[1].axis, 1 - p);
        assert_int_equal(plan.parts[p].phases[1].bytes, 1024);
    }
    op.kind = OP_REDUCE_SCATTER;
    coll_plan(&op, &t, &plan);
    assert_int_equal(plan.nparts, 2);
    shape[1] = 4;
    assert_int_equal(topo_init(&t, 2, shape, wrap), 0);
    coll_plan(&op, &t, &plan);
    assert_int_equal(plan.nparts, 1);
    op.kind = OP_ALL_GATHER;
    coll_plan(&op, &t, &plan);
    assert_int_equal(plan.nparts, 1);
}

/* ---- the MXU's minimum rows ---- */

/* Test chip: 4 MXUs of 128 at 1 GHz. A pass streams max(M padded to 8, 128)
 * rows: M = 8 over K = N = 512 is 16 passes, 4 per MXU, 4 x 128 rows + 128
 * fill = 640 ns (not 4 x 8 + 128 = 160); M = 100 pads to 104, still 128 rows;
 * M = 136 (above the array) streams 136: 4 x 136 + 128 = 672 ns; M = 1 as 8. */
static void test_mxu_minimum_rows(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    assert_float_equal(mxu_time_s(&ch, 8, 512, 512, DT_BF16), 640e-9, 1e-15);
    assert_float_equal(mxu_time_s(&ch, 100, 512, 512, DT_BF16), 640e-9, 1e-15);
    assert_float_equal(mxu_time_s(&ch, 1, 512, 512, DT_BF16), 640e-9, 1e-15);
    assert_float_equal(mxu_time_s(&ch, 136, 512, 512, DT_BF16), 672e-9, 1e-15);
    assert_float_equal(mxu_time_s(&ch, 129, 512, 512, DT_BF16), 672e-9, 1e-15);
}

/* ---- ICI directions in busy time ---- */

/* A chip's ICI busy time is its bytes over its link directions: two per axis
 * longer than 1, at most the chip's links. 9e9 bytes at 45 GB/s a direction:
 * a 4 x 4 slice (4 directions of 4 links) 50 ms, a line of 4 (2) 100 ms, a
 * 1 x 4 slice (the axis of 1 has no link) 100 ms, a single chip 200 ms (one,
 * not none); a 4 x 4 x 4 slice of a 4-link chip is capped at 4: 50 ms, of a
 * 6-link chip 6: 33.3 ms; efficiency 0.5 doubles them. */
static void test_ici_directions_in_busy_time(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.ici_bw_Bps = 45e9, ch.ici_efficiency = 1, ch.ici_links = 4;
    struct topo t;
    int s44[2] = {4, 4}, s4[1] = {4}, s14[2] = {1, 4}, s1[1] = {1}, s444[3] = {4, 4, 4};
    bool w[3] = {true, true, true};
    assert_int_equal(topo_init(&t, 2, s44, w), 0);
    assert_int_equal(ici_link_dirs(&ch, &t), 4);
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.05, 1e-12);
    assert_int_equal(topo_init(&t, 1, s4, w), 0);
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.1, 1e-12);
    assert_int_equal(topo_init(&t, 2, s14, w), 0);
    assert_int_equal(ici_link_dirs(&ch, &t), 2);
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.1, 1e-12);
    assert_int_equal(topo_init(&t, 1, s1, w), 0);
    assert_int_equal(ici_link_dirs(&ch, &t), 1);
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.2, 1e-12);
    assert_int_equal(topo_init(&t, 3, s444, w), 0);
    assert_int_equal(ici_link_dirs(&ch, &t), 4);
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.05, 1e-12);
    ch.ici_links = 6;
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.2 / 6, 1e-12);
    ch.ici_efficiency = 0.5;
    assert_float_equal(ici_busy_s(&ch, &t, 9e9), 0.4 / 6, 1e-12);
}

/* ---- HBM: the peak fraction is of the published bandwidth ---- */

/* 1 TB/s published, efficiency 0.88: 8.8e11 bytes in 1 s is 0.88 of the peak
 * (not 1.0, the derated rate's); a DMA of 1 MB at half efficiency takes the
 * issue latency (1 us) and 1e6 / 5e11 = 2 us. */
static void test_hbm_peak_fraction_and_dma_time(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.hbm_bw_Bps = 1e12, ch.hbm_efficiency = 0.88;
    assert_float_equal(hbm_peak_fraction(&ch, 8.8e11, 1.0), 0.88, 1e-12);
    assert_float_equal(hbm_busy_s(&ch, 8.8e11), 1.0, 1e-12);
    ch.hbm_efficiency = 0.5, ch.dma_issue_s = 1e-6;
    assert_float_equal(hbm_dma_time_s(&ch, 1000000), 3e-6, 1e-15);
}

/* ---- a ring of 3 keeps its wraparound ---- */

/* [3] with wraparound is a ring: chip 0's left neighbour is chip 2, one hop;
 * [2] with wraparound asked is a pair (its two links would join the same
 * chips): chip 0 has no left neighbour. */
static void test_ring_of_three_wraps(void **state)
{
    (void)state;
    struct topo t;
    int s3[1] = {3}, s2[1] = {2};
    bool w[1] = {true};
    assert_int_equal(topo_init(&t, 1, s3, w), 0);
    assert_true(t.wrap[0]);
    assert_int_equal(topo_neighbor(&t, 0, 0, -1), 2);
    assert_int_equal(topo_hops(&t, 0, 2), 1);
    assert_int_equal(topo_init(&t, 1, s2, w), 0);
    assert_false(t.wrap[0]);
    assert_int_equal(topo_neighbor(&t, 0, 0, -1), -1);
}

/* ---- einsum batch blocks: bb tiny dots a grid step, one MXU chain ---- */

/* The test chip: 4 MXUs of 128 at 1 GHz (131.072e12 / (2 x 128^2 x 4)). One
 * [8, 128] x [128, 2048] dot is 16 weight tiles: 4 passes a MXU of 128 rows
 * (8 rows pad to a pass of 128) + a fill/drain of 128 = 640 cycles. 16 such
 * dots back to back are 256 passes, 64 a MXU: 64 x 128 + 128 = 8320 cycles,
 * where 16 separate ones take 16 x 640 = 10240. */
static void test_mxu_chain_pays_one_fill(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    assert_float_equal(mxu_time_s(&ch, 8, 128, 2048, DT_BF16), 640e-9, 1e-15);
    assert_float_equal(mxu_chain_time_s(&ch, 1, 8, 128, 2048, DT_BF16), 640e-9, 1e-15);
    assert_float_equal(mxu_chain_time_s(&ch, 16, 8, 128, 2048, DT_BF16), 8320e-9, 1e-15);
    assert_float_equal(mxu_chain_time_s(&ch, 0, 8, 128, 2048, DT_BF16), 0, 1e-18);
}

static struct op einsum_op(int64_t bb)
{
    struct op op = {.kind = OP_EINSUM, .name = (char *)"ein"};
    op.u.matmul = (struct op_matmul){.batch = 32, .m = 8, .k = 128, .n = 256, .dt = DT_BF16,
                                     .bm = 8, .bk = 128, .bn = 256, .bb = bb};
    return op;
}

/* An einsum of 32 [8, 128] x [128, 256] dots, each 2 weight tiles: one a
 * step (bb 1) is 32 steps of a pass of 128 rows on one MXU + 128 fill = 256
 * cycles, 8192 ns, and 32 step overheads; 8 a step (bb 8) is 4 steps of 16
 * passes, 4 a MXU: 4 x 128 + 128 = 640 cycles, 2560 ns, and 4 overheads. The
 * functional run computes every element's dot. */
static void test_einsum_batch_block(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.step_overhead_s = 0.2e-6;
    const int64_t bbs[2] = {1, 8};
    const double mxu_s[2] = {8192e-9, 2560e-9}, ovh_s[2] = {32 * 0.2e-6, 4 * 0.2e-6};
    for (int i = 0; i < 2; i++) {
        struct op op = einsum_op(bbs[i]);
        struct kern km;
        char err[256];
        assert_int_equal(kern_init(&km, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
        struct pl_stats st = {0};
        pl_dry_run(&km.calls[0], &ch, 0, pl_num_steps(&km.calls[0]), &st);
        assert_int_equal(st.steps, 32 / bbs[i]);
        assert_float_equal(st.mxu_s, mxu_s[i], 1e-15);
        assert_float_equal(st.overhead_s, ovh_s[i], 1e-15);
        assert_float_equal(st.flops, 32 * 2.0 * 8 * 128 * 256, 1);
        kern_fini(&km);
        struct kern kf;
        rec_functional_ok(&kf, &op, &ch, 5);
        kern_fini(&kf);
    }
    struct op bad = einsum_op(3);
    struct kern kb;
    char err[256];
    assert_int_equal(kern_init(&kb, op_row(bad.kind)->kern, &bad, &ch, false, err, sizeof err), -1);
    assert_string_equal(err, "batch=32 should be divisible by bb=3");
    kern_fini(&kb);
}

/* block: auto offers bb > 1 (powers of 2 dividing the batch, the dot whole)
 * only to a dot of at most one pass of rows (m <= mxu_dim). */
static void test_einsum_tune_offers_batch_blocks_to_tiny_dots(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    int64_t v[256][TUNE_MAX_PARAMS];
    struct op op = einsum_op(1);
    int n = kern_einsum_tune.enumerate(&op, &ch, v, 256);
    int batched = 0;
    for (int i = 0; i < n; i++)
        if (v[i][3] > 1) {
            assert_int_equal(v[i][0], 8), assert_int_equal(v[i][1], 128);
            assert_int_equal(v[i][2], 256);
            batched++;
        }
    assert_int_equal(batched, 5); /* bb 2, 4, 8, 16, 32 */
    op.u.matmul.m = 256, op.u.matmul.bm = 256;
    n = kern_einsum_tune.enumerate(&op, &ch, v, 256);
    for (int i = 0; i < n; i++)
        assert_int_equal(v[i][3], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_functional_k1024),
        cmocka_unit_test(test_matmul_functional_k4096),
        cmocka_unit_test(test_collective_pieces_of_nothing_push_nothing),
        cmocka_unit_test(test_all_gather_pairs_run_in_parts),
        cmocka_unit_test(test_mxu_minimum_rows),
        cmocka_unit_test(test_ici_directions_in_busy_time),
        cmocka_unit_test(test_hbm_peak_fraction_and_dma_time),
        cmocka_unit_test(test_ring_of_three_wraps),
        cmocka_unit_test(test_mxu_chain_pays_one_fill),
        cmocka_unit_test(test_einsum_batch_block),
        cmocka_unit_test(test_einsum_tune_offers_batch_blocks_to_tiny_dots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
