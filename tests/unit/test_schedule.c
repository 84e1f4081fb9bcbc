/* tests/unit/test_schedule.c -- the scheduling pass (workload/schedule.h) on
 * small hand-built programs: the waits it derives from the tensors, what it
 * writes out (after:) and what it leaves to "the op before", XLA's overlap
 * rules (a prefetch one layer ahead, a reduce-scatter beside the wgrad, the
 * gradient's gather beside the recomputation), and the errors: a cycle, an
 * unread tensor. */
#include "test_util.h"

#include "workload/program.h"
#include "workload/schedule.h"

/* Op 'name' of 'b' (or of a loop in it). */
static const struct prog_op *find(const struct prog_block *b, const char *name,
                                  const struct prog_block **in)
{
    for (int i = 0; i < b->nops; i++) {
        const struct prog_op *o = &b->op[i];
        if (o->loop) {
            const struct prog_op *f = find(o->loop, name, in);
            if (f)
                return f;
        } else if (strcmp(o->name, name) == 0) {
            *in = b;
            return o;
        }
    }
    return NULL;
}

/* What op 'name' waits for, as written ("-" when it waits for the op before). */
static void waits(const struct program *p, const char *name, char *buf, size_t n)
{
    const struct prog_block *in = NULL;
    const struct prog_op *o = find(&p->top, name, &in);
    assert_non_null(o);
    snprintf(buf, n, "%s", o->has_wait ? "" : "-");
    for (int i = 0; o->has_wait && i < o->nwait; i++) {
        char *r = prog_ref_text(&o->wait[i], in);
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? " " : "", r);
        free(r);
    }
}

static void assert_waits(const struct program *p, const char *name, const char *want)
{
    char got[256];
    waits(p, name, got, sizeof got);
    assert_string_equal(got, want);
}

/* An op of 'b' reading 'a' and 'b2' (-1: none); returns the tensor it writes. */
static int step(struct program *p, struct prog_block *b, const char *kind, const char *name,
                unsigned flags, int a, int b2)
{
    int k = prog_op(b, kind, name, flags);
    prog_read(b, k, a);
    prog_read(b, k, b2);
    int t = prog_tensor(p, name);
    prog_write(p, b, k, t);
    return t;
}

/* embed; wg0; layer x 4 {wgather (the next layer's weights), mm (x, w), res}:
 * the gather is issued one layer ahead -- once the previous layer is done
 * and its own previous instance --, the layer's first op waits for the
 * previous layer and this layer's weights (in the first, wg0 and embed),
 * and the residual just follows the matmul. */
static void test_prefetch_one_layer_ahead(void **state)
{
    (void)state;
    struct program *p = prog_new("a step");
    int x0 = step(p, &p->top, "embedding", "embed", 0, -1, -1);
    int w0 = step(p, &p->top, "all_gather", "wg0", PROG_ASYNC, -1, -1);
    struct prog_block *body = prog_loop(&p->top, "layer", 4);
    int x = prog_tensor(p, "x"), w = prog_tensor(p, "w");
    prog_carry(body, x, x0);
    prog_carry(body, w, w0);
    prog_carry_next(body, w, step(p, body, "all_gather", "wgather", PROG_ASYNC, -1, -1));
    int y = step(p, body, "matmul", "mm", 0, x, w);
    prog_carry_next(body, x, step(p, body, "elementwise", "res", 0, y, x));
    step(p, &p->top, "rmsnorm", "final", 0, x, -1);
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), 0);
    assert_waits(p, "wg0", "");                         /* after: [] -- nothing to wait for */
    assert_waits(p, "wgather", "prev.wgather prev.res");
    assert_waits(p, "mm", "prev.res prev.wgather wg0 embed");
    assert_waits(p, "res", "-");
    assert_waits(p, "final", "-");                     /* the loop as a whole */
    char *yaml = prog_yaml(p);
    assert_non_null(strstr(yaml, "  # a step\n  - {op: embedding, name: embed}\n"));
    assert_non_null(strstr(yaml, "  - repeat:\n      name: layer\n      count: 4\n      ops:\n"
                                 "      - {op: all_gather, name: wgather, after: [prev.wgather, "
                                 "prev.res]}\n"));
    free(yaml);
    prog_free(p);
}

/* embed; layer x 4 {wgather1 (reads nothing), wgather (after it), mm (x,
 * wgather1), mm2 (mm, wgather), res}: the layer gathers its own weights in
 * its iteration, as XLA's while body holds a gather's start and done. So
 * wgather1 is issued as the iteration starts -- once the previous layer's
 * stream is done (prev.res) and, in the first, the stream before the loop
 * (embed) -- not as soon as its previous instance is done, which let every
 * layer's gathers run ahead of the compute and hid them all. The matmul then
 * waits for its gather only (that implies the rest). */
static void test_layer_gathers_start_with_their_iteration(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    int x0 = step(p, &p->top, "embedding", "embed", 0, -1, -1);
    struct prog_block *body = prog_loop(&p->top, "layer", 4);
    int x = prog_tensor(p, "x");
    prog_carry(body, x, x0);
    int w1 = step(p, body, "all_gather", "wgather1", PROG_ASYNC, -1, -1);
    int w = step(p, body, "all_gather", "wgather", PROG_ASYNC, w1, -1);
    int y = step(p, body, "matmul", "mm", 0, x, w1);
    int z = step(p, body, "matmul", "mm2", 0, y, w);
    prog_carry_next(body, x, step(p, body, "elementwise", "res", 0, z, x));
    step(p, &p->top, "rmsnorm", "final", 0, x, -1);
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), 0);
    assert_waits(p, "wgather1", "prev.res embed");
    assert_waits(p, "wgather", "wgather1");
    assert_waits(p, "mm", "wgather1");
    assert_waits(p, "mm2", "mm wgather");
    prog_free(p);
}

/* dgrad, wgrad, reduce-scatter of the dgrad's output (async), a norm of the
 * scattered gradient: the scatter waits for its dgrad only (it runs beside
 * the wgrad); the norm waits for the scatter, the op before it. */
static void test_scatter_waits_for_its_dgrad(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    int g = prog_tensor(p, "g"), act = prog_tensor(p, "act");
    int dx = step(p, &p->top, "matmul", "dgrad", 0, g, -1);
    step(p, &p->top, "matmul", "wgrad", 0, act, g);
    int rs = step(p, &p->top, "reduce_scatter", "rs", PROG_ASYNC, dx, -1);
    step(p, &p->top, "rmsnorm", "norm", 0, rs, -1);
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), 0);
    assert_waits(p, "wgrad", "-");
    assert_waits(p, "rs", "dgrad");
    assert_waits(p, "norm", "-");
    prog_free(p);
}

/* A backward layer: the recomputation (norm, gather, matmul) then the
 * incoming gradient's gather and its matmul: the gather is moved behind the
 * recomputation's gather, async, beside the recomputed matmul, which waits
 * for its own gather by name. */
static void test_gradient_gather_beside_recompute(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    int g0 = step(p, &p->top, "rmsnorm", "g_final", 0, -1, -1);
    struct prog_block *body = prog_loop(&p->top, "bwd", 2);
    int g = prog_tensor(p, "g"), x = prog_tensor(p, "x");
    prog_carry(body, g, g0);
    int n = step(p, body, "rmsnorm", "re_norm", PROG_REMAT, x, -1);
    n = step(p, body, "all_gather", "re_ag", PROG_REMAT, n, -1);
    step(p, body, "matmul", "re_mm", PROG_REMAT, n, -1);
    int gg = step(p, body, "all_gather", "g_ag", 0, g, -1);
    prog_carry_next(body, g, step(p, body, "matmul", "g_mm", 0, gg, -1));
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), 0);
    assert_string_equal(body->op[2].name, "g_ag");
    assert_waits(p, "g_ag", "re_ag");
    assert_waits(p, "re_mm", "re_ag");
    assert_waits(p, "g_mm", "g_ag"); /* the op before (re_mm) does not wait for the async gather */
    prog_free(p);
}

/* 'a' reads what 'b', written after it, writes: a cycle, reported. */
static void test_cycle(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    int t = prog_tensor(p, "t");
    int a = prog_op(&p->top, "matmul", "a", 0);
    prog_read(&p->top, a, t);
    int b = prog_op(&p->top, "matmul", "b", 0);
    prog_write(p, &p->top, b, t);
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), -1);
    assert_string_equal(err, "op 'a' reads 't', written after it by 'b' (a cycle)");
    prog_free(p);
}

/* A tensor written and never read is reported, unless it is an output. */
static void test_unread(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    int a = step(p, &p->top, "matmul", "a", 0, -1, -1);
    int b = step(p, &p->top, "matmul", "b", 0, a, -1);
    step(p, &p->top, "matmul", "c", 0, b, -1);
    char buf[64];
    assert_int_equal(sched_unread(p, buf, sizeof buf), 1);
    assert_string_equal(buf, "c");
    prog_output(p, 2);
    assert_int_equal(sched_unread(p, buf, sizeof buf), 0);
    prog_free(p);
}

/* A backward layer's two weight gradients, each reduce-scattered (async)
 * and stored into the loop's stacked gradients by a dynamic-update-slice
 * (a TensorCore op flagged async: it stores a collective's result, as the
 * HLO importer lowers it). The stores move to the body's end, where XLA's
 * latency-hiding scheduler puts a done and its only user (the root tuple):
 * the second wgrad no longer waits for the first scatter on the TensorCore's
 * stream, and each store waits for its scatter and its buffer's last store
 * (the TensorCore runs it after wgrad2, its stream order). */
static void test_stores_of_scatters_sink_to_the_end(void **state)
{
    (void)state;
    struct program *p = prog_new(NULL);
    struct prog_block *body = prog_loop(&p->top, "bwd", 2);
    int g1 = prog_tensor(p, "g1"), g2 = prog_tensor(p, "g2"), act = prog_tensor(p, "act");
    prog_carry(body, g1, -1);
    prog_carry(body, g2, -1);
    int w1 = step(p, body, "matmul", "wgrad1", 0, act, -1);
    int r1 = step(p, body, "reduce_scatter", "rs1", PROG_ASYNC, w1, -1);
    prog_carry_next(body, g1, step(p, body, "copy", "dus1", PROG_ASYNC, g1, r1));
    int w2 = step(p, body, "matmul", "wgrad2", 0, act, -1);
    int r2 = step(p, body, "reduce_scatter", "rs2", PROG_ASYNC, w2, -1);
    prog_carry_next(body, g2, step(p, body, "copy", "dus2", PROG_ASYNC, g2, r2));
    char err[128];
    assert_int_equal(sched_program(p, err, sizeof err), 0);
    const char *order[] = {"wgrad1", "rs1", "wgrad2", "rs2", "dus1", "dus2"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(body->op[i].name, order[i]);
    assert_waits(p, "wgrad2", ""); /* nothing: the op before it (rs1) is async */
    assert_waits(p, "dus1", "prev.dus1 rs1"); /* its scatter, its buffer's last store */
    assert_waits(p, "dus2", "prev.wgrad2 prev.dus2 rs2"); /* + the carried-write rule's */
    prog_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefetch_one_layer_ahead),
        cmocka_unit_test(test_layer_gathers_start_with_their_iteration),
        cmocka_unit_test(test_scatter_waits_for_its_dgrad),
        cmocka_unit_test(test_gradient_gather_beside_recompute),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_unread),
        cmocka_unit_test(test_stores_of_scatters_sink_to_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
