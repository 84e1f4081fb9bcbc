/* tests/unit/test_graph.c -- workload graphs: names and scopes, order,
 * dependency errors, repeat blocks, and the execution rules on SimGrid (one
 * kernel at a time per TensorCore, async ops beside it sharing the HBM),
 * with times checked by hand. */
#include "test_util.h"

#include "sim_fork.h"

static int load(const char *yaml, struct cfg_scenario *sc, struct diag *d)
{
    return cfg_load_scenario_text(yaml, strlen(yaml), "g.yaml", NULL, 0, sc, d);
}

/* The first message of loading 'yaml', which must fail. */
static void expect_error(const char *yaml, const char *want)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load(yaml, &sc, d), -1);
    const char *got = diag_count(d) ? diag_message(d, 0) : "";
    if (!strstr(got, want)) {
        print_error("got \"%s\", want \"%s\"\n", got, want);
        fail();
    }
    diag_free(d);
}

#define HEAD "chip: v5e\nworkload:\n"
/* A matmul named 'name' of size 'mkn'^3 with 'extra' keys. */
#define MMS(name, mkn, extra)                                                                 \
    "  - {op: matmul, name: " name ", m: " mkn ", k: " mkn ", n: " mkn extra "}\n"
#define MM(name, extra) MMS(name, "256", extra)

static int index_of(const struct cfg_scenario *sc, const char *name)
{
    for (int i = 0; i < sc->nops; i++)
        if (!strcmp(sc->ops[i].name, name))
            return i;
    return -1;
}

/* after: may name a later op: the program order follows the dependencies,
 * and otherwise the document. */
static void test_forward_reference_reorders(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load(HEAD MM("a", ", after: [c]") MM("b", "") MM("c", ", after: []"), &sc, d),
                     0);
    /* a waits for c, so it moves after it; b and c keep their order */
    assert_int_equal(index_of(&sc, "b"), 0);
    assert_int_equal(index_of(&sc, "c"), 1);
    assert_int_equal(index_of(&sc, "a"), 2);
    const struct graph_node *a = &sc.graph.node[2];
    assert_true(a->has_after);
    assert_int_equal(a->ndeps, 1);
    assert_int_equal(a->deps[0].op, 1);
    assert_false(sc.graph.node[0].has_after); /* b: the op before it */
    assert_true(sc.graph.node[1].has_after);  /* c: after: [] waits for nothing */
    assert_int_equal(sc.graph.node[1].ndeps, 0);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_dependency_errors(void **state)
{
    (void)state;
    expect_error(HEAD MM("a", ", after: [b]") MM("b", ", after: [a]"),
                 "is part of a dependency cycle");
    expect_error(HEAD MM("a", "") MM("b", ", after: [aa]"),
                 "g.yaml:4:59: workload.1.after.0: unknown op 'aa' (did you mean 'a'?)");
    expect_error(HEAD MM("a", "") MM("a", ""), "workload.1: duplicate name 'a'");
    expect_error(HEAD MM("a", ", after: [a]"), "'a' is the op itself");
    expect_error(HEAD MM("a", ", after: [prev.a]"), "not inside a repeat block");
    expect_error(HEAD MM("a", "") "  - repeat: {count: 2, ops: [{op: matmul, name: b, m: 256, "
                 "k: 256, n: 256, after: [prev.a]}]}\n",
                 "prev. names an op of this op's own repeat body");
    expect_error(HEAD MM("a.b", ""), "workload.0.name: expected a name of letters");
    expect_error(HEAD "  - repeat: {count: 0, ops: [{op: hbm_copy, bytes: 1MiB}]}\n",
                 "workload.0.repeat.count: expected an integer in [1, 100000000], got '0'");
    expect_error(HEAD "  - repeat: {count: 100000, ops: [{repeat: {count: 100000, ops: "
                 "[{op: hbm_copy, bytes: 1MiB}]}}]}\n",
                 "more than 100000000 op instances");
    /* counts whose product wraps int64: 2^26 x 2^26 x 2^12 = 2^64 (wrapped to 0) and
     * 2^26 x 2^26 x 2^11 = 2^63 (wrapped to INT64_MIN): both must be refused as the
     * product they are, not pass as 0 or a negative count */
    expect_error(HEAD "  - repeat: {count: 67108864, ops: [{repeat: {count: 67108864, ops: "
                 "[{repeat: {count: 4096, ops: [{op: hbm_copy, bytes: 1KiB}]}}]}}]}\n",
                 "more than 100000000 op instances");
    expect_error(HEAD "  - repeat: {count: 67108864, ops: [{repeat: {count: 67108864, ops: "
                 "[{repeat: {count: 2048, ops: [{op: hbm_copy, bytes: 1KiB}]}}]}}]}\n",
                 "more than 100000000 op instances");
    /* eight levels of 1e8: the sum over ops must saturate too */
    expect_error(HEAD "  - repeat: {count: 100000000, ops: [{repeat: {count: 100000000, ops: "
                 "[{repeat: {count: 100000000, ops: [{op: hbm_copy, bytes: 1KiB}, "
                 "{op: hbm_copy, bytes: 1KiB}]}}]}}]}\n",
                 "more than 100000000 op instances");
    expect_error(HEAD MM("a", ", after: {x: 1}"), "workload.0.after: expected a list of op names");
}

/* Names in a repeat body are per iteration; prev. reaches back one iteration;
 * blk.x from outside is the last iteration's x. */
static void test_repeat_scopes_and_instances(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *y = HEAD MM("first", "")
        "  - repeat:\n"
        "      name: layer\n"
        "      count: 4\n"
        "      ops:\n"
        "        - {op: matmul, name: x, m: 256, k: 256, n: 256, after: [prev.y, first]}\n"
        "        - {op: matmul, name: y, m: 256, k: 256, n: 256}\n"
        "        - repeat: {name: inner, count: 3, ops: [{op: matmul, name: z, m: 256, k: 256, "
        "n: 256, after: [x]}]}\n"
        MM("last", ", after: [layer.y, layer.inner.z]");
    assert_int_equal(load(y, &sc, d), 0);
    assert_int_equal(sc.nops, 5);
    const struct graph *g = &sc.graph;
    int x = index_of(&sc, "layer.x"), yy = index_of(&sc, "layer.y");
    int z = index_of(&sc, "layer.inner.z"), last = index_of(&sc, "last");
    assert_true(x >= 0 && yy >= 0 && z >= 0 && last >= 0);
    assert_int_equal(g->node[x].instances, 4);
    assert_int_equal(g->node[z].instances, 12);
    assert_int_equal(g->instances, 1 + 4 + 4 + 12 + 1);
    int64_t it[2] = {2, 1};
    assert_int_equal(graph_instance(g, z, it), 2 * 3 + 1);
    /* x waits for y of the previous iteration (none in the first) and 'first' */
    const struct graph_node *nx = &g->node[x];
    assert_int_equal(nx->ndeps, 2);
    assert_int_equal(graph_dep_instance(g, x, &nx->deps[0], it), 1);
    int64_t it0[2] = {0, 0};
    assert_int_equal(graph_dep_instance(g, x, &nx->deps[0], it0), -1);
    assert_int_equal(graph_dep_instance(g, x, &nx->deps[1], it), 0);
    /* z waits for x of its own iteration of the outer block */
    assert_int_equal(graph_dep_instance(g, z, &g->node[z].deps[0], it), 2);
    /* last waits for the last y and the last z */
    const struct graph_node *nl = &g->node[last];
    assert_int_equal(graph_dep_instance(g, last, &nl->deps[0], it0), 3);
    assert_int_equal(graph_dep_instance(g, last, &nl->deps[1], it0), 11);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* ---- execution on SimGrid ---- */

static const char *const EXACT[] = {"chip.ici.efficiency=1",
                                    "chip.ici.hop_latency=0us",
                                    "chip.ici.step_latency=0us",
                                    "chip.ici.collective_latency=0us",
                                    "chip.tensorcore.dma_latency=0us",
                                    "chip.tensorcore.launch_overhead=0us",
                                    "chip.hbm.efficiency=1"};

static void assert_close(double got, double want, double rel)
{
    if (fabs(got - want) > rel * fabs(want)) {
        print_error("got %.12g, want %.12g\n", got, want);
        fail();
    }
}

/* A TensorCore runs one kernel at a time: two compute ops marked overlap:
 * true still run one after the other, each as fast as alone. */
static void test_one_kernel_at_a_time(void **state)
{
    (void)state;
    struct result one = run(HEAD MMS("a", "2048", ""), EXACT, 7);
    struct result two = run(HEAD MMS("a", "2048", "")
                                MMS("b", "2048", ", overlap: true"),
                            EXACT, 7);
    assert_int_equal(one.rc, 0);
    assert_int_equal(two.rc, 0);
    assert_close(two.start[1], two.end[0], 1e-12);
    assert_close(two.time[0], one.time[0], 1e-12);
    assert_close(two.time[1], one.time[0], 1e-12);
    assert_close(two.total, 2 * one.total, 1e-12);
}

/* Async ops run beside compute and share the HBM through SimGrid. A ppermute
 * between two chips (45 GB/s links) crosses both chips' HBM; with the HBM at
 * 180 GB/s each chip's HBM carries two ppermute flows (out and in, 45 GB/s
 * each), so a 16 MiB copy made of one chunk, started alongside, gets
 * 180 - 90 = 90 GB/s: 16 MiB in, then 16 MiB out, 2 * 16 MiB / 90 GB/s =
 * 372.827 us, twice its time alone (2 * 16 MiB / 180 GB/s). The ppermute
 * keeps its 64 MiB / 45 GB/s = 1491.3 us. */
static void test_async_overlaps_and_shares_hbm(void **state)
{
    (void)state;
    const char *sets[9];
    memcpy(sets, EXACT, sizeof EXACT);
    sets[7] = "chip.hbm.bandwidth=180GBps";
    sets[8] = "chip.ici.bandwidth=45GBps";
    const char *y = "chip: v5e\ntopology: {shape: [2]}\nworkload:\n"
                    "  - {op: ppermute, name: p, bytes: 64MiB, axis: 0, shift: 1}\n"
                    "  - {op: hbm_copy, name: c, bytes: 16MiB, chunk: 16MiB, overlap: true,\n"
                    "     vmem_limit_bytes: 64MiB}\n"
                    "  - {op: hbm_copy, name: alone, bytes: 16MiB, chunk: 16MiB,\n"
                    "     vmem_limit_bytes: 64MiB, after: [p]}\n";
    struct result r = run(y, sets, 9);
    assert_int_equal(r.rc, 0);
    double MiB = 1048576.0;
    assert_close(r.time[0], 64 * MiB / 45e9, 1e-6);
    assert_close(r.time[1], 2 * 16 * MiB / 90e9, 1e-6);
    assert_close(r.time[2], 2 * 16 * MiB / 180e9, 1e-6);
    assert_close(r.start[2], r.end[0], 1e-9);
}

/* repeat gives the same times as the same ops written out. */
static void test_repeat_equals_written_out(void **state)
{
    (void)state;
    struct result rep = run(HEAD "  - repeat:\n      count: 3\n      ops:\n"
                                 "        - {op: matmul, name: a, m: 1024, k: 1024, n: 1024}\n"
                                 "        - {op: hbm_copy, name: b, bytes: 8MiB}\n",
                            EXACT, 7);
    struct result out = run(HEAD MMS("a0", "1024", "")
                            "  - {op: hbm_copy, name: b0, bytes: 8MiB}\n"
                            MMS("a1", "1024", "")
                            "  - {op: hbm_copy, name: b1, bytes: 8MiB}\n"
                            MMS("a2", "1024", "")
                            "  - {op: hbm_copy, name: b2, bytes: 8MiB}\n",
                            EXACT, 7);
    assert_int_equal(rep.rc, 0);
    assert_int_equal(out.rc, 0);
    assert_int_equal(rep.instances[0], 3);
    assert_close(rep.total, out.total, 1e-12);
    assert_close(rep.time[0], out.time[0] + out.time[2] + out.time[4], 1e-12);
    assert_close(rep.time[1], out.time[1] + out.time[3] + out.time[5], 1e-12);
    /* the critical path is the whole chain, a and b alternating */
    assert_int_equal(rep.npath, 2);
    assert_int_equal(rep.path_inst[0], 3);
    assert_int_equal(rep.path_inst[1], 3);
}

/* The critical path follows what set each start; exposed communication is
 * what no compute hides. */
static void test_critical_path_and_exposed_time(void **state)
{
    (void)state;
    const char *y = "chip: v5e\ntopology: {shape: [2]}\nworkload:\n"
                    "  - {op: ppermute, name: p, bytes: 64MiB, axis: 0, shift: 1}\n"
                    MMS("mm", "512", ", after: []")
                    MMS("use", "512", ", after: [p, mm]");
    struct result r = run(y, EXACT, 7);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npath, 2);
    assert_string_equal(r.path[0], "p");
    assert_string_equal(r.path[1], "use");
    assert_close(r.cat[CAT_COLLECTIVE_EXPOSED], r.time[0] - r.time[1], 1e-9);
    assert_close(r.cat[CAT_COLLECTIVE_HIDDEN], r.time[1], 1e-9);
    assert_close(r.cat[CAT_MATMUL], r.time[1] + r.time[2], 1e-9);
    assert_close(r.cat[CAT_IDLE], 0, 1e-12);
    assert_close(r.start[1], 0, 1e-12); /* compute does not wait for the async op */
    assert_close(r.start[2], r.end[0], 1e-9);
}

/* Issue 32.9: a workload of N ops is checked in O(N log N): names, after:
 * references and the order use hash lookups and a heap (200k ops took
 * 84 s). The results are the linear scans': every duplicate reported at
 * the later op, a name found far away, and Kahn's order taking the earliest
 * ready op in document order (half the ops wait for the last one: the other
 * half, then it, then they). */
static char *big_workload(int n, bool dup)
{
    size_t cap = (size_t)n * 64 + 64, o = 0;
    char *y = xmalloc(cap);
    o += (size_t)snprintf(y + o, cap - o, "chip: v5e\nworkload:\n");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {op: hbm_copy, bytes: 4KiB, name: c%d%s}\n",
                              dup && i == n - 1 ? 5 : i, i < n / 2 ? ", after: [z]" : "");
    snprintf(y + o, cap - o, "  - {op: hbm_copy, bytes: 4KiB, name: z}\n");
    return y;
}

static void test_many_ops(void **state)
{
    (void)state;
    enum { N = 60000 };
    char *y = big_workload(N, true);
    expect_error(y, "duplicate name 'c5'");
    free(y);
    y = big_workload(N, false);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load(y, &sc, d), 0);
    assert_int_equal(sc.nops, N + 1);
    char name[16];
    snprintf(name, sizeof name, "c%d", N / 2);
    assert_string_equal(sc.ops[0].name, name);
    assert_string_equal(sc.ops[N / 2 - 1].name, "c59999");
    assert_string_equal(sc.ops[N / 2].name, "z");
    assert_string_equal(sc.ops[N / 2 + 1].name, "c0");
    assert_string_equal(sc.ops[N].name, "c29999");
    assert_int_equal(sc.graph.node[N].ndeps, 1);
    assert_int_equal(sc.graph.node[N].deps[0].op, N / 2);
    cfg_scenario_fini(&sc);
    diag_free(d);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_reference_reorders),
        cmocka_unit_test(test_dependency_errors),
        cmocka_unit_test(test_repeat_scopes_and_instances),
        cmocka_unit_test(test_one_kernel_at_a_time),
        cmocka_unit_test(test_async_overlaps_and_shares_hbm),
        cmocka_unit_test(test_repeat_equals_written_out),
        cmocka_unit_test(test_critical_path_and_exposed_time),
        cmocka_unit_test(test_many_ops),
    };
    return cmocka_run_group_tests_name("graph", tests, NULL, NULL);
}
