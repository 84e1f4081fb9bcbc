/* kernels/xla.h -- the named XLA forms (elementwise, rmsnorm, layernorm,
 * softmax, rope, cross_entropy, embedding, optimizer, copy): their names and
 * rules for the config loader. Each expands to loop fusions
 * (kernels/fusion.h) with the element counts kernels/xla.c states; the op
 * table names kern_xla_kind (transpose: kern_transpose_kind). */
#ifndef TPUSIM_KERNELS_XLA_H
#define TPUSIM_KERNELS_XLA_H

#include <stddef.h>

#include "kernels/ops.h"

/* YAML names of enum xla_fn, xla_mode and xla_algo, NULL-terminated. */
extern const char *const xla_fn_names[XLA_FN_COUNT + 1];
extern const char *const xla_mode_names[];
extern const char *const xla_algo_names[];

/* Arguments 'fn' takes (1 or 2); a binary function folds over its inputs. */
int xla_fn_arity(enum xla_fn fn);

/* ALU ops and transcendentals per element of 'fn' (the generic
 * pallas_call's element-wise primitives price with them too). */
void xla_fn_cost(enum xla_fn fn, double *alu, double *eup);

/* Checks what a key table cannot of named form 'op' (the rank of its shape,
 * elementwise's input count): returns 0, or -1 with the key at fault in
 * '*key' and what that key expects in 'want'. */
int xla_check(const struct op *op, const char **key, char *want, size_t n);

#endif
