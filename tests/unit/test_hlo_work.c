/* tests/unit/test_hlo_work.c -- loop fusions priced by their bytes and the
 * vector work of their instructions (workload/hlo_work.c): a fused
 * computation's ALU ops and transcendentals counted by hand, a reduce's
 * reducer per element read, the producers tpusim fuses into an instruction
 * of a module dumped before fusion (a duplicated one counted once per
 * reader), and what counts nothing (data movement, scalars). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "workload/hlo.h"
#include "workload/hlo_int.h"
#include "workload/hlo_work.h"
#include "workload/program.h"

static const char *const ADD =
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n}\n";

static char *lower(const char *text)
{
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse(text, strlen(text), "w.hlo", d);
    if (!m)
        diag_print(d, stderr);
    assert_non_null(m);
    struct topo t;
    assert_int_equal(topo_init(&t, 1, (int[]){1}, (bool[]){false}), 0);
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

/* Per element, as kernels/xla.c counts its named forms. */
static void test_per_element(void **state)
{
    (void)state;
    double a, e;
    hlo_work_per_elem(HLO_OP_ADD, &a, &e);
    assert_true(a == 1 && e == 0);
    hlo_work_per_elem(HLO_OP_EXP, &a, &e);
    assert_true(a == 1 && e == 1);
    hlo_work_per_elem(HLO_OP_DIVIDE, &a, &e);
    assert_true(a == 1 && e == 1);
    hlo_work_per_elem(HLO_OP_RSQRT, &a, &e);
    assert_true(a == 0 && e == 1);
    hlo_work_per_elem(HLO_OP_LOGISTIC, &a, &e);
    assert_true(a == 3 && e == 2);
    hlo_work_per_elem(HLO_OP_TRANSPOSE, &a, &e);
    assert_true(a == 0 && e == 0);
    hlo_work_per_elem(HLO_OP_BROADCAST, &a, &e);
    assert_true(a == 0 && e == 0);
}

/* A module after XLA's fusion. Loop fusion f over bf16[64,1024] (65536
 * elements): convert to f32 (1 ALU), exp (1 ALU, 1 EUP), a broadcast
 * constant (nothing), divide (1 ALU, 1 EUP), convert back (1 ALU): 4 ALU
 * and 2 EUP per element, 262144 ALU and 131072 EUP in all. Its bytes: p
 * read (131072 B) and its result written (131072 B), 65536 bf16 elements
 * read and as many written: 4 ALU, 2 transcendentals per element.
 * Reduce fusion r: x * x (65536 ALU) summed along dim 1 by %add (1 ALU per
 * element read: 65536): 131072 ALU over f32[64,1024] read (262144 B) and
 * f32[64] written (256 B): 262400 / 8 = 32800 f32 elements each way,
 * 131072 / 32800 = 3.99610 ALU each. Fusion t only transposes: a copy. */
static void test_fused_computation(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, "HloModule w\n%s%s", ADD,
        "%fc (p: bf16[64,1024]) -> bf16[64,1024] {\n"
        "  %p = bf16[64,1024]{1,0} parameter(0)\n"
        "  %cv = f32[64,1024]{1,0} convert(%p)\n"
        "  %e = f32[64,1024]{1,0} exponential(%cv)\n"
        "  %c = f32[] constant(2)\n"
        "  %b = f32[64,1024]{1,0} broadcast(%c), dimensions={}\n"
        "  %d = f32[64,1024]{1,0} divide(%e, %b)\n"
        "  ROOT %r = bf16[64,1024]{1,0} convert(%d)\n}\n"
        "%fr (q: f32[64,1024]) -> f32[64] {\n"
        "  %q = f32[64,1024]{1,0} parameter(0)\n"
        "  %m = f32[64,1024]{1,0} multiply(%q, %q)\n"
        "  %z = f32[] constant(0)\n"
        "  ROOT %s = f32[64]{0} reduce(%m, %z), dimensions={1}, to_apply=%add\n}\n"
        "%ft (u: f32[64,1024]) -> f32[1024,64] {\n"
        "  %u = f32[64,1024]{1,0} parameter(0)\n"
        "  ROOT %v = f32[1024,64]{1,0} transpose(%u), dimensions={1,0}\n}\n"
        "ENTRY %main (x: bf16[64,1024], y: f32[64,1024]) -> (bf16[64,1024], f32[64], "
        "f32[1024,64]) {\n"
        "  %x = bf16[64,1024]{1,0} parameter(0)\n"
        "  %y = f32[64,1024]{1,0} parameter(1)\n"
        "  %f = bf16[64,1024]{1,0} fusion(%x), kind=kLoop, calls=%fc\n"
        "  %r = f32[64]{0} fusion(%y), kind=kInput, calls=%fr\n"
        "  %t = f32[1024,64]{1,0} fusion(%y), kind=kLoop, calls=%ft\n"
        "  ROOT %o = (bf16[64,1024]{1,0}, f32[64]{0}, f32[1024,64]{1,0}) tuple(%f, %r, %t)\n"
        "}\n");
    char *y = lower(text);
    assert_non_null(strstr(y, "{op: fusion, name: f, inputs: [{shape: [65536], dtype: bf16}], "
                              "outputs: [{shape: [65536], dtype: bf16}], vpu_ops: 4, "
                              "transcendentals: 2"));
    assert_non_null(strstr(y, "{op: fusion, name: r, inputs: [{shape: [32800], dtype: f32}], "
                              "outputs: [{shape: [32800], dtype: f32}], vpu_ops: 3.9961"));
    assert_null(strstr(y, "vpu_ops: 3.9961, transcendentals"));
    assert_non_null(strstr(y, "{op: copy, name: t, shape: [65536], dtype: f32"));
    free(y);
}

/* Before XLA's fusion (no fusion in the module): s = x * x is read twice by
 * t = s + s, its one reader: fused, counted once (1 ALU) beside t's add
 * (1 ALU): 2 x 1024 ALU. t's bytes: s's reads (x twice, 8192 B) for each
 * of its two operands and its result (4096 B): 20480 B, 2560 f32 each way:
 * 2048 / 2560 = 0.8.
 * n = -x (a cheap producer of two readers, a1 and a2) is fused into each:
 * a1 = n + x and a2 = n * x count 2 ALU per element each (2048 over
 * 12288 B: 1.33333). The counter's add of two s32 scalars runs on the scalar
 * unit: a copy. */
static void test_fused_producers(void **state)
{
    (void)state;
    const char *text =
        "HloModule u\n"
        "ENTRY %main (x: f32[1024], i: s32[]) -> (f32[1024], f32[1024], f32[1024], s32[]) {\n"
        "  %x = f32[1024]{0} parameter(0)\n"
        "  %i = s32[] parameter(1)\n"
        "  %s = f32[1024]{0} multiply(%x, %x)\n"
        "  %t = f32[1024]{0} add(%s, %s)\n"
        "  %n = f32[1024]{0} negate(%x)\n"
        "  %a1 = f32[1024]{0} add(%n, %x)\n"
        "  %a2 = f32[1024]{0} multiply(%n, %x)\n"
        "  %one = s32[] constant(1)\n"
        "  %i2 = s32[] add(%i, %one)\n"
        "  ROOT %o = (f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, s32[]) tuple(%t, %a1, %a2, %i2)\n"
        "}\n";
    char *y = lower(text);
    assert_null(strstr(y, "name: s,"));
    assert_null(strstr(y, "name: n,"));
    assert_non_null(strstr(y, "{op: fusion, name: t, inputs: [{shape: [2560], dtype: f32}], "
                              "outputs: [{shape: [2560], dtype: f32}], vpu_ops: 0.8}"));
    assert_non_null(strstr(y, "{op: fusion, name: a1, inputs: [{shape: [1536], dtype: f32}], "
                              "outputs: [{shape: [1536], dtype: f32}], vpu_ops: 1.33333"));
    assert_non_null(strstr(y, "{op: fusion, name: a2, inputs: [{shape: [1536], dtype: f32}], "
                              "outputs: [{shape: [1536], dtype: f32}], vpu_ops: 1.33333"));
    assert_non_null(strstr(y, "{op: copy, name: i2, shape: [2], dtype: f32"));
    free(y);
}

/* Fused computations calling each other deeper than 8 stop being counted
 * (no hang, no crash): a chain of 20 fusions, each negating and calling the
 * next. The outer fusion over f32[4096] counts the 8 levels it follows: 8
 * negates of 4096 elements, 32768 ALU over 32768 B read + written (4096
 * f32 each way): 8 per element. */
static void test_nested_depth(void **state)
{
    (void)state;
    size_t cap = 1 << 15, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    len += (size_t)snprintf(t + len, cap - len, "HloModule n\n");
    for (int k = 19; k >= 0; k--) {
        len += (size_t)snprintf(t + len, cap - len,
                                "%%c%d (p: f32[4096]) -> f32[4096] {\n"
                                "  %%p = f32[4096]{0} parameter(0)\n", k);
        if (k < 19)
            len += (size_t)snprintf(t + len, cap - len,
                                    "  %%g = f32[4096]{0} fusion(%%p), kind=kLoop, calls=%%c%d\n"
                                    "  ROOT %%r = f32[4096]{0} negate(%%g)\n}\n", k + 1);
        else
            len += (size_t)snprintf(t + len, cap - len,
                                    "  ROOT %%r = f32[4096]{0} negate(%%p)\n}\n");
    }
    snprintf(t + len, cap - len, "ENTRY %%main (x: f32[4096]) -> f32[4096] {\n"
             "  %%x = f32[4096]{0} parameter(0)\n"
             "  ROOT %%f = f32[4096]{0} fusion(%%x), kind=kLoop, calls=%%c0\n}\n");
    char *y = lower(t);
    assert_non_null(strstr(y, "{op: fusion, name: f, inputs: [{shape: [4096], dtype: f32}], "
                              "outputs: [{shape: [4096], dtype: f32}], vpu_ops: 8"));
    free(y);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_element),
        cmocka_unit_test(test_fused_computation),
        cmocka_unit_test(test_fused_producers),
        cmocka_unit_test(test_nested_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
