/* tests/unit/test_coll.c -- collectives on remote DMAs against the scaling
 * book's bandwidth-bound formulas (docs/chips.md, "Collective costs") and the line schedule. */
#include "test_util.h"

#include "sim_fork.h"
#include "models/ici.h"

/* Ideal links: no efficiency loss and no fixed costs, so the formulas apply. */
static const char *const IDEAL[] = {
    "chip.ici.efficiency=1",          "chip.ici.hop_latency=0us",
    "chip.ici.step_latency=0us",      "chip.ici.collective_latency=0us",
    "chip.tensorcore.dma_latency=0us"};

static double op_time(const struct result *r, int i)
{
    return r->end[i] - r->start[i];
}

static void assert_within(double got, double want, double rel)
{
    if (fabs(got - want) > rel * want) {
        print_error("got %.9g, want %.9g within %.1f%%\n", got, want, 100 * rel);
        fail();
    }
}

/* A 1 GiB all-gather on a wrapped 16-ring: V (X-1)/X / (2 W_one-way). */
static void test_all_gather_bidi_ring_matches_formula(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 64MiB, axes: [0]}\n"
                          "  - {op: all_gather, bytes: 64MiB, axes: [0], algorithm: unidirectional}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double V = 1073741824.0, W = 45e9;
    assert_within(op_time(&r, 0), V * 15 / 16 / (2 * W), 0.02);
    assert_within(op_time(&r, 1), V * 15 / 16 / W, 0.02); /* one direction: twice as long */
    assert_true(r.ici[0] == 16.0 * 15 * 64 * 1048576);
}

/* An odd ring keeps its wraparound (only rings of 1 and 2 drop it): on ideal links an
 * all-gather of B = 4 MiB a chip over a wrapped ring of X sends (X - 1) / 2 shards each way,
 * B (X - 1) / (2 W), and over a line (X - 1) shards one way, B (X - 1) / W; both then copy
 * the own shard into the output, 2 B / H (H = 819e9). W = 45e9:
 *   X = 3: wrapped 93.21 + 10.24 = 103.45 us, line 186.41 + 10.24 = 196.66 us;
 *   X = 5: wrapped 186.41 + 10.24 = 196.66 us, line 372.83 + 10.24 = 383.07 us. */
static void test_odd_ring_keeps_wraparound(void **state)
{
    (void)state;
    const double B = 4194304.0, W = 45e9, H = 819e9;
    for (int X = 3; X <= 5; X += 2) {
        for (int wrap = 0; wrap < 2; wrap++) {
            char yaml[160];
            snprintf(yaml, sizeof yaml, "chip: v5e\ntopology: {shape: [%d], wraparound: %s}\n"
                     "workload:\n  - {op: all_gather, bytes: 4MiB}\n", X, wrap ? "true" : "false");
            struct result r = run(yaml, IDEAL, 5);
            assert_int_equal(r.rc, 0);
            double want = (wrap ? B * (X - 1) / (2 * W) : B * (X - 1) / W) + 2 * B / H;
            assert_within(op_time(&r, 0), want, 0.005);
        }
    }
}

/* Without wraparound the axis is a line: (X - 1) shards at the one-way rate. */
static void test_all_gather_line(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [8]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 8MiB, axes: [0]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    assert_within(op_time(&r, 0), 7 * 8388608.0 / 45e9, 0.02);
}

/* The scaling book's no-wraparound example (sharding chapter, pop quiz 2):
 * a v5e 8x4 gathers bf16[2048, 8192] over its axis of 4, 8.39 MB per chip:
 * the end chips take 3 shards over their one link, 3 x 8.39e6 / 4.5e10 =
 * 559 us, plus a 1 us hop per step here and the local copy of the own shard
 * into the output (2 x 8.39 MB at 819 GB/s). Both fidelities; with a hop latency
 * SimGrid's lazy max-min update used to end the fast run a third early. */
static void test_all_gather_line_hand_figure(void **state)
{
    (void)state;
    static const char *const sets[][7] = {
        {"chip.ici.efficiency=1", "chip.ici.hop_latency=1us", "chip.ici.step_latency=0us",
         "chip.ici.collective_latency=0us", "chip.tensorcore.dma_latency=0us",
         "options.fidelity=fast"},
        {"chip.ici.efficiency=1", "chip.ici.hop_latency=1us", "chip.ici.step_latency=0us",
         "chip.ici.collective_latency=0us", "chip.tensorcore.dma_latency=0us",
         "options.fidelity=exact"}};
    for (int m = 0; m < 2; m++) {
        struct result r = run("chip: v5e\ntopology: {shape: [8, 4]}\nworkload:\n"
                              "  - {op: all_gather, bytes: 8388608, axes: [1]}\n",
                              sets[m], 6);
        assert_int_equal(r.rc, 0);
        assert_within(op_time(&r, 0), 3 * 8388608.0 / 45e9 + 3e-6 + 2 * 8388608.0 / 819e9,
                      0.01);
    }
}

/* A gather over both axes of a v5e 2x4 (no wraparound) is one ring through
 * the 8 chips, not one part per axis: (N - 1) shards at the one-way rate,
 * 7 x 128 MiB / 45e9 = 20.9 ms (the concurrent split would take 0.56 V / W
 * = 13.4 ms), plus the local copy of the own shard. */
static void test_all_gather_all_axes_without_wraparound(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [2, 4]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 128MiB, axes: [0, 1]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double S = 134217728.0;
    assert_within(op_time(&r, 0), 7 * S / 45e9 + 2 * S / 819e9, 0.01);
}

/* An all-reduce over both axes of a v5e 2x4 (lines, no wraparound) runs parts
 * side by side; a line's pass is a chain (a chip sends on what it received), so
 * fast fidelity keeps its steps there: fast is exact's time within 0.5 % (the
 * one-step pass held the links from the start and came out 4.6 % early). */
static void test_line_all_reduce_parts_fast_is_exact(void **state)
{
    (void)state;
    static const char *const yaml = "chip: v5e\ntopology: {shape: [2, 4]}\nworkload:\n"
                                    "  - {op: all_reduce, bytes: 256MiB, axes: [0, 1]}\n";
    const char *fast[] = {"options.fidelity=fast"}, *exact[] = {"options.fidelity=exact"};
    struct result f = run(yaml, fast, 1), e = run(yaml, exact, 1);
    assert_int_equal(f.rc, 0);
    assert_int_equal(e.rc, 0);
    assert_within(op_time(&f, 0), op_time(&e, 0), 0.005);
}

/* A 16-way tensor axis on a v5p 8x8x8 (mesh fsdp 32 x tensor 16, the 512B
 * step of docs/reference.md's fidelity table) is the whole x ring (8, wrapped)
 * times a pair of y neighbours (no wraparound). A pair does not force one
 * part (its line costs what a ring of 2 does): the gather runs in two halves,
 * A over the pair then the ring, B over the ring then the pair. By hand, for
 * S = 167772160 bytes per chip (65536 tokens x 20480 / 16 x 2) at W = 90e9:
 * A's pair phase moves S/2 each way (0 .. 0.5 S/W) while B's ring phase
 * (S/2 shards, halves both ways: 7 x S/4 = 1.75 S) runs alone on the x links;
 * from 0.5 S/W the two ring phases share them (W/2 each): B's remaining
 * 1.25 S ends at 3 S/W, A's 3.5 S has 1.25 S done then and ends alone at
 * 5.25 S/W; B's pair phase (8 x S/2 = 4 S over the one link) runs 3 .. 7 S/W.
 * 7 S / W = 13.05 ms, plus the own shard copied into the output (2 S at
 * 2765e9: 0.12 ms) = 13.17 ms. In one part (before), pair first then ring,
 * it took 8 S (15.03 ms); ring first, 3.5 S + 8 S. The reduce-scatter, its
 * mirror image, takes the same time whichever order the mesh lists the pair
 * and the ring in. */
static void test_gather_over_ring_and_pair_runs_in_two_parts(void **state)
{
    (void)state;
    static const char *const ops =
        "workload:\n"
        "  - {op: all_gather, bytes: 167772160, groups: [tensor]}\n"
        "  - {op: reduce_scatter, bytes: 2684354560, groups: [tensor]}\n";
    char auto_yaml[512], pair_yaml[512];
    snprintf(auto_yaml, sizeof auto_yaml,
             "chip: v5p\ntopology: {shape: [8, 8, 8]}\nmesh: {fsdp: 32, tensor: 16}\n%s", ops);
    snprintf(pair_yaml, sizeof pair_yaml,
             "chip: v5p\ntopology: {shape: [8, 8, 8]}\n"
             "mesh: {fsdp: {size: 32, on: [[1, 4], [2, 8]]}, tensor: {size: 16, on: [[1, 2], "
             "[0, 8]]}}\n%s", ops);
    struct result a = run(auto_yaml, IDEAL, 5), p = run(pair_yaml, IDEAL, 5);
    assert_int_equal(a.rc, 0);
    assert_int_equal(p.rc, 0);
    double S = 167772160.0;
    assert_within(op_time(&a, 0), 7 * S / 90e9 + 2 * S / 2765e9, 0.01);
    assert_within(op_time(&p, 0), op_time(&a, 0), 0.01);
    assert_within(op_time(&p, 1), op_time(&a, 1), 0.01);
}

/* A v7 2x2x1 (axes of 2 never wrap) gathers S = 128 MiB a chip over both
 * axes in two parts, one starting on each: by hand, S/2 over each axis's
 * link at once (0.5 S/W), then S over the other's (S/W), W = 90e9: 1.5 S/W =
 * 2.237 ms, plus the own shards copied into the output (S read and written
 * at 6.512e12, 0.041 ms) = 2.278 ms. In one part, one link at a time, it took
 * 3 S/W + 0.041 = 4.515 ms. The published figure (accelerator-microbenchmarks,
 * v7 2x2x1, 2 x 64 MiB a chip) is 2.252 ms: two links' worth into each chip. */
static void test_all_gather_over_pairs_uses_both_links(void **state)
{
    (void)state;
    struct result r = run("chip: v7\ntopology: {shape: [2, 2, 1]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 128MiB, axes: [0, 1]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double S = 134217728.0;
    assert_within(op_time(&r, 0), 1.5 * S / 90e9 + 2 * S / 6.512e12, 0.01);
}

/* Two axes concurrently: V / (W_bidi x 2 axes) in the bandwidth-bound limit. */
static void test_all_gather_two_axes(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16, 16]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 4MiB, axes: [0, 1]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double V = 256 * 4194304.0;
    assert_within(op_time(&r, 0), V / (2 * 45e9 * 2), 0.05);
}

/* Reduce-scatter and all-gather move the same bytes; all-reduce is both. */
static void test_reduce_scatter_and_all_reduce(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                          "  - {op: reduce_scatter, bytes: 64MiB, axes: [0]}\n"
                          "  - {op: all_gather, bytes: 4MiB, axes: [0]}\n"
                          "  - {op: all_reduce, bytes: 64MiB, axes: [0]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double ag = 64 * 1048576.0 * 15 / 16 / (2 * 45e9);
    assert_true(op_time(&r, 0) > ag);        /* plus the reduction kernels */
    assert_within(op_time(&r, 0), ag, 0.35);
    assert_within(op_time(&r, 2), op_time(&r, 0) + op_time(&r, 1), 0.02);
    assert_true(r.steps[0] > 0); /* the accumulate step runs as a Pallas pipeline */
}

/* Issue 16.7: time against ring length and axis count. An all-reduce over
 * wrapped axes splits the data in one part per axis; part p reduce-scatters
 * over the axes starting at axis p and all-gathers back, so at any moment
 * each axis's bidirectional ring carries one part. A ring pass over X chips
 * moves (X-1)/X of its data each way at W one-way per link, and the data
 * shrinks by X per axis: per part (B/n)(1 - 1/N) / (2W) for the reduce-scatter
 * and as much for the all-gather, N the chips of the n axes. So
 * T = B (1 - 1/N) / (n W): with HBM, VPU, step and launch costs idealised away
 * (the accumulate step runs after each transfer: at the presets' VPU rate the
 * 4x4x4 takes 4 % longer),
 *   v5p 4x4x4, 1 GiB: 2^30 x (63/64) / (3 x 90e9)   = 3.915 ms,
 *   v5p 8x8x8:        2^30 x (511/512) / (3 x 90e9) = 3.969 ms (+1.4 %),
 *   v5e ring of 16:   2^30 x (15/16) / 45e9          = 22.37 ms,
 *   v5e 16x16:        2^30 x (255/256) / (2 x 45e9) = 11.88 ms.
 * A longer ring is never faster: the bandwidth term grows with 1 - 1/N and
 * every axis adds X - 1 steps each way (fixed costs, below with the presets'
 * own figures). Issue 16 saw 8x8x8 at 5.385 ms below 4x4x4 at 5.623 ms. */
static void test_all_reduce_scaling_with_ring_length_and_axes(void **state)
{
    (void)state;
    static const char *const sets[] = {
        "chip.ici.efficiency=1",          "chip.ici.hop_latency=0us",
        "chip.ici.step_latency=0us",      "chip.ici.collective_latency=0us",
        "chip.tensorcore.dma_latency=0us", "chip.hbm.bandwidth=1000TBps",
        "chip.tensorcore.step_overhead=0us", "chip.tensorcore.launch_overhead=0us",
        "chip.tensorcore.clock=100GHz"}; /* the accumulate kernels' VPU adds, too */
    const double B = 1073741824.0;
    static const struct {
        const char *chip, *shape, *axes;
        double n, N, W;
    } c[] = {{"v5p", "[4, 4, 4]", "[0, 1, 2]", 3, 64, 90e9},
             {"v5p", "[8, 8, 8]", "[0, 1, 2]", 3, 512, 90e9},
             {"v5e", "[16]", "[0]", 1, 16, 45e9},
             {"v5e", "[16, 16]", "[0, 1]", 2, 256, 45e9}};
    double t[4];
    for (int i = 0; i < 4; i++) {
        char y[256];
        snprintf(y, sizeof y, "chip: %s\ntopology: {shape: %s}\nworkload:\n"
                 "  - {op: all_reduce, bytes: 1GiB, axes: %s}\n", c[i].chip, c[i].shape, c[i].axes);
        struct result r = run(y, sets, 9);
        assert_int_equal(r.rc, 0);
        t[i] = op_time(&r, 0);
        assert_within(t[i], B * (1 - 1 / c[i].N) / (c[i].n * c[i].W), 0.01);
    }
    assert_true(t[1] > t[0]);
    assert_within(t[2] / t[3], 2 * (15.0 / 16) / (255.0 / 256), 0.01); /* two axes: half */
    /* the presets' fixed costs: 8x8x8 runs 6 x 7 ring steps where 4x4x4 runs 6 x 3 */
    struct result a = run("chip: v5p\ntopology: {shape: [4, 4, 4]}\nworkload:\n"
                          "  - {op: all_reduce, bytes: 1GiB, axes: [0, 1, 2]}\n", NULL, 0);
    struct result b = run("chip: v5p\ntopology: {shape: [8, 8, 8]}\nworkload:\n"
                          "  - {op: all_reduce, bytes: 1GiB, axes: [0, 1, 2]}\n", NULL, 0);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_true(op_time(&b, 0) > op_time(&a, 0));
}

/* Fast fidelity runs a reduction's accumulate step whole (kernels/pallas_fast.c,
 * run_stream): a bandwidth-bound stream takes, step by step, the first
 * step's overhead o, the DMA latency l, n blocks' transfers d (two blocks in,
 * one out) and the last block's adds c and write-back latency l. A v5p line
 * of 4 (no wraparound) reduce-scatters 64 MiB: its busiest link carries 3 of
 * the 4 chunks (3 x 16 MiB / 90e9 = 559.2 us on ideal links), then it reduces the 48 MiB
 * it received: 48 blocks of 512 x 1024 bf16, d = 3 MiB / 2765e9 = 1.1377 us,
 * c = 5 ns at a 100 GHz clock (512 vreg stores), o = 0.154 us, l = 0.1 us: 54.91 us; 614.10 us
 * in all. Exact (three steps of 16 MiB, each reduced) agrees within 0.5 %. */
static void test_reduce_scatter_accumulate_runs_whole(void **state)
{
    (void)state;
    static const char *const sets[] = {
        "chip.ici.efficiency=1",          "chip.ici.hop_latency=0us",
        "chip.ici.step_latency=0us",      "chip.ici.collective_latency=0us",
        "chip.tensorcore.launch_overhead=0us", "chip.tensorcore.clock=100GHz",
        "options.fidelity=fast"};
    static const char *yaml = "chip: v5p\ntopology: {shape: [4]}\nworkload:\n"
                              "  - {op: reduce_scatter, bytes: 64MiB, axes: [0]}\n";
    struct result f = run(yaml, sets, 7);
    assert_int_equal(f.rc, 0);
    /* each of the 3 steps' 16 MiB received reduced as it arrives, as exact
     * does: 16 blocks of 512 rows (3 MiB moved each, d) streamed between a
     * fill (o + l) and a drain (l) */
    double V = 64 * 1048576.0, d = 3 * 1048576.0 / 2765e9;
    double want = 3 * V / 4 / 90e9 + 3 * (0.154e-6 + 0.1e-6 + 16 * d + 0.1e-6);
    assert_within(op_time(&f, 0), want, 0.002);
    const char *exact[7];
    memcpy(exact, sets, sizeof exact);
    exact[6] = "options.fidelity=exact";
    struct result e = run(yaml, exact, 7);
    assert_int_equal(e.rc, 0);
    assert_within(op_time(&f, 0), op_time(&e, 0), 0.005);
    /* 1 MiB: each of the 3 steps' 256 KiB received is reduced before the
     * next step passes it on (exact's order): one block of 128 rows, whose
     * acc, recv and out (768 KiB) move after the DMA latency l: 0.3844 us a
     * step. The time is the ring (the push's issue latency l a step, 0.3 us;
     * 3 x 256 KiB / 90e9 = 8.738 us) plus the three reductions' traffic,
     * 10.191 us, and at most their whole fixed cost besides (o + 3 l each:
     * 11.253 us). One reduction of the 768 KiB after the transfers (10.349
     * us) was 4.2 % short of exact. */
    static const char *small = "chip: v5p\ntopology: {shape: [4]}\nworkload:\n"
                               "  - {op: reduce_scatter, bytes: 1MiB, axes: [0]}\n";
    struct result s1 = run(small, sets, 7);
    assert_int_equal(s1.rc, 0);
    double ring = 3 * 0.1e-6 + 3 * 262144.0 / 90e9, red = 0.1e-6 + 786432.0 / 2765e9;
    assert_true(op_time(&s1, 0) >= ring + 3 * red);
    assert_true(op_time(&s1, 0) <= ring + 3 * (red + 0.154e-6 + 2 * 0.1e-6));
    struct result s0 = run(small, exact, 7);
    assert_int_equal(s0.rc, 0);
    assert_within(op_time(&s1, 0), op_time(&s0, 0), 0.005);
}

/* Small reductions, fast against exact (tests/run_props.py found them): a
 * 1 MiB reduce-scatter over a ring of 16 v5e chips (one reduction of the
 * 15 chunks after the coalesced transfers: 19.6 % short) and over a line of
 * 4 v6e chips (2.5 % short; a line's reduce-scatter is no longer coalesced),
 * and a 64 KiB all-reduce over a line of 4 v5e chips (4.3 % short). */
static void test_small_reductions_fast_is_exact(void **state)
{
    (void)state;
    static const char *const yaml[] = {
        "chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
        "  - {op: reduce_scatter, bytes: 1MiB, axes: [0]}\n",
        "chip: v6e\ntopology: {shape: [2, 4]}\nworkload:\n"
        "  - {op: reduce_scatter, bytes: 1MiB, axes: [1]}\n",
        "chip: v5e\ntopology: {shape: [4]}\nworkload:\n"
        "  - {op: all_reduce, bytes: 64KiB, axes: [0]}\n"};
    static const char *const fast[] = {"options.fidelity=fast"}, *const exact[] = {
        "options.fidelity=exact"};
    for (size_t i = 0; i < sizeof yaml / sizeof yaml[0]; i++) {
        struct result f = run(yaml[i], fast, 1), e = run(yaml[i], exact, 1);
        assert_int_equal(f.rc, 0);
        assert_int_equal(e.rc, 0);
        assert_within(op_time(&f, 0), op_time(&e, 0), 0.005);
    }
}

/* Every chip simulated (options.all_chips), fast fidelity: a 64 MiB bf16 all-reduce
 * over a wrapped v5p ring of 8 (ideal links W = 90e9 B/s one way, no hop, step or
 * collective latency; DMA issue latency l = 0.1 us, step overhead o = 0.154 us; a
 * 100 GHz clock so that a block's adds take c = 5 ns). Each phase's 7 steps run as one
 * coalesced step (the 6 others' fixed cost, l each) moving 7 half-chunks each way:
 *   reduce-scatter, chunk V/8 = 8 MiB: 0.6 + 0.1 us + 7 x 4 MiB / 90e9 = 326.918 us;
 *   its 7 reductions of the 8 MiB received, each its own pipeline of 8 blocks of
 *   512 x 1024 (acc, recv, out: d = 3 MiB / 2765e9 = 1.13773 us a block):
 *   7 (o + l + 8 d + c + l) = 7 x 9.46084 = 66.226 us;
 *   all-gather of the 8 MiB shard: 326.918 us.
 * In all 720.06 us. Without the reductions it is 653.84 us (-9.2 %), with them
 * twice 786.29 us (+9.2 %), with one fill and drain for the 7 (one reduction of the
 * 56 MiB) 717.94 us (-0.29 %): the check is 0.1 %. The 7 reductions run as one call
 * (a stream of the 56 blocks with the 7 fills and drains: kernels/pallas_fast.c),
 * and their 56 grid steps a chip are counted once: 8 chips x 56 = 448. Exact (7 ring
 * steps, each reduced block by block) agrees within 0.5 %. */
static void test_every_chip_ring_all_reduce_reductions_hand_figure(void **state)
{
    (void)state;
    static const char *const sets[] = {
        "chip.ici.efficiency=1",          "chip.ici.hop_latency=0us",
        "chip.ici.step_latency=0us",      "chip.ici.collective_latency=0us",
        "chip.tensorcore.launch_overhead=0us", "chip.tensorcore.clock=100GHz",
        "options.all_chips=true",         "options.fidelity=fast"};
    static const char *yaml = "chip: v5p\ntopology: {shape: [8], wraparound: true}\n"
                              "workload:\n  - {op: all_reduce, bytes: 64MiB, axes: [0]}\n";
    struct result f = run(yaml, sets, 8);
    assert_int_equal(f.rc, 0);
    const double V = 64 * 1048576.0, W = 90e9, l = 0.1e-6, o = 0.154e-6, c = 5e-9;
    double pass = 6 * l + l + 7 * (V / 16) / W;
    double d = 3 * 1048576.0 / 2765e9, red = o + l + 8 * d + c + l;
    assert_within(op_time(&f, 0), 2 * pass + 7 * red, 0.001);
    assert_int_equal(f.steps[0], 8 * 7 * 8);
    const char *exact[8];
    memcpy(exact, sets, sizeof exact);
    exact[7] = "options.fidelity=exact";
    struct result e = run(yaml, exact, 8);
    assert_int_equal(e.rc, 0);
    assert_within(op_time(&f, 0), op_time(&e, 0), 0.005);
}

/* A reduce-scatter beside a kernel (issue 29: the Llama-3-8B step's gradient
 * reduce-scatter beside its backward was 1.3 % short in fast fidelity). A
 * ring of 4 wrapped v5e chips, ideal links (W = 45e9 each way) and HBM
 * (H = 819e9), scatters B = 256 MiB beside an HBM-bound add of two
 * [16384, 8192] bf16 arrays (E = 3 x 256 MiB = 805.3 MB, three streams).
 * Each of the 3 steps moves c / 2 = 32 MiB each way (c = B / 4): 0.745654 ms
 * on the links; the chip's HBM carries its 4 transfers (2 out, 2 in, 4 W =
 * 180 GB/s) and the add the rest, 639 GB/s. Each step then reduces what it
 * received: 3 x c = 201.3 MB through the HBM, 0.245820 ms alone; beside the
 * add the reduction's three streams and the add's three share it equally,
 * H / 2 each, 0.491640 ms. So: step 1's transfers (the add does 476.5 MB),
 * its reduction at H / 2 (the add 201.3 MB more), step 2's transfers (the add
 * ends 127.5 MB / 639e9 = 0.199540 ms in: at 1.43683 ms), its reduction and
 * step 3's alone: 3 x 0.745654 + 0.491640 + 2 x 0.245820 = 3.22024 ms.
 * Fast fidelity's one-step pass moved all the transfers first and reduced
 * after the add had ended: 2.236962 + 3 x 0.245820 = 2.97443 ms (7.6 %
 * short); beside another op it now runs the pass step by step. */
static void test_reduce_scatter_beside_kernel_fast_is_exact(void **state)
{
    (void)state;
    static const char *const yaml =
        "chip: v5e\ntopology: {shape: [4], wraparound: true}\nworkload:\n"
        "  - {op: reduce_scatter, name: rs, bytes: 256MiB, axes: [0], after: []}\n"
        "  - {op: elementwise, name: ew, shape: [16384, 8192], dtype: bf16, fn: add,"
        " after: []}\n";
    /* the reductions on the SparseCore: the kernel keeps its TensorCore (test_tc_reduce.c) */
    const char *sc = "xla_flags.xla_tpu_enable_sparse_core_collective_offload_reduce_scatter=true";
    const char *sets[][8] = {{IDEAL[0], IDEAL[1], IDEAL[2], IDEAL[3], IDEAL[4],
                              "chip.hbm.efficiency=1", "options.fidelity=fast", sc},
                             {IDEAL[0], IDEAL[1], IDEAL[2], IDEAL[3], IDEAL[4],
                              "chip.hbm.efficiency=1", "options.fidelity=exact", sc}};
    struct result f = run(yaml, sets[0], 8), e = run(yaml, sets[1], 8);
    assert_int_equal(f.rc, 0);
    assert_int_equal(e.rc, 0);
    assert_within(op_time(&e, 0), 3.22024e-3, 0.005);
    assert_within(op_time(&e, 1), 1.43683e-3, 0.005);
    assert_within(op_time(&f, 0), 3.22024e-3, 0.005);
    assert_within(op_time(&f, 1), 1.43683e-3, 0.005);
    assert_within(op_time(&f, 0), op_time(&e, 0), 0.005);
}

/* A line pass over a degraded link is not coalesced (faults:). A v5e line of 4
 * (no wraparound), ideal links (W = 45e9 one way, no fixed costs), the link
 * between chips 1 and 2 at half its bandwidth both ways, all-gathers B = 4 MiB
 * (u = B / W = 93.207 us; the own shard's copy first, 2 B / H = 10.24 us at
 * H = 819e9). Step by step (each chip's step ends with its sends and receives;
 * one transfer per link direction, so no sharing): step 1 moves a shard over
 * every link, chips 1 and 2 end it at 2u (the slow link), 0 and 3 at u; step
 * 2 (chips 1 and 2 push both ways, from 2u) ends at 4u on chips 1 and 2 (over
 * the slow link again); step 3 (chip 2 pushes right, chip 1 left, from 4u)
 * ends at 5u: 5u + 10.24 = 476.27 us. One step carrying the sums ends when
 * the slow link has carried chip 1's two shards, 4u + 10.24 = 383.07 us
 * (19.6 % short), so fast runs the pass step by step. */
static void test_line_degraded_link_fast_is_exact(void **state)
{
    (void)state;
    static const char *const yaml =
        "chip: v5e\ntopology: {shape: [4], wraparound: false}\n"
        "faults:\n  - {link: {chip: [1], axis: 0, direction: +1}, bandwidth_factor: 0.5}\n"
        "workload:\n  - {op: all_gather, bytes: 4MiB, axes: [0]}\n";
    const double u = 4194304.0 / 45e9, copy = 2 * 4194304.0 / 819e9;
    for (int fast = 0; fast < 2; fast++) {
        const char *sets[6];
        memcpy(sets, IDEAL, sizeof IDEAL);
        sets[5] = fast ? "options.fidelity=fast" : "options.fidelity=exact";
        struct result r = run(yaml, sets, 6);
        assert_int_equal(r.rc, 0);
        assert_within(op_time(&r, 0), 5 * u + copy, 0.002);
    }
}

/* A ring pass around a down link is not coalesced either: the detour shares the
 * next row's links at the steps that row's own pass uses them. A v5e 16x16
 * (wrapped) all-gathers 1 MiB over both axes with link (1,1)-(2,1) down, then
 * reduce-scatters 64 MiB: exact 9.49 ms, the one-step passes 4.13 ms (the
 * detoured chain's steps each wait for the shared link; the sums do not).
 * Under valgrind and ASan an 8x8 (the same detour, a quarter of the chips, no
 * fold with a fault: 549 s of valgrind at 16x16); make test runs the 16x16. */
static void test_ring_down_link_fast_is_exact(void **state)
{
    (void)state;
    char yaml[320];
    snprintf(yaml, sizeof yaml,
             "chip: v5e\ntopology: {shape: [%d, %d]}\n"
             "faults:\n  - {link: {chip: [1, 1], axis: 0, direction: +1}, bandwidth_factor: 0}\n"
             "workload:\n  - {op: all_gather, name: ag, bytes: 1MiB, axes: [0, 1]}\n"
             "  - {op: reduce_scatter, name: rs, bytes: 64MiB, axes: [0, 1], after: [ag]}\n",
             test_under_checker() ? 8 : 16, test_under_checker() ? 8 : 16);
    const char *fast[] = {"options.fidelity=fast"}, *exact[] = {"options.fidelity=exact"};
    struct result f = run(yaml, fast, 1), e = run(yaml, exact, 1);
    assert_int_equal(f.rc, 0);
    assert_int_equal(e.rc, 0);
    assert_within(f.end[1], e.end[1], 0.01);
}

/* A kernel near the HBM bound beside a collective runs step by step in fast
 * fidelity (engine/eng_pallas.c). A v5e 16x16 all-gathers 1.7 MB (wgather,
 * ICI-bound: 2.57 ms) beside a matmul of [4096, 2048] x [2048, 28672] in
 * blocks of 512 x 1024 x 1024: 448 steps of 3 MiB of fetches (and a 1 MiB
 * write-back every other step) and 5.536 + 0.683 us of MXU and VPU work plus
 * the 0.18 us step overhead, 448 x 6.399 = 2.867 ms alone (compute-bound:
 * 3 MiB at 819 GB/s is 3.84 us). Beside the gather the chip's 8 transfers
 * take 8 x 42.75 GB/s of its HBM, leaving 477 GB/s: 3 MiB then takes 6.6 us,
 * more than the step's compute, so the steps turn DMA-bound one by one (the
 * write-back steps first). Coalesced, the run's one DMA per operand
 * overlapped all its fetches with all its compute and came out at 3.10 ms
 * against 3.75 ms step by step (17 % short). */
static void test_kernel_near_bound_beside_collective_fast_is_exact(void **state)
{
    (void)state;
    static const char *const yaml =
        "chip: v5e\ntopology: {shape: [16, 16]}\nworkload:\n"
        "  - {op: all_gather, name: wgather, bytes: 1703936, axes: [0, 1], after: []}\n"
        "  - {op: matmul, name: mm, m: 4096, k: 2048, n: 28672,"
        " block: {bm: 512, bk: 1024, bn: 1024}, after: []}\n";
    const char *fast[] = {"options.fidelity=fast"}, *exact[] = {"options.fidelity=exact"};
    struct result f = run(yaml, fast, 1), e = run(yaml, exact, 1);
    assert_int_equal(f.rc, 0);
    assert_int_equal(e.rc, 0);
    assert_true(op_time(&e, 1) > 448 * 6.399e-6 * 1.2); /* slowed by the gather */
    assert_within(op_time(&f, 1), op_time(&e, 1), 0.005);
}

/* all_to_all on a bidirectional ring: about a quarter of an all-gather. */
static void test_all_to_all_ring(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                          "  - {op: all_to_all, bytes: 64MiB, axes: [0]}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double V = 16 * 64 * 1048576.0; /* (V/N) max(A) / (4 W_bidi) per device form */
    assert_within(op_time(&r, 0), V / 16 * 16 / (4 * 90e9), 0.15);
}

/* With the presets' own link figures (86.4 GB/s effective on v6e) SimGrid's
 * solver used to abort on all-to-alls of 5 chips or more (maxmin precision). */
static void test_all_to_all_preset_links(void **state)
{
    (void)state;
    struct result r = run("chip: v6e\ntopology: {shape: [8], wraparound: true}\nworkload:\n"
                          "  - {op: all_to_all, bytes: 64MiB, axes: [0]}\n"
                          "  - {op: all_to_all, bytes: 16MiB, axes: [0]}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    r = run("chip: v6e\ntopology: {shape: [4, 4]}\nworkload:\n"
            "  - {op: all_to_all, bytes: 64MiB, axes: [0, 1]}\n",
            NULL, 0);
    assert_int_equal(r.rc, 0);
    /* a model step's FSDP gather and scatter over a split mesh axis: a segfault in the solver */
    r = run("chip: v5e\ntopology: {shape: [4, 4]}\n"
            "mesh: {data: {size: 2, on: [[1, 2]]}, fsdp: {size: 8, on: [[0, 4], [1, 2]]}}\n"
            "workload:\n"
            "  - {op: all_gather, name: wg0, bytes: 50595840, groups: [fsdp]}\n"
            "  - {op: reduce_scatter, name: rs, bytes: 809533440, groups: [fsdp], after: []}\n",
            NULL, 0);
    assert_int_equal(r.rc, 0);
}

/* Fixed costs: a tiny all-gather is latency-bound. */
static void test_small_all_gather_is_latency_bound(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [8, 16]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 4KiB, axes: [1]}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.bound[0], "latency");
}

/* The overlapped collective matmul hides the ring behind the chunk matmuls:
 * X steps of max(compute, transfer); the sequential one pays both. */
static void test_collective_matmul_overlap_wins(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                          "  - {op: collective_matmul, m: 1024, k: 8192, n: 2048, axis: 0}\n"
                          "  - {op: matmul, m: 1024, k: 8192, n: 2048, "
                          "block: {bm: 512, bk: 1024, bn: 1024}}\n"
                          "  - {op: all_gather, bytes: 16MiB, axes: [0]}\n"
                          "  - {op: collective_matmul, m: 1024, k: 8192, n: 2048, axis: 0, "
                          "overlapped: false}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double chunk = op_time(&r, 1), transfer = 8388608.0 / 45e9;
    double step = chunk > transfer ? chunk : transfer;
    assert_within(op_time(&r, 0), 16 * step, 0.08);
    assert_true(op_time(&r, 3) > op_time(&r, 2) + 15 * chunk);
    assert_true(op_time(&r, 0) < 0.7 * op_time(&r, 3));
}

/* The collective matmul over a mesh axis (groups: [tensor], 4 chips of a 4x4x4 v5p slice
 * under {fsdp: 16, tensor: 4}: the wrapped 4-ring along axis 0), as the model expansion
 * emits XLA's windowed einsums. X = 4 steps: the first three send half a block each way
 * beside a chunk matmul, the last only computes:
 *   t = (X - 1) max(c, s) + c, s = block / 2 / 90 GB/s (a v5p link, ideal ICI).
 * all_gather passes x's shard [m, k]: 1024 x 8192 bf16 = 16 MiB, s = 93.2 us;
 * reduce_scatter passes an output block [m, n]: 1024 x 2048 bf16 = 4 MiB, s = 23.3 us;
 * c is the chunk matmul [1024, 8192] x [8192, 2048] run alone (op 2). */
static void test_collective_matmul_over_mesh_axis(void **state)
{
    (void)state;
    struct result r = run("chip: v5p\ntopology: {shape: [4, 4, 4]}\n"
                          "mesh: {fsdp: 16, tensor: 4}\nworkload:\n"
                          "  - {op: collective_matmul, m: 1024, k: 8192, n: 2048, "
                          "groups: [tensor]}\n"
                          "  - {op: collective_matmul, m: 1024, k: 8192, n: 2048, "
                          "groups: [tensor], collective: reduce_scatter}\n"
                          "  - {op: matmul, m: 1024, k: 8192, n: 2048, "
                          "block: {bm: 512, bk: 1024, bn: 1024}}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double c = op_time(&r, 2), ag = 8388608.0 / 90e9, rs = 2097152.0 / 90e9;
    assert_within(op_time(&r, 0), 3 * (c > ag ? c : ag) + c, 0.03);
    assert_within(op_time(&r, 1), 3 * (c > rs ? c : rs) + c, 0.03);
}

/* A collective matmul's chunk matmul is measured once per op and core with kernel memos
 * (fast fidelity) and the other chunks take its time and work: the same op time as every
 * chunk run for real (options.kernel_memo=false) within 1 %, the same FLOPs counted. */
static void test_collective_matmul_chunk_memo(void **state)
{
    (void)state;
    const char *y = "chip: v5p\ntopology: {shape: [4, 4, 4]}\n"
                    "mesh: {fsdp: 16, tensor: 4}\nworkload:\n"
                    "  - {op: collective_matmul, m: 1024, k: 8192, n: 2048, groups: [tensor]}\n";
    static const char *const off[] = {"options.kernel_memo=false"};
    struct result a = run(y, NULL, 0), b = run(y, off, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_within(op_time(&a, 0), op_time(&b, 0), 0.01);
    assert_within(a.flops[0], b.flops[0], 1e-9);
}

/* The chunk matmul's blocks are the largest multiples of (8, 128, 128) up to
 * 512 x 1024 x 1024 that divide its shape, not only halvings of the maximum: k = 1280
 * (row 41's QKV projection, D/N_t = 20480 / 16) takes bk = 640, not 256 (five k-steps
 * of smaller MXU work each). v5p, the 16-ring of {fsdp: 4, tensor: 16}, x [4096, 1280]
 * and y [1280, 3072] bf16 per step:
 *   compute: 2 * 4096 * 1280 * 3072 = 32.2 GFLOP / 459 TFLOP/s = 70.2 us at peak;
 *   transfer: x's shard 4096 * 1280 * 2 = 10.49 MB, half each way, 5.24 MB / 90 GB/s
 *   = 58.3 us (a v5p link, ideal ICI), below the compute: the ring is hidden.
 * So t = 15 max(c, s) + c = 16 c, with c the chunk [4096, 1280] x [1280, 3072] in blocks
 * (512, 640, 1024) run alone (op 1), as XLA's windowed einsum computes one partial dot
 * per step while the next shard is in flight. Before the fix the op took 16 times the
 * bk = 256 chunk (op 2), 18 % more. */
static void test_collective_matmul_chunk_blocks(void **state)
{
    (void)state;
    struct result r = run("chip: v5p\ntopology: {shape: [4, 4, 4]}\n"
                          "mesh: {fsdp: 4, tensor: 16}\nworkload:\n"
                          "  - {op: collective_matmul, m: 4096, k: 1280, n: 3072, "
                          "groups: [tensor]}\n"
                          "  - {op: matmul, m: 4096, k: 1280, n: 3072, "
                          "block: {bm: 512, bk: 640, bn: 1024}}\n"
                          "  - {op: matmul, m: 4096, k: 1280, n: 3072, "
                          "block: {bm: 512, bk: 256, bn: 1024}}\n",
                          IDEAL, 5);
    assert_int_equal(r.rc, 0);
    double c = op_time(&r, 1), s = 5242880.0 / 90e9, peak = 2.0 * 4096 * 1280 * 3072 / 459e12;
    assert_true(c >= peak && s < c);
    assert_within(op_time(&r, 0), 15 * c + c, 0.03);
    assert_true(op_time(&r, 0) < 15 * op_time(&r, 2));
}

/* ---- multislice: hierarchical collectives over the DCN ----
 * Ideal ICI (as IDEAL) and free reductions (HBM 1000 TB/s, a 100 GHz VPU, no
 * launch or step overheads), so that the time is the transfers'. v5e: hosts
 * of 8 chips with 25 GB/s of NICs, N = 3.125e9 B/s per chip; DCN latency
 * L = 10 us (the preset's). */
static const char *const MULTI[] = {
    "chip.ici.efficiency=1",          "chip.ici.hop_latency=0us",
    "chip.ici.step_latency=0us",      "chip.ici.collective_latency=0us",
    "chip.tensorcore.dma_latency=0us", "chip.hbm.bandwidth=1000TBps",
    "chip.tensorcore.clock=100GHz",   "chip.tensorcore.launch_overhead=0us",
    "chip.tensorcore.step_overhead=0us", "options.all_chips=false"};

/* 2 slices of v5e 16x16, a data-parallel all-reduce of B = 64 MiB per chip
 * over all 512 chips (axes: [dcn, 0, 1], and the same as mesh {data: 512}
 * whose data axis spans the slices), as XLA runs it: two parts of B/2, one
 * per torus axis, each
 *   1. reduce-scatters its B/2 over its first axis (a bidirectional 16-ring:
 *      15/16 of B/2 split two ways): t_a = (15/16)(B/4)/W = 349.525 us,
 *   2. then over the other axis on B/32: t_b = (15/16)(B/64)/W = 21.845 us
 *      (the parts use different axes' links, so they never share one),
 *   3. reduce-scatters its shard B/512 across the 2 slices over the DCN: it
 *      sends half, B/1024; both parts at once through the chip's NIC share:
 *      (B/512)/N + L = 41.943 + 10 us,
 *   4. all-gathers it back across the slices: (B/512)/N + L again,
 *   5. all-gathers within the slice: t_b, then t_a.
 * T = 2 (t_a + t_b) + 2 ((B/512)/N + L) = 742.741 + 103.886 = 846.627 us.
 * The fabric (non-blocking by default: bisection = 64 hosts x 25 GB/s / 2)
 * carries 512 x 2 x B/1024 per DCN phase at 3.125e9 each, exactly its
 * capacity: it does not bind. Every chip sends B/512 + B/512 over the DCN. */
static void test_multislice_all_reduce_hand_derived(void **state)
{
    (void)state;
    static const char *const sets[][11] = {
        {MULTI[0], MULTI[1], MULTI[2], MULTI[3], MULTI[4], MULTI[5], MULTI[6], MULTI[7],
         MULTI[8], "options.all_chips=false"},
        {MULTI[0], MULTI[1], MULTI[2], MULTI[3], MULTI[4], MULTI[5], MULTI[6], MULTI[7],
         MULTI[8], "options.all_chips=true"}};
    double B = 67108864.0, W = 45e9, N = 25e9 / 8, L = 10e-6;
    double ta = 15.0 / 16 * (B / 4) / W, tb = 15.0 / 16 * (B / 64) / W;
    double want = 2 * (ta + tb) + 2 * ((B / 512) / N + L);
    /* the SPMD fold (4x4 of each slice) and every chip (not under valgrind or ASan: the
     * 512 chips' run is make test's) */
    for (int m = 0; m < (test_under_checker() ? 1 : 2); m++) {
        struct result r = run("chip: v5e\ntopology: {shape: [16, 16], slices: 2}\n"
                              "mesh: {data: 512}\nworkload:\n"
                              "  - {op: all_reduce, bytes: 64MiB, axes: [dcn, 0, 1]}\n"
                              "  - {op: all_reduce, bytes: 64MiB, groups: [data]}\n",
                              sets[m], 10);
        assert_int_equal(r.rc, 0);
        assert_within(op_time(&r, 0), want, 0.002);
        assert_within(op_time(&r, 1), want, 0.002);
        assert_true(r.dcn[0] == 512 * 2 * (B / 512));
    }
}

/* The fabric binds: the same all-reduce with a bisection of 100 GB/s (the
 * backbone carries 200 GB/s): each DCN phase moves 512 x B/512 = B through
 * it: B / 200e9 + L = 335.544 + 10 us instead of 51.943 us.
 * T = 742.741 + 2 x 345.544 = 1433.83 us. */
static void test_multislice_fabric_shared(void **state)
{
    (void)state;
    static const char *const sets[][11] = {
        {MULTI[0], MULTI[1], MULTI[2], MULTI[3], MULTI[4], MULTI[5], MULTI[6], MULTI[7],
         MULTI[8], "topology.dcn.bisection=100GBps", "options.all_chips=false"},
        {MULTI[0], MULTI[1], MULTI[2], MULTI[3], MULTI[4], MULTI[5], MULTI[6], MULTI[7],
         MULTI[8], "topology.dcn.bisection=100GBps", "options.all_chips=true"}};
    double B = 67108864.0, W = 45e9, L = 10e-6;
    double ta = 15.0 / 16 * (B / 4) / W, tb = 15.0 / 16 * (B / 64) / W;
    double want = 2 * (ta + tb) + 2 * (B / 200e9 + L);
    /* folded, every chip (not under valgrind or ASan: make test's) */
    for (int m = 0; m < (test_under_checker() ? 1 : 2); m++) {
        struct result r = run("chip: v5e\ntopology: {shape: [16, 16], slices: 2}\nworkload:\n"
                              "  - {op: all_reduce, bytes: 64MiB, axes: [dcn, 0, 1]}\n",
                              sets[m], 11);
        assert_int_equal(r.rc, 0);
        assert_within(op_time(&r, 0), want, 0.002);
    }
}

/* 4 slices: the DCN phases are rings of 4 (one way: a pair of directions
 * would share the one NIC): 3 steps of S/4, S = B/256 the chip's shard (both
 * parts), each step paying L: 3 L + (3/4)(B/256)/N = 30 + 62.915 us per
 * phase. T = 742.741 + 2 x 92.915 = 928.57 us. */
static void test_multislice_four_slices_ring(void **state)
{
    (void)state;
    double B = 67108864.0, W = 45e9, N = 25e9 / 8, L = 10e-6;
    double ta = 15.0 / 16 * (B / 4) / W, tb = 15.0 / 16 * (B / 64) / W;
    double want = 2 * (ta + tb) + 2 * (3 * L + 0.75 * (B / 256) / N);
    const char *sets[11] = {MULTI[0], MULTI[1], MULTI[2], MULTI[3], MULTI[4],
                            MULTI[5], MULTI[6], MULTI[7], MULTI[8], "options.fidelity=exact"};
    for (int m = 0; m < 2; m++) { /* fast: a ring phase is coalesced into one step */
        struct result r = run("chip: v5e\ntopology: {shape: [16, 16], slices: 4}\nworkload:\n"
                              "  - {op: all_reduce, bytes: 64MiB, axes: [dcn, 0, 1]}\n",
                              sets, m ? 10 : 9);
        assert_int_equal(r.rc, 0);
        assert_within(op_time(&r, 0), want, 0.002);
    }
}

/* The data-parallel all-reduce over the DCN overlaps the backward (as in
 * configs/scenarios/multislice_v5e_dp.yaml): each layer's grad_ar waits only
 * for its own reduce-scatter, so the first one starts (and the DCN carries
 * its bytes) while the later layers' matmuls still run, and all but the
 * last layer's hide behind compute. */
static void test_multislice_grad_all_reduce_overlaps_backward(void **state)
{
    (void)state;
    /* under valgrind and ASan two layers, not three (the second layer's all-reduce
     * already starts before the last wgrad ends; 179 s of valgrind with three) */
    char head[320];
    snprintf(head, sizeof head,
             "chip: v5e\ntopology: {shape: [16, 16], slices: 2}\nmesh: {data: 2, fsdp: 256}\n"
             "workload:\n  - {op: all_gather, name: wg0, bytes: 1703936, groups: [fsdp], after: []}\n"
             "  - repeat:\n      name: bwd\n      count: %d\n", test_under_checker() ? 2 : 3);
    char *yaml = xasprintf("%s%s", head,
        "      ops:\n"
        "        - {op: all_gather, name: wgather, bytes: 1703936, groups: [fsdp],\n"
        "           after: [prev.wgather, prev.up_dgrad]}\n"
        "        - {op: matmul, name: up_dgrad, m: 2048, k: 28672, n: 4096,\n"
        "           after: [wg0, prev.wgather, prev.qkv_wgrad],\n"
        "           block: {bm: 512, bk: 1024, bn: 1024}}\n"
        "        - {op: matmul, name: up_wgrad, m: 4096, k: 2048, n: 28672,\n"
        "           block: {bm: 512, bk: 1024, bn: 1024}}\n"
        "        - {op: matmul, name: qkv_wgrad, m: 4096, k: 2048, n: 6144,\n"
        "           block: {bm: 512, bk: 1024, bn: 1024}}\n"
        "        - {op: reduce_scatter, name: grad_rs, bytes: 872415232, groups: [fsdp],\n"
        "           after: [qkv_wgrad]}\n"
        "        - {op: all_reduce, name: grad_ar, bytes: 3407872, groups: [data],\n"
        "           after: [grad_rs]}\n");
    struct result r = run(yaml, NULL, 0);
    free(yaml);
    assert_int_equal(r.rc, 0);
    int ar = 6, wgrad = 4; /* bwd.grad_ar, bwd.qkv_wgrad */
    assert_true(r.dcn[ar] > 0);
    assert_true(r.start[ar] < r.end[wgrad]);
    assert_true(r.cat[CAT_COLLECTIVE_HIDDEN] > 0);
}

/* The ICI latency and peak formulas (models/ici.h), by hand: a ring step's
 * fixed cost is handshake + hop + DMA issue; a one-off transfer 3 hops away
 * pays the collective's fixed cost, the DMA issue and 3 hops; the published
 * peak over 2 axes is 4 link directions at the published bandwidth. */
static void test_ici_formulas(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.ici_step_lat_s = 0.15e-6, ch.ici_hop_lat_s = 0.2e-6, ch.dma_issue_s = 0.1e-6;
    ch.ici_collective_lat_s = 5e-6, ch.ici_bw_Bps = 90e9, ch.ici_efficiency = 0.96;
    assert_float_equal(ici_ring_step_fixed_s(&ch, ch.ici_hop_lat_s), 0.45e-6, 1e-15);
    assert_float_equal(ici_ring_step_fixed_s(&ch, 10e-6), 10.25e-6, 1e-15);
    assert_float_equal(ici_transfer_latency_s(&ch, 3), 5.7e-6, 1e-15);
    assert_float_equal(ici_axes_peak_Bps(&ch, 2), 360e9, 1e-3);
    assert_float_equal(ici_link_Bps(&ch), 86.4e9, 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ici_formulas),
        cmocka_unit_test(test_all_gather_bidi_ring_matches_formula),
        cmocka_unit_test(test_all_gather_line),
        cmocka_unit_test(test_odd_ring_keeps_wraparound),
        cmocka_unit_test(test_all_gather_line_hand_figure),
        cmocka_unit_test(test_reduce_scatter_accumulate_runs_whole),
        cmocka_unit_test(test_small_reductions_fast_is_exact),
        cmocka_unit_test(test_every_chip_ring_all_reduce_reductions_hand_figure),
        cmocka_unit_test(test_reduce_scatter_beside_kernel_fast_is_exact),
        cmocka_unit_test(test_all_gather_two_axes),
        cmocka_unit_test(test_gather_over_ring_and_pair_runs_in_two_parts),
        cmocka_unit_test(test_all_gather_over_pairs_uses_both_links),
        cmocka_unit_test(test_all_gather_all_axes_without_wraparound),
        cmocka_unit_test(test_line_all_reduce_parts_fast_is_exact),
        cmocka_unit_test(test_reduce_scatter_and_all_reduce),
        cmocka_unit_test(test_all_reduce_scaling_with_ring_length_and_axes),
        cmocka_unit_test(test_all_to_all_ring),
        cmocka_unit_test(test_all_to_all_preset_links),
        cmocka_unit_test(test_small_all_gather_is_latency_bound),
        cmocka_unit_test(test_collective_matmul_overlap_wins),
        cmocka_unit_test(test_collective_matmul_over_mesh_axis),
        cmocka_unit_test(test_collective_matmul_chunk_memo),
        cmocka_unit_test(test_collective_matmul_chunk_blocks),
        cmocka_unit_test(test_multislice_all_reduce_hand_derived),
        cmocka_unit_test(test_multislice_fabric_shared),
        cmocka_unit_test(test_multislice_four_slices_ring),
        cmocka_unit_test(test_multislice_grad_all_reduce_overlaps_backward),
        cmocka_unit_test(test_line_degraded_link_fast_is_exact),
        cmocka_unit_test(test_ring_down_link_fast_is_exact),
        cmocka_unit_test(test_kernel_near_bound_beside_collective_fast_is_exact),
    };
    return cmocka_run_group_tests_name("collectives", tests, NULL, NULL);
}
