/* tests/unit/test_cost.c -- cost, energy and time to train (engine/cost.h)
 * against figures worked by hand, and the chip presets' prices and the
 * cost: section as the loader reads them. */
#include "test_util.h"

#include <math.h>

#include "config/cfg.h"
#include "engine/cost.h"
#include "workload/model.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)))


/* 2 slices of 4 chips (8 in all) at $4.20 a chip-hour, TDP 450 W, idle 135 W;
 * a 2 s step of 1e6 tokens, chip 0's two TensorCores busy 1.5 s and 0.5 s. */
static void fixture(struct cfg_scenario *sc, struct model_step *ms, struct summary *s)
{
    memset(sc, 0, sizeof *sc);
    memset(ms, 0, sizeof *ms);
    memset(s, 0, sizeof *s);
    sc->topo.nchips = 4;
    sc->dcn.slices = 2;
    sc->chip.tdp_w = 450, sc->chip.idle_w = 135;
    sc->cost.price_usd_per_chip_hour = 4.2;
    sc->model = ms;
    ms->m.batch = 100;
    s->total_time_s = 2.0;
    s->ntc = 2;
    s->tc[0].compute_s = 1.5, s->tc[1].compute_s = 0.5;
    s->model.present = true;
    s->model.tokens = 1e6;
}

/* $/step = 8 x 4.2 x 2 / 3600 = 0.0186667; per million tokens the same (1e6 a step).
 * u = (1.5 + 0.5) / (2 x 2) = 0.5: P = 135 + 315 x 0.5 = 292.5 W; J/step = 8 x 292.5 x 2 = 4680. */
static void test_cost_and_energy_by_hand(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    struct model_step ms;
    struct summary s;
    fixture(&sc, &ms, &s);
    cost_summary(&sc, &s);
    assert_true(s.cost.present);
    assert_int_equal(s.cost.chips, 8);
    NEAR(s.cost.usd_per_step, 8 * 4.2 * 2 / 3600.0);
    NEAR(s.cost.usd_per_million_tokens, 8 * 4.2 * 2 / 3600.0);
    assert_string_equal(s.cost.commitment, "on_demand");
    assert_true(s.energy.present);
    NEAR(s.energy.utilization, 0.5);
    NEAR(s.energy.avg_power_w, 292.5);
    NEAR(s.energy.joules_per_step, 4680);
    assert_false(s.train.present);
}

/* 1000 steps of 2 s; an evaluation every 100 steps (10) of 250 samples, 3 forward steps
 * of the batch of 100 at 0.5 s (1.5 s); a checkpoint every 300 steps (3) of 8 GB at 4 GB/s
 * (2 s); 120 s compile: 120 + 2000 + 15 + 6 = 2141 s. An evaluation block: 100 x 2 + 1.5
 * = 201.5 s. $ = 8 x 4.2 x 2141 / 3600 = 19.98267; J = 8 x 292.5 x 2141 = 5009940. */
static void test_time_to_train_by_hand(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    struct model_step ms;
    struct summary s;
    fixture(&sc, &ms, &s);
    sc.train = (struct cfg_train){.present = true, .steps = 1000, .eval_interval = 100,
                                  .eval_samples = 250, .checkpoint_period = 300,
                                  .checkpoint_bytes_per_chip = 8e9, .storage_write_Bps = 4e9,
                                  .compile_s = 120};
    sc.plan.eval_step_s = 0.5;
    cost_summary(&sc, &s);
    const struct summary_train *t = &s.train;
    assert_true(t->present);
    assert_int_equal(t->evals, 10);
    assert_int_equal(t->eval_steps, 3);
    NEAR(t->eval_s, 1.5);
    NEAR(t->eval_block_s, 201.5);
    assert_int_equal(t->checkpoints, 3);
    NEAR(t->checkpoint_s, 2);
    NEAR(t->time_to_train_s, 2141);
    NEAR(t->usd_to_train, 8 * 4.2 * 2141 / 3600.0);
    NEAR(t->joules_to_train, 5009940);
    NEAR(t->tokens, 1e9);
}

/* No price and no power: no blocks (a chip without figures, e.g. v7's price). */
static void test_no_figures_no_blocks(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    struct model_step ms;
    struct summary s;
    fixture(&sc, &ms, &s);
    sc.cost.price_usd_per_chip_hour = 0;
    sc.chip.tdp_w = 0;
    cost_summary(&sc, &s);
    assert_false(s.cost.present);
    assert_false(s.energy.present);
}

/* The presets' list prices as the loader reads them, and a commitment's. */
static void test_presets_and_commitment(void **state)
{
    (void)state;
    struct chip_params c;
    struct diag *d = diag_new();
    assert_int_equal(cfg_load_chip("v5p", &c, d), 0);
    NEAR(c.price_usd_per_chip_hour[CFG_ON_DEMAND], 4.20);
    NEAR(c.price_usd_per_chip_hour[CFG_COMMIT_3Y], 1.89);
    assert_true(c.tdp_w > c.idle_w && c.idle_w > 0);
    assert_int_equal(cfg_load_chip("v7", &c, d), 0);
    assert_true(c.price_usd_per_chip_hour[CFG_ON_DEMAND] == 0);
    const char *y = "chip: v6e\ncost: {commitment: 1y}\n"
                    "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n";
    struct cfg_scenario sc;
    assert_int_equal(cfg_load_scenario_text(y, strlen(y), "t.yaml", NULL, 0, &sc, d), 0);
    NEAR(sc.cost.price_usd_per_chip_hour, 1.89);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_and_energy_by_hand),
        cmocka_unit_test(test_time_to_train_by_hand),
        cmocka_unit_test(test_no_figures_no_blocks),
        cmocka_unit_test(test_presets_and_commitment),
    };
    return cmocka_run_group_tests_name("cost", tests, NULL, NULL);
}
