/* tests/unit/test_pallas.c -- the Pallas pipeline schedule, recorded without
 * an engine (pl_rec.h): which DMAs start and are waited on at which step. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/collective.h"
#include "kernels/kernel.h"
#include "config/op_table.h"
#include "kernels/pallas.h"
#include "models/hbm.h"
#include "models/mxu.h"
#include "models/vpu.h"
#include "pl_rec.h"

/* An input whose block index goes A, B, A is fetched three times. */
static const int64_t aba[] = {0, 1, 0, 0};
static void aba_index(const int64_t *g, const void *u, int64_t *b)
{
    (void)u;
    b[0] = aba[g[0]];
}

static void noop_body(struct pl_ctx *ctx, const int64_t *g, void *u)
{
    (void)g, (void)u;
    pl_vpu(ctx, 8, 128, 1, 0, 0, 0, 0);
}

static struct pl_call aba_call(void)
{
    struct pl_call c;
    memset(&c, 0, sizeof c);
    c.name = "aba";
    c.ngrid = 1, c.grid[0] = 4;
    c.noperands = 1;
    c.operands[0] = (struct pl_operand){.name = "x", .dir = PL_IN, .space = PL_VMEM, .dt = DT_F32,
                                   .rank = 1, .shape = {2048}, .block = {1024}, .index = aba_index};
    c.body = noop_body;
    return c;
}

static void test_pl_skip_rule_compares_only_previous_step(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct pl_call c = aba_call();
    struct rec r = {0};
    struct pl_exec ex = {&rec_ops, &r, false};
    struct pl_stats st = {0};
    pl_run(&c, &ch, 0, 4, &ex, &st);
    /* prologue F0(A); s0: F0(B) w1 C0; s1: F0(A) w2 C1; s2: (same A) w3 C2; s3: C3 */
    assert_string_equal(r.log, "F0 F0 w1 C0 F0 w2 C1 w3 C2 C3 ");
    assert_int_equal(st.dmas, 3);
    assert_int_equal(st.steps, 4);
}

static void test_pl_output_written_when_index_changes(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct op op = {.kind = OP_MATMUL, .name = (char *)"mm"};
    op.u.matmul = (struct op_matmul){.m = 256, .k = 256, .n = 128, .dt = DT_BF16,
                                     .bm = 128, .bk = 128, .bn = 128};
    struct kern km;
    char err[256];
    assert_int_equal(kern_init(&km, op_row((&op)->kind)->kern, &op, &ch, false, err, sizeof err), 0);
    struct rec r = {0};
    struct pl_exec ex = {&rec_ops, &r, false};
    struct pl_stats st = {0};
    pl_run(&km.calls[0], &ch, 0, pl_num_steps(&km.calls[0]), &ex, &st);
    kern_fini(&km);
    /* grid (2,1,2): o(0,0) is written back after step 1 (handle 7) and waited
     * on after the compute of step 2; o(1,0) is written at the last step and
     * waited in the epilogue */
    assert_string_equal(r.log, "F0 F1 F0 F1 w1 w2 C0 F0 F1 w3 w4 C1 W2 F0 F1 w5 w6 C2 w7 "
                               "w8 w9 C3 W2 w10 ");
    assert_int_equal(st.dmas, 10);
}

/* A (1, 1, k) matmul of 128^3 blocks: every step but the first and the last
 * is the same steady step, bandwidth-bound on the test chip. */
static void coalesce_matmul(int64_t k, struct rec *r, struct pl_stats *st)
{
    struct chip_params ch = test_chip();
    struct op op = {.kind = OP_MATMUL, .name = (char *)"mm"};
    op.u.matmul = (struct op_matmul){.m = 128, .k = k, .n = 128, .dt = DT_BF16,
                                     .bm = 128, .bk = 128, .bn = 128};
    struct kern km;
    char err[256];
    assert_int_equal(kern_init(&km, op_row((&op)->kind)->kern, &op, &ch, false, err, sizeof err), 0);
    struct pl_exec ex = {&rec_ops, r, true};
    pl_run(&km.calls[0], &ch, 0, k / 128, &ex, st);
    kern_fini(&km);
}

static void test_pl_coalesces_steady_steps(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pl_stats st = {0};
    coalesce_matmul(20 * 128, &r, &st);
    assert_int_equal(r.computes, 20); /* steps computed, in 3 calls */
    assert_int_equal(st.coalesced_runs, 1);
    assert_int_equal(st.steps, 20);
    assert_int_equal(st.dmas, 2 + 2 * 19 + 1);
    /* step 0 exact, steps 1..18 one run (one DMA per operand), step 19 exact */
    assert_non_null(strstr(r.log, "C1+"));
}

/* A run of at most 16 bandwidth-bound steps is executed step by step (kernels/
 * pallas_fast.c flush_run): 6 steady steps here, so no run, one compute per step. */
static void test_pl_short_bandwidth_bound_run_runs_step_by_step(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pl_stats st = {0};
    coalesce_matmul(8 * 128, &r, &st);
    assert_int_equal(r.computes, 8);
    assert_int_equal(st.coalesced_runs, 0);
    assert_int_equal(st.steps, 8);
    assert_int_equal(st.dmas, 2 + 2 * 7 + 1);
    assert_null(strstr(r.log, "C1+"));
}

/* A recorded run replays the same executor calls in the same order (the log
 * and every DMA's wait) with the same statistics, for each core's range, with
 * and without coalescing; a script replays any number of times. */
static void script_equals_run(const struct pl_call *c, const struct chip_params *ch, int64_t b,
                              int64_t e, bool coalesce)
{
    struct rec direct = {0}, replayed = {0};
    struct pl_exec xd = {&rec_ops, &direct, coalesce}, xr = {&rec_ops, &replayed, coalesce};
    struct pl_stats sd = {0}, sr = {0};
    pl_run(c, ch, b, e, &xd, &sd);
    pl_run(c, ch, b, e, &xd, &sd); /* twice: stats accumulate */
    struct pl_script *s = pl_record(c, ch, b, e, coalesce);
    pl_replay(s, &xr, &sr);
    pl_replay(s, &xr, &sr);
    pl_script_free(s);
    assert_string_equal(direct.log, replayed.log);
    assert_int_equal(direct.ndmas, replayed.ndmas);
    assert_int_equal(direct.waited, replayed.waited);
    assert_int_equal(replayed.ndmas, replayed.waited);
    assert_true(direct.flops == replayed.flops);
    assert_int_equal(sd.steps, sr.steps);
    assert_int_equal(sd.compute_steps, sr.compute_steps);
    assert_int_equal(sd.dmas, sr.dmas);
    assert_int_equal(sd.coalesced_runs, sr.coalesced_runs);
    assert_int_equal(sd.vmem_bytes, sr.vmem_bytes);
    assert_true(sd.hbm_bytes == sr.hbm_bytes && sd.flops == sr.flops);
    assert_true(sd.mxu_s == sr.mxu_s && sd.vpu_s == sr.vpu_s && sd.overhead_s == sr.overhead_s);
}

static void test_pl_script_replays_the_run(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct pl_call c = aba_call();
    for (int co = 0; co < 2; co++)
        script_equals_run(&c, &ch, 0, 4, co);
    struct op op = {.kind = OP_MATMUL, .name = (char *)"mm"};
    op.u.matmul = (struct op_matmul){.m = 512, .k = 1024, .n = 256, .dt = DT_BF16,
                                     .bm = 128, .bk = 128, .bn = 128};
    struct kern km;
    char err[256];
    assert_int_equal(kern_init(&km, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
    assert_true(pl_scriptable(&km.calls[0]));
    for (int core = 0; core < 2; core++) {
        int64_t b, e;
        pl_core_range(&km.calls[0], core, 2, &b, &e);
        for (int co = 0; co < 2; co++)
            script_equals_run(&km.calls[0], &ch, b, e, co);
    }
    kern_fini(&km);
}

static void test_pl_trivial_window_moves_once(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct pl_call c = aba_call();
    c.operands[0].index = NULL;
    c.operands[0].block[0] = 2048;
    c.grid[0] = 5;
    struct rec r = {0};
    struct pl_exec ex = {&rec_ops, &r, false};
    struct pl_stats st = {0};
    pl_run(&c, &ch, 0, 5, &ex, &st);
    assert_string_equal(r.log, "F0 w1 C0 C1 C2 C3 C4 ");
    assert_int_equal(pl_vmem_bytes(&c, &ch), 2048 * 4); /* single buffer */
}

static void rec_dma_sync(void *ex, bool in, uint64_t bytes, int op)
{
    struct rec *r = ex;
    rec_log(r, "S");
    rec_dma_wait(ex, rec_dma_start(ex, in, bytes, op));
}

/* A DMA waited on at once (a trivial window's input, a lone trivial
 * output's write-back) goes to the executor's dma_sync when it has one,
 * with the same statistics: the accumulate step of a reduction of 1 MiB of
 * f32 (256 rows of 1024, one block) moves acc and recv in, out back. */
static void test_pl_sync_dmas(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct coll_reduce k;
    struct pl_call c;
    coll_reduce_call(&k, 1 << 20, DT_F32, &c);
    static const struct pl_exec_ops sync_ops = {rec_dma_start, rec_dma_wait, rec_compute,
                                                rec_delay, rec_dma_sync, NULL};
    struct rec r = {0}, rs = {0};
    struct pl_stats st = {0}, sts = {0};
    struct pl_exec ex = {&rec_ops, &r, false}, exs = {&sync_ops, &rs, false};
    pl_run(&c, &ch, 0, 1, &ex, &st);
    pl_run(&c, &ch, 0, 1, &exs, &sts);
    assert_string_equal(r.log, "F0 w1 F1 w2 C0 W2 w3 ");
    assert_string_equal(rs.log, "SF0 w1 SF1 w2 C0 SW2 w3 ");
    assert_int_equal(sts.dmas, 3);
    assert_int_equal(st.dmas, 3);
    assert_true(sts.hbm_bytes == 3.0 * (1 << 20) && st.hbm_bytes == sts.hbm_bytes);
    assert_true(sts.useful_bytes == st.useful_bytes);
    /* fast fidelity: a one-step stream is its latencies, its compute and one
     * DMA of all its bytes (kernels/pallas_fast.c, run_single_stream), same stats */
    struct rec rf = {0};
    struct pl_stats sf = {0};
    struct pl_exec exf = {&sync_ops, &rf, true};
    pl_run(&c, &ch, 0, 1, &exf, &sf);
    assert_string_equal(rf.log, "C0 SF-1 w1 ");
    assert_int_equal(sf.dmas, 3);
    assert_int_equal(sf.steps, sts.steps);
    assert_true(sf.hbm_bytes == sts.hbm_bytes && sf.useful_bytes == sts.useful_bytes);
    assert_true(sf.vpu_s == sts.vpu_s && sf.overhead_s == sts.overhead_s);
}

/* The delays an executor's stream op was given (test_pl_stream_runs_whole). */
static double stream_delay_s[3];

static void rec_stream(void *ex, int n, const bool *in, const uint64_t *bytes, const int *operand,
                       const struct pl_work *w, int64_t step, int64_t nsteps, double pre_s,
                       double mid_s, double post_s)
{
    void *h[PL_MAX_OPERANDS];
    rec_log(ex, "S%d ", n);
    for (int i = 0; i < n; i++)
        h[i] = rec_dma_start(ex, in[i], bytes[i], operand[i]);
    rec_compute(ex, w, step, nsteps);
    for (int i = 0; i < n; i++)
        rec_dma_wait(ex, h[i]);
    stream_delay_s[0] = pre_s, stream_delay_s[1] = mid_s, stream_delay_s[2] = post_s;
}

/* A bandwidth-bound stream (the reduction's accumulate step, 8 blocks) runs
 * whole in fast fidelity: one DMA per operand for all its blocks and one
 * compute, with the statistics of the step-by-step run; exact runs it step
 * by step. */
static void test_pl_stream_runs_whole(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.hbm_efficiency = 1; /* a block's three DMAs 3.1 us, its adds 0.5 us */
    struct coll_reduce k;
    struct pl_call c;
    coll_reduce_call(&k, 8 << 20, DT_BF16, &c); /* 4096 rows: 8 blocks of 512 */
    assert_true(c.stream && c.grid[0] == 8);
    struct rec rf = {0}, re = {0};
    struct pl_stats sf = {0}, se = {0};
    struct pl_exec xf = {&rec_ops, &rf, true}, xe = {&rec_ops, &re, false};
    pl_run(&c, &ch, 0, 8, &xf, &sf);
    pl_run(&c, &ch, 0, 8, &xe, &se);
    assert_string_equal(rf.log, "F0 F1 W2 C0+ w1 w2 w3 ");
    assert_int_equal(rf.computes, 8);
    assert_int_equal(re.computes, 8);
    assert_int_equal(sf.coalesced_runs, 1);
    assert_int_equal(se.coalesced_runs, 0);
    assert_int_equal(sf.steps, se.steps);
    assert_int_equal(sf.dmas, se.dmas);
    assert_int_equal(sf.dmas, 3 * 8);
    assert_true(sf.hbm_bytes == se.hbm_bytes && sf.useful_bytes == se.useful_bytes);
    assert_true(sf.vpu_flops == se.vpu_flops && sf.vpu_s == se.vpu_s);
    assert_true(sf.overhead_s == se.overhead_s);
    /* an executor with a stream op gets it whole in one call, same stats, with
     * the delays of the run above: a step's overhead before the DMAs, the
     * other 7 steps' after the compute, and after the waits the last
     * block's compute (a 512x1024 f32 sum: 0.5 us) and the write-back's
     * issue latency */
    static const struct pl_exec_ops stream_ops = {rec_dma_start, rec_dma_wait, rec_compute,
                                                  rec_delay, NULL, rec_stream};
    struct rec rb = {0};
    struct pl_stats sb = {0};
    struct pl_exec xb = {&stream_ops, &rb, true};
    pl_run(&c, &ch, 0, 8, &xb, &sb);
    assert_string_equal(rb.log, "S3 F0 F1 W2 C0+ w1 w2 w3 ");
    assert_int_equal(sb.dmas, sf.dmas);
    assert_true(sb.hbm_bytes == sf.hbm_bytes && sb.useful_bytes == sf.useful_bytes);
    assert_true(sb.overhead_s == sf.overhead_s && sb.vpu_s == sf.vpu_s);
    double o = ch.step_overhead_s, c_s = sf.vpu_s / 8;
    assert_float_equal(stream_delay_s[0], o, 1e-15);
    assert_float_equal(stream_delay_s[1], 7 * o, 1e-15);
    assert_float_equal(stream_delay_s[2], c_s + ch.dma_issue_s, 1e-15);
    /* compute-bound steps (a VPU 10^4 times slower) keep the pipeline */
    ch.clock_hz /= 1e4;
    struct rec rc = {0};
    struct pl_stats sc = {0};
    struct pl_exec xc = {&rec_ops, &rc, true};
    pl_run(&c, &ch, 0, 8, &xc, &sc);
    assert_null(strstr(rc.log, "F0 F1 W2 C0+"));
    assert_int_equal(sc.dmas, 3 * 8);
}

/* The delays an executor was given outside a stream op (test_pl_repeat_in_one_go). */
static double delay_sum_s;

static void sum_delay(void *ex, double s)
{
    (void)ex;
    delay_sum_s += s;
}

/* A call's repeat (a coalesced ring pass's reductions, one per step) runs its R runs
 * back to back, each its own pipeline. Fast fidelity prices them in one go with the
 * statistics of R runs: a bandwidth-bound stream of 8 blocks run 3 times is one stream
 * of the 24 blocks whose fill takes the 3 fills (o before the DMAs, whose issue
 * latency l the executor adds, so 3 o + 2 l) and whose drain the 3 drains (3 (c + l));
 * in isolation 3 (o + 2 l + c) + 24 d, the three runs' time. A one-step stream (1 MiB
 * of f32, one block) run 3 times: 3 (o + 2 l) + 2 l of delays, 3 computes and one DMA
 * of the 3 runs' bytes (its own l and bytes / B): 3 (o + 3 l + c + bytes / B). Exact
 * (no coalescing) runs the pipeline 3 times over. */
static void test_pl_repeat_in_one_go(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.hbm_efficiency = 1;
    struct coll_reduce k;
    struct pl_call c;
    coll_reduce_call(&k, 8 << 20, DT_BF16, &c);
    static const struct pl_exec_ops stream_ops = {rec_dma_start, rec_dma_wait, rec_compute,
                                                  rec_delay, NULL, rec_stream};
    struct rec r1 = {0}, r3 = {0};
    struct pl_stats s1 = {0}, s3 = {0};
    struct pl_exec x1 = {&stream_ops, &r1, true}, x3 = {&stream_ops, &r3, true};
    pl_run(&c, &ch, 0, 8, &x1, &s1);
    double one[3] = {stream_delay_s[0], stream_delay_s[1], stream_delay_s[2]};
    c.repeat = 3;
    pl_run(&c, &ch, 0, 8, &x3, &s3);
    assert_string_equal(r3.log, "S3 F0 F1 W2 C0+ w1 w2 w3 ");
    assert_int_equal(r3.computes, 24);
    assert_int_equal(s3.steps, 3 * s1.steps);
    assert_int_equal(s3.dmas, 3 * s1.dmas);
    assert_int_equal(s3.coalesced_runs, 3 * s1.coalesced_runs);
    assert_true(s3.hbm_bytes == 3 * s1.hbm_bytes && s3.useful_bytes == 3 * s1.useful_bytes);
    assert_float_equal(s3.vpu_s, 3 * s1.vpu_s, 1e-15);
    assert_float_equal(s3.overhead_s, 3 * s1.overhead_s, 1e-15);
    double o = ch.step_overhead_s, l = ch.dma_issue_s, c_s = s1.vpu_s / 8;
    assert_float_equal(one[0] + one[2], o + c_s + l, 1e-15);
    assert_float_equal(stream_delay_s[0], 3 * o + 2 * l, 1e-15);
    assert_float_equal(stream_delay_s[1], 23 * o, 1e-15);
    assert_float_equal(stream_delay_s[2], 3 * (c_s + l), 1e-15);
    /* a one-step stream */
    coll_reduce_call(&k, 1 << 20, DT_F32, &c);
    static const struct pl_exec_ops sync_ops = {rec_dma_start, rec_dma_wait, rec_compute,
                                                sum_delay, rec_dma_sync, NULL};
    struct rec q1 = {0}, q3 = {0};
    struct pl_stats t1 = {0}, t3 = {0};
    struct pl_exec y1 = {&sync_ops, &q1, true}, y3 = {&sync_ops, &q3, true};
    delay_sum_s = 0;
    pl_run(&c, &ch, 0, 1, &y1, &t1);
    assert_float_equal(delay_sum_s, o + 2 * l, 1e-15);
    c.repeat = 3;
    delay_sum_s = 0;
    pl_run(&c, &ch, 0, 1, &y3, &t3);
    assert_string_equal(q3.log, "C0+ SF-1 w1 ");
    assert_float_equal(delay_sum_s, 3 * (o + 2 * l) + 2 * l, 1e-15);
    assert_int_equal(q3.in_bytes, 3 * q1.in_bytes);
    assert_int_equal(t3.steps, 3 * t1.steps);
    assert_int_equal(t3.dmas, 3 * t1.dmas);
    assert_true(t3.hbm_bytes == 3 * t1.hbm_bytes && t3.useful_bytes == 3 * t1.useful_bytes);
    assert_float_equal(t3.vpu_s, 3 * t1.vpu_s, 1e-15);
    assert_float_equal(t3.overhead_s, 3 * t1.overhead_s, 1e-15);
    /* exact: the pipeline three times */
    struct rec e1 = {0}, e3 = {0};
    struct pl_exec z1 = {&rec_ops, &e1, false}, z3 = {&rec_ops, &e3, false};
    c.repeat = 1;
    struct pl_stats u1 = {0};
    pl_run(&c, &ch, 0, 1, &z1, &u1);
    c.repeat = 3;
    struct pl_stats u3 = {0};
    pl_run(&c, &ch, 0, 1, &z3, &u3);
    assert_string_equal(e1.log, "F0 w1 F1 w2 C0 W2 w3 ");
    assert_string_equal(e3.log, "F0 w1 F1 w2 C0 W2 w3 F0 w4 F1 w5 C0 W2 w6 F0 w7 F1 w8 C0 W2 w9 ");
    assert_int_equal(u3.dmas, 9);
}

static void test_pl_block_shape_rule(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct op op = {.kind = OP_MATMUL, .name = (char *)"mm"};
    op.u.matmul = (struct op_matmul){.m = 256, .k = 256, .n = 256, .dt = DT_BF16,
                                     .bm = 128, .bk = 64, .bn = 128};
    struct kern km;
    char err[256];
    assert_int_equal(kern_init(&km, op_row((&op)->kind)->kern, &op, &ch, false, err, sizeof err), -1);
    kern_fini(&km);
    assert_non_null(strstr(err, "operand 'x': block shape's last two dims must be divisible by "
                                "(8, 128)"));
    op.u.matmul.bk = 128, op.u.matmul.m = 200, op.u.matmul.bm = 128;
    assert_int_equal(kern_init(&km, op_row((&op)->kind)->kern, &op, &ch, false, err, sizeof err), -1);
    kern_fini(&km);
    assert_string_equal(err, "m=200 should be divisible by bm=128");
}

static void test_pl_megacore_split_contiguous(void **state)
{
    (void)state;
    struct pl_call c;
    memset(&c, 0, sizeof c);
    c.ngrid = 3;
    c.grid[0] = 3, c.grid[1] = 2, c.grid[2] = 4;
    c.sem[0] = c.sem[1] = PL_PARALLEL;
    int64_t b, e;
    pl_core_range(&c, 0, 2, &b, &e);
    assert_int_equal(b, 0);
    assert_int_equal(e, 12); /* ceil(6/2) = 3 parallel points x 4 */
    pl_core_range(&c, 1, 2, &b, &e);
    assert_int_equal(b, 12);
    assert_int_equal(e, 24);
    c.sem[0] = c.sem[1] = PL_ARBITRARY; /* no parallel dims: core 0 runs all */
    pl_core_range(&c, 1, 2, &b, &e);
    assert_int_equal(e - b, 0);
}

static void test_pl_parallel_must_be_prefix(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    struct pl_call c = aba_call();
    c.ngrid = 2, c.grid[1] = 1;
    c.sem[0] = PL_ARBITRARY, c.sem[1] = PL_PARALLEL;
    char err[256];
    assert_int_equal(pl_check(&c, &ch, err, sizeof err), -1);
    assert_string_equal(err, "dimensions with parallel semantics must form a prefix of the grid");
}

static void test_models_mxu_vpu_hbm(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.mxu_count = 4, ch.mxu_dim = 128, ch.clock_hz = 1e9;
    ch.peak_flops[DT_BF16] = 131.072e12; /* MXU clock 131.072e12 / (2*16384*4) = 1 GHz */
    ch.peak_flops[DT_INT8] = 262.144e12;
    ch.vpu_sublanes = 8, ch.vpu_lanes = 128, ch.vpu_store_per_cycle = 1;
    /* 1 pass of 128 rows + 128 fill = 256 cycles */
    assert_float_equal(mxu_time_s(&ch, 128, 128, 128, DT_BF16), 256e-9, 1e-18);
    /* 64 passes over 4 MXUs x 512 rows + 128 */
    assert_float_equal(mxu_time_s(&ch, 512, 1024, 1024, DT_BF16), (16 * 512 + 128) * 1e-9, 1e-18);
    /* int8 at twice the rate streams in half the cycles */
    assert_float_equal(mxu_time_s(&ch, 512, 1024, 1024, DT_INT8), (8 * 512 + 128) * 1e-9, 1e-18);
    /* M = 8 still costs a weight load of 128 rows */
    assert_float_equal(mxu_time_s(&ch, 8, 128, 128, DT_BF16), 256e-9, 1e-18);
    struct vpu_ops v = {0};
    vpu_add(&v, &ch, 128, 128, 1, 1, 1, 0, 0); /* 16 vregs: the store slot bounds */
    assert_float_equal(vpu_time_s(&ch, &v), 16e-9, 1e-18);
    int64_t d[2] = {128, 64}; /* minor dim padded to 128 lanes */
    assert_int_equal(hbm_dma_bytes(&ch, DT_BF16, 2, d), 128 * 128 * 2);
    int64_t e[2] = {4, 128}; /* 1 KiB rounds to the 4 KiB granule; 4 rows pad to 8 */
    assert_int_equal(hbm_vmem_bytes(&ch, DT_F32, 2, e), 8 * 128 * 4);
    assert_int_equal(hbm_dma_bytes(&ch, DT_F32, 2, e), 4096);
    /* the loader keeps a shape to 2^50 elements, at most 2^62 bytes once padded (2^12 x 1 byte,
     * 2^10 x 4); a shape from elsewhere is not so bounded: 2^60 rows of one lane pad to 2^60 x
     * 128 elements, 2^69 bytes, which wrapped (to 0): it saturates, and the DMA rounding too */
    int64_t big[2] = {(int64_t)1 << 60, 1};
    assert_true(hbm_vmem_bytes(&ch, DT_F32, 2, big) == UINT64_MAX);
    assert_true(hbm_dma_bytes(&ch, DT_F32, 2, big) == UINT64_MAX);
    int64_t most[4] = {(int64_t)1 << 40, 1 << 10, 1, 1}; /* 2^60 elements padded, 2^62 bytes */
    assert_true(hbm_vmem_bytes(&ch, DT_F32, 4, most) == (uint64_t)1 << 62);
}

/* One splash-like sub-block: q, k fed to QK, its logits drained, a serial
 * softmax, the probabilities fed to PV, its result drained. Test chip: 4
 * MXUs of 128 at 1 GHz, VPU 4 ALU / 3 load / 1 store / 1 EUP per cycle.
 *   feed q, k (512 x 128 each): 2 x 64 vregs, 128 loads = 42.7 cycles
 *   QK (512, 128, 512): 4 passes over 4 MXUs, 512 rows + 128 fill = 640 ns
 *   drain (512 x 512): 256 stores = 256 cycles; with the feed under 640: hidden
 *   serial (512 x 512, 1 alu, load, store, eup each): 256 vregs, store and EUP
 *     bound = 256 ns
 *   feed (512 x 512, 1 alu + 1 load): 85.3 cycles; PV (512, 512, 128) = 640 ns;
 *     drain (512 x 128, 1 store) 64 cycles: hidden
 * mxu 1280 ns, vpu 256 ns (all in series, as pl_vpu, it was 42.7 + 512 + 64). */
static void overlap_body(struct pl_ctx *ctx, const int64_t *g, void *u)
{
    (void)g, (void)u;
    pl_mxu_feed(ctx, 512, 128, 0, 1);
    pl_mxu_feed(ctx, 512, 128, 0, 1);
    pl_matmul(ctx, 512, 128, 512, DT_BF16);
    pl_mxu_drain(ctx, 512, 512, 0, 1);
    pl_vpu(ctx, 512, 512, 1, 1, 1, 1, 0);
    pl_mxu_feed(ctx, 512, 512, 1, 1);
    pl_matmul(ctx, 512, 512, 128, DT_BF16);
    pl_mxu_drain(ctx, 512, 128, 0, 1);
}

/* A drain that outlasts its matmul, then a feed no matmul takes:
 *   matmul (256, 128, 1024): 8 passes over 4 MXUs = 2 x 256 rows + 128 = 640 ns
 *   drain (256 x 1024, 3 stores): 256 vregs x 3 = 768 cycles, 128 over the pass
 *   feed (512 x 128, 3 loads): 192 loads = 64 cycles, serial
 * mxu 640 ns, vpu 128 + 64 = 192 ns. */
static void excess_body(struct pl_ctx *ctx, const int64_t *g, void *u)
{
    (void)g, (void)u;
    pl_matmul(ctx, 256, 128, 1024, DT_BF16);
    pl_mxu_drain(ctx, 256, 1024, 0, 3);
    pl_mxu_feed(ctx, 512, 128, 0, 3);
}

static void run_one_step(pl_body_fn *body, double *mxu_s, double *vpu_s)
{
    struct chip_params ch = test_chip();
    struct pl_call c = aba_call();
    c.grid[0] = 1;
    c.body = body;
    struct rec r = {0};
    struct pl_exec ex = {&rec_ops, &r, false};
    struct pl_stats st = {0};
    pl_run(&c, &ch, 0, 1, &ex, &st);
    *mxu_s = st.mxu_s, *vpu_s = st.vpu_s;
}

static void test_pl_mxu_feed_drain_overlap_the_pass(void **state)
{
    (void)state;
    double mxu, vpu;
    run_one_step(overlap_body, &mxu, &vpu);
    assert_float_equal(mxu, 1280e-9, 1e-15);
    assert_float_equal(vpu, 256e-9, 1e-15);
    run_one_step(excess_body, &mxu, &vpu);
    assert_float_equal(mxu, 640e-9, 1e-15);
    assert_float_equal(vpu, 192e-9, 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pl_skip_rule_compares_only_previous_step),
        cmocka_unit_test(test_pl_output_written_when_index_changes),
        cmocka_unit_test(test_pl_coalesces_steady_steps),
        cmocka_unit_test(test_pl_short_bandwidth_bound_run_runs_step_by_step),
        cmocka_unit_test(test_pl_script_replays_the_run),
        cmocka_unit_test(test_pl_trivial_window_moves_once),
        cmocka_unit_test(test_pl_sync_dmas),
        cmocka_unit_test(test_pl_stream_runs_whole),
        cmocka_unit_test(test_pl_repeat_in_one_go),
        cmocka_unit_test(test_pl_block_shape_rule),
        cmocka_unit_test(test_pl_megacore_split_contiguous),
        cmocka_unit_test(test_pl_parallel_must_be_prefix),
        cmocka_unit_test(test_models_mxu_vpu_hbm),
        cmocka_unit_test(test_pl_mxu_feed_drain_overlap_the_pass),
    };
    return cmocka_run_group_tests_name("pallas", tests, NULL, NULL);
}
