/* workload/hlo_pallas.c -- a Pallas TPU custom call (custom_call_target=
 * "tpu_custom_call") recognised by its kernel's name as one of tpusim's own
 * kernels, its shapes read from its operands:
 *  - a name holding "flash_attention" and none of "dkv", "dq", "bwd" (jax's
 *    jax.experimental.pallas.ops.tpu.flash_attention forward, kernel
 *    "_flash_attention_kernel"): flash_attention, mode fwd, from q
 *    [batch, heads, q_seq_len, head_dim] (operand 0) and k [.., kv_seq_len,
 *    ..] (operand 1), q's dtype; not causal (the mask is in the kernel's
 *    body, which tpusim does not read); upstream's default blocks;
 *  - a name holding "matmul" with two rank-2 operands x [m, k] and y [k, n]:
 *    matmul m, k, n in x's dtype, block: auto.
 * The name is the instruction's kernel_name="..." attribute (jax writes the
 * pallas_call's name there), else a "kernel_name" in its backend_config or
 * frontend_attributes. Anything else keeps the cost estimate's pricing
 * (workload/hlo_lower.c). Uses workload/hlo.h, workload/program.h. */
#include <stdio.h>
#include <string.h>

#include "workload/hlo.h"
#include "workload/hlo_int.h"

/* The kernel name of 'in' into 'buf' (at most n-1 bytes); false if none. */
static bool kernel_name(const struct hlo_instr *in, char *buf, size_t n)
{
    const struct hlo_attr *a = hlo_attr(in, "kernel_name");
    const char *s = a ? a->value : NULL;
    static const char *const where[] = {"backend_config", "frontend_attributes"};
    for (int i = 0; !s && i < 2; i++) {
        const struct hlo_attr *w = hlo_attr(in, where[i]);
        const char *k = w ? strstr(w->value, "kernel_name") : NULL;
        if (k) {
            k += strlen("kernel_name");
            k += strspn(k, "\\\"=: ");
            s = k;
        }
    }
    if (!s)
        return false;
    s += strspn(s, "\\\" ");
    size_t len = strcspn(s, "\\\",} ");
    if (len == 0 || len >= n)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return true;
}

static const char *kernel_dtype(int type)
{
    const char *t = hlo_type_name(type);
    return strcmp(t, "f32") == 0 ? "f32" : "bf16";
}

/* flash_attention's keys from q and k into 'ps' (NULL: only whether they fit). */
static bool flash(struct prog_params *ps, const struct hlo_comp *c, const struct hlo_instr *in)
{
    if (in->nops < 3)
        return false;
    const struct hlo_shape *q = &c->ins[in->operand[0]].shape, *k = &c->ins[in->operand[1]].shape;
    if (q->type == HLO_TUPLE || k->type == HLO_TUPLE || q->rank != 4 || k->rank != 4 ||
        k->dims[0] != q->dims[0] || k->dims[1] != q->dims[1] || k->dims[3] != q->dims[3])
        return false;
    if (!ps)
        return true;
    prog_int(ps, "batch", q->dims[0]);
    prog_int(ps, "heads", q->dims[1]);
    prog_int(ps, "q_seq_len", q->dims[2]);
    prog_int(ps, "kv_seq_len", k->dims[2]);
    prog_int(ps, "head_dim", q->dims[3]);
    prog_word(ps, "dtype", kernel_dtype(q->type));
    prog_word(ps, "causal", "false");
    prog_word(ps, "mode", "fwd");
    return true;
}

/* matmul's keys from x and y into 'ps' (NULL: only whether they fit). */
static bool matmul(struct prog_params *ps, const struct hlo_comp *c, const struct hlo_instr *in)
{
    if (in->nops != 2)
        return false;
    const struct hlo_shape *x = &c->ins[in->operand[0]].shape, *y = &c->ins[in->operand[1]].shape;
    if (x->type == HLO_TUPLE || y->type == HLO_TUPLE || x->rank != 2 || y->rank != 2 ||
        x->dims[1] != y->dims[0])
        return false;
    if (!ps)
        return true;
    prog_int(ps, "m", x->dims[0]);
    prog_int(ps, "k", x->dims[1]);
    prog_int(ps, "n", y->dims[1]);
    prog_word(ps, "dtype", kernel_dtype(x->type));
    prog_word(ps, "block", "auto");
    return true;
}

const char *hlo_pallas_kind(const struct hlo_comp *c, const struct hlo_instr *in)
{
    const struct hlo_attr *t = hlo_attr(in, "custom_call_target");
    char name[128];
    if (!t || !strstr(t->value, "tpu_custom_call") || !kernel_name(in, name, sizeof name))
        return NULL;
    if (strstr(name, "flash_attention") && !strstr(name, "dkv") && !strstr(name, "dq") &&
        !strstr(name, "bwd"))
        return flash(NULL, c, in) ? "flash_attention" : NULL;
    if (strstr(name, "matmul"))
        return matmul(NULL, c, in) ? "matmul" : NULL;
    return NULL;
}

void hlo_pallas_params(struct prog_params *ps, const struct hlo_comp *c,
                       const struct hlo_instr *in, const char *kind)
{
    if (strcmp(kind, "flash_attention") == 0)
        flash(ps, c, in);
    else
        matmul(ps, c, in);
}
