/* sim/sweep_int.h -- internals of sim/sweep*.c, shared with tests/unit/test_sweep.c.
 * A sweep spec (YAML) expands into points; each point is a list of --set
 * overrides "key.path=value" applied to the base scenario. */
#ifndef TPUSIM_SIM_SWEEP_INT_H
#define TPUSIM_SIM_SWEEP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/cfg.h"
#include "base/diag.h"

struct sweep_key {
    char *path;       /* owned: the key path, exactly as for --set */
    char *spec_path;  /* owned: where the spec names it, e.g. "sweep.workload.0.bytes" */
    int line, col;    /* and at which position */
    char *base_value; /* owned: the base scenario's own value (canonical text), or NULL */
    char *base_shown; /* owned: the same as shown in tables, or "" */
};

struct sweep_point {
    char **values; /* owned: per key, the value as YAML text (for --set), or NULL (not set) */
    char **shown;  /* owned: per key, the value as shown in tables ("" when not set anywhere) */
};

/* Where the diagnostics of a generated (inline) base file point back to in the spec. */
struct sweep_linemap {
    int n;
    int *key_line, *key_col;      /* per line of the generated file: the spec position of its key */
    int *val_col;                 /* column of the value in the generated file (0: none) */
    int *val_line, *val_spec_col; /* spec position of the value */
};

struct sweep_spec {
    char *file;                 /* owned: the spec's path */
    char *name;                 /* owned: `name:` or the spec file's base name */
    char *base_path;            /* owned: the scenario file the points load */
    struct cfg_node *base_tree; /* owned: the base scenario document */
    bool base_inline;           /* base: was a mapping (written out as base.yaml) */
    uint64_t base_hash;         /* of the base scenario's text, for --resume */
    struct sweep_linemap map;   /* for an inline base */
    int nkeys;
    struct sweep_key *keys; /* in order of first appearance: sweep, zip, points */
    int npoints;
    struct sweep_point *points; /* cartesian product of sweep x zip, then the explicit points */
};

/* Loads and expands the sweep spec at 'path': checks its structure, loads the
 * base scenario (a file relative to the spec's directory, or an inline
 * mapping written to a temporary file) and checks that every key path applies
 * to it. Returns 0, or -1 with "file:line:col: key.path: ..." messages in 'd'.
 * Release '*sp' with sweep_spec_fini() either way. */
int sweep_spec_load(const char *path, struct sweep_spec *sp, struct diag *d);
void sweep_spec_fini(struct sweep_spec *sp);

/* Writes an inline base to 'path' (base.yaml in the output directory) and
 * points sp->base_path at it. Returns 0 or -1 (errno). */
int sweep_spec_write_base(struct sweep_spec *sp, const char *path);

/* The --set overrides of point 'i' ("key.path=value"), NULL-terminated, in key
 * order; '*n' gets the count. Returns a new array of new strings; free with
 * sweep_sets_free(). */
char **sweep_point_sets(const struct sweep_spec *sp, int i, int *n);
void sweep_sets_free(char **sets);

/* Index of the default point: the first whose values all equal the base
 * scenario's own values ('*is_base' true), else 0. -1 when there are no points. */
int sweep_default_point(const struct sweep_spec *sp, bool *is_base);

/* Rewrites a message about the generated base file into one about the spec
 * (positions mapped back through sp->map). Returns a new string. */
char *sweep_map_message(const struct sweep_spec *sp, const char *msg);

/* Returns the canonical YAML text of 'n' (flow style; quoted scalars stay
 * quoted): applying "path=<text>" with --set gives back the same node. New string. */
char *sweep_node_text(const struct cfg_node *n);

#endif
