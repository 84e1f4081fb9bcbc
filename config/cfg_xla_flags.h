/* config/cfg_xla_flags.h -- a scenario's xla_flags: (XLA's TPU compiler
 * flags as what-ifs, named as libtpu names them; docs/reference.md,
 * "Compiler flags as what-ifs"). Uses libc only. */
#ifndef TPUSIM_CONFIG_CFG_XLA_FLAGS_H
#define TPUSIM_CONFIG_CFG_XLA_FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#define CFG_XLA_SYNC_MAX 8

struct cfg_xla_flags {
    bool present;
    /* the program's collectives of these kinds run synchronously (static
     * names, NULL-terminated): an async flag set to false */
    const char *sync[CFG_XLA_SYNC_MAX + 1];
    int nsync;
    uint64_t scoped_vmem_limit_bytes; /* xla_tpu_scoped_vmem_limit_kib x 1024; 0: not given */
    /* XLA's windowed einsums (collective matmuls) in a model's expansion
     * (workload/model_cmm.c); each applies when its set_ is true */
    bool set_windowed_ag, windowed_ag; /* xla_tpu_enable_windowed_einsum_for_all_gather */
    bool set_windowed_rs, windowed_rs; /* xla_tpu_enable_windowed_einsum_for_reduce_scatter */
    bool set_windowed_threshold;
    int64_t windowed_threshold_mib;    /* xla_jf_spmd_threshold_for_windowed_einsum_mib */
    bool set_dp_all_reduce_opt, dp_all_reduce_opt; /* xla_tpu_enable_data_parallel_all_reduce_opt */
    /* the reductions of reduce-scatters / all-reduces run on the SparseCore
     * (true) or on the TensorCore, taking its time from the compute beside
     * them (false); set_ false: the chip's default (cfg_xla_sc_offload) */
    bool set_sc_offload_rs, sc_offload_rs; /* xla_tpu_enable_sparse_core_collective_offload_reduce_scatter */
    bool set_sc_offload_ar, sc_offload_ar; /* xla_tpu_enable_sparse_core_collective_offload_all_reduce */
};

/* Whether a collective of 'kind' ("reduce_scatter" or "all_reduce"; any other:
 * false) reduces on the SparseCore on a chip of 'generation': the flag when
 * given, else XLA's default, true on v7 (Ironwood) only (docs/reference.md,
 * "Reductions on the TensorCore"). */
bool cfg_xla_sc_offload(const struct cfg_xla_flags *x, int generation, const char *kind);

#endif
