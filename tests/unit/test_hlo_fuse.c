/* tests/unit/test_hlo_fuse.c -- a module dumped before XLA's fusion
 * (workload/hlo_fuse.c): elementwise producers fused into their one reader,
 * an all-reduce sliced by its one reader made a reduce-scatter, the
 * collectives of an unscheduled module async; and an instruction of more
 * operands than an op can wait for (workload/schedule.c). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "workload/hlo.h"
#include "workload/program.h"

static const char *const ADD =
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n}\n";

static char *lower(const char *text, int nchips)
{
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(text, strlen(text), "f.hlo", d);
    assert_non_null(m);
    struct topo t;
    assert_int_equal(topo_init(&t, 1, (int[]){nchips}, (bool[]){false}), 0);
    struct program *p = hlo_program(m, &t, d, NULL);
    if (!p)
        diag_print(d, stderr);
    assert_non_null(p);
    char *y = prog_yaml(p);
    prog_free(p);
    hlo_free(m);
    diag_free(d);
    return y;
}

/* x f32[1024,256] (1 MiB): e = exp(x) and b = broadcast(1) are fused into
 * a = e + b (their one reader): no ops of their own; a reads x (1048576 B)
 * and the constant (4 B) and writes 1048576 B: a loop of 2097156 B, 262145
 * f32 elements of read + write (2097156 / 8, rounded), a fusion doing exp's
 * and add's work (workload/hlo_work.c): 2 x 262144 ALU ops and 262144
 * transcendentals, 1.99999 and 0.999996 per element. The all-reduce of a
 * over the 4 devices, read by one dynamic-slice of a quarter (f32[256,256]):
 * a reduce-scatter of 1048576 B; the slice is its result (no op). The module
 * is not scheduled: the reduce-scatter is async, the negate m after it
 * (reading another input) waits for nothing: 64 ALU ops over 64 f32 read
 * and written, 1 per element. */
static void test_fuse_and_scatter(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, "HloModule f, num_partitions=4\n%s%s", ADD,
        "ENTRY %main (x: f32[1024,256], v: f32[64]) -> (f32[256,256], f32[64]) {\n"
        "  %x = f32[1024,256]{1,0} parameter(0)\n"
        "  %v = f32[64]{0} parameter(1)\n"
        "  %e = f32[1024,256]{1,0} exponential(%x)\n"
        "  %c = f32[] constant(1)\n"
        "  %b = f32[1024,256]{1,0} broadcast(%c), dimensions={}\n"
        "  %a = f32[1024,256]{1,0} add(%e, %b)\n"
        "  %ar = f32[1024,256]{1,0} all-reduce(%a), channel_id=1, replica_groups=[1,4]<=[4], "
        "use_global_device_ids=true, to_apply=%add\n"
        "  %z = s32[] constant(0)\n"
        "  %ds = f32[256,256]{1,0} dynamic-slice(%ar, %z, %z), dynamic_slice_sizes={256,256}\n"
        "  %m = f32[64]{0} negate(%v)\n"
        "  ROOT %t = (f32[256,256]{1,0}, f32[64]{0}) tuple(%ds, %m)\n"
        "}\n");
    char *y = lower(text, 4);
    assert_null(strstr(y, "name: e,"));
    assert_null(strstr(y, "name: b,"));
    assert_null(strstr(y, "name: ds"));
    assert_non_null(strstr(y, "{op: fusion, name: a, inputs: [{shape: [262145], dtype: f32}], "
                              "outputs: [{shape: [262145], dtype: f32}], vpu_ops: 1.99999, "
                              "transcendentals: 0.999996}"));
    assert_non_null(strstr(y, "{op: reduce_scatter, name: ar, bytes: 1048576,"));
    assert_non_null(strstr(y, "{op: fusion, name: m, inputs: [{shape: [64], dtype: f32}], "
                              "outputs: [{shape: [64], dtype: f32}], vpu_ops: 1, after: []}"));
    free(y);
}

/* The same module holding one fusion (dumped after XLA's fusion): nothing
 * fused by tpusim, the exp a loop of its 2 MiB (262144 f32 each way) with 1
 * ALU op and 1 transcendental per element, the all-reduce stays one. */
static void test_fused_module_as_is(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, "HloModule f, num_partitions=4\n%s%s", ADD,
        "%fc (p: f32[1024,256]) -> f32[1024,256] {\n"
        "  %p = f32[1024,256]{1,0} parameter(0)\n"
        "  ROOT %n = f32[1024,256]{1,0} negate(%p)\n}\n"
        "ENTRY %main (x: f32[1024,256]) -> f32[256,256] {\n"
        "  %x = f32[1024,256]{1,0} parameter(0)\n"
        "  %f = f32[1024,256]{1,0} fusion(%x), kind=kLoop, calls=%fc\n"
        "  %e = f32[1024,256]{1,0} exponential(%f)\n"
        "  %ar = f32[1024,256]{1,0} all-reduce(%e), channel_id=1, replica_groups=[1,4]<=[4], "
        "use_global_device_ids=true, to_apply=%add\n"
        "  %z = s32[] constant(0)\n"
        "  ROOT %ds = f32[256,256]{1,0} dynamic-slice(%ar, %z, %z), dynamic_slice_sizes={256,256}\n"
        "}\n");
    char *y = lower(text, 4);
    assert_non_null(strstr(y, "{op: fusion, name: e, inputs: [{shape: [262144], dtype: f32}], "
                              "outputs: [{shape: [262144], dtype: f32}], vpu_ops: 1, "
                              "transcendentals: 1}"));
    assert_non_null(strstr(y, "{op: all_reduce, name: ar, bytes: 1048576,"));
    free(y);
}

/* A concatenate of 40 negates (each also an output, so none is fused) waits
 * for all 40: more than an op's 32 waits, but each negate runs after the one
 * before (the stream), so waiting for the last implies the others; it used
 * to be refused ("waits for more than 32 ops"). */
static void test_many_operands(void **state)
{
    (void)state;
    size_t cap = 1 << 16, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    len += (size_t)snprintf(t + len, cap - len, "HloModule c, is_scheduled=true\n"
                            "ENTRY %%main (x: f32[64]) -> f32[] {\n  %%x = f32[64]{0} parameter(0)\n");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(t + len, cap - len, "  %%n%d = f32[64]{0} negate(%%x)\n", i);
    len += (size_t)snprintf(t + len, cap - len, "  %%cat = f32[2560]{0} concatenate(");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s%%n%d", i ? ", " : "", i);
    len += (size_t)snprintf(t + len, cap - len, "), dimensions={0}\n  ROOT %%t = (f32[2560]{0}");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(t + len, cap - len, ", f32[64]{0}");
    len += (size_t)snprintf(t + len, cap - len, ") tuple(%%cat");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(t + len, cap - len, ", %%n%d", i);
    snprintf(t + len, cap - len, ")\n}\n");
    char *y = lower(t, 1);
    assert_non_null(strstr(y, "{op: copy, name: cat,"));
    assert_non_null(strstr(y, "{op: fusion, name: n39,")); /* a negate: 1 ALU per element */
    free(y);
    free(t);
}

/* A scanned layer (unscheduled, before fusion): the body slices layer i's
 * weights out of the stacked f32[4,64,32] (a dynamic-slice of a loop
 * parameter), all-gathers them over the 4 devices and multiplies. The
 * gather depends on nothing the iteration computes: it is issued one
 * iteration ahead (XLA's collective pipeliner): it waits for its own
 * previous instance and the previous iteration's last stream op, and the
 * dot reads its result from the iteration before (a carried tensor). */
static void test_pipelined_gather(void **state)
{
    (void)state;
    static const char *const text =
        "HloModule p, num_partitions=4\n"
        "%cond (c: (s32[], f32[4,32,128], f32[8,128])) -> pred[] {\n"
        "  %c = (s32[], f32[4,32,128], f32[8,128]) parameter(0)\n"
        "  %ci = s32[] get-tuple-element(%c), index=0\n"
        "  %n = s32[] constant(4)\n"
        "  ROOT %lt = pred[] compare(%ci, %n), direction=LT\n}\n"
        "%body (b: (s32[], f32[4,32,128], f32[8,128])) -> (s32[], f32[4,32,128], f32[8,128]) {\n"
        "  %b = (s32[], f32[4,32,128], f32[8,128]) parameter(0)\n"
        "  %i = s32[] get-tuple-element(%b), index=0\n"
        "  %w = f32[4,32,128] get-tuple-element(%b), index=1\n"
        "  %h = f32[8,128] get-tuple-element(%b), index=2\n"
        "  %z = s32[] constant(0)\n"
        "  %ds = f32[1,32,128] dynamic-slice(%w, %i, %z, %z), dynamic_slice_sizes={1,32,128}\n"
        "  %wl = f32[32,128] reshape(%ds)\n"
        "  %ag = f32[128,128] all-gather(%wl), channel_id=1, replica_groups=[1,4]<=[4], "
        "dimensions={0}, use_global_device_ids=true\n"
        "  %d = f32[8,128] dot(%h, %ag), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  %one = s32[] constant(1)\n"
        "  %i2 = s32[] add(%i, %one)\n"
        "  ROOT %t = (s32[], f32[4,32,128], f32[8,128]) tuple(%i2, %w, %d)\n}\n"
        "ENTRY %main (w: f32[4,32,128], h: f32[8,128]) -> f32[8,128] {\n"
        "  %w = f32[4,32,128] parameter(0)\n"
        "  %h = f32[8,128] parameter(1)\n"
        "  %z = s32[] constant(0)\n"
        "  %init = (s32[], f32[4,32,128], f32[8,128]) tuple(%z, %w, %h)\n"
        "  %loop = (s32[], f32[4,32,128], f32[8,128]) while(%init), condition=%cond, body=%body\n"
        "  ROOT %out = f32[8,128] get-tuple-element(%loop), index=2\n}\n";
    char *y = lower(text, 4);
    assert_non_null(strstr(y, "{op: all_gather, name: ag, bytes: 16384,"));
    assert_non_null(strstr(y, "after: [prev.ag"));
    free(y);
    /* the weights through jax.checkpoint's opt-barrier, beside a value the
     * iteration computes (hn): the gather follows its own element only */
    char t2[4096];
    const char *cut = strstr(text, "  %w = f32[4,32,128] get-tuple-element(%b), index=1\n");
    assert_non_null(cut);
    snprintf(t2, sizeof t2, "%.*s%s%s", (int)(cut - text), text,
             "  %wb = f32[4,32,128] get-tuple-element(%b), index=1\n"
             "  %h0 = f32[8,128] get-tuple-element(%b), index=2\n"
             "  %hn = f32[8,128] negate(%h0)\n"
             "  %tp = (f32[4,32,128], f32[8,128]) tuple(%wb, %hn)\n"
             "  %ob = (f32[4,32,128], f32[8,128]) opt-barrier(%tp)\n"
             "  %w = f32[4,32,128] get-tuple-element(%ob), index=0\n",
             cut + strlen("  %w = f32[4,32,128] get-tuple-element(%b), index=1\n"));
    y = lower(t2, 4);
    assert_non_null(strstr(y, "after: [prev.ag"));
    free(y);
}

/* The backward's gradient: the body's dot, its all-reduce over the 4
 * devices sliced to a quarter (a reduce-scatter), stored into the stacked
 * gradients (a dynamic-update-slice of a carried tensor). The store runs
 * beside the stream with its reduce-scatter: the stream goes on without
 * waiting for it. */
static void test_sunk_update(void **state)
{
    (void)state;
    static const char *const text =
        "HloModule s, num_partitions=4\n"
        "%add (a: f32[], b: f32[]) -> f32[] {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %s = f32[] add(%a, %b)\n}\n"
        "%cond (c: (s32[], f32[8,128], f32[4,2,128])) -> pred[] {\n"
        "  %c = (s32[], f32[8,128], f32[4,2,128]) parameter(0)\n"
        "  %ci = s32[] get-tuple-element(%c), index=0\n"
        "  %n = s32[] constant(4)\n"
        "  ROOT %lt = pred[] compare(%ci, %n), direction=LT\n}\n"
        "%body (b: (s32[], f32[8,128], f32[4,2,128])) -> (s32[], f32[8,128], f32[4,2,128]) {\n"
        "  %b = (s32[], f32[8,128], f32[4,2,128]) parameter(0)\n"
        "  %i = s32[] get-tuple-element(%b), index=0\n"
        "  %h = f32[8,128] get-tuple-element(%b), index=1\n"
        "  %g = f32[4,2,128] get-tuple-element(%b), index=2\n"
        "  %d = f32[8,128] dot(%h, %h), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
        "  %ar = f32[8,128] all-reduce(%d), channel_id=1, replica_groups=[1,4]<=[4], "
        "use_global_device_ids=true, to_apply=%add\n"
        "  %z = s32[] constant(0)\n"
        "  %ds = f32[2,128] dynamic-slice(%ar, %z, %z), dynamic_slice_sizes={2,128}\n"
        "  %r = f32[1,2,128] reshape(%ds)\n"
        "  %dus = f32[4,2,128] dynamic-update-slice(%g, %r, %i, %z, %z)\n"
        "  %one = s32[] constant(1)\n"
        "  %i2 = s32[] add(%i, %one)\n"
        "  ROOT %t = (s32[], f32[8,128], f32[4,2,128]) tuple(%i2, %h, %dus)\n}\n"
        "ENTRY %main (h: f32[8,128], g: f32[4,2,128]) -> f32[4,2,128] {\n"
        "  %h = f32[8,128] parameter(0)\n"
        "  %g = f32[4,2,128] parameter(1)\n"
        "  %z = s32[] constant(0)\n"
        "  %init = (s32[], f32[8,128], f32[4,2,128]) tuple(%z, %h, %g)\n"
        "  %loop = (s32[], f32[8,128], f32[4,2,128]) while(%init), condition=%cond, body=%body\n"
        "  ROOT %out = f32[4,2,128] get-tuple-element(%loop), index=2\n}\n";
    char *y = lower(text, 4);
    assert_non_null(strstr(y, "{op: reduce_scatter, name: ar, bytes: 4096,"));
    assert_non_null(strstr(y, "{op: einsum, name: d,"));
    /* the store waits for its reduce-scatter; the counter's add after it,
     * the stream's last op, does not wait for the store */
    assert_non_null(strstr(y, "{op: copy, name: dus, shape: [256], dtype: f32, after: [prev.dus, ar]}"));
    assert_non_null(strstr(y, "{op: copy, name: i2, shape: [2], dtype: f32, after: [prev.i2]}"));
    free(y);
}

/* A scan's loop-invariant fill value (jax hoists it out of the loop: a
 * broadcast of a constant carried through the while's tuple, element 2,
 * passed back unchanged) is sunk into the body and fused into its reader,
 * as XLA's WhileLoopFusibleSinking does: a = x + m is fused into
 * a2 = a + y (its one reader), which reads x (262144 B) and y (262144 B,
 * also invariant but an input, not sinkable) but not m, and writes 262144
 * B: 786432 B, 98304 f32 each way (without sinking m's 262144 B more:
 * 131072); its work is the two adds, 2 x 65536 ALU, 1.33333 per element. */
static void test_sunk_invariant(void **state)
{
    (void)state;
    static const char *const text =
        "HloModule k\n"
        "%cond (c: (s32[], f32[64,1024], f32[64,1024], f32[64,1024])) -> pred[] {\n"
        "  %c = (s32[], f32[64,1024], f32[64,1024], f32[64,1024]) parameter(0)\n"
        "  %ci = s32[] get-tuple-element(%c), index=0\n"
        "  %n = s32[] constant(4)\n"
        "  ROOT %lt = pred[] compare(%ci, %n), direction=LT\n}\n"
        "%body (b: (s32[], f32[64,1024], f32[64,1024], f32[64,1024])) -> (s32[], f32[64,1024], "
        "f32[64,1024], f32[64,1024]) {\n"
        "  %b = (s32[], f32[64,1024], f32[64,1024], f32[64,1024]) parameter(0)\n"
        "  %i = s32[] get-tuple-element(%b), index=0\n"
        "  %x = f32[64,1024] get-tuple-element(%b), index=1\n"
        "  %m = f32[64,1024] get-tuple-element(%b), index=2\n"
        "  %y = f32[64,1024] get-tuple-element(%b), index=3\n"
        "  %a = f32[64,1024] add(%x, %m)\n"
        "  %a2 = f32[64,1024] add(%a, %y)\n"
        "  %one = s32[] constant(1)\n"
        "  %i2 = s32[] add(%i, %one)\n"
        "  ROOT %t = (s32[], f32[64,1024], f32[64,1024], f32[64,1024]) tuple(%i2, %a2, %m, %y)\n}\n"
        "ENTRY %main (x: f32[64,1024], y: f32[64,1024]) -> f32[64,1024] {\n"
        "  %x = f32[64,1024] parameter(0)\n"
        "  %y = f32[64,1024] parameter(1)\n"
        "  %z = s32[] constant(0)\n"
        "  %f = f32[] constant(-1e9)\n"
        "  %m = f32[64,1024] broadcast(%f), dimensions={}\n"
        "  %init = (s32[], f32[64,1024], f32[64,1024], f32[64,1024]) tuple(%z, %x, %m, %y)\n"
        "  %loop = (s32[], f32[64,1024], f32[64,1024], f32[64,1024]) while(%init), "
        "condition=%cond, body=%body\n"
        "  ROOT %out = f32[64,1024] get-tuple-element(%loop), index=1\n}\n";
    char *y = lower(text, 1);
    assert_null(strstr(y, "name: a,"));
    assert_non_null(strstr(y, "{op: fusion, name: a2, inputs: [{shape: [98304], dtype: f32}], "
                              "outputs: [{shape: [98304], dtype: f32}], vpu_ops: 1.33333"));
    free(y);
}

/* A softmax's sum (before XLA's fusion): e = exp(x) is written for the
 * module's result and read by the reduce through a convert (fused into the
 * reduce). The reduce runs in e's loop as its second output (XLA's
 * multi-output fusion): it reads nothing of e from HBM, only the constant
 * (4 B), and writes f32[64] (256 B): 260 B, 33 f32 each way (32.5
 * rounded); its work the convert and the add, 2 x 65536 ALU: 3971.88 per
 * element. e itself: bf16[64,1024] read and written, 65536 bf16 each way,
 * 1 ALU and 1 transcendental per element. */
static void test_multi_output_reduce(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, "HloModule s\n%s%s", ADD,
        "ENTRY %main (x: bf16[64,1024]) -> (bf16[64,1024], f32[64]) {\n"
        "  %x = bf16[64,1024]{1,0} parameter(0)\n"
        "  %e = bf16[64,1024]{1,0} exponential(%x)\n"
        "  %cv = f32[64,1024]{1,0} convert(%e)\n"
        "  %z = f32[] constant(0)\n"
        "  %s = f32[64]{0} reduce(%cv, %z), dimensions={1}, to_apply=%add\n"
        "  ROOT %t = (bf16[64,1024]{1,0}, f32[64]{0}) tuple(%e, %s)\n"
        "}\n");
    char *y = lower(text, 1);
    assert_null(strstr(y, "name: cv,"));
    assert_non_null(strstr(y, "{op: fusion, name: e, inputs: [{shape: [65536], dtype: bf16}], "
                              "outputs: [{shape: [65536], dtype: bf16}], vpu_ops: 1, "
                              "transcendentals: 1}"));
    assert_non_null(strstr(y, "{op: fusion, name: s, inputs: [{shape: [33], dtype: f32}], "
                              "outputs: [{shape: [33], dtype: f32}], vpu_ops: 3971.88}"));
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuse_and_scatter),
        cmocka_unit_test(test_fused_module_as_is),
        cmocka_unit_test(test_many_operands),
        cmocka_unit_test(test_pipelined_gather),
        cmocka_unit_test(test_sunk_update),
        cmocka_unit_test(test_sunk_invariant),
        cmocka_unit_test(test_multi_output_reduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
