/* outputs/compare.h -- `tpusim compare A B`: two summary.json files side by
 * side with per-op time deltas (ops matched by name), or two sweep.json files
 * with per-point deltas (points matched by their values when the keys agree,
 * else by index) and the best of each. */
#ifndef TPUSIM_OUTPUTS_COMPARE_H
#define TPUSIM_OUTPUTS_COMPARE_H

#include <stdio.h>

/* Each of 'a' and 'b' is a summary.json, a sweep.json or a directory holding
 * one (sweep.json first). Prints the comparison to 'out', messages to 'err',
 * naming the two sides 'labels' (NULL, or NULL entries: each input's
 * directory name; "A" and "B" when those are the same). Returns 0, or 2 when
 * an input cannot be read or the two are not of the same kind. */
int compare_outputs(const char *a, const char *b, const char *const labels[2], FILE *out,
                    FILE *err);

#endif
