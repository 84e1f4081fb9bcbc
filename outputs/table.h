/* outputs/table.h -- the sweep table: one row per point (its swept values,
 * status and the headline figures of its summary.json), read back from
 * summary.json and sweep.json, and written as sweep.csv and sweep.json.
 * Every file is written atomically (base/fsutil.h) and carries no timestamp,
 * so the same table gives byte-identical files. */
#ifndef TPUSIM_OUTPUTS_TABLE_H
#define TPUSIM_OUTPUTS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "outputs/table_serve.h"

enum table_status { TABLE_OK, TABLE_INFEASIBLE, TABLE_FAILED, TABLE_STATUS_COUNT };

/* "ok", "infeasible", "failed". Static. */
const char *table_status_name(enum table_status s);
/* Parses a status name into '*s'; returns 0, or -1 for an unknown name or NULL. */
int table_status_parse(const char *name, enum table_status *s);

struct table_row {
    int point;     /* 0-based index of the point in the sweep */
    char **values; /* the table's 'nkeys' values as written (owned; "" = not set) */
    enum table_status status;
    char *reason; /* owned; the run's message unless ok ("" when ok) */
    /* from summary.json (zero unless ok): */
    char *scenario, *chip;    /* owned */
    double time_s;            /* total_time_s */
    char *op;                 /* owned: the op with the largest time_s */
    char *bound;              /* owned: that op's bound (mxu, vpu, hbm, ici, overhead, latency) */
    double peak_fraction;     /* that op's peak_fraction */
    uint64_t vmem_peak_bytes; /* the largest over the ops */
    int64_t grid_steps;       /* summed over the ops */
    /* from summary.json's model object (a model step; has_model false otherwise): */
    bool has_model;
    double mfu;                  /* model.mfu */
    double tokens_per_s;         /* model.tokens_per_s (all chips) */
    double memory_bytes;         /* model.memory_bytes.total, per chip */
    double collective_exposed_s; /* time_by_category_s.collective_exposed */
    /* from summary.json's train object (a train: section; 0 otherwise): */
    double time_to_train_s;      /* train.time_to_train_s */
    /* what running the point cost (its point.json; 0: not measured): the
     * wall time of its process and that process's peak resident memory */
    double wall_s, peak_rss_bytes;
    double sigma_s;              /* uncertainty.sigma_s, the time's error bar (0: none) */
    /* from summary.json's serving object (a serve: scenario; has_serving false
     * otherwise; time_s is then its duration_s): outputs/table_serve.h */
    bool has_serving;
    struct table_serving sv;
};


/* Fills the summary fields of 'r' (status TABLE_OK) from the summary.json
 * tree 'j'. Returns 0, or -1 with a message in 'err' if 'j' is not a summary. */
int table_row_from_summary(struct table_row *r, const struct json *j, char *err, size_t errn);
/* Frees what 'r' owns ('nkeys' values and the strings) and zeroes it. */
void table_row_fini(struct table_row *r, int nkeys);

/* A sweep's results. The sweep fills one with borrowed pointers; one loaded
 * by table_from_json() owns everything ('owned') and is released with
 * table_fini(). */
struct table {
    char *name; /* sweep name */
    char *base; /* the base scenario, for the report */
    int nkeys;
    char **keys; /* key paths (as for --set) */
    int npoints; /* points in the sweep (rows may be fewer when interrupted) */
    int nrows;
    struct table_row *rows; /* sorted by point */
    int default_point;      /* the point the speedups are against; -1 for none */
    bool default_is_base;   /* it has the base scenario's own values */
    bool default_added;     /* it was added to the sweep's points for that (no override) */
    char *best_trace;       /* trace.json of the best point, relative to the output dir, or NULL */
    char *default_trace;    /* same for the default point */
    const char *command;    /* borrowed: the command that reruns the sweep (report.html), or NULL */
    bool owned;
};

/* True if some ok row of 't' is a model step: the table then has the model
 * columns (mfu, tokens_per_s, memory_bytes, collective_exposed_s). */
bool table_has_model(const struct table *t);
/* True when every ok row of 'rows' (n, the done ones) has a time to train (a
 * scenario with train:): the sweep then ranks by time to train, not step time. */
bool table_rank_by_train(const struct table_row *rows, int n, const bool *done);
/* What 'r' is ranked by: its time to train when 'by_train', else its step time. */
double table_rank_value(const struct table_row *r, bool by_train);
/* Index into t->rows of the best ok row (the fastest, or the shortest time to
 * train when table_rank_by_train; the lowest point on a tie), or -1. */
int table_best_row(const struct table *t);
/* True when some ok row of 't' is a serving run (has_serving). */
bool table_has_serving(const struct table *t);
/* Index into t->rows of point 'point', or -1. */
int table_find_row(const struct table *t, int point);
/* Column name of key 'k': the last segment of its path, or the whole path
 * when another key has the same last segment. Borrowed from t->keys. */
const char *table_short_key(const struct table *t, int k);

/* Write sweep.csv / sweep.json to 'path'; each returns 0 or -1 with errno set. */
int table_write_csv(const struct table *t, const char *path);
int table_write_json(const struct table *t, const char *path);

/* Fills 't' (owned) from a sweep.json tree. Returns 0, or -1 with a message
 * in 'err'; either way release 't' with table_fini(). */
int table_from_json(struct table *t, const struct json *j, char *err, size_t errn);
void table_fini(struct table *t); /* no-op unless t->owned */

/* Formats 's' seconds with 4 significant digits and a unit (ns, us, ms, s). */
void table_format_time(char *buf, size_t n, double s);

#endif
