/* config/cfg_base.h -- a model scenario as the slice planner (study/plan.h)
 * reads it: its chip, model and chip-hour price; its topology and mesh are
 * not read (the planner chooses them), nor its workload checks run. */
#ifndef TPUSIM_CONFIG_CFG_BASE_H
#define TPUSIM_CONFIG_CFG_BASE_H

#include <stdbool.h>

#include "base/diag.h"
#include "models/chip.h"
#include "workload/model.h"

struct cfg_model_base {
    struct chip_params chip;
    struct model model;
    double price_usd_per_chip_hour; /* cost: or the chip's list price; 0: none known */
    bool has_train;                 /* the scenario has a train: section */
};

/* Loads the scenario file 'path' with the 'nsets' overrides "key.path=value"
 * (e.g. "chip=v5e"). Returns 0, or -1 with messages in 'd'. */
int cfg_load_model_base(const char *path, const char *const *sets, int nsets,
                        struct cfg_model_base *b, struct diag *d);

#endif
