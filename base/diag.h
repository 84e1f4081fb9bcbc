/* base/diag.h -- errors, in two shapes by what they are for.
 * User-facing: a collector (struct diag). Every message reads
 * "file:line:col: key.path: what was expected, got what" (or without position
 * when none is known). Messages are collected, then printed together; the
 * caller exits 2 for bad input, 1 for runtime failures.
 * Internal: a function that checks one thing (a kernel's block rules, a
 * mesh, a shape) and knows nothing of files takes 'char *err, size_t n' and
 * fails with `return diag_fail(err, n, ...)`; its caller puts the text into a
 * collector at the place it came from. */
#ifndef TPUSIM_BASE_DIAG_H
#define TPUSIM_BASE_DIAG_H

#include <stddef.h>
#include <stdio.h>

struct diag_loc {
    const char *file; /* borrowed; NULL when unknown */
    int line;         /* 1-based; 0 when unknown */
    int col;          /* 1-based */
};

struct diag;

/* Returns a new, empty collector; caller frees with diag_free(). */
struct diag *diag_new(void);
void diag_free(struct diag *d); /* NULL is a no-op */

/* Adds one message at 'loc' (may be NULL) about 'path' (may be NULL or ""). */
void diag_error(struct diag *d, const struct diag_loc *loc, const char *path, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));
/* Every message added (counted past the kept ones, see diag_kept). */
int diag_count(const struct diag *d);
/* The messages kept as text: the first 64; diag_message(d, i) for i below it. */
int diag_kept(const struct diag *d);
/* An internal error: writes the message into 'err' ('n' bytes, cut to fit;
 * nothing when 'err' is NULL) and returns -1. */
int diag_fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Returns message 'i' (0-based), fully formatted, or NULL past the kept ones. Borrowed. */
const char *diag_message(const struct diag *d, int i);
/* Prints up to 20 messages, one per line, then "... and N more". */
void diag_print(const struct diag *d, FILE *out);
/* Removes every message. */
void diag_clear(struct diag *d);

#endif
