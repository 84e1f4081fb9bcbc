/* config/cfg_base.c -- what a slice planner (study/plan.h) reads of a model
 * scenario: its chip, its model and the price of a chip-hour, without its
 * topology and mesh (the planner chooses those, so a base whose own mesh
 * does not fit is still a base). Uses the config stages. */
#include <string.h>

#include "config/cfg_base.h"
#include "config/cfg.h"
#include "config/cfg_int.h"
#include "config/cfg_tree.h"
#include "workload/model.h"

int cfg_load_model_base(const char *path, const char *const *sets, int nsets,
                        struct cfg_model_base *b, struct diag *d)
{
    memset(b, 0, sizeof *b);
    struct cfg_node *root = cfg_parse_file(path, d);
    if (!root)
        return -1;
    cfg_normalize_chip(root);
    for (int i = 0; i < nsets; i++)
        cfg_apply_set(root, sets[i], d);
    struct walk w = {.d = d};
    if (diag_count(d) == 0 && walk_is_map(&w, root, "scenario")) {
        cfg_chip_load(&w, root, &b->chip);
        w.chip = &b->chip;
        const struct cfg_node *mn = walk_field(&w, root, "", "model", true);
        if (mn && diag_count(d) == 0)
            cfg_load_model(&w, mn, &b->model);
        if (mn && cfg_get(root, "serve"))
            walk_type_error(&w, cfg_get(root, "serve"), "serve", "a training model step, "
                            "not a serving engine (the planner plans training slices)");
        struct cfg_scenario sc;
        memset(&sc, 0, sizeof sc);
        sc.chip = b->chip;
        if (diag_count(d) == 0)
            cfg_load_cost(&w, root, &sc);
        b->price_usd_per_chip_hour = sc.cost.price_usd_per_chip_hour;
        b->has_train = cfg_get(root, "train") != NULL;
    }
    cfg_node_free(root);
    return diag_count(d) == 0 ? 0 : -1;
}
