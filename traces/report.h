/* traces/report.h -- sweep tables and reports: sweep.csv, sweep.json,
 * report.md and the SVG plots, plus a minimal JSON reader for summary.json
 * and sweep.json (used by `tpusim compare` and --resume). Pure C: every file
 * is written to 'path'.tmp and renamed, and nothing depends on the clock, so
 * the same table gives byte-identical files. */
#ifndef TPUSIM_TRACES_REPORT_H
#define TPUSIM_TRACES_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/json.h"

/* ---------------- sweep tables ---------------- */

enum report_status { REPORT_OK, REPORT_INFEASIBLE, REPORT_FAILED, REPORT_STATUS_COUNT };

/* "ok", "infeasible", "failed". Static. */
const char *report_status_name(enum report_status s);
/* Parses a status name; returns 0 or -1. */
int report_status_parse(const char *name, enum report_status *s);

struct report_row {
    int point;     /* 0-based index of the point in the sweep */
    char **values; /* the table's 'nkeys' values as written (owned; "" = not set) */
    enum report_status status;
    char *reason; /* owned; the run's message unless ok ("" when ok) */
    /* from summary.json (zero unless ok): */
    char *scenario, *chip;    /* owned */
    double time_s;            /* total_time_s */
    char *op;                 /* owned: the op with the largest time_s */
    char *bound;              /* owned: that op's bound (mxu, vpu, hbm, ici, overhead, latency) */
    double peak_fraction;     /* that op's peak_fraction */
    uint64_t vmem_peak_bytes; /* the largest over the ops */
    int64_t grid_steps;       /* summed over the ops */
};

/* Fills the summary fields of 'r' (status REPORT_OK) from the summary.json
 * tree 'j'. Returns 0, or -1 with a message in 'err' if 'j' is not a summary. */
int report_row_from_summary(struct report_row *r, const struct json *j, char *err,
                            size_t errn);
void report_row_fini(struct report_row *r, int nkeys);

/* A sweep's results. The sweep fills one with borrowed pointers; one loaded
 * by report_table_from_json() owns everything ('owned') and is released with
 * report_table_fini(). */
struct report_table {
    char *name; /* sweep name */
    char *base; /* the base scenario, for the report */
    int nkeys;
    char **keys; /* key paths (as for --set) */
    int npoints; /* points in the sweep (rows may be fewer when interrupted) */
    int nrows;
    struct report_row *rows; /* sorted by point */
    int default_point;       /* the point the speedups are against; -1 for none */
    bool default_is_base;    /* it has the base scenario's own values */
    char *best_trace;        /* trace.json of the best point, relative to the output dir, or NULL */
    char *default_trace;     /* same for the default point */
    bool owned;
};

/* Index into t->rows of the fastest ok row (the lowest point on a tie), or -1. */
int report_best_row(const struct report_table *t);
/* Index into t->rows of point 'point', or -1. */
int report_find_row(const struct report_table *t, int point);

/* Writers; each returns 0 or -1 with errno set. */
int report_write_csv(const struct report_table *t, const char *path);
int report_write_json(const struct report_table *t, const char *path);
int report_write_markdown(const struct report_table *t, const char *path);
/* Writes dir/plot_<key>.svg for every key and dir/heatmap.svg when there are
 * exactly two keys. */
int report_write_plots(const struct report_table *t, const char *dir);
/* The file name plot_<key>.svg of key 'key' (characters outside [A-Za-z0-9._-]
 * become '_'). Returns a new string; caller frees. */
char *report_plot_name(const char *key);

/* Fills 't' (owned) from a sweep.json tree. Returns 0, or -1 with a message in 'err'. */
int report_table_from_json(struct report_table *t, const struct json *j, char *err,
                           size_t errn);
void report_table_fini(struct report_table *t); /* no-op unless t->owned */

/* Formats 's' seconds with 4 significant digits and a unit (ns, us, ms, s). */
void report_format_time(char *buf, size_t n, double s);

/* `tpusim compare A B`: each of 'a' and 'b' is a summary.json, a sweep.json or
 * a directory holding one. Prints both side by side with time deltas to
 * 'out'; messages to 'err'. Returns 0, or 2 when an input cannot be read or
 * the two are not of the same kind. */
int report_compare(const char *a, const char *b, FILE *out, FILE *err);

#endif
