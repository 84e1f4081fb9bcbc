/* config/cfg_walk.h -- stage 3 of the config loader: a typed walk over the tree.
 * Each getter reads one key of a map, checks its type, unit and range, and on
 * failure adds "file:line:col: key.path: expected X, got Y" to the walk's
 * diag (the caller collects every error before it gives up). Sections with
 * plain keys are read from a field table (walk_fields, Redis-style: one row
 * per key with its type, bounds, default and place in the target struct).
 * Uses base/ and config/cfg_tree.h; no libyaml. */
#ifndef TPUSIM_CONFIG_CFG_WALK_H
#define TPUSIM_CONFIG_CFG_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "base/units.h"
#include "models/chip.h"
#include "config/cfg_tree.h"

/* The key lists walk_check_keys was given (tests: every allowed key is read). */
struct walk_keylog {
    int n;
    char **keys; /* owned: every allowed key of every checked map, in order */
};

struct cfg_xla_flags;

struct walk {
    struct diag *d;
    const struct chip_params *chip; /* the scenario's, once loaded (walk_mxu_dtype checks it) */
    struct walk_keylog *log;        /* NULL, or where walk_check_keys records its lists */
    const struct cfg_xla_flags *xla; /* the scenario's xla_flags:, once loaded (a model's
                                        windowed einsums follow them) */
};

/* The source mark of node 'n'. */
void walk_loc(const struct cfg_node *n, struct diag_loc *loc);
/* "path.key" (or "key" at the top); caller frees. */
char *walk_join(const char *path, const char *key);
/* The candidate (NULL-terminated list) closest to 'word' by edit distance,
 * if within 2 edits and 'word' is not one of them, for "did you mean" hints;
 * else NULL. Sets '*known' when 'word' is a candidate. */
const char *walk_suggest(const char *word, const char *const *candidates, bool *known);
/* The rule for scenario and sweep names, which name directories under out/:
 * 1 to 128 bytes, no whitespace or control characters, no '/' or '=', no
 * leading or trailing '.', no "..". WALK_NAME_RULE is its "expected" text. */
bool walk_name_ok(const char *s);
#define WALK_NAME_RULE "a name (no spaces, slashes or '..')"
/* Reports every key of map 'm' that is not in 'allowed' (NULL-terminated). */
void walk_check_keys(struct walk *w, const struct cfg_node *m, const char *path,
                     const char *const *allowed);
/* Reports "expected 'what', got ..." at node 'n'. */
void walk_type_error(struct walk *w, const struct cfg_node *n, const char *path,
                     const char *what);
bool walk_is_map(struct walk *w, const struct cfg_node *n, const char *path);
/* map[key], reported missing when 'required'. */
const struct cfg_node *walk_field(struct walk *w, const struct cfg_node *m, const char *path,
                                  const char *key, bool required);

/* Getters: each leaves '*out' unchanged when the key is absent and returns 0
 * (-1 and a message when it is required), or -1 after reporting a bad value. */
int walk_int(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
             bool required, int64_t min, int64_t max, int64_t *out);
int walk_int32(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
               bool required, int64_t min, int64_t max, int *out);
/* Item 'i' of sequence 'seq' (path 'p') as an integer in [min, max]. */
int walk_item(struct walk *w, const struct cfg_node *seq, const char *p, int i, int64_t min,
              int64_t max, int64_t *out);
/* A real number (no unit) in [min, max] (min > 0) described by 'want'. */
int walk_real(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
              bool required, double min, double max, const char *want, double *out);
/* A positive real number from 1e-6 to 1e6, like sm_scale. */
void walk_positive(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                   double *out);
int walk_bool(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
              bool *out);
/* A quantity with a unit, > 0 unless 'zero_ok', within its kind's range (a
 * duration other than 0 at least 1ps: a subnormal latency aborted SimGrid). */
int walk_qty(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
             bool required, enum units_kind kind, bool zero_ok, double *out);
int walk_bytes(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
               bool required, uint64_t *out);
/* A size in [lo, hi] bytes; 'range' says so ("from 64KiB to 16GiB"). */
int walk_size(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
              bool required, uint64_t lo, uint64_t hi, const char *range, uint64_t *out);
/* Reports every key of a checked map in tree 'n' (at 'path') that nothing
 * read: an allowed key that would be ignored is refused (issue 18.11). */
void walk_check_unread(struct walk *w, const struct cfg_node *n, const char *path);
/* A dtype an op feeds the MXU: also one the walk's chip takes (its peak
 * lists a rate for it), unless the chip is hypothetical. */
int walk_mxu_dtype(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   enum dtype *out);
int walk_dtype(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
               enum dtype *out);
/* An efficiency: a fraction in [0.01, 1], default 1 (below 1 %, times leave what SimGrid
 * represents; a subnormal one aborted it). */
void walk_fraction(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                   double *out);
/* One of 'names' (NULL-terminated); '*out' is its index. */
int walk_enum(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
              const char *const *names, int *out);

/* ---- field tables ---- */
enum walk_type {
    WALK_INT,   /* int64_t in [min, max] */
    WALK_INT32, /* int in [min, max] */
    WALK_BYTES, /* uint64_t, a size with a unit */
    WALK_BOOL,  /* bool */
    WALK_DTYPE, /* enum dtype */
    WALK_MXU_DTYPE, /* enum dtype the MXU takes (walk_mxu_dtype) */
    WALK_ENUM,  /* an enum (int-sized): the index of the value in 'names' */
    WALK_REAL,  /* double > 0 */
    WALK_MAP,   /* a nested map read with the table 'sub' (relative to the same base) */
};

struct walk_key {
    const char *key;            /* NULL ends a table */
    enum walk_type type;
    size_t offset;              /* of the value in the struct being filled */
    bool required;
    double dflt;                /* stored before the key is read */
    int64_t min, max;           /* WALK_INT, WALK_INT32 */
    const char *const *names;   /* WALK_ENUM */
    const struct walk_key *sub; /* WALK_MAP */
};

/* Stores every key's default into 'base', then reads the keys of table
 * 'keys' from map 'm' (at 'path'). Unknown keys are reported unless listed
 * in 'extra' (NULL-terminated; may be NULL). */
void walk_fields(struct walk *w, const struct cfg_node *m, const char *path,
                 const struct walk_key *keys, const char *const *extra, void *base);

#endif
