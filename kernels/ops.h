/* kernels/ops.h -- the parameters of the operations a scenario's workload
 * lists, one struct per op kind. Everything else about a kind (its YAML name
 * and keys, its checks, how it runs, its cleanup) is its row in the op table
 * (config/op_table.c). The config loader fills these; engine/ runs them. Uses
 * models/ (dtypes). */
#ifndef TPUSIM_KERNELS_OPS_H
#define TPUSIM_KERNELS_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "models/chip.h"
#include "topology/mesh.h"

enum op_kind {
    OP_HBM_COPY,
    OP_PPERMUTE,
    OP_MATMUL,
    OP_FLASH,   /* flash_attention */
    OP_SPLASH,  /* splash_attention */
    OP_PAGED,   /* paged_attention */
    OP_RAGGED,  /* ragged_paged_attention */
    OP_ALL_GATHER,
    OP_REDUCE_SCATTER,
    OP_ALL_REDUCE,
    OP_ALL_TO_ALL,
    OP_COLLECTIVE_MATMUL,
    OP_REMOTE_COPY,
    OP_FUSION,        /* an XLA loop fusion: inputs, outputs, work per element */
    OP_ELEMENTWISE,   /* the named XLA forms below expand to fusions (kernels/xla.c) */
    OP_RMSNORM,
    OP_LAYERNORM,
    OP_SOFTMAX,
    OP_ROPE,
    OP_CROSS_ENTROPY,
    OP_EMBEDDING,
    OP_OPTIMIZER,
    OP_TRANSPOSE,
    OP_COPY,
    OP_EINSUM,        /* batched matmul: the Pallas matmul with a leading batch grid dim */
    OP_HOST_COPY,     /* HBM <-> host memory over the chip's PCIe link (offloaded activations) */
    OP_PALLAS_CALL,   /* a generic pallas_call written in the scenario (kernels/pcall.h) */
    OP_RAGGED3,       /* ragged_paged_attention_v3 (kernels/ragged3.c) */
    OP_KIND_COUNT
};

struct mask; /* kernels/maskinfo.h */

struct op_hbm_copy {
    uint64_t bytes;       /* per TensorCore */
    uint64_t chunk_bytes; /* 0: half the scoped VMEM limit */
};

enum host_dir { HOST_TO_HOST, HOST_TO_DEVICE };

struct op_host_copy {
    uint64_t bytes;     /* per chip */
    enum host_dir dir;  /* to_host: HBM -> host memory; to_device: host memory -> HBM */
};

struct op_ppermute {
    uint64_t bytes; /* per chip */
    int axis;
    int shift;
};

struct op_matmul {
    int64_t batch; /* einsum: a leading parallel grid dim; 0 for matmul (no batch dim) */
    int64_t m, k, n;
    enum dtype dt;
    /* rhs_dtype: the weight operand y in int8 with per-channel scales (weight-only
     * int8): read from HBM as int8, dequantized to dt in VMEM; anything else: dt */
    enum dtype rhs_dt;
    int64_t bm, bk, bn;
    /* einsum: batch elements a grid step takes (0 or 1: one, a squeezed dim) */
    int64_t bb;
};

enum attn_mode { ATTN_FWD, ATTN_BWD, ATTN_FWD_BWD };

#define OP_MAX_SEGMENTS 64

/* Upstream flash_attention.BlockSizes; 0 stands for None. */
struct flash_block_sizes {
    int64_t block_q, block_k_major, block_k, block_b;
    int64_t block_q_major_dkv, block_k_major_dkv, block_k_dkv, block_q_dkv;
    int64_t block_k_major_dq, block_k_dq, block_q_dq;
};

struct op_flash {
    int64_t batch, heads, q_seq_len, kv_seq_len, head_dim;
    enum dtype dt;
    bool causal;
    bool bias;         /* an ab [B, H, Sq, Skv] operand */
    double sm_scale;
    enum attn_mode mode;
    /* Segment ids of packed sequences: lengths of consecutive segments, the
     * same for every batch row (nseg_q == 0: no segment ids). */
    int nseg_q, nseg_kv;
    int64_t seg_q[OP_MAX_SEGMENTS], seg_kv[OP_MAX_SEGMENTS];
    struct flash_block_sizes bs;
};

/* Upstream splash_attention_kernel.BlockSizes; 0 stands for None. */
struct splash_block_sizes {
    int64_t block_q, block_kv, block_kv_compute;
    int64_t block_q_dkv, block_kv_dkv, block_kv_dkv_compute;
    int64_t block_q_dq, block_kv_dq;
    bool use_fused_bwd_kernel;
};

struct op_splash {
    int64_t batch, q_heads, kv_heads, q_seq_len, kv_seq_len, head_dim;
    enum dtype dt;
    enum attn_mode mode;
    int nmasks;           /* 1 (every head) or q_heads (multi-head) */
    struct mask **masks;  /* owned */
    bool dynamic;         /* process the masks as a dynamic (jax.Array) mask */
    int nseg;             /* segment ids: lengths, same for q and kv and every batch row */
    int64_t seg[OP_MAX_SEGMENTS];
    struct splash_block_sizes bs;
};

enum megacore_mode { MEGACORE_NONE, MEGACORE_KV_HEAD, MEGACORE_BATCH };

struct op_paged {
    int64_t batch, q_heads, kv_heads, head_dim;
    enum dtype dt, kv_dt;  /* kv_dt int8: quantized pages with scales */
    int64_t page_size, pages_per_seq, pages_per_compute_block;
    enum megacore_mode megacore_mode;
    bool inline_seq_dim;
    int64_t *lengths;      /* [batch], owned */
    bool shuffled_pages;   /* page allocation: contiguous or shuffled (seeded) */
    uint64_t seed;
};

struct op_ragged {
    int64_t q_heads, kv_heads, head_dim;
    enum dtype dt, kv_dt;
    int64_t page_size, max_model_len;
    int64_t num_kv_pages_per_block, num_queries_per_block; /* 0: upstream's default */
    int64_t sliding_window; /* 0: none */
    double soft_cap;        /* 0: none */
    double sm_scale;        /* default 1.0, as upstream */
    int64_t max_num_batched_tokens; /* T, the q rows of the call; 0: the sum of q_lens */
    int nseqs;
    int64_t *q_lens, *kv_lens; /* [nseqs], owned */
    bool shuffled_pages;
    uint64_t seed;
    /* ragged_paged_attention_v3 only: (bq_sz, bkv_sz, bq_csz, bkv_csz) of
     * the decode and the mixed call (zeros: upstream's defaults); the new
     * tokens' K/V not written to the cache (update_kv_cache: false) */
    int64_t d_block_sizes[4], m_block_sizes[4];
    bool no_kv_update;
};

/* Collectives over ICI: per-device input 'bytes', over 'axes' (one ring per
 * axis, concurrently). */
/* The collective algorithms, one row each (kernels/collective.c's table is
 * built from this list): enum name, YAML name, the kinds it applies to
 * (COLL_FOR_*), whether its ring phases use both directions, whether an
 * all-reduce runs as one ring psum pass (else reduce-scatter + all-gather). */
#define COLL_FOR_AG (1u << 0)
#define COLL_FOR_RS (1u << 1)
#define COLL_FOR_AR (1u << 2)
#define COLL_FOR_A2A (1u << 3)
#define COLL_FOR_ALL (COLL_FOR_AG | COLL_FOR_RS | COLL_FOR_AR | COLL_FOR_A2A)
#define COLL_ALGOS(X)                                                                              \
    X(COLL_ALGO_DEFAULT, "default", COLL_FOR_ALL, true, false)                                     \
    X(COLL_ALGO_UNI, "unidirectional", COLL_FOR_AG | COLL_FOR_RS | COLL_FOR_AR, false, false)      \
    X(COLL_ALGO_BIDI, "bidirectional", COLL_FOR_AG | COLL_FOR_RS | COLL_FOR_AR, true, false)       \
    X(COLL_ALGO_RING_PSUM, "ring_psum", COLL_FOR_AR, true, true)                                   \
    X(COLL_ALGO_RS_AG, "reduce_scatter_all_gather", COLL_FOR_AR, true, false)
#define COLL_ALGO_ENUM(e, ...) e,
enum coll_algo { COLL_ALGOS(COLL_ALGO_ENUM) COLL_ALGO_COUNT };
#undef COLL_ALGO_ENUM

struct op_collective {
    uint64_t bytes;
    int naxes;
    int axes[3];            /* physical axes; for groups, the dimensions of the group torus */
    bool dcn;               /* also across the slices, over the DCN (axes: [dcn, ...], or a
                             * group axis that holds the slices): hierarchical */
    enum coll_algo algo;
    enum dtype dt;          /* reduction dtype */
    /* groups: over logical mesh axes instead of physical ones (topology/mesh.h) */
    bool grouped;
    bool own_mesh;          /* 'mesh' came with the op (groups: {mesh: ...}) */
    int ngroup;
    char group_names[MESH_MAX_AXES][MESH_NAME_MAX];
    int group_axes[MESH_MAX_AXES]; /* indices into 'mesh', resolved after loading */
    struct mesh mesh;       /* the mesh the groups are taken from (copied from the scenario's) */
    /* replica_groups: [[chips], ...] (XLA's name): explicit groups of slice chips, each run as
     * one ring through its chips in the listed order, every hop routed over the torus */
    int nreplica, replica_size; /* groups and chips per group (0: none) */
    int *replica;               /* nreplica x replica_size slice chips (owned) */
    int *replica_pos;           /* per slice chip: its index in 'replica' (owned, after check) */
    /* chip_devices: N > 1: the group also spans the N TensorCores of each chip that are JAX
     * devices (v7: 2), which hold the same tensor ('bytes' per chip is one device's buffer);
     * they swap halves over the die-to-die link before the chips' part (all_reduce,
     * reduce_scatter) and after it (all_reduce, all_gather). 1: chips only. */
    int chip_devices;
};

struct op_collective_matmul {
    /* groups: [tensor] (mesh axes) instead of axis: the ring runs over the group's chips in
     * rank order. First, so that the collectives' group loading and resolution (u.coll)
     * fill it. */
    struct op_collective g;
    int64_t m, k, n;        /* per device and step: x [m, k] (its shard), y [k, n] local */
    enum dtype dt;
    int axis;
    bool overlap;           /* false: all-gather first, then the matmul */
    int scatter;            /* collective: reduce_scatter (1) -- each step computes an [m, n]
                             * block of the partial output and passes the running sum on
                             * ([m, n] per step); else all_gather passes x's shards ([m, k]) */
};

/* One Pallas remote copy per device (make_async_remote_copy): push 'bytes'
 * from this device's HBM to the target's, wait_send, then wait_recv until
 * 'recv_bytes' arrived on the local receive semaphore (0: skip wait_recv). */
struct op_remote_copy {
    uint64_t bytes, recv_bytes;
    int id_kind;                 /* 0: shift (relative MESH), 1: MESH tuple, 2: LOGICAL id */
    int ncoords;
    int coords[3];               /* shift or MESH tuple */
    int64_t logical;
};

/* An HBM array of an XLA op: its shape (rank 0: a scalar) and dtype. */
#define OP_MAX_RANK 5
struct op_array {
    int rank;
    int64_t shape[OP_MAX_RANK];
    enum dtype dt;
};

/* fusion: the general XLA loop fusion (kernels/fusion.h says how it runs).
 * Without 'reduce_axis' the loop walks the shape of out[0], which every
 * output has; with it, the loop walks in[0], and every output is in[0]
 * without that axis. Other inputs broadcast to the loop's shape. */
#define OP_FUSION_MAX_IO 8
struct op_fusion {
    int nin, nout;
    struct op_array in[OP_FUSION_MAX_IO], out[OP_FUSION_MAX_IO];
    double vpu_ops;         /* ALU ops per element of the loop */
    double transcendentals; /* per element of the loop */
    int reduce_axis;        /* -1: none */
    int64_t block;          /* rows per block (elements for a 1-D loop); 0: from the VMEM limit */
};

/* The element-wise functions of 'elementwise' (their ALU and EUP counts are
 * in kernels/xla.c). */
enum xla_fn { XLA_ADD, XLA_SUB, XLA_MUL, XLA_DIV, XLA_MAX, XLA_MIN, XLA_NEG, XLA_ABS, XLA_RELU,
              XLA_SQUARE, XLA_EXP, XLA_LOG, XLA_TANH, XLA_RSQRT, XLA_SQRT, XLA_SIGMOID,
              XLA_SILU, XLA_GELU, XLA_FN_COUNT };
enum xla_mode { XLA_FWD, XLA_BWD };
enum xla_algo { XLA_ADAMW, XLA_SGD, XLA_ADAFACTOR };

/* The named XLA forms (elementwise ... copy); each uses the fields its row
 * in config/op_table.c reads. */
struct op_xla {
    struct op_array x;      /* 'shape' and 'dtype' */
    enum xla_fn fn;         /* elementwise */
    int inputs;             /* elementwise: input arrays (0: the function's arity) */
    enum xla_mode mode;     /* rmsnorm, layernorm, softmax */
    int64_t rows, vocab, d; /* embedding */
    int64_t head_dim;       /* rope: 0 for the shape's own (or 128 for [tokens, width]) */
    enum xla_algo algo;     /* optimizer */
    int64_t params;         /* optimizer: parameters per chip */
    enum dtype param_dt, grad_dt, state_dt;
    int64_t block;          /* rows per block (transpose: tile edge); 0: from the VMEM limit */
};

/* pallas_call: grid, BlockSpecs and body as the scenario writes them. */
struct pc_spec; /* kernels/pcall.h */
struct op_pallas_call {
    struct pc_spec *spec; /* owned */
};

#define OP_MAX_OP_NAME 512 /* op_name: characters */

struct op {
    enum op_kind kind;
    char *name;                /* owned; defaults to the kind's name and index */
    char *op_name;             /* owned; the source program's name for it (XLA's
                                  OpMetadata.op_name, e.g. jit(f)/dot_general); NULL: none */
    bool overlap;              /* do not wait for the previous op's barrier */
    bool functional;           /* compute real numbers and check them */
    uint64_t vmem_limit_bytes; /* 0: the chip's default */
    bool autotune;             /* `block: auto`: study/autotune.h searches its blocks */
    union {
        struct op_hbm_copy hbm_copy;
        struct op_host_copy host_copy;
        struct op_ppermute ppermute;
        struct op_matmul matmul;
        struct op_flash flash;
        struct op_splash splash;
        struct op_paged paged;
        struct op_ragged ragged;
        struct op_collective coll;
        struct op_collective_matmul coll_matmul;
        struct op_remote_copy remote_copy;
        struct op_fusion fusion;
        struct op_xla xla;
        struct op_pallas_call pcall;
    } u;
};

/* The Pallas kernel builders (struct kern_kind, kernels/kernel.h), one per
 * kernels/<kind>.c; the op table (config/op_table.c) names each kind's builder. */
struct kern_kind;
extern const struct kern_kind kern_matmul_kind; /* kernels/matmul.c */
extern const struct kern_kind kern_flash_kind;  /* kernels/flash.c */
extern const struct kern_kind kern_splash_kind; /* kernels/splash.c */
extern const struct kern_kind kern_paged_kind;  /* kernels/paged.c */
extern const struct kern_kind kern_ragged_kind; /* kernels/ragged.c */
extern const struct kern_kind kern_ragged3_kind; /* kernels/ragged3.c */
/* RPA v3's scalar-core bundles to fetch one kv block of bkv_p pages (kernels/ragged3.c). */
double r3_fetch_bundles(int64_t bkv_p);
extern const struct kern_kind kern_fusion_kind; /* kernels/fusion.c */
extern const struct kern_kind kern_xla_kind;    /* kernels/xla.c: the named forms */
extern const struct kern_kind kern_transpose_kind; /* kernels/transpose.c */
extern const struct kern_kind kern_pcall_kind;  /* kernels/pcall.c */

#endif
