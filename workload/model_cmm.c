/* workload/model_cmm.c -- XLA's windowed einsums in a model step (workload/model.h).
 * XLA's SPMD partitioner rewrites a dot whose operand is all-gathered, or whose
 * result is reduce-scattered, into a loop of collective-permutes overlapped with
 * partial dots when the windowed operand's unsharded size is at least
 * threshold_for_windowed_einsum_mib (its SpmdPartitionerOptions: 256 MiB, and
 * enable_windowed_einsum_for_all_gather / _for_reduce_scatter both true; openxla/xla
 * xla/service/spmd/spmd_partitioner.h, the test in spmd/dot_handler.cc). On TPU these
 * are libtpu's flags --xla_tpu_enable_windowed_einsum_for_all_gather,
 * --xla_tpu_enable_windowed_einsum_for_reduce_scatter and
 * --xla_jf_spmd_threshold_for_windowed_einsum_mib; MaxText's
 * benchmarks/xla_flags_library.py turns collective matmuls off with a threshold of
 * 1000000 (DISABLE_COLLECTIVE_MATMUL). Uses workload/model.h only. */
#include "workload/model.h"

static const char *const flag_names[] = {"xla_tpu_enable_windowed_einsum_for_all_gather",
                                         "xla_tpu_enable_windowed_einsum_for_reduce_scatter",
                                         "xla_jf_spmd_threshold_for_windowed_einsum_mib",
                                         "xla_tpu_enable_data_parallel_all_reduce_opt", NULL};

struct model_xla_flags model_xla_defaults(void)
{
    return (struct model_xla_flags){.windowed_ag = true, .windowed_rs = true,
                                     .windowed_threshold_mib = 256};
}

const char *const *model_xla_flag_names(void)
{
    return flag_names;
}

bool model_cmm_windowed(const struct model *m, const struct model_shard *s, enum model_cmm c)
{
    if (m->mode == MODEL_DECODE || s->tensor <= 1 || s->dev_per_chip > 1)
        return false;
    if (!(c == MODEL_CMM_AG ? m->xla.windowed_ag : m->xla.windowed_rs))
        return false;
    double operand = (double)m->batch * (double)m->seq_len * (double)m->d_model *
                     (double)dtype_bytes(m->dtype);
    return operand >= (double)m->xla.windowed_threshold_mib * 1048576.0;
}
