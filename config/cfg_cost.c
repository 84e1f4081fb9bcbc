/* config/cfg_cost.c -- prices and power: a chip preset's price: and power:
 * sections, a scenario's cost: (the price of a chip-hour in use) and train:
 * (the training run a model step is one step of). Uses base/, the config
 * stages and workload/model.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_int.h"
#include "workload/model.h"

static const char *const commit_names[] = {"on_demand", "1y", "3y", NULL};
static const char *const price_keys[] = {"on_demand_usd_per_chip_hour",
                                         "commit_1y_usd_per_chip_hour",
                                         "commit_3y_usd_per_chip_hour", NULL};

#define PRICE_WANT "a price in USD per chip-hour from 0.000001 to 1000000"

const char *cfg_commitment_name(enum cfg_commitment c)
{
    return c < CFG_COMMIT_COUNT ? commit_names[c] : "?";
}

/* price: {on_demand_usd_per_chip_hour: 4.2, commit_1y_...: ..., commit_3y_...: ...};
 * power: {tdp_w: 450, idle_w: 135}. Both optional; a key left out is 0 (not known). */
void cfg_chip_load_cost(struct walk *w, const struct cfg_node *root, const char *pre,
                        struct chip_params *c)
{
    char *p = walk_join(pre, "price");
    const struct cfg_node *pr = walk_field(w, root, pre, "price", false);
    if (pr && walk_is_map(w, pr, p)) {
        walk_check_keys(w, pr, p, price_keys);
        for (int i = 0; i < CFG_COMMIT_COUNT; i++)
            walk_real(w, pr, p, price_keys[i], false, 1e-6, 1e6, PRICE_WANT,
                      &c->price_usd_per_chip_hour[i]);
    }
    free(p);
    p = walk_join(pre, "power");
    const struct cfg_node *pw = walk_field(w, root, pre, "power", false);
    if (pw && walk_is_map(w, pw, p)) {
        static const char *const keys[] = {"tdp_w", "idle_w", NULL};
        walk_check_keys(w, pw, p, keys);
        walk_real(w, pw, p, "tdp_w", true, 1, 1e5, "a power in watts from 1 to 100000",
                  &c->tdp_w);
        if (walk_real(w, pw, p, "idle_w", true, 0, 1e5, "a power in watts from 0 to 100000",
                      &c->idle_w) == 0 && c->tdp_w > 0 && c->idle_w > c->tdp_w) {
            char *k = walk_join(p, "idle_w");
            walk_type_error(w, cfg_get(pw, "idle_w"), k, "at most power.tdp_w");
            free(k);
        }
    }
    free(p);
}

/* cost: {commitment: on_demand | 1y | 3y, price_usd_per_chip_hour: X}: the
 * price in use is the one given, else the chip's list price for the commitment. */
void cfg_load_cost(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    struct cfg_cost *c = &sc->cost;
    *c = (struct cfg_cost){.commitment = CFG_ON_DEMAND};
    const struct cfg_node *n = walk_field(w, root, "", "cost", false);
    if (n && walk_is_map(w, n, "cost")) {
        static const char *const keys[] = {"commitment", "price_usd_per_chip_hour", NULL};
        walk_check_keys(w, n, "cost", keys);
        int v = 0;
        walk_enum(w, n, "cost", "commitment", commit_names, &v);
        c->commitment = (enum cfg_commitment)v;
        c->price_given = walk_real(w, n, "cost", "price_usd_per_chip_hour", false, 1e-6, 1e6,
                                   PRICE_WANT, &c->price_usd_per_chip_hour) == 0 &&
                         cfg_get(n, "price_usd_per_chip_hour");
        if (c->price_given && cfg_get(n, "commitment"))
            walk_type_error(w, cfg_get(n, "commitment"), "cost.commitment",
                            "either a commitment or a price_usd_per_chip_hour, not both");
    }
    if (c->price_given)
        return;
    c->price_usd_per_chip_hour = sc->chip.price_usd_per_chip_hour[c->commitment];
    if (n && cfg_get(n, "commitment") && c->price_usd_per_chip_hour <= 0) {
        char want[160];
        snprintf(want, sizeof want, "a commitment chip %s lists a price for (or "
                 "cost.price_usd_per_chip_hour)", sc->chip.name);
        walk_type_error(w, cfg_get(n, "commitment"), "cost.commitment", want);
    }
}

/* 'key' of train: given beside 'other' (or without it, 'need'): refused. */
static void train_pair(struct walk *w, const struct cfg_node *t, const char *key,
                       const char *other, bool need)
{
    bool has = cfg_get(t, key) != NULL, has_other = cfg_get(t, other) != NULL;
    if (!has || has_other == need)
        return;
    char *p = walk_join("train", key), want[160];
    if (need)
        snprintf(want, sizeof want, "%s with train.%s beside it", key, other);
    else
        snprintf(want, sizeof want, "either train.%s or train.%s, not both", key, other);
    walk_type_error(w, cfg_get(t, key), p, want);
    free(p);
}

/* tokens / per_step, rounded up, as a step count at most CFG_TRAIN_MAX_STEPS (-1 above). */
static int64_t steps_of(double tokens, double per_step)
{
    double s = ceil(tokens / per_step);
    return s <= (double)CFG_TRAIN_MAX_STEPS ? (int64_t)s : -1;
}

static void train_lengths(struct walk *w, const struct cfg_node *t, struct cfg_train *tr,
                          double per_step)
{
    const double max_tokens = 1e18;
    walk_int(w, t, "train", "steps", false, 1, CFG_TRAIN_MAX_STEPS, &tr->steps);
    walk_real(w, t, "train", "tokens", false, 1, max_tokens, "a number of tokens from 1 to 1e18",
              &tr->tokens);
    train_pair(w, t, "tokens", "steps", false);
    if (!cfg_get(t, "steps") && !cfg_get(t, "tokens"))
        walk_type_error(w, t, "train", "a training run of train.steps or train.tokens");
    if (tr->tokens > 0 && (tr->steps = steps_of(tr->tokens, per_step)) < 0)
        walk_type_error(w, cfg_get(t, "tokens"), "train.tokens",
                        "at most 1e12 steps' worth of tokens");
    walk_int(w, t, "train", "eval_interval", false, 1, CFG_TRAIN_MAX_STEPS, &tr->eval_interval);
    walk_real(w, t, "train", "eval_every_tokens", false, 1, max_tokens,
              "a number of tokens from 1 to 1e18", &tr->eval_every_tokens);
    train_pair(w, t, "eval_every_tokens", "eval_interval", false);
    if (tr->eval_every_tokens > 0 &&
        (tr->eval_interval = steps_of(tr->eval_every_tokens, per_step)) < 0)
        walk_type_error(w, cfg_get(t, "eval_every_tokens"), "train.eval_every_tokens",
                        "at most 1e12 steps' worth of tokens");
    walk_int(w, t, "train", "eval_samples", false, 1, CFG_TRAIN_MAX_STEPS, &tr->eval_samples);
    bool every = cfg_get(t, "eval_interval") || cfg_get(t, "eval_every_tokens");
    if (every && !cfg_get(t, "eval_samples"))
        walk_type_error(w, t, "train", "eval_samples (the sequences each evaluation runs) "
                                       "beside an eval_interval or eval_every_tokens");
    if (!every && cfg_get(t, "eval_samples"))
        walk_type_error(w, cfg_get(t, "eval_samples"), "train.eval_samples",
                        "eval_samples with train.eval_interval or train.eval_every_tokens "
                        "beside it");
}

/* A duration from 0 to 1e7 s (116 days): longer than UNITS_TIME's kernel-scale bound. */
static void train_duration(struct walk *w, const struct cfg_node *t, const char *key,
                           double *out)
{
    const struct cfg_node *n = walk_field(w, t, "train", key, false);
    double v = 0;
    if (!n)
        return;
    if (n->type != CFG_SCALAR || units_parse(n->value, UNITS_TIME, &v) != 0 ||
        !(v >= 0 && v <= 1e7)) {
        char *p = walk_join("train", key);
        walk_type_error(w, n, p, "a duration like 300s (from 0s to 10000000s)");
        free(p);
        return;
    }
    *out = v;
}

static void train_checkpoints(struct walk *w, const struct cfg_node *t, struct cfg_train *tr,
                              const struct model_step *ms)
{
    walk_int(w, t, "train", "checkpoint_period", false, 1, CFG_TRAIN_MAX_STEPS,
             &tr->checkpoint_period);
    tr->checkpoint_bytes_per_chip = ms->mem.params + ms->mem.optimizer;
    uint64_t b = 0;
    if (walk_size(w, t, "train", "checkpoint_bytes_per_chip", false, 1, (uint64_t)1e18,
                  "from 1 byte to 1EB", &b) == 0 && b)
        tr->checkpoint_bytes_per_chip = (double)b;
    walk_qty(w, t, "train", "checkpoint_write_bandwidth", false, UNITS_BANDWIDTH, false,
             &tr->storage_write_Bps);
    train_pair(w, t, "checkpoint_bytes_per_chip", "checkpoint_period", true);
    train_pair(w, t, "checkpoint_write_bandwidth", "checkpoint_period", true);
    if (cfg_get(t, "checkpoint_period") && !cfg_get(t, "checkpoint_write_bandwidth"))
        walk_type_error(w, t, "train", "checkpoint_write_bandwidth (each chip's bandwidth to "
                                       "storage) beside checkpoint_period");
    train_duration(w, t, "compile_time", &tr->compile_s);
}

/* train: {steps | tokens, eval_interval | eval_every_tokens, eval_samples,
 * checkpoint_period, checkpoint_bytes_per_chip, checkpoint_write_bandwidth,
 * compile_time}: beside a model in train mode. */
void cfg_load_train(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    struct cfg_train *tr = &sc->train;
    memset(tr, 0, sizeof *tr);
    const struct cfg_node *t = walk_field(w, root, "", "train", false);
    if (!t || !walk_is_map(w, t, "train"))
        return;
    static const char *const keys[] = {"steps",          "tokens",
                                       "eval_interval",  "eval_every_tokens",
                                       "eval_samples",   "checkpoint_period",
                                       "checkpoint_bytes_per_chip", "checkpoint_write_bandwidth",
                                       "compile_time",   NULL};
    walk_check_keys(w, t, "train", keys);
    const struct model_step *ms = sc->model;
    if (!ms || sc->serve || ms->m.mode != MODEL_TRAIN) {
        walk_type_error(w, t, "train", "a train: section beside a model: in mode train");
        return;
    }
    tr->present = true;
    double per_step = (double)ms->m.batch * (double)ms->m.seq_len;
    train_lengths(w, t, tr, per_step);
    train_checkpoints(w, t, tr, ms);
}

/* goodput:'s checkpoint keys it does not give, from train:'s (its period;
 * all chips' checkpoint_bytes_per_chip at each chip's write bandwidth), or
 * an error naming both. */
void cfg_goodput_from_train(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    struct cfg_goodput *g = &sc->faults.goodput;
    const struct cfg_train *tr = &sc->train;
    if (!g->present)
        return;
    double chips = (double)cfg_total_chips(sc);
    bool from = tr->present && tr->checkpoint_period > 0;
    if (!g->checkpoint_period && from)
        g->checkpoint_period = tr->checkpoint_period;
    if (!g->checkpoint_bytes && from)
        g->checkpoint_bytes = tr->checkpoint_bytes_per_chip * chips;
    if (!g->checkpoint_Bps && from)
        g->checkpoint_Bps = tr->storage_write_Bps * chips;
    static const char *const keys[] = {"checkpoint_period", "checkpoint_size",
                                       "checkpoint_bandwidth"};
    bool have[] = {g->checkpoint_period > 0, g->checkpoint_bytes > 0, g->checkpoint_Bps > 0};
    for (int i = 0; i < 3; i++)
        if (!have[i]) {
            struct diag_loc loc;
            walk_loc(cfg_get(root, "goodput"), &loc);
            diag_error(w->d, &loc, "goodput", "missing required key '%s' (or a train: section "
                       "with checkpoint_period and checkpoint_write_bandwidth)", keys[i]);
            return;
        }
}
