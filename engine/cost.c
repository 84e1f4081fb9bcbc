/* engine/cost.c -- cost, energy and time to train (engine/cost.h). */
#include "engine/cost.h"

#include <stdio.h>
#include <string.h>

#include "workload/model.h"

/* The tokens of one step (all chips), or 0 without a model. */
static double step_tokens(const struct summary *s)
{
    return s->model.present ? s->model.tokens : 0;
}

static void fill_cost(const struct cfg_scenario *sc, struct summary *s)
{
    const struct cfg_cost *c = &sc->cost;
    if (!(c->price_usd_per_chip_hour > 0))
        return;
    struct summary_cost *o = &s->cost;
    o->present = true;
    snprintf(o->commitment, sizeof o->commitment, "%s",
             c->price_given ? "given" : cfg_commitment_name(c->commitment));
    o->usd_per_chip_hour = c->price_usd_per_chip_hour;
    o->chips = cfg_total_chips(sc);
    o->usd_per_hour = o->chips * o->usd_per_chip_hour;
    o->usd_per_step = o->usd_per_hour * s->total_time_s / 3600.0;
    double tok = step_tokens(s);
    o->usd_per_million_tokens = tok > 0 ? o->usd_per_step / (tok / 1e6) : -1;
}

/* Chip 0's TensorCores' busy time over theirs and the step's, 0..1. */
static double utilization(const struct summary *s)
{
    if (s->ntc <= 0 || !(s->total_time_s > 0))
        return 0;
    double busy = 0;
    for (int c = 0; c < s->ntc; c++)
        busy += s->tc[c].compute_s;
    double u = busy / (s->ntc * s->total_time_s);
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

static void fill_energy(const struct cfg_scenario *sc, struct summary *s)
{
    const struct chip_params *ch = &sc->chip;
    if (!(ch->tdp_w > 0))
        return;
    struct summary_energy *e = &s->energy;
    e->present = true;
    e->tdp_w = ch->tdp_w, e->idle_w = ch->idle_w;
    e->utilization = utilization(s);
    e->avg_power_w = ch->idle_w + (ch->tdp_w - ch->idle_w) * e->utilization;
    e->joules_per_step = cfg_total_chips(sc) * e->avg_power_w * s->total_time_s;
    double tok = step_tokens(s);
    e->joules_per_million_tokens = tok > 0 ? e->joules_per_step / (tok / 1e6) : -1;
}

static void fill_train(const struct cfg_scenario *sc, struct summary *s)
{
    const struct cfg_train *tr = &sc->train;
    if (!tr->present || !sc->model)
        return;
    struct summary_train *t = &s->train;
    t->present = true;
    t->steps = tr->steps;
    t->step_s = s->total_time_s;
    t->tokens = (double)tr->steps * step_tokens(s);
    if (tr->eval_interval > 0) {
        int64_t batch = sc->model->m.batch;
        t->eval_interval = tr->eval_interval;
        t->evals = tr->steps / tr->eval_interval;
        t->eval_steps = (tr->eval_samples + batch - 1) / batch;
        t->eval_step_s = sc->plan.eval_step_s;
        t->eval_s = (double)t->eval_steps * t->eval_step_s;
        t->eval_block_s = (double)t->eval_interval * t->step_s + t->eval_s;
    }
    if (tr->checkpoint_period > 0) {
        t->checkpoints = tr->steps / tr->checkpoint_period;
        t->checkpoint_bytes_per_chip = tr->checkpoint_bytes_per_chip;
        t->checkpoint_s = tr->checkpoint_bytes_per_chip / tr->storage_write_Bps;
    }
    t->compile_s = tr->compile_s;
    t->time_to_train_s = t->compile_s + (double)t->steps * t->step_s +
                         (double)t->evals * t->eval_s + (double)t->checkpoints * t->checkpoint_s;
    t->usd_to_train = s->cost.present ? s->cost.usd_per_hour * t->time_to_train_s / 3600.0 : -1;
    /* energy: the whole run at the step's average power (evaluations, checkpoints and
     * compile drawn alike: an estimate, docs/reference.md) */
    t->joules_to_train = s->energy.present ? cfg_total_chips(sc) * s->energy.avg_power_w *
                                                 t->time_to_train_s
                                           : -1;
}

void cost_summary(const struct cfg_scenario *sc, struct summary *s)
{
    fill_cost(sc, s);
    fill_energy(sc, s);
    fill_train(sc, s);
}
