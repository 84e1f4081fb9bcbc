/* config/cfg_cost.h -- what a run costs and how long a training run takes: a
 * scenario's cost: section (the price of a chip-hour: the chip preset's list
 * price for a commitment, or a price given) and train: section (the training
 * run a model step is one step of: its length, evaluations, checkpoints and
 * compile time, named as MaxText and MLPerf name them). Read by
 * config/cfg_cost.c; priced by engine/cost.h. */
#ifndef TPUSIM_CONFIG_CFG_COST_H
#define TPUSIM_CONFIG_CFG_COST_H

#include <stdbool.h>
#include <stdint.h>

/* The most steps, checkpoints or eval samples a train: section may name. */
#define CFG_TRAIN_MAX_STEPS 1000000000000LL

enum cfg_commitment { CFG_ON_DEMAND, CFG_COMMIT_1Y, CFG_COMMIT_3Y, CFG_COMMIT_COUNT };

struct cfg_cost {
    enum cfg_commitment commitment;  /* cost.commitment (default on_demand) */
    bool price_given;                /* cost.price_usd_per_chip_hour was set */
    double price_usd_per_chip_hour;  /* the price in use: given, else the chip's list price
                                        for the commitment; 0: none known (no cost block) */
};

struct cfg_train {
    bool present;                    /* the scenario has a train: section */
    int64_t steps;                   /* train.steps, or tokens over the step's tokens */
    double tokens;                   /* train.tokens (0: given as steps) */
    int64_t eval_interval;           /* steps between evaluations (0: none) */
    double eval_every_tokens;        /* as given (0: given as eval_interval or none) */
    int64_t eval_samples;            /* sequences each evaluation runs forward */
    int64_t checkpoint_period;       /* steps between checkpoints (0: none) */
    double checkpoint_bytes_per_chip; /* default: the chip's parameters and optimizer state */
    double storage_write_Bps;        /* each chip's write bandwidth to storage */
    double compile_s;                /* compilation and warm-up, once */
};

/* "on_demand", "1y", "3y". Static. */
const char *cfg_commitment_name(enum cfg_commitment c);

#endif
