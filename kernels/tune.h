/* kernels/tune.h -- block-size candidates for `block: auto`.
 * A kernel whose blocks can be searched describes them here: which values
 * are searched (their YAML names), how to read and set them on an op, a
 * bounded, deterministic list of candidate values (the kernel's default
 * first), an analytic lower bound on a candidate's time (models/), and
 * optionally a cheaper floor below that bound. The generic part keeps the
 * candidates the kernel's builder accepts (its block rules and the VMEM
 * budget) and hands them out in bound order, computing a candidate's bound
 * (a dry run of its grid) only when its floor says it may come next. Timing
 * them with the engine is study/autotune.h. Uses kernels/ and models/. */
#ifndef TPUSIM_KERNELS_TUNE_H
#define TPUSIM_KERNELS_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel.h"

#define TUNE_MAX_PARAMS 12     /* block values of one kernel */
#define TUNE_MAX_ENUM 4096     /* candidates a kernel may enumerate */
#define TUNE_MAX_TIMED 32      /* candidates timed in all, at most */

/* One candidate: its block values and what models/ say about it. */
struct tune_point {
    int64_t v[TUNE_MAX_PARAMS]; /* in the order of the kernel's 'names' */
    double bound_s;             /* lower bound of its time on one chip (launches included) */
    double floor_s;             /* a lower bound of bound_s computed without a dry run */
    int64_t steps;              /* grid steps of its calls (per chip, all cores) */
    bool dflt;                  /* the kernel's default blocks */
    int order;                  /* where it was listed (the default: 0): breaks ties of bound_s */
};

/* What the search of one op found (sc->plan.tuned[i]; the search itself is
 * study/autotune.h, which times the candidates with the engine). */
struct tune_choice {
    bool tuned;                /* the op asked for auto; the fields below are set */
    bool cached;               /* an identical op was searched before: its result reused */
    int nparams;
    const char *const *names;  /* static: the kernel's YAML names of the values */
    int64_t v[TUNE_MAX_PARAMS];/* the chosen blocks */
    int feasible;              /* feasible candidates (of 'tried' listed) */
    int tried;
    int ntimed;                /* timed with the engine, in this order: */
    int64_t timed[TUNE_MAX_TIMED][TUNE_MAX_PARAMS];
    double timed_s[TUNE_MAX_TIMED];
    int runs;                  /* child runs it took (1 or 2) */
    int bounds;                /* candidates whose lower bound was computed (the rest: a
                                  floor showed it could not matter) */
    double time_s;             /* the winner's time: one instance, one chip */
    double bound_s;            /* the winner's analytic lower bound */
    char bound[16];            /* the unit that bounds the winner in its run: "mxu", "hbm", ... */
    double default_s;          /* the default blocks' time; -1 when not timed */
};

struct kern_tune {
    const char *key;           /* the YAML key that takes 'auto': "block", "block_sizes" */
    int nparams;
    const char *const *names;  /* YAML names of the values, 'nparams' of them */
    /* Reads the values of 'op' into 'v'; writes 'v' into 'op'. */
    void (*get)(const struct op *op, int64_t *v);
    void (*set)(struct op *op, const int64_t *v);
    /* Writes at most 'max' candidate value vectors for 'op' on 'chip' into 'v'
     * (unchecked: the builder checks them) and returns their count. */
    int (*enumerate)(const struct op *op, const struct chip_params *chip,
                     int64_t (*v)[TUNE_MAX_PARAMS], int max);
    /* Lower bound in seconds of the time of 'k' (built, with its blocks) on one
     * chip: what no schedule of its steps can beat. */
    double (*bound)(const struct kern *k);
    /* Optional: a lower bound of 'bound' that needs no dry run (it must never
     * exceed it). NULL: the launches and the step overheads alone. */
    double (*floor)(const struct kern *k);
    /* Optional, for parameters that own memory (splash masks): whether 'a' and
     * 'b' (blocks zeroed) are the same search, and 'keep', which gives 'key' (a
     * shallow copy of an op) copies of what it owns, for the kind's
     * params_fini to free. NULL: byte equality of the parameters. */
    bool (*same)(const struct op *a, const struct op *b);
    void (*keep)(struct op *key);
};

/* Fills 'out' (room for 'max') with the feasible candidates of 'op' (built
 * with 'kind' on 'chip'): the kernel's default blocks (the values 'op' holds)
 * and those 'enumerate' lists, each kept once, ordered by bound (ties: the
 * order they were listed in, the default first), the first 'max' of them, the
 * default in the last place if it is not among them. Returns their count, and
 * sets '*tried' to the number of distinct candidates checked. When none is
 * feasible, returns 0 with the reasons of the default and of the smallest other
 * candidate in 'err'. */
int tune_candidates(const struct kern_tune *t, const struct kern_kind *kind, const struct op *op,
                    const struct chip_params *chip, struct tune_point *out, int max, int *tried,
                    char *err, size_t n);

/* The feasible candidates of 'op' (as tune_candidates lists them), handed
 * out in bound order (ties: listing order) with their bounds computed
 * lazily: a candidate's bound is computed when its floor is the smallest key
 * left, so a search that stops early skips the dry runs of the rest. */
struct tune_order;
/* Builds every candidate once (feasibility, floors); '*tried' and 'err' as
 * tune_candidates. Caller frees with tune_order_free(). */
struct tune_order *tune_order_new(const struct kern_tune *t, const struct kern_kind *kind,
                                  const struct op *op, const struct chip_params *chip,
                                  int *tried, char *err, size_t n);
void tune_order_free(struct tune_order *o); /* NULL is a no-op */
int tune_order_feasible(const struct tune_order *o);
/* Writes the next candidate in bound order into '*p' if its bound is below
 * 'limit' (INFINITY: any) and returns true; false when none is left or the
 * next one's bound is not below 'limit' (it stays next). */
bool tune_order_next(struct tune_order *o, double limit, struct tune_point *p);
/* The default blocks with their bound into '*p', whether handed out yet or
 * not, if that bound is below 'limit' (it is computed only if the floor is);
 * false when it is not, or they are infeasible. */
bool tune_order_default(struct tune_order *o, double limit, struct tune_point *p);
int tune_order_bounds(const struct tune_order *o); /* bounds (dry runs) computed so far */
/* Whether candidate 'a' comes before 'b' in bound order. */
bool tune_point_before(const struct tune_point *a, const struct tune_point *b);

/* "bm=512 bk=1024 bn=1024": the values 'v' of 't' in 'buf' (0, an unset block: "null"). */
const char *tune_format(const struct kern_tune *t, const int64_t *v, char *buf, size_t n);

/* A bound for any kernel without manual DMAs: its calls run dry (no time
 * passes, pl_dry_run), each pays a launch; per core, the step overheads and
 * the compute add up, and the chip's HBM moves every core's bytes. */
double tune_dry_bound(const struct kern *k);

/* A floor for kernels whose every grid step either runs a block or not: the
 * launches plus the busiest core's sum, over the calls, of its steps'
 * overheads (the cores split each grid as pl_core_range does) and 'run_s[i]'
 * for each step of call i that 'runs' says runs a block (run_s[i] = 0: none
 * is looked at). 'run_s' has k->ncalls values. */
double tune_floor_steps(const struct kern *k, const double *run_s,
                        bool (*runs)(const struct pl_call *call, const int64_t *idx));

/* The powers of two from 'lo' to 'hi' that divide 'dim' (and 'dim' itself
 * when it is in [lo, hi] and not one of them), ascending, into 'out' (room
 * for 64). Returns their count. */
int tune_divisors(int64_t dim, int64_t lo, int64_t hi, int64_t *out);

/* Every multiple of 'quantum' below 'dim' that divides it (the 63 smallest), then
 * 'dim' itself, ascending, into 'out' (room for 64). Returns their count. */
int tune_multiples(int64_t dim, int64_t quantum, int64_t *out);

/* The compute blocks an attention kernel may split a kv block of 'major' into:
 * 128, 256 and 512 when they divide it, and 'major' itself when it is larger
 * (or nothing smaller divides it), ascending, into 'out' (room for 4).
 * Returns their count. */
int tune_compute_blocks(int64_t major, int64_t *out);

/* The builders' searches (kernels/<kind>.c); the op table names them. */
extern const struct kern_tune kern_matmul_tune; /* kernels/matmul.c */
extern const struct kern_tune kern_einsum_tune; /* kernels/matmul.c: bm, bk, bn, bb */
extern const struct kern_tune kern_flash_tune;  /* kernels/flash.c */
extern const struct kern_tune kern_splash_tune; /* kernels/splash.c */

#endif
