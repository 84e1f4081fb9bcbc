/* tests/unit/test_uncertainty.c -- the step time's error bar (engine/uncertainty.h)
 * propagated by hand over a three-op critical path. */
#include "test_util.h"

#include <math.h>

#include "config/cfg.h"
#include "engine/uncertainty.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)))

/* Three ops run one after the other (4.5 ms): a Pallas matmul with given
 * blocks, two instances of 1.5 ms; an all-gather of 1 ms; an elementwise
 * fusion of 0.5 ms. All three are on the critical path. */
static void fixture(struct cfg_scenario *sc, struct op *ops, struct summary *s,
                    struct summary_op *sops, struct summary_path_op *path)
{
    memset(sc, 0, sizeof *sc);
    memset(s, 0, sizeof *s);
    memset(ops, 0, 3 * sizeof *ops);
    memset(sops, 0, 3 * sizeof *sops);
    ops[0].kind = OP_MATMUL, ops[1].kind = OP_ALL_GATHER, ops[2].kind = OP_ELEMENTWISE;
    sc->ops = ops, sc->nops = 3;
    s->ops = sops, s->nops = 3;
    s->total_time_s = 4.5e-3;
    double t[3] = {3e-3, 1e-3, 0.5e-3};
    int64_t inst[3] = {2, 1, 1};
    for (int i = 0; i < 3; i++) {
        sops[i].time_s = t[i];
        path[i] = (struct summary_path_op){.name = NULL, .op = i, .instances = inst[i],
                                           .time_s = t[i]};
    }
    s->path = path, s->npath = 3;
}

/* The bands: Pallas kernel 4.42 %, collective 6.40 %, XLA op 7.26 %, model
 * step 9.33 % (engine/uncertainty.c's table).
 *   Pallas:     0.0442 x (1.5 + 1.5) ms = 0.1326 ms (the two instances add:
 *               fully correlated, not 0.0442 x 1.5 x sqrt 2 = 0.0938 ms)
 *   collective: 0.0640 x 1 ms   = 0.0640 ms
 *   XLA op:     0.0726 x 0.5 ms = 0.0363 ms
 *   sigma = sqrt(0.1326^2 + 0.0640^2 + 0.0363^2) = 0.151646 ms, 3.370 % of 4.5 ms;
 *   band 4.348354 .. 4.651646 ms. */
static void test_three_ops_by_hand(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    struct op ops[3];
    struct summary s;
    struct summary_op sops[3];
    struct summary_path_op path[3];
    fixture(&sc, ops, &s, sops, path);
    unc_summary(&sc, &s);
    assert_true(s.unc.present);
    NEAR(s.unc.family_s[UNC_PALLAS], 0.0442 * 3e-3);
    NEAR(s.unc.family_s[UNC_COLLECTIVE], 0.0640 * 1e-3);
    NEAR(s.unc.family_s[UNC_XLA], 0.0726 * 0.5e-3);
    double sigma = sqrt(0.1326e-3 * 0.1326e-3 + 0.0640e-3 * 0.0640e-3 + 0.0363e-3 * 0.0363e-3);
    NEAR(s.unc.sigma_s, sigma);
    assert_true(fabs(s.unc.sigma_s - 0.151646e-3) < 1e-9);
    NEAR(s.unc.low_s, 4.5e-3 - sigma);
    NEAR(s.unc.high_s, 4.5e-3 + sigma);
    NEAR(s.unc.relative, sigma / 4.5e-3);
    assert_false(s.unc.floored);
    assert_string_equal(sops[0].unc_family, "pallas_kernel");
    assert_string_equal(sops[1].unc_family, "collective");
    assert_string_equal(sops[2].unc_family, "xla_op");
    NEAR(sops[2].unc_relative, 0.0726);
}

/* The same ops as a model step: the model-step band, 0.0933 x 4.5 ms =
 * 0.41985 ms, is above 0.151646 ms and sets the bar. A matmul with `block:
 * auto` is XLA's dot: the XLA-op band, 0.0726 x 3 ms = 0.2178 ms. */
static void test_model_floor_and_auto_matmul(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    struct op ops[3];
    struct summary s;
    struct summary_op sops[3];
    struct summary_path_op path[3];
    fixture(&sc, ops, &s, sops, path);
    sc.model = (struct model_step *)&sc; /* any non-NULL: a model step */
    unc_summary(&sc, &s);
    NEAR(s.unc.floor_s, 0.0933 * 4.5e-3);
    NEAR(s.unc.sigma_s, 0.41985e-3);
    assert_true(s.unc.floored);
    fixture(&sc, ops, &s, sops, path);
    ops[0].autotune = true;
    unc_summary(&sc, &s);
    NEAR(s.unc.family_s[UNC_XLA], 0.0726 * 3e-3 + 0.0726 * 0.5e-3);
    NEAR(s.unc.family_s[UNC_PALLAS], 0.0); /* (0: NEAR's bound is 0 too) */
}

/* No timeline (one op): the op itself is the path. */
static void test_no_path(void **state)
{
    (void)state;
    struct unc_term t = {UNC_COLLECTIVE, 2e-3};
    struct summary_unc u;
    unc_propagate(&t, 1, 2e-3, false, &u);
    NEAR(u.sigma_s, 0.0640 * 2e-3);
    NEAR(u.relative, 0.0640);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_ops_by_hand),
        cmocka_unit_test(test_model_floor_and_auto_matmul),
        cmocka_unit_test(test_no_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
