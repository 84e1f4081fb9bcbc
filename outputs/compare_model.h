/* outputs/compare_model.h -- the model metrics of `tpusim compare` (issue
 * 31.7): a model step's step time, MFU, tokens/s, memory per chip and (a
 * decode step) MBU, side by side with their change. Used by outputs/compare.c. */
#ifndef TPUSIM_OUTPUTS_COMPARE_MODEL_H
#define TPUSIM_OUTPUTS_COMPARE_MODEL_H

#include <stdio.h>

#include "base/json.h"
#include "outputs/table.h"

/* When both summaries 'a' and 'b' have a "model" block: a "model" section of
 * one line per metric. */
void compare_model_summaries(const struct json *a, const struct json *b, const char *la,
                             const char *lb, FILE *out);
/* One sweep point's model metrics, A -> B, on a line after 'label' (rows
 * with a status other than ok print "-"). */
void compare_model_point(const char *label, int w, const struct table_row *r,
                         const struct table_row *s, FILE *out);

#endif
