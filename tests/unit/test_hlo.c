/* tests/unit/test_hlo.c -- the HLO reader and lowering (workload/hlo.h):
 * shapes (tuples, layouts, comments), operands with and without their
 * shapes and '%', the module's attributes, the file size limit, replica
 * groups (explicit and iota) as the axes of a device mesh on the slice, and
 * the program a module lowers to (YAML). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "workload/hlo.h"
#include "workload/hlo_int.h"
#include "workload/program.h"

static const char *const MODULE =
    "HloModule m, is_scheduled=true, entry_computation_layout={(f32[8,16]{1,0})->f32[8,16]{1,0}}, "
    "num_partitions=8, replica_count=1\n"
    "\n"
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "\n"
    "ENTRY %main (x: f32[8,16], w: bf16[2,16,32]) -> (f32[8,16], bf16[2,8,32]) {\n"
    "  %x = f32[8,16]{1,0} parameter(0), metadata={op_name=\"x\"}\n"
    "  w = bf16[2,16,32]{2,1,0} parameter(1)\n"
    "  %xb = bf16[2,8,16]{2,1,0} broadcast(f32[8,16]{1,0} %x), dimensions={1,2}\n"
    "  %dot.1 = bf16[2,8,32]{2,1,0} dot(xb, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
    "rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
    "  %ar = f32[8,16]{1,0} all-reduce(%x), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), "
    "use_global_device_ids=true, to_apply=%add\n"
    "  ROOT %t = (f32[8,16]{1,0}, /*index=1*/bf16[2,8,32]{2,1,0}) tuple(%ar, %dot.1)\n"
    "}\n";

/* Text that is not NUL-terminated (a fuzzer's bytes, a mapped file) and ends
 * inside a number: the dimension's strtoll read past the end (fuzz_hlo under
 * ASan, heap-buffer-overflow; the asan stage runs this test). */
static void test_unterminated_text(void **state)
{
    (void)state;
    static const char src[] = "HloModule m\n\nENTRY %main (x: f32[8,8]) -> f32[8,8] {\n"
                              "  %x = f32[8";
    size_t len = sizeof src - 1;
    char *buf = malloc(len); /* exactly the text: no NUL after it */
    assert_non_null(buf);
    memcpy(buf, src, len);
    struct diag *d = diag_new();
    assert_null(hlo_parse(buf, len, "cut.hlo", d));
    assert_true(diag_count(d) >= 1);
    free(buf);
    diag_free(d);
}

static void test_parse(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(MODULE, strlen(MODULE), "m.hlo", d);
    assert_non_null(m);
    assert_true(m->scheduled);
    assert_int_equal(hlo_devices(m), 8);
    assert_int_equal(m->ncomp, 2);
    const struct hlo_comp *c = &m->comp[m->entry];
    assert_string_equal(c->name, "main");
    assert_int_equal(c->nins, 6);
    assert_int_equal(c->root, 5);
    const struct hlo_instr *dot = &c->ins[3];
    assert_string_equal(hlo_opcode_name(dot->opcode), "dot");
    assert_int_equal(dot->nops, 2);
    assert_int_equal(dot->operand[0], 2);
    assert_int_equal(dot->operand[1], 1);
    assert_string_equal(hlo_attr(dot, "lhs_batch_dims")->value, "{0}");
    /* the tuple: f32[8,16] (512 B) and bf16[2,8,32] (1024 B) */
    assert_int_equal(c->ins[5].shape.nelem, 2);
    assert_true(hlo_shape_bytes(&c->ins[5].shape) == 1536);
    assert_string_equal(hlo_attr(&c->ins[4], "replica_groups")->value, "[2,4]<=[4,2]T(1,0)");
    hlo_free(m);
    diag_free(d);
}

/* The dot: batch 2, m 8, k 16, n 32; the all-reduce's groups [2,4]<=[4,2]T(1,0)
 * are {0,2,4,6}, {1,3,5,7}: every 2nd device, on a 2x4 slice the y axis
 * (chip = x + 2y), its mesh d1 (x, 2 chips, not grouped) inside d0 (y). */
static void test_lower(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(MODULE, strlen(MODULE), "m.hlo", d);
    struct topo t;
    assert_int_equal(topo_init(&t, 2, (int[]){2, 4}, (bool[]){false, true}), 0);
    struct program *p = hlo_program(m, &t, d, NULL);
    assert_non_null(p);
    char *y = prog_yaml(p);
    assert_non_null(strstr(y, "{op: einsum, name: dot:1, batch: 2, m: 8, k: 16, n: 32, "
                              "dtype: bf16, block: auto"));
    assert_non_null(strstr(y, "{op: all_reduce, name: ar, bytes: 512, groups: {mesh: {d1: "
                              "{size: 4, on: [[1, 4]]}, d0: {size: 2, on: [[0, 2]]}}, axes: [d1]}"));
    /* the module holds no fusion: the broadcast xb is fused into the dot, its
     * one reader, as XLA's fusion would (workload/hlo_fuse.c): no op */
    assert_null(strstr(y, "name: xb"));
    free(y);
    prog_free(p);
    hlo_free(m);
    diag_free(d);
}

/* Cross-replica groups (no channel_id) on 2 replicas of 2 partitions: the
 * group {0,1} of replicas is, for each partition p, devices {p, 2 + p}
 * (device = replica · 2 + partition): every 2nd chip of a ring of 4. */
static void test_cross_replica(void **state)
{
    (void)state;
    static const char *const text =
        "HloModule r, num_partitions=2, replica_count=2\n"
        "%add (a: f32[], b: f32[]) -> f32[] {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %s = f32[] add(%a, %b)\n}\n"
        "ENTRY %main (x: f32[64]) -> f32[64] {\n"
        "  %x = f32[64]{0} parameter(0)\n"
        "  ROOT %ar = f32[64]{0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%add\n}\n";
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(text, strlen(text), "r.hlo", d);
    assert_non_null(m);
    struct topo t;
    assert_int_equal(topo_init(&t, 1, (int[]){4}, (bool[]){false}), 0);
    struct program *p = hlo_program(m, &t, d, NULL);
    assert_non_null(p);
    char *y = prog_yaml(p);
    assert_non_null(strstr(y, "{op: all_reduce, name: ar, bytes: 256, groups: {mesh: {d1: {size: "
                              "2, on: [[0, 2]]}, d0: {size: 2, on: [[0, 2]]}}, axes: [d1]}"));
    free(y);
    prog_free(p);
    hlo_free(m);
    diag_free(d);
}

static void test_too_big(void **state)
{
    (void)state;
    char path[] = "/tmp/test_hlo_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, MODULE, strlen(MODULE)), (ssize_t)strlen(MODULE));
    close(fd);
    struct diag *d = diag_new();
    assert_null(hlo_parse_file(path, 100, d));
    assert_int_equal(diag_count(d), 1);
    assert_non_null(strstr(diag_message(d, 0), "larger than the limit"));
    struct hlo_module *m = hlo_parse_file(path, HLO_MAX_FILE_BYTES, d);
    assert_non_null(m);
    hlo_free(m);
    unlink(path);
    diag_free(d);
}

/* Every prefix of the module is refused with a position, or read: never a crash. */
static void test_prefixes(void **state)
{
    (void)state;
    size_t n = strlen(MODULE);
    for (size_t k = 0; k < n; k++) {
        struct diag *d = diag_new();
        struct hlo_module *m = hlo_parse(MODULE, k, "m.hlo", d);
        if (!m)
            assert_true(diag_count(d) == 1 && strstr(diag_message(d, 0), "m.hlo"));
        hlo_free(m);
        diag_free(d);
    }
}

/* The source name in an instruction's metadata: escapes undone, cut to the
 * buffer, none without op_name. */
static void test_metadata_op_name(void **state)
{
    (void)state;
    static const char *const text =
        "HloModule m\n\nENTRY %main (x: f32[8]) -> f32[8] {\n"
        "  %x = f32[8]{0} parameter(0), metadata={op_name=\"jit(f)/a\\\"b\" source_line=3}\n"
        "  ROOT %n = f32[8]{0} negate(%x), metadata={source_file=\"f.py\"}\n}\n";
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(text, strlen(text), "m.hlo", d);
    assert_non_null(m);
    const struct hlo_comp *c = &m->comp[m->entry];
    char buf[64], small[5];
    assert_string_equal(hlo_metadata_op_name(&c->ins[0], buf, sizeof buf), "jit(f)/a\"b");
    assert_string_equal(hlo_metadata_op_name(&c->ins[0], small, sizeof small), "jit(");
    assert_null(hlo_metadata_op_name(&c->ins[1], buf, sizeof buf));
    hlo_free(m);
    diag_free(d);
}

/* A counted loop's module: the counter starts at 'init', the body adds
 * 'step', the condition is "LHS DIR RHS" with %i the counter, %b 'bound'. */
static struct hlo_module *counted(const char *lhs, const char *dir, const char *rhs, int init,
                                  int step, long long bound, struct diag *d)
{
    char text[2048];
    snprintf(text, sizeof text,
             "HloModule c\n\n"
             "%%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {\n"
             "  %%p = (s32[], f32[8]{0}) parameter(0)\n"
             "  %%i = s32[] get-tuple-element(%%p), index=0\n"
             "  %%v = f32[8]{0} get-tuple-element(%%p), index=1\n"
             "  %%s = s32[] constant(%d)\n"
             "  %%j = s32[] add(%%i, %%s)\n"
             "  %%n = f32[8]{0} negate(%%v)\n"
             "  ROOT %%t = (s32[], f32[8]{0}) tuple(%%j, %%n)\n}\n\n"
             "%%cond (q: (s32[], f32[8])) -> pred[] {\n"
             "  %%q = (s32[], f32[8]{0}) parameter(0)\n"
             "  %%i = s32[] get-tuple-element(%%q), index=0\n"
             "  %%b = s32[] constant(%lld)\n"
             "  ROOT %%k = pred[] compare(%s, %s), direction=%s\n}\n\n"
             "ENTRY %%main (x: f32[8]) -> f32[8] {\n"
             "  %%x = f32[8]{0} parameter(0)\n"
             "  %%zero = s32[] constant(%d)\n"
             "  %%init = (s32[], f32[8]{0}) tuple(%%zero, %%x)\n"
             "  %%w = (s32[], f32[8]{0}) while(%%init), condition=%%cond, body=%%body\n"
             "  ROOT %%r = f32[8]{0} get-tuple-element(%%w), index=1\n}\n",
             step, bound, lhs, rhs, dir, init);
    return hlo_parse(text, strlen(text), "c.hlo", d);
}

/* The trip count from the condition: for (i = init; i DIR bound; i += step)
 * counted by hand. */
static void test_trip_from_condition(void **state)
{
    (void)state;
    static const struct {
        const char *lhs, *dir, *rhs;
        int init, step;
        long long bound, want; /* -1: never ends, -2: too many */
    } cases[] = {
        {"%i", "LT", "%b", 0, 1, 4, 4},    /* 0,1,2,3 */
        {"%i", "LT", "%b", 0, 3, 10, 4},   /* 0,3,6,9 */
        {"%i", "LE", "%b", 1, 3, 7, 3},    /* 1,4,7 */
        {"%b", "LT", "%i", 10, -2, 0, 5},  /* 0 < i: 10,8,6,4,2 */
        {"%i", "GE", "%b", 3, -1, 0, 4},   /* 3,2,1,0 */
        {"%i", "NE", "%b", 0, 2, 8, 4},    /* 0,2,4,6 */
        {"%i", "LT", "%b", 5, 1, 4, 0},    /* none */
        {"%i", "LT", "%b", 0, -1, 4, -1},  /* never ends */
        {"%i", "NE", "%b", 0, 2, 7, -1},   /* steps over the bound */
        {"%i", "LT", "%b", 0, 1, 2000000000LL, -2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct diag *d = diag_new();
        struct hlo_module *m = counted(cases[k].lhs, cases[k].dir, cases[k].rhs, cases[k].init,
                                       cases[k].step, cases[k].bound, d);
        assert_non_null(m);
        struct topo t;
        assert_int_equal(topo_init(&t, 1, (int[]){1}, (bool[]){false}), 0);
        struct hlo_report rep;
        struct program *p = hlo_program_report(m, &t, d, NULL, &rep);
        if (cases[k].want == 0) {
            assert_non_null(p);
            assert_int_equal(p->top.nops, 0); /* the loop runs no iteration */
        } else if (cases[k].want > 0) {
            assert_non_null(p);
            assert_non_null(p->top.op[0].loop);
            assert_int_equal(p->top.op[0].loop->count, cases[k].want);
            assert_int_equal(rep.trips_from_condition, 1);
        } else {
            assert_null(p);
            assert_non_null(strstr(diag_message(d, 0), cases[k].want == -1 ? "to end" :
                                   "expected a trip count of 0 to 1000000000, got 2000000000"));
        }
        prog_free(p);
        hlo_free(m);
        diag_free(d);
    }
}

/* Replica groups in XLA's mesh-axes form, expanded by hand from XLA's rule
 * (reshape the mesh's devices to the axes, sub-axes split [pre, size, rest];
 * the named axes last, in their order; consecutive runs are the groups). */
static void expect_mesh(const char *text, int ng, int gs, const int64_t *want)
{
    struct hlo_mesh_groups g;
    char err[160];
    assert_true(hlo_mesh_groups(text, 8, &g, err, sizeof err));
    assert_int_equal(g.ng, ng);
    assert_int_equal(g.gs, gs);
    for (int i = 0; i < ng * gs; i++)
        assert_int_equal(g.dev[i], want[i]);
    free(g.dev);
}

static void test_mesh_groups(void **state)
{
    (void)state;
    /* [2,4] over b: the rows {0,1,2,3},{4,5,6,7}; over a: the columns */
    expect_mesh("mesh['a'=2,'b'=4] {'b'}", 2, 4, (const int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    expect_mesh("mesh['a'=2,'b'=4] {'a'}", 4, 2, (const int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
    /* both, b first: one group in (b, a) order, device a*4+b */
    expect_mesh("mesh[a=2,b=4] {'b','a'}", 1, 8, (const int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
    /* a:(2)2 of a=8: [2,2,2] = p*4+s*2+r, groups over s */
    expect_mesh("mesh['a'=8] {'a':(2)2}", 4, 2, (const int64_t[]){0, 2, 1, 3, 4, 6, 5, 7});
    /* a:(4)2 (stride 1) then a:(1)2 (stride 4): [2,2,2], the middle one
     * ungrouped; a group runs the stride-1 bit, then the stride-4 one */
    expect_mesh("mesh['a'=8] {'a':(4)2,'a':(1)2}", 2, 4, (const int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
    /* no axis: one device per group */
    expect_mesh("mesh['a'=8] {}", 8, 1, (const int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    /* listed device ids, and the same ids as an iota [2,4]T(1,0) */
    expect_mesh("mesh['a'=2,'b'=4], device_ids=(0,2,4,6,1,3,5,7) {'b'}", 2, 4,
                (const int64_t[]){0, 2, 4, 6, 1, 3, 5, 7});
    expect_mesh("mesh['a'=2,'b'=4], device_ids=([4,2]T(1,0)) {'b'}", 2, 4,
                (const int64_t[]){0, 2, 4, 6, 1, 3, 5, 7});
    static const char *const bad[] = {
        "mesh['a'=16] {'a'}",           /* more than the 8 devices */
        "mesh['a'=2,'a'=4] {'a'}",      /* an axis twice */
        "mesh['a'=8] {'c'}",            /* not an axis of the mesh */
        "mesh['a'=8] {'a':(3)2}",       /* 3*2 does not divide 8 */
        "mesh['a'=8] {'a':(1)8}",       /* a sub-axis as large as its axis */
        "mesh['a'=8] {'a','a':(1)2}",   /* the whole axis and a part */
        "mesh['a'=8] {'a':(1)4,'a':(2)2}", /* overlapping parts */
        "mesh['a'=8], device_ids=(0,1,2,3,4,5,6,6) {'a'}",
        "mesh['a'=8], device_ids=(0,1) {'a'}",
        "mesh['a'=8] {'a'} trailing",
        "mesh['a'=8 {'a'}",
        "mesh['a'=0] {'a'}",
        "mesh['a'=-1] {'a'}",
        "mesh['a'=8] {'a':(0)2}",
        "mesh['a'=8], device_ids=([2,2]T(1,0)) {'a'}",
        "mesh['a'=99999999999999999999] {'a'}",
        "mesh[",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct hlo_mesh_groups g;
        char err[160] = "";
        assert_false(hlo_mesh_groups(bad[i], 8, &g, err, sizeof err));
        assert_non_null(strstr(err, "expected"));
        assert_null(g.dev);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unterminated_text),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_lower),
        cmocka_unit_test(test_cross_replica),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_metadata_op_name),
        cmocka_unit_test(test_trip_from_condition),
        cmocka_unit_test(test_mesh_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
