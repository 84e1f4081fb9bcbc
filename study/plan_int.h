/* study/plan_int.h -- internals of study/plan*.c: the spec, the candidates
 * and their results. */
#ifndef TPUSIM_STUDY_PLAN_INT_H
#define TPUSIM_STUDY_PLAN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/cfg_base.h"
#include "study/plan.h"

#define PLAN_MAX_AXES 6
#define PLAN_MAX_LIST 64

enum plan_rank { PLAN_RANK_TIME, PLAN_RANK_MFU, PLAN_RANK_COST, PLAN_RANK_TRAIN };
enum plan_status { PLAN_ILLEGAL, PLAN_PRUNED, PLAN_SIM };

struct plan_spec {
    char *file, *name, *base_path;  /* owned */
    char *gen_set;                  /* owned: "chip=G" for --generation, or NULL */
    struct cfg_model_base base;
    long chips;                     /* 0: a budget */
    double budget;                  /* USD per hour */
    bool budget_cli;                /* given as --budget-usd-per-hour */
    int nslices, slices[PLAN_MAX_LIST];
    int naxes;
    const char *axes[PLAN_MAX_AXES];       /* static names */
    int nsizes[PLAN_MAX_AXES];             /* plan.axis_sizes: 0: any divisor */
    int sizes[PLAN_MAX_AXES][PLAN_MAX_LIST];
    int nremat;
    const char *remat[PLAN_MAX_LIST];      /* static names; 0 entries: the base's */
    int nbatch;
    double batch_per_chip[PLAN_MAX_LIST];  /* 0 entries: the base's global batch */
    enum plan_rank rank_by;
    long max_points;
};

struct plan_cand {
    int nd, shape[3], slices;
    int mesh[PLAN_MAX_AXES];   /* per spec axis */
    int remat;                 /* index in spec remat, -1: the base's */
    int64_t batch;             /* global sequences */
    enum plan_status status;
    char *reason;              /* owned: why illegal or pruned */
    double mem_bytes, capacity_bytes;
    int point;                 /* its sweep point, -1 */
    /* results (PLAN_SIM) */
    bool ok;
    char *sim_status, *bound, *op, *dir;    /* owned */
    double time_s, mfu, tokens_per_s, time_to_train_s, usd_per_mtok, usd_per_step, usd_per_hour;
    bool pareto;
    int rank;                  /* 1-based among ok, 0: none */
};

struct plan {
    struct plan_spec sp;
    int n;
    struct plan_cand *c;      /* owned */
    int count[3];             /* by status */
    double space;             /* the search space's size, counted before enumerating */
};

/* study/plan.c */
int plan_spec_load(const char *path, const struct plan_opts *o, struct plan_spec *sp,
                   struct diag *d);
void plan_spec_fini(struct plan_spec *sp);
/* Legal slice shapes of the chip with 'chips' chips (ascending axes); returns how many
 * ('out' holds up to 'max'). */
int plan_shapes(const struct chip_params *chip, long chips, int (*out)[3], int max);
/* Ordered ways to write 'n' as a product of 'k' factors. */
double plan_factorizations(long n, int k);
/* Counts the space (refusing one over max_points: -1 with the reason in 'd'),
 * then enumerates and checks every candidate. */
int plan_enumerate(struct plan *p, struct diag *d);
/* The --set overrides of candidate 'c' ("key=value"); '*n' gets the count. */
char **plan_cand_sets(const struct plan *p, const struct plan_cand *c, int *n);
/* "fsdp 64 x tensor 8" */
char *plan_mesh_text(const struct plan *p, const struct plan_cand *c);
char *plan_shape_text(const struct plan_cand *c);
void plan_fini(struct plan *p);

/* study/plan_rank.c */
const char *plan_rank_name(enum plan_rank r);
/* Ranks the ok candidates and marks the Pareto front (time vs $ per million tokens). */
void plan_rank(struct plan *p);
/* Writes DIR/plan.csv, plan.json and report.html; prints the ranking. */
int plan_write(struct plan *p, const char *dir, const char *command);

#endif
