/* models/chip.h -- the parameters of one TPU chip and its TensorCores.
 * Filled by the config loader from configs/chips/<gen>.yaml (every value
 * there cites its source); models read them, nothing writes them later.
 * Compute rates are calibrated to published peak FLOP/s, not MXUs x clock. */
#ifndef TPUSIM_MODELS_CHIP_H
#define TPUSIM_MODELS_CHIP_H

#include <stdbool.h>
#include <stdint.h>

#include "topology/topo.h"

enum dtype { DT_BF16, DT_F32, DT_INT8, DT_FP8, DT_INT32, DT_COUNT };

enum ici_routing { ICI_ROUTE_ANY, ICI_ROUTE_POW2 };

struct chip_params {
    char name[32];  /* preset name, e.g. "v5e" */
    int generation; /* 4, 5, 6, 7 */
    /* --- per TensorCore --- */
    int cores;     /* TensorCores per chip */
    bool megacore; /* parallel grid dims split across the cores (v4, v5p) */
    int mxu_count;
    int mxu_dim;                  /* 128 or 256 */
    double peak_flops[DT_COUNT];  /* MXU peak per TensorCore, per input dtype */
    double clock_hz;              /* VPU/scalar clock */
    int vpu_sublanes, vpu_lanes;  /* vreg shape: 8 x 128 */
    int vpu_packing_below_bits;   /* dtypes narrower than this pack into a vreg's sublanes
                                     (their tiling is sublanes x 32 / bits): 16, or 32 on v7 */
    int rpa_kv_pages_per_block;   /* ragged paged attention's untuned default KV pages per
                                     block (jax's get_tuned_block_sizes): 128, or 32 on v4 */
    double vpu_alu_per_cycle;     /* vreg ALU ops issued per cycle */
    double vpu_load_per_cycle;    /* vreg loads from VMEM per cycle */
    double vpu_store_per_cycle;   /* vreg stores to VMEM per cycle */
    double eup_per_cycle;         /* transcendental vregs per cycle */
    double xlu_per_cycle;         /* cross-lane (reduce/broadcast) vregs per cycle */
    uint64_t vmem_bytes, smem_bytes;
    uint64_t vmem_limit_bytes;    /* default scoped VMEM limit for a pallas_call */
    double step_overhead_s;       /* fixed cost of one grid step */
    double launch_s;              /* fixed cost of launching one kernel (each pallas_call) */
    double copy_s;                /* fixed cost of one hbm_copy op (launch, DMA setup, completion) */
    double dma_issue_s;           /* latency of one DMA from issue to first byte */
    /* --- per chip --- */
    uint64_t hbm_bytes;
    uint64_t hbm_usable_bytes;    /* what XLA may allocate (its OOM messages' "of X hbm");
                                     0: not given */
    double hbm_bw_Bps;
    double hbm_efficiency;        /* achieved fraction of hbm_bw_Bps */
    double pcie_bw_Bps;           /* host <-> chip, one direction (0: none given) */
    int ici_links;
    double ici_bw_Bps;            /* one direction of one link */
    double ici_efficiency;        /* achieved fraction of ici_bw_Bps (packet overheads) */
    double ici_hop_lat_s;         /* per hop */
    double ici_collective_lat_s;  /* fixed cost of one collective (launch, sync) */
    double ici_step_lat_s;        /* fixed cost of each collective step (sem handshake) */
    enum ici_routing routing;
    enum topo_wrap_rule wrap;   /* default wraparound (topo_default_wrap) */
    /* --- what exists (a hypothetical chip may be anything) --- */
    bool hypothetical;          /* chip: {hypothetical: true}: no slice or dtype checks */
    bool mxu_dtype[DT_COUNT];   /* the MXU takes it: bf16, f32 always, int8/fp8 when peak lists them */
    int slice_dims;             /* most axes a slice has (0: not stated) */
    int slice_max[3];           /* the pod's torus, axes in ascending order (0: not stated) */
    int64_t slice_max_chips;    /* the largest slice (0: not stated) */
    /* --- the host and its DCN NICs (multislice; topology/dcn.h) --- */
    int dcn_host_ndims;           /* 0: the preset gives no DCN */
    int dcn_host_shape[TOPO_MAX_DIMS]; /* the chips of one host, a block of the slice */
    double dcn_bw_Bps;            /* per host, one direction: all its NICs */
    double dcn_lat_s;             /* one way, NIC to NIC */
    /* --- what a chip-hour costs and what a chip draws (config/cfg_cost.c; 0: not given) --- */
    double price_usd_per_chip_hour[3]; /* list price: on demand, 1-year, 3-year commitment */
    double tdp_w, idle_w;         /* power per chip: at full load (TDP) and idle */
};

/* Returns the size in bytes of one element of 'dt'. */
int dtype_bytes(enum dtype dt);
/* Returns the name used in YAML: "bf16", "f32", "int8", "fp8", "int32". */
const char *dtype_name(enum dtype dt);
/* Sets '*dt' from a YAML name ("bf16"/"bfloat16", "f32"/"float32", "int8", ...); 0 or -1. */
int dtype_parse(const char *s, enum dtype *dt);

/* Sublane tiling of the second-minor dim for 'dt' on 'chip' (8 for 32/16-bit
 * before v7, 8*(32/bits) for narrower; v7: 8*(32/bits) for all). */
int chip_sublane_tiling(const struct chip_params *chip, enum dtype dt);

/* Effective MXU clock: the rate at which one MXU takes one row of a pass,
 * derived from the bf16 peak so that steady state equals the published peak. */
double chip_mxu_hz(const struct chip_params *chip);

#endif
