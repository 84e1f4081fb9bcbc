/* workload/hlo_conv.c -- a convolution as the matmul XLA's TPU emitter runs
 * it on the MXU (im2col): m = the output's batch times its spatial
 * positions, k = the kernel's input features times its spatial size, n =
 * its output features; 2·m·k·n flops, exactly the convolution's multiply-
 * adds whatever the strides, padding, dilation and feature groups (the
 * kernel's input-feature dimension is already per group). */
#include <string.h>

#include "workload/hlo.h"
#include "workload/hlo_int.h"

/* The labels "b01f" of part 'part' (0 lhs, 1 rhs, 2 output) of dim_labels
 * "b01f_01io->b01f" into 'out'; false if malformed or not of rank 'rank'. */
static bool labels(const char *dl, int part, int rank, char *out)
{
    const char *s = dl;
    for (int p = 0; p < part; p++) {
        const char *next = strpbrk(s, p == 0 ? "_" : ">");
        if (!next)
            return false;
        s = next + 1;
    }
    size_t len = strcspn(s, "_-, }");
    if ((int)len != rank || len > HLO_MAX_RANK)
        return false;
    memcpy(out, s, len);
    out[len] = '\0';
    return true;
}

bool hlo_conv_dims(const struct hlo_instr *conv, const struct hlo_shape *rhs, int64_t *m,
                   int64_t *k, int64_t *n)
{
    const struct hlo_attr *a = hlo_attr(conv, "dim_labels");
    const struct hlo_shape *o = &conv->shape;
    char rl[HLO_MAX_RANK + 1], ol[HLO_MAX_RANK + 1];
    if (!a || o->type == HLO_TUPLE || rhs->type == HLO_TUPLE ||
        !labels(a->value, 1, rhs->rank, rl) || !labels(a->value, 2, o->rank, ol))
        return false;
    *m = *k = *n = 1;
    bool has_i = false, has_o = false, has_b = false, has_f = false;
    for (int d = 0; d < rhs->rank; d++) {
        if (rl[d] == 'o')
            *n *= rhs->dims[d], has_o = true;
        else
            *k *= rhs->dims[d], has_i |= rl[d] == 'i';
    }
    for (int d = 0; d < o->rank; d++) {
        if (ol[d] != 'f')
            *m *= o->dims[d], has_b |= ol[d] == 'b';
        else
            has_f = true;
    }
    return has_i && has_o && has_b && has_f;
}
