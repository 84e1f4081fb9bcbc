/* workload/model_quant.c -- quantized training as MaxText runs it (`quantization: int8`,
 * layers/quantizations.py): AQT quantizes both operands of every dense layer's matmul --
 * the attention's QKV and output projections and the MLP's -- in the forward (fwd_bits
 * 8) and in both backward matmuls (dlhs_bits and, with quantization_local_shard_count set
 * as base.yml sets it, drhs_bits 8), accumulates in int32 and dequantizes the result by
 * the operands' scales. The attention kernel, the logits and the experts stay in the
 * model's dtype. fp8 is MaxText's AQT fp8 configuration (_get_aqt_fp8_quant_config:
 * fwd_bits e4m3, dlhs_bits and drhs_bits None): the forward's (and the recomputation's)
 * dense matmuls in fp8, the backward's in the model's dtype, where the MXU takes fp8. The
 * expansion (workload/model.c) emits, before each such matmul, one loop fusion per
 * operand that quantizes it (MODEL_QUANT_VPU_OPS per element, reading the model's
 * dtype, writing 1 byte); the dequantization is the matmul's epilogue. Uses
 * workload/model.h only. */
#include "workload/model.h"

static const char *const quant_names[] = {"int8", "fp8", NULL};
static const enum dtype quant_dtypes[] = {DT_INT8, DT_FP8};

const char *const *model_quant_names(void)
{
    return quant_names;
}

enum dtype model_quant_dtype(int name)
{
    return quant_dtypes[name];
}

enum dtype model_dense_dtype(const struct model *m)
{
    return m->quantized ? m->quant_dtype : m->dtype;
}

bool model_quant_backward(const struct model *m)
{
    return m->quantized && m->quant_dtype == DT_INT8;
}

enum dtype model_kv_dtype(const struct model *m)
{
    return m->kv_int8 ? DT_INT8 : m->dtype;
}
