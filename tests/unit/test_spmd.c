/* tests/unit/test_spmd.c -- SPMD folding: which chips are simulated, and that
 * simulating only them gives the times of simulating every chip. */
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>

#include "base/fsutil.h"

#include "engine/spmd.h"
#include "sim_fork.h"

static void fold_of(const char *yaml, int nd, const int *want)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (cfg_load_scenario_text(yaml, strlen(yaml), "s.yaml", NULL, 0, &sc, d) != 0) {
        print_error("%s\n", diag_count(d) ? diag_message(d, 0) : "?");
        fail();
    }
    spmd_fold(&sc, sc.all_chips);
    assert_int_equal(sc.plan.sim.ndims, nd);
    int chips = 1;
    for (int a = 0; a < nd; a++) {
        assert_int_equal(sc.plan.sim.shape[a], want[a]);
        chips *= want[a];
    }
    assert_int_equal(sc.plan.sim_mult, sc.topo.nchips / chips);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

#define TORUS "chip: {base: v5p}\ntopology: {shape: [8, 8, 8]}\nworkload:\n"

static void test_fold_periods(void **state)
{
    (void)state;
    /* ring neighbours: the shortest divisor above 1 hop, with transfers that keep their
     * direction (topology/plat_dir.h): 2 (the plain fold's, above 2 hops, is 4) */
    fold_of(TORUS "  - {op: all_gather, bytes: 1MiB, axes: [0, 1]}\n", 3, (int[]){2, 2, 1});
    /* a shift of 3 needs more than 6 chips per ring (8: no fold), or more than 3 with
     * transfers that keep their direction (topology/plat_dir.h): 4 */
    fold_of(TORUS "  - {op: ppermute, bytes: 1MiB, axis: 2, shift: 3}\n", 3, (int[]){1, 1, 4});
    /* all-to-all reaches every chip of its axis */
    fold_of(TORUS "  - {op: all_to_all, bytes: 1MiB, axes: [1]}\n", 3, (int[]){1, 8, 1});
    /* absolute targets: no folding */
    fold_of(TORUS "  - {op: remote_copy, bytes: 1MiB, device_id: 5}\n", 3, (int[]){8, 8, 8});
    /* compute only: one chip */
    fold_of(TORUS "  - {op: matmul, m: 512, k: 512, n: 512}\n", 3, (int[]){1, 1, 1});
    /* an axis without wraparound stays whole (the wrapped one folds to 2, directed) */
    fold_of("chip: v5e\ntopology: {shape: [8, 16]}\nworkload:\n"
            "  - {op: all_gather, bytes: 1MiB, axes: [0, 1]}\n",
            2, (int[]){8, 2});
    /* beside other ops on a wrapped slice, an all-to-all runs as a stand-in: the
     * fold leaves it out (the all-gather's 1 hop on axis 0 needs 2 chips, directed) */
    fold_of(TORUS "  - {op: all_gather, bytes: 1MiB, axes: [0]}\n"
                  "  - {op: all_to_all, bytes: 1MiB, axes: [1]}\n",
            3, (int[]){2, 1, 1});
    /* ... not where an axis has no wraparound (its chips differ) */
    fold_of("chip: v5e\ntopology: {shape: [8, 16]}\nworkload:\n"
            "  - {op: all_gather, bytes: 1MiB, axes: [1]}\n"
            "  - {op: all_to_all, bytes: 1MiB, axes: [1]}\n",
            2, (int[]){1, 16});
    /* the period problem: data 4 x fsdp 4 on a ring of 16 puts the data ring's members 4
     * apart, and fsdp's segments of 4 repeat every 4 chips. A plain fold needs a period
     * above 2 x 4 dividing 16 (16: no fold, as before); with transfers that keep their
     * direction (topology/plat_dir.h) above 4: 8 */
    fold_of("chip: v5e\ntopology: {shape: [16]}\nmesh: {data: 4, fsdp: 4}\nworkload:\n"
            "  - {op: all_reduce, bytes: 1MiB, groups: [data]}\n"
            "  - {op: all_gather, bytes: 1MiB, groups: [fsdp]}\n",
            1, (int[]){8});
    /* ... and then every axis folds so: fsdp's 1 hop along axis 0 needs 2 chips, not 4 */
    fold_of("chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {data: 4, fsdp: 64}\nworkload:\n"
            "  - {op: all_reduce, bytes: 1MiB, groups: [data]}\n"
            "  - {op: all_gather, bytes: 1MiB, groups: [fsdp]}\n",
            2, (int[]){2, 8});
    /* asked for every chip */
    fold_of("chip: {base: v5p}\ntopology: {shape: [8, 8, 8]}\noptions: {all_chips: true}\n"
            "workload:\n  - {op: all_gather, bytes: 1MiB, axes: [0]}\n",
            3, (int[]){8, 8, 8});
}

/* spmd_hb_alone of op 'op' in 'yaml': whether the program's order keeps every
 * other op instance off it. */
static bool alone(const char *yaml, int op)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (cfg_load_scenario_text(yaml, strlen(yaml), "s.yaml", NULL, 0, &sc, d) != 0) {
        print_error("%s\n", diag_count(d) ? diag_message(d, 0) : "?");
        fail();
    }
    struct spmd_hb *hb = spmd_hb_new(&sc);
    bool a = spmd_hb_alone(hb, op);
    spmd_hb_free(hb);
    cfg_scenario_fini(&sc);
    diag_free(d);
    return a;
}

#define A2A "  - {op: all_to_all, name: x, bytes: 1MiB, axes: [1]}\n"
#define MM(n, more) "  - {op: matmul, name: " n ", m: 256, k: 256, n: 256" more "}\n"
#define AG(n, more) "  - {op: all_gather, name: " n ", bytes: 1MiB, axes: [0]" more "}\n"

static void test_standin_alone(void **state)
{
    (void)state;
    /* one after the other: alone */
    assert_true(alone(TORUS AG("g", "") A2A MM("m", ""), 1));
    /* a matmul started beside it (it waits for what the all-to-all waited for) */
    assert_false(alone(TORUS AG("g", "") A2A MM("m", ", overlap: true"), 1));
    /* a matmul waiting for the all-gather only: free to run beside it */
    assert_false(alone(TORUS AG("g", "") A2A MM("m", ", after: [g]"), 1));
    /* ... but on the compute stream after one that waits for the all-to-all: after it */
    assert_true(alone(TORUS AG("g", "") A2A MM("m", ", after: [x]") MM("k", ", after: [g]"), 1));
    /* a matmul before it on the compute stream, which it does not wait for: beside it */
    assert_false(alone(TORUS MM("m", "") "  - {op: all_to_all, bytes: 1MiB, axes: [1], after: []}\n",
                       1));
    /* in a repeat block, between matmuls: each instance alone */
    assert_true(alone(TORUS "  - repeat: {count: 3, ops: [{op: all_to_all, name: x, bytes: 1MiB, "
                            "axes: [1]}, {op: matmul, name: m, m: 256, k: 256, n: 256}]}\n", 0));
}

static void assert_same(const struct result *a, const struct result *b)
{
    assert_int_equal(a->rc, 0);
    assert_int_equal(b->rc, 0);
    assert_int_equal(a->nops, b->nops);
    /* the run's end, then each op the result keeps (sim_fork.h keeps the first MAXOPS: a
     * model step has more; reading past them was UBSan's out-of-bounds report) */
    assert_true(fabs(a->total - b->total) <= 1e-9 * b->total);
    for (int i = 0; i < a->nops && i < MAXOPS; i++) {
        if (fabs(a->time[i] - b->time[i]) > 1e-9 * b->time[i] ||
            fabs(a->end[i] - b->end[i]) > 1e-9 * b->end[i] || a->flops[i] != b->flops[i] ||
            a->hbm[i] != b->hbm[i] || a->ici[i] != b->ici[i] || a->steps[i] != b->steps[i] ||
            a->dcn[i] != b->dcn[i]) {
            print_error("op %d: time %.12g vs %.12g, end %.12g vs %.12g, ici %g vs %g\n", i,
                        a->time[i], b->time[i], a->end[i], b->end[i], a->ici[i], b->ici[i]);
            fail();
        }
    }
}

/* The lone runs kept in 'dir' (lone-*.bin): how many, and the inode of the last. */
static int kept(const char *dir, ino_t *ino)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, "lone-", 5)) {
            char *p = xasprintf("%s/%s", dir, e->d_name);
            struct stat st;
            assert_int_equal(stat(p, &st), 0);
            *ino = st.st_ino;
            free(p);
            n++;
        }
    closedir(d);
    return n;
}

#define CUBE "chip: {base: v5p}\ntopology: {shape: [4, 4, 4]}\nworkload:\n"

/* A sweep's points share their stand-ins' lone runs (sim_opts.standin_dir): the first
 * run keeps its all-to-all's; a run of another program with the same all-to-all finds it
 * (the file is not written again) and has the times of a run that runs its own. */
static void test_standin_kept(void **state)
{
    (void)state;
    char dir[] = "/tmp/tpusim-standins-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *a = CUBE AG("g", "") A2A MM("m", "");
    const char *b = CUBE AG("g", "") A2A "  - {op: matmul, name: m, m: 512, k: 256, n: 256}\n";
    sim_fork_standin_dir = dir;
    struct result ra = run(a, NULL, 0);
    ino_t ino0 = 0, ino1 = 0;
    assert_int_equal(kept(dir, &ino0), 1);
    struct result rb = run(b, NULL, 0);
    assert_int_equal(kept(dir, &ino1), 1);
    assert_true(ino1 == ino0); /* found, not run and written again */
    sim_fork_standin_dir = NULL;
    struct result own = run(b, NULL, 0);
    assert_same(&rb, &own);
    assert_int_equal(ra.rc, 0);
    assert_true(ra.time[1] == rb.time[1] && rb.time[1] == own.time[1]); /* the all-to-all's */
    assert_true(ra.end[2] != rb.end[2]); /* (the programs differ) */
    assert_int_equal(fs_remove_tree(dir), 0);
}

/* A run that trusts its stand-ins (sim_opts.standin_trust: a sweep's point) runs no probe:
 * when nothing ran beside them it has the figures of a run that probed first; when
 * something did (a matmul that waits for the all-gather only), it says so
 * (SIM_STANDIN_RETRY), and the run that probes simulates every chip. */
static void test_standin_trusted(void **state)
{
    (void)state;
    const char *alone_yaml = CUBE AG("g", "") A2A MM("m", "");
    const char *beside = CUBE AG("g", "") A2A MM("m", ", after: [g]");
    sim_fork_standin_trust = true;
    struct result ta = run(alone_yaml, NULL, 0), tb = run(beside, NULL, 0);
    sim_fork_standin_trust = false;
    struct result pa = run(alone_yaml, NULL, 0), pb = run(beside, NULL, 0);
    assert_same(&ta, &pa);
    assert_int_equal(tb.rc, SIM_STANDIN_RETRY);
    assert_int_equal(pb.rc, 0);
}

/* Folded and every chip: the same times, the same sums. */
static void same_both_ways(const char *yaml)
{
    const char *all[1] = {"options.all_chips=true"};
    struct result fold = run(yaml, NULL, 0);
    struct result full = run(yaml, all, 1);
    assert_same(&fold, &full);
}

static void test_fold_equals_every_chip(void **state)
{
    (void)state;
    same_both_ways("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                   "  - {op: all_gather, name: ag, bytes: 4MiB, axes: [0]}\n"
                   "  - {op: hbm_copy, name: c, bytes: 64MiB, chunk: 256KiB, overlap: true}\n");
    same_both_ways("chip: {base: v5p}\ntopology: {shape: [4, 4, 4]}\nworkload:\n"
                   "  - {op: all_reduce, name: ar, bytes: 8MiB, axes: [0, 1]}\n"
                   "  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024, overlap: true}\n"
                   "  - {op: ppermute, name: pp, bytes: 4MiB, axis: 2, shift: 1}\n");
    same_both_ways("chip: v5e\ntopology: {shape: [2, 16]}\nworkload:\n"
                   "  - {op: collective_matmul, name: cm, m: 256, k: 1024, n: 1024, axis: 1}\n"
                   "  - {op: reduce_scatter, name: rs, bytes: 16MiB, axes: [1]}\n");
    /* all-to-alls as stand-ins (their lone runs on all 64 chips) between other ops */
    same_both_ways("chip: {base: v5p}\ntopology: {shape: [4, 4, 4]}\nworkload:\n"
                   "  - {op: all_gather, name: ag, bytes: 4MiB, axes: [0]}\n"
                   "  - {op: all_to_all, name: a2a, bytes: 8MiB, axes: [0, 1]}\n"
                   "  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024}\n"
                   "  - {op: all_to_all, name: a2b, bytes: 8MiB, axes: [2]}\n");
}

/* Folds whose transfers keep their direction: on the ring of 16, the data ring's +4 and -4
 * transfers land on one chip of the fold of 8 and must still take their own links (without
 * the ports the fold's all-reduce took 65 % longer here); on 16 x 16, folded to 2 x 8,
 * fsdp's +1 and -1 along axis 0 land on one chip too; a ppermute 4 down, beside a matmul. */
static void test_fold_keeps_directions(void **state)
{
    (void)state;
    same_both_ways("chip: v5e\ntopology: {shape: [16]}\nmesh: {data: 4, fsdp: 4}\nworkload:\n"
                   "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"
                   "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [data], overlap: true}\n"
                   "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp]}\n"
                   "  - {op: ppermute, name: pp, bytes: 2MiB, axis: 0, shift: 4}\n");
    /* under valgrind and ASan the matmul beside the collectives is an eighth of the work
     * (its steps run one by one on all 256 chips: 200 s of valgrind at 2048) */
    char y[640];
    snprintf(y, sizeof y,
             "chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {data: 4, fsdp: 64}\nworkload:\n"
             "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"
             "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [data], overlap: true}\n"
             "  - {op: matmul, name: mm, m: %d, k: %d, n: %d, overlap: true}\n"
             "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp]}\n"
             "  - {op: ppermute, name: pp, bytes: 2MiB, axis: 1, shift: -4}\n",
             test_under_checker() ? 1024 : 2048, test_under_checker() ? 1024 : 2048,
             test_under_checker() ? 1024 : 2048);
    same_both_ways(y);
    /* an all-to-all beside them runs as a stand-in (its lone run on every chip, on the
     * TORUS cluster of the whole ring) */
    same_both_ways("chip: v5e\ntopology: {shape: [16]}\nmesh: {data: 4, fsdp: 4}\nworkload:\n"
                   "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [data]}\n"
                   "  - {op: all_to_all, name: a2a, bytes: 8MiB, axes: [0]}\n"
                   "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n");
    /* a shift of 3 on a ring of 8 folded to 4 (3 up = 1 down on the fold), beside a ring;
     * under valgrind and ASan on a 2x2x8 (the same ring of 8; every chip of the 8x8x8 is
     * 512 threads at valgrind's pace) */
    snprintf(y, sizeof y, "chip: {base: v5p}\ntopology: {shape: [%s]}\nworkload:\n"
             "  - {op: ppermute, name: p, bytes: 1MiB, axis: 2, shift: 3}\n"
             "  - {op: all_gather, name: ag, bytes: 1MiB, axes: [2], overlap: true}\n",
             test_under_checker() ? "2, 2, 8" : "8, 8, 8");
    same_both_ways(y);
}

/* The period problem on one axis, a shorter directed period on another: data's pair 2
 * apart keeps x (4) whole either way; fsdp's 1 hop along z (8) folds plainly to 4 (above
 * 2 hops), directed to 2 (above 1 hop); y (expert, crossed by nothing) to 1. The fold
 * is 4 x 1 x 2 (before: 4 x 1 x 4), with the times of all 128 chips. */
#define DIR_GAIN                                                                                \
    "chip: {base: v5p}\ntopology: {shape: [4, 4, 8]}\n"                                         \
    "mesh: {data: {size: 2, on: [[0, 2]]}, expert: {size: 4, on: [[1, 4]]},\n"                  \
    "       fsdp: {size: 8, on: [[2, 8]]}, tensor: {size: 2, on: [[0, 2]]}}\nworkload:\n"      \
    "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"                             \
    "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [data], overlap: true}\n"              \
    "  - {op: collective_matmul, name: cm, m: 256, k: 1024, n: 1024, groups: [tensor]}\n"       \
    "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp]}\n"

static void test_fold_directed_beside_whole(void **state)
{
    (void)state;
    fold_of(DIR_GAIN, 3, (int[]){4, 1, 2});
    same_both_ways(DIR_GAIN);
}

/* No axis kept whole by the plain fold (4 x 4 of 8 x 8: every transfer 1 hop), yet the
 * directed one is shorter: 2 x 2, each chip's +1 and -1 on the same chip of the fold and
 * on their own links; fsdp x tensor as a model step lays them out (tensor's ring on x,
 * fsdp's on y), the collectives beside a matmul, with the times of all 64 chips. */
#define DIR_NO_WHOLE                                                                            \
    "chip: {base: v5p}\ntopology: {shape: [8, 8], wraparound: [true, true]}\n"                  \
    "mesh: {fsdp: 8, tensor: 8}\nworkload:\n"                                                   \
    "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"                             \
    "  - {op: collective_matmul, name: cm, m: 1024, k: 1024, n: 1024, groups: [tensor]}\n"      \
    "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp], overlap: true}\n"          \
    "  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024, overlap: true}\n"                    \
    "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [tensor]}\n"                           \
    "  - {op: ppermute, name: pp, bytes: 2MiB, axis: 1, shift: -1}\n"

static void test_fold_directed_none_whole(void **state)
{
    (void)state;
    fold_of(DIR_NO_WHOLE, 2, (int[]){2, 2});
    same_both_ways(DIR_NO_WHOLE);
    /* beside an axis without wraparound, kept whole (v5e 4 x 16 wraps the 16 only): 4 x 2 */
    const char *line = "chip: v5e\ntopology: {shape: [4, 16]}\nworkload:\n"
                       "  - {op: all_gather, name: ag, bytes: 4MiB, axes: [0, 1]}\n"
                       "  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024, overlap: true}\n"
                       "  - {op: reduce_scatter, name: rs, bytes: 8MiB, axes: [1]}\n"
                       "  - {op: ppermute, name: pp, bytes: 2MiB, axis: 0, shift: 1}\n";
    fold_of(line, 2, (int[]){4, 2});
    same_both_ways(line);
}

/* The planner's fsdp 256 x tensor 4 on an 8-long x (issue 30), small: tensor on x's first
 * 4 chips, fsdp's pair 4 apart on x and 4 along y. A 4-hop transfer on the ring of 8 is a tie,
 * and SimGrid's TorusZone sends it up from every chip but chip 4 (topo_axis_delta), so chips
 * x and x + 4 differ: with every chip, the tensor all-reduce beside fsdp's all-gather ends at
 * 67.917 us on x = 0 and 55.270 us on x = 4 (75.760 and 62.232 us on x = 1 and 5). No
 * translation or mirror along x maps the routes onto themselves, so x stays whole: 8 x 2, with
 * every chip's times (a fold of x to 4 would give chip 4 chip 0's times). */
#define DIR_TIE                                                                                 \
    "chip: {base: v5p}\ntopology: {shape: [8, 4], wraparound: [true, true]}\n"                  \
    "mesh: {fsdp: {size: 8, on: [[0, 2], [1, 4]]}, tensor: {size: 4, on: [[0, 4]]}}\n"          \
    "workload:\n"                                                                               \
    "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"                             \
    "  - {op: all_reduce, name: ar, bytes: 2MiB, groups: [tensor], overlap: true}\n"            \
    "  - {op: matmul, name: mm, m: 2048, k: 2048, n: 2048, after: [ag]}\n"                      \
    "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp], after: [mm]}\n"

static void test_fold_tie_keeps_axis(void **state)
{
    (void)state;
    fold_of(DIR_TIE, 2, (int[]){8, 2});
    same_both_ways(DIR_TIE);
}

static void slices_of(const char *yaml, int want)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(cfg_load_scenario_text(yaml, strlen(yaml), "s.yaml", NULL, 0, &sc, d), 0);
    spmd_fold(&sc, sc.all_chips);
    assert_int_equal(sc.plan.sim_slices, want);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

#define SLICES(n) "chip: v5e\ntopology: {shape: [4, 4], slices: " #n "}\n"
#define DCN_AR "workload:\n  - {op: all_reduce, bytes: 8MiB, axes: [dcn, 0, 1]}\n"

/* The slices fold to one (a ring over them is alike at every place; its steps
 * land on the slice itself, through a second set of NIC hosts: before issue 30,
 * the smallest divisor of their count above 1); not when a slice is lost or
 * every chip is asked for. */
static void test_fold_slices(void **state)
{
    (void)state;
    assert_int_equal(spmd_fold_slices(1), 1);
    assert_int_equal(spmd_fold_slices(2), 1);
    assert_int_equal(spmd_fold_slices(12), 1);
    assert_int_equal(spmd_fold_slices(9), 1);
    assert_int_equal(spmd_fold_slices(7), 1);
    slices_of(SLICES(12) DCN_AR, 1);
    slices_of(SLICES(12) "options: {all_chips: true}\n" DCN_AR, 0);
    slices_of(SLICES(4) "faults: [{slice_lost: 1}]\n" DCN_AR, 0);
}

/* Folded slices and every slice (and chip): the same times, the same sums,
 * the DCN's bytes included; a DCN all-reduce beside a matmul, a ring of 6
 * and of 9 slices (each folded to 1), and a model step whose data axis
 * spans 4 slices, both fidelities; and a fabric that binds. */
static void test_fold_slices_equals_every_slice(void **state)
{
    (void)state;
    same_both_ways(SLICES(6) "workload:\n"
                   "  - {op: all_reduce, name: ar, bytes: 8MiB, axes: [dcn, 0, 1]}\n"
                   "  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024, overlap: true}\n"
                   "  - {op: all_gather, name: ag, bytes: 4MiB, axes: [dcn]}\n"
                   "  - {op: reduce_scatter, name: rs, bytes: 4MiB, axes: [dcn, 1]}\n");
    same_both_ways(SLICES(9) DCN_AR);
    /* a fabric that binds (a tenth of the NICs'): the simulated slices get their share */
    same_both_ways("chip: v5e\ntopology: {shape: [4, 4], slices: 6, dcn: {bisection: 7.5GBps}}\n"
                   DCN_AR);
    /* under valgrind and ASan one layer, a vocabulary of 4096 and sequences of 128, not two
     * layers, 32000 and 512 (the same ops, smaller; 621 s of valgrind) */
    char model[512];
    snprintf(model, sizeof model, SLICES(4) "mesh: {data: 4, fsdp: 16}\n"
             "model: {arch: llama, layers: %d, d_model: 1024, heads: 8, kv_heads: 8,\n"
             "        head_dim: 128, ffn: 4096, vocab: %d, batch: 64, seq_len: %d,\n"
             "        mode: train}\n", test_under_checker() ? 1 : 2,
             test_under_checker() ? 4096 : 32000, test_under_checker() ? 128 : 512);
    same_both_ways(model);
    const char *exact[2] = {"options.fidelity=exact", "options.all_chips=true"};
    struct result fold = run(model, exact, 1), full = run(model, exact, 2);
    assert_same(&fold, &full);
}

/* The fold whose transfers keep their direction inside each of 2 slices (one directed
 * zone per slice, topology/dcn.h): 2 x 2 of each wrapped 8 x 8, fsdp and tensor within the
 * slices as above, data over the DCN beside them; and a model step so laid out (2 layers),
 * both fidelities: the times of all 128 chips. */
#define DIR_SLICES                                                                              \
    "chip: {base: v5p}\ntopology: {shape: [8, 8], wraparound: [true, true], slices: 2}\n"       \
    "mesh: {data: 2, fsdp: 8, tensor: 8}\n"

static void test_fold_directed_slices(void **state)
{
    (void)state;
    const char *ops = DIR_SLICES "workload:\n"
                      "  - {op: all_gather, name: ag, bytes: 4MiB, groups: [fsdp]}\n"
                      "  - {op: all_reduce, name: ar, bytes: 8MiB, groups: [data], overlap: true}\n"
                      "  - {op: collective_matmul, name: cm, m: 1024, k: 1024, n: 1024, groups: "
                      "[tensor]}\n"
                      "  - {op: reduce_scatter, name: rs, bytes: 8MiB, groups: [fsdp, data]}\n"
                      "  - {op: ppermute, name: pp, bytes: 2MiB, axis: 1, shift: 1}\n";
    fold_of(ops, 2, (int[]){2, 2});
    slices_of(ops, 1);
    same_both_ways(ops);
    char model[512];
    snprintf(model, sizeof model, DIR_SLICES
             "model: {arch: llama, layers: 2, d_model: 1024, heads: 8, kv_heads: 8,\n"
             "        head_dim: 128, ffn: 4096, vocab: %d, batch: 64, seq_len: %d,\n"
             "        mode: train}\n", test_under_checker() ? 4096 : 32000,
             test_under_checker() ? 128 : 512);
    fold_of(model, 2, (int[]){2, 2});
    same_both_ways(model);
    const char *exact[2] = {"options.fidelity=exact", "options.all_chips=true"};
    struct result fold = run(model, exact, 1), full = run(model, exact, 2);
    assert_same(&fold, &full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_periods),
        cmocka_unit_test(test_fold_equals_every_chip),
        cmocka_unit_test(test_fold_keeps_directions),
        cmocka_unit_test(test_fold_slices),
        cmocka_unit_test(test_fold_slices_equals_every_slice),
        cmocka_unit_test(test_standin_alone),
        cmocka_unit_test(test_standin_kept),
        cmocka_unit_test(test_standin_trusted),
        cmocka_unit_test(test_fold_directed_beside_whole),
        cmocka_unit_test(test_fold_directed_none_whole),
        cmocka_unit_test(test_fold_directed_slices),
        cmocka_unit_test(test_fold_tie_keeps_axis),
    };
    return cmocka_run_group_tests_name("spmd", tests, NULL, NULL);
}
