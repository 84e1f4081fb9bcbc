/* config/cfg.h -- a scenario: YAML in, typed parameters out.
 * The loader runs in stages: YAML -> tree (config/cfg_yaml.c, the only file that
 * sees libyaml), --set overrides and chip presets merged into the tree
 * (config/cfg_tree.c), then a typed walk (config/cfg_walk.h) fills the chip
 * (config/cfg_chip.c), the topology and options (config/cfg.c) and the ops
 * (config/cfg_ops.c, driven by the op table). A scenario names a chip preset
 * (configs/chips/<name>.yaml, embedded in the binary) and may override any of
 * its keys. Every error is "file:line:col: key.path: expected X, got Y", all
 * collected. */
#ifndef TPUSIM_CONFIG_CFG_H
#define TPUSIM_CONFIG_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "config/cfg_faults.h"
#include "config/cfg_tree.h"
#include "config/cfg_xla_flags.h"
#include "kernels/ops.h"
#include "models/chip.h"
#include "workload/graph.h"
#include "topology/dcn.h"
#include "topology/topo.h"

struct cfg_node;
struct tune_choice;
struct model_step;
struct model;
struct serve_cfg;


enum cfg_fidelity { CFG_FIDELITY_FAST, CFG_FIDELITY_EXACT };

/* What a run costs and how long a training run takes (config/cfg_cost.c): a
 * scenario's cost: section (the price of a chip-hour: the chip preset's list
 * price for a commitment, or a price given) and train: section (the training
 * run a model step is one step of: its length, evaluations, checkpoints and
 * compile time, named as MaxText and MLPerf name them); priced by engine/cost.h. */
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


/* options.max_steps by default: steps of simulated work (engine/validate.h),
 * about 3 us of CPU each here: a run of a few minutes at most. */
#define CFG_DEFAULT_MAX_STEPS 50000000

/* Where an op was written: for messages about it after loading. */
struct cfg_op_src {
    struct diag_loc loc;         /* its mapping ('file' owned) */
    char *path;                  /* owned: its key path, "workload.2.repeat.ops.0" */
    const struct cfg_node *node; /* the mapping; valid while loading only */
};

/* What is decided about a loaded scenario after loading: written by the
 * engine's SPMD fold (engine/spmd.h) and by `block: auto`'s search
 * (study/autotune.h), read by the run. The loader leaves the whole slice and
 * no choices. */
struct cfg_plan {
    struct topo sim;           /* the chips simulated: the slice, or its SPMD fold */
    int sim_mult;              /* chips of the slice each simulated chip stands for */
    unsigned sim_dirs;         /* axes (bits) of the fold whose transfers keep their direction
                                  through port hosts (topology/plat_dir.h); 0: a TORUS cluster */
    int sim_slices;            /* the slices simulated (a divisor of topology.slices; 0: all):
                                  each stands for slices / sim_slices (engine/spmd.h) */
    struct tune_choice *tuned; /* owned, per op: what `block: auto` chose (kernels/tune.h);
                                  NULL until the search ran */
    double eval_step_s;        /* train: the forward-only evaluation step's time
                                  (study/train_eval.h); 0: not run */
};

/* A scenario: what the user wrote (the chip, the slice, the options), the
 * program it stands for (the ops, their graph, the model or serving engine
 * they come from), and the plan decided after loading. */
struct cfg_scenario {
    /* --- the input --- */
    char *name; /* owned */
    char *file; /* owned; path the scenario came from */
    struct chip_params chip;
    struct topo topo;      /* the slice */
    struct dcn dcn;        /* topology.slices copies of it joined by the DCN (slices 1: none) */
    bool all_chips;        /* options.all_chips: simulate every chip, no folding */
    bool kernel_memo;      /* options.kernel_memo: quiet kernel replays from memos (default) */
    bool has_mesh;         /* a top-level mesh: (the default for collectives' groups:) */
    struct mesh mesh;      /* laid out on 'topo' */
    enum cfg_fidelity fidelity;
    int trace_level;       /* options.trace: a outputs/trace.h enum trace_level (units) */
    bool trace_level_set;  /* options.trace was given (else the run picks, engine/trace_auto.h) */
    uint64_t seed;
    int64_t max_steps;     /* resource guard: refuse runs above this many steps of work */
    struct cfg_cost cost;   /* cost: (config/cfg_cost.c) */
    struct cfg_train train; /* train: (a model's training run) */
    struct cfg_faults faults; /* faults: and goodput: (config/cfg_faults.h) */
    struct cfg_xla_flags xla; /* xla_flags: (config/cfg_xla_flags.h) */
    /* --- the program --- */
    struct model_step *model; /* owned; NULL unless the scenario has a model: (workload/model.h) */
    struct serve_cfg *serve;  /* owned; NULL unless the scenario has a serve: (config/cfg_serve.h);
                                 then 'model' is its engine's decode step of max_num_seqs */
    char *program_json;       /* owned; NULL unless the scenario has a program: {hlo: ...}:
                                 summary.json's program: block (workload/hlo.h) */
    struct op *ops;         /* owned array of 'nops', in program order */
    struct cfg_op_src *src; /* owned, per op */
    int nops;
    struct graph graph; /* the program: dependencies and repeat blocks of the ops */
    /* --- the plan, decided after loading --- */
    struct cfg_plan plan;
};

/* The slices the engine simulates (1 without a DCN). */
static inline int cfg_sim_slices(const struct cfg_scenario *sc)
{
    if (sc->plan.sim_slices > 0)
        return sc->plan.sim_slices;
    return sc->dcn.slices > 1 ? sc->dcn.slices : 1;
}
/* Chips the engine simulates: every simulated slice's simulated chips (sim.nchips
 * each); engine chip e is chip e % sim.nchips of slice e / sim.nchips. */
static inline int cfg_engine_chips(const struct cfg_scenario *sc)
{
    return sc->plan.sim.nchips * cfg_sim_slices(sc);
}
/* Chips of all slices. */
static inline int cfg_total_chips(const struct cfg_scenario *sc)
{
    return sc->topo.nchips * (sc->dcn.slices > 1 ? sc->dcn.slices : 1);
}

/* Loads the scenario at 'path' ("-": standard input; NULL: the embedded default), applies
 * the 'nsets' overrides "key.path=value", and fills '*sc'. Returns 0, or -1
 * with messages in 'd'. '*sc' must be released with cfg_scenario_fini(). */
int cfg_load_scenario(const char *path, const char *const *sets, int nsets, struct cfg_scenario *sc,
                      struct diag *d);
void cfg_scenario_fini(struct cfg_scenario *sc);
/* The workload YAML of a loaded scenario's model step (sc->model), with
 * the async flags of its xla_flags: applied (config/cfg_xla_flags.h); caller frees. */
char *cfg_model_workload_yaml(const struct cfg_scenario *sc, struct diag *d);
/* As cfg_load_scenario, from YAML 'text' of 'len' bytes named 'file'. */
int cfg_load_scenario_text(const char *text, size_t len, const char *file, const char *const *sets,
                           int nsets, struct cfg_scenario *sc, struct diag *d);

/* The scenario of one engine step: 'base' (a scenario with a serve:) with its
 * model replaced by 'm' (a serving step, workload/model.h) and expanded.
 * Returns 0, or -1 with messages in 'd' ('*sc' then released). */
int cfg_serve_step(const struct cfg_scenario *base, const struct model *m,
                   struct cfg_scenario *sc, struct diag *d);

/* Loads the chip preset 'name' (e.g. "v5e") into '*chip'. Returns 0 or -1. */
int cfg_load_chip(const char *name, struct chip_params *chip, struct diag *d);

/* True if some op of 'sc' is of kind 'kind'. */
bool cfg_uses_kind(const struct cfg_scenario *sc, enum op_kind kind);

/* True if 'name' may name a scenario, an op or a block: 1 to 64 letters,
 * digits, '_', '-' or ':' (no path separators, dots or blanks). */
bool cfg_name_ok(const char *name);

/* Names of the embedded chip presets (configs/chips/), NULL-terminated. Static. */
const char *const *cfg_chip_names(void);

#endif
