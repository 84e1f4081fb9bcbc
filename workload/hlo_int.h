/* workload/hlo_int.h -- what hlo.c (the parser) and hlo_lower.c (the
 * lowering) share: the opcode table, the name table. */
#ifndef TPUSIM_WORKLOAD_HLO_INT_H
#define TPUSIM_WORKLOAD_HLO_INT_H

#include "workload/hlo.h"

#define HLO_TUPLE (-1)

/* How an instruction is priced (workload/hlo.h). */
enum hlo_class {
    HLO_C_BYTES,   /* a copy of what it reads and writes */
    HLO_C_SLICE,   /* reads and writes its output's bytes (slices, gathers) */
    HLO_C_UPDATE,  /* in place: reads and writes its update (operand 1) */
    HLO_C_FREE,    /* aliases its operand (bitcast, tuple, get-tuple-element) */
    HLO_C_PARAM,
    HLO_C_CONST,
    HLO_C_DOT,
    HLO_C_FUSION,
    HLO_C_COLL,    /* a collective, synchronous */
    HLO_C_START,   /* a collective's start */
    HLO_C_DONE,    /* the done of a start (aliases it) */
    HLO_C_ASYNC,   /* async-start: a computation run beside the stream */
    HLO_C_WHILE,
    HLO_C_CALL,
    HLO_C_COND,
    HLO_C_CUSTOM,
    HLO_C_REFUSED  /* send, recv, infeed, outfeed */
};

struct hlo_op_row {
    const char *name;
    enum hlo_class cls;
};

#define HLO_OPCODES(X)                                                                             \
    X(ABS, "abs", HLO_C_BYTES) X(ADD, "add", HLO_C_BYTES)                                         \
    X(ADD_DEPENDENCY, "add-dependency", HLO_C_FREE) X(AFTER_ALL, "after-all", HLO_C_FREE)          \
    X(ALL_GATHER, "all-gather", HLO_C_COLL) X(ALL_GATHER_START, "all-gather-start", HLO_C_START)   \
    X(ALL_GATHER_DONE, "all-gather-done", HLO_C_DONE) X(ALL_REDUCE, "all-reduce", HLO_C_COLL)      \
    X(ALL_REDUCE_START, "all-reduce-start", HLO_C_START)                                          \
    X(ALL_REDUCE_DONE, "all-reduce-done", HLO_C_DONE) X(ALL_TO_ALL, "all-to-all", HLO_C_COLL)      \
    X(RAGGED_ALL_TO_ALL, "ragged-all-to-all", HLO_C_COLL) X(AND, "and", HLO_C_BYTES)               \
    X(ASYNC_START, "async-start", HLO_C_ASYNC) X(ASYNC_UPDATE, "async-update", HLO_C_FREE)         \
    X(ASYNC_DONE, "async-done", HLO_C_DONE) X(ATAN2, "atan2", HLO_C_BYTES)                         \
    X(BATCH_NORM_GRAD, "batch-norm-grad", HLO_C_BYTES)                                            \
    X(BATCH_NORM_INFERENCE, "batch-norm-inference", HLO_C_BYTES)                                  \
    X(BATCH_NORM_TRAINING, "batch-norm-training", HLO_C_BYTES) X(BITCAST, "bitcast", HLO_C_FREE)   \
    X(BITCAST_CONVERT, "bitcast-convert", HLO_C_BYTES) X(BROADCAST, "broadcast", HLO_C_BYTES)      \
    X(CALL, "call", HLO_C_CALL) X(CBRT, "cbrt", HLO_C_BYTES) X(CEIL, "ceil", HLO_C_BYTES)          \
    X(CHOLESKY, "cholesky", HLO_C_BYTES) X(CLAMP, "clamp", HLO_C_BYTES)                            \
    X(CLZ, "count-leading-zeros", HLO_C_BYTES)                                                    \
    X(COLLECTIVE_BROADCAST, "collective-broadcast", HLO_C_COLL)                                   \
    X(COLLECTIVE_PERMUTE, "collective-permute", HLO_C_COLL)                                       \
    X(COLLECTIVE_PERMUTE_START, "collective-permute-start", HLO_C_START)                          \
    X(COLLECTIVE_PERMUTE_DONE, "collective-permute-done", HLO_C_DONE)                             \
    X(COMPARE, "compare", HLO_C_BYTES) X(COMPLEX, "complex", HLO_C_BYTES)                          \
    X(CONCATENATE, "concatenate", HLO_C_BYTES) X(CONDITIONAL, "conditional", HLO_C_COND)           \
    X(CONSTANT, "constant", HLO_C_CONST) X(CONVERT, "convert", HLO_C_BYTES)                        \
    X(CONVOLUTION, "convolution", HLO_C_DOT) X(COPY, "copy", HLO_C_BYTES)                        \
    X(COPY_START, "copy-start", HLO_C_BYTES) X(COPY_DONE, "copy-done", HLO_C_FREE)                 \
    X(COSINE, "cosine", HLO_C_BYTES) X(CUSTOM_CALL, "custom-call", HLO_C_CUSTOM)                   \
    X(DIVIDE, "divide", HLO_C_BYTES) X(DOMAIN, "domain", HLO_C_FREE) X(DOT, "dot", HLO_C_DOT)      \
    X(DYNAMIC_RESHAPE, "dynamic-reshape", HLO_C_BYTES)                                            \
    X(DYNAMIC_SLICE, "dynamic-slice", HLO_C_SLICE)                                                \
    X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice", HLO_C_UPDATE) X(ERF, "erf", HLO_C_BYTES)       \
    X(EXP, "exponential", HLO_C_BYTES) X(EXPM1, "exponential-minus-one", HLO_C_BYTES)              \
    X(FFT, "fft", HLO_C_BYTES) X(FLOOR, "floor", HLO_C_BYTES) X(FUSION, "fusion", HLO_C_FUSION)    \
    X(GATHER, "gather", HLO_C_SLICE) X(GET_DIMENSION_SIZE, "get-dimension-size", HLO_C_FREE)       \
    X(GET_TUPLE_ELEMENT, "get-tuple-element", HLO_C_FREE) X(IMAG, "imag", HLO_C_BYTES)             \
    X(INFEED, "infeed", HLO_C_REFUSED) X(IOTA, "iota", HLO_C_BYTES)                                \
    X(IS_FINITE, "is-finite", HLO_C_BYTES) X(LOG, "log", HLO_C_BYTES)                              \
    X(LOG1P, "log-plus-one", HLO_C_BYTES) X(LOGISTIC, "logistic", HLO_C_BYTES)                     \
    X(MAP, "map", HLO_C_BYTES) X(MAXIMUM, "maximum", HLO_C_BYTES)                                  \
    X(MINIMUM, "minimum", HLO_C_BYTES) X(MULTIPLY, "multiply", HLO_C_BYTES)                        \
    X(NEGATE, "negate", HLO_C_BYTES) X(NOT, "not", HLO_C_BYTES)                                    \
    X(OPT_BARRIER, "opt-barrier", HLO_C_FREE) X(OR, "or", HLO_C_BYTES)                             \
    X(OUTFEED, "outfeed", HLO_C_REFUSED) X(PAD, "pad", HLO_C_BYTES)                                \
    X(PARAMETER, "parameter", HLO_C_PARAM) X(PARTITION_ID, "partition-id", HLO_C_FREE)             \
    X(POPCNT, "popcnt", HLO_C_BYTES) X(POWER, "power", HLO_C_BYTES) X(REAL, "real", HLO_C_BYTES)   \
    X(RECV, "recv", HLO_C_REFUSED) X(RECV_DONE, "recv-done", HLO_C_REFUSED)                        \
    X(REDUCE, "reduce", HLO_C_BYTES) X(REDUCE_PRECISION, "reduce-precision", HLO_C_BYTES)          \
    X(REDUCE_SCATTER, "reduce-scatter", HLO_C_COLL) X(REDUCE_WINDOW, "reduce-window", HLO_C_BYTES) \
    X(REMAINDER, "remainder", HLO_C_BYTES) X(REPLICA_ID, "replica-id", HLO_C_FREE)                 \
    X(RESHAPE, "reshape", HLO_C_BYTES) X(REVERSE, "reverse", HLO_C_BYTES)                          \
    X(RNG, "rng", HLO_C_BYTES) X(RNG_BIT_GENERATOR, "rng-bit-generator", HLO_C_BYTES)              \
    X(RNG_GET_AND_UPDATE_STATE, "rng-get-and-update-state", HLO_C_FREE)                           \
    X(ROUND_AFZ, "round-nearest-afz", HLO_C_BYTES) X(ROUND_EVEN, "round-nearest-even", HLO_C_BYTES) \
    X(RSQRT, "rsqrt", HLO_C_BYTES) X(SCATTER, "scatter", HLO_C_UPDATE)                              \
    X(SELECT, "select", HLO_C_BYTES) X(SELECT_AND_SCATTER, "select-and-scatter", HLO_C_BYTES)      \
    X(SEND, "send", HLO_C_REFUSED) X(SEND_DONE, "send-done", HLO_C_REFUSED)                        \
    X(SET_DIMENSION_SIZE, "set-dimension-size", HLO_C_FREE) X(SHL, "shift-left", HLO_C_BYTES)      \
    X(SHRA, "shift-right-arithmetic", HLO_C_BYTES) X(SHRL, "shift-right-logical", HLO_C_BYTES)     \
    X(SIGN, "sign", HLO_C_BYTES) X(SINE, "sine", HLO_C_BYTES) X(SLICE, "slice", HLO_C_SLICE)       \
    X(SORT, "sort", HLO_C_BYTES) X(SQRT, "sqrt", HLO_C_BYTES)                                      \
    X(STOCHASTIC_CONVERT, "stochastic-convert", HLO_C_BYTES)                                      \
    X(SUBTRACT, "subtract", HLO_C_BYTES) X(TAN, "tan", HLO_C_BYTES) X(TANH, "tanh", HLO_C_BYTES)   \
    X(TOPK, "topk", HLO_C_BYTES) X(TRANSPOSE, "transpose", HLO_C_BYTES)                            \
    X(TRIANGULAR_SOLVE, "triangular-solve", HLO_C_BYTES) X(TUPLE, "tuple", HLO_C_FREE)             \
    X(WHILE, "while", HLO_C_WHILE) X(XOR, "xor", HLO_C_BYTES)

enum hlo_opcode {
#define X(e, n, c) HLO_OP_##e,
    HLO_OPCODES(X)
#undef X
    HLO_OP_COUNT
};

enum hlo_class hlo_class_of(int opcode);
const char *hlo_type_name(int type);
int hlo_type_bytes(int type);
int64_t hlo_shape_elems(const struct hlo_shape *s);

/* A table of names (borrowed) to ints. */
struct hlo_names *hlo_names_new(void);
void hlo_names_free(struct hlo_names *t);
/* Adds 'key' -> 'val'; returns the old value if 'key' was there (left as it was), else -1. */
int hlo_names_put(struct hlo_names *t, const char *key, int val);
/* Sets the value of 'key' (already there). */
void hlo_names_set(struct hlo_names *t, const char *key, int val);
int hlo_names_get(const struct hlo_names *t, const char *key);

/* Replica groups in XLA's mesh-axes form (mesh['a'=2,'b'=4] {'b'}, sub-axes
 * 'a':(pre)size, an optional device_ids=(...)) as 'ng' groups of 'gs' device
 * ids (dev: ng x gs, the caller frees it); false with a message in 'err'
 * (workload/hlo_mesh.c). */
struct hlo_mesh_groups {
    int64_t *dev;
    int ng, gs;
};
bool hlo_mesh_groups(const char *text, int64_t ndev, struct hlo_mesh_groups *g, char *err,
                     size_t errn);

#endif
