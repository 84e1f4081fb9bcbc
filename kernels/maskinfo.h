/* kernels/maskinfo.h -- splash-attention masks and the MaskInfo built from them.
 * An exact C port of jax splash_attention_mask.py (mask classes) and
 * splash_attention_mask_info.py (_process_mask, _process_dynamic_mask), including
 * the entries the kernel never reads (padding, wrap-around, dedup order), so the
 * simulator issues the same DMAs as the real kernel.
 * Semantics: docs/pallas-semantics.md section 4. */
#ifndef TPUSIM_KERNELS_MASKINFO_H
#define TPUSIM_KERNELS_MASKINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Largest |offset|, left, right or chunk accepted by mask_parse_spec(). */
#define MASK_MAX_PARAM ((int64_t)1 << 50)

enum mask_kind { MASK_FULL, MASK_CAUSAL, MASK_LOCAL, MASK_CHUNKED, MASK_DENSE, MASK_AND, MASK_OR };

/* One head's [q_len, kv_len] boolean mask (upstream Mask subclasses).
 * MASK_FULL: FullMask.  MASK_CAUSAL: CausalMask, q + offset >= kv.
 * MASK_LOCAL: LocalMask, q + offset - left <= kv (if left != -1) and
 * q + offset + right >= kv (if right != -1).  MASK_CHUNKED: ChunkedCausalMask,
 * q / chunk == kv / chunk and q >= kv.  MASK_DENSE: NumpyMask.
 * MASK_AND / MASK_OR: LogicalAnd / LogicalOr of 'a' and 'b' (same shape). */
struct mask {
    enum mask_kind kind;
    int64_t q_len, kv_len;
    int64_t offset;      /* causal, local */
    int64_t left, right; /* local window; -1 means None */
    int64_t chunk;       /* chunked causal, > 0 */
    uint8_t *dense;      /* MASK_DENSE: q_len*kv_len bytes 0/1, row-major, owned */
    struct mask *a, *b;  /* MASK_AND / MASK_OR operands, owned */
};

/* Constructors.  Each returns a new mask; caller frees with mask_free().
 * 'q_len' and 'kv_len' must be >= 1.  mask_new_chunked() returns NULL if
 * 'chunk' <= 0 (upstream: "chunk_size must be positive").  mask_new_dense()
 * copies 'data' (q_len*kv_len bytes, any non-zero byte is True; NULL: all
 * False, for the caller to fill). */
struct mask *mask_new_full(int64_t q_len, int64_t kv_len);
struct mask *mask_new_causal(int64_t q_len, int64_t kv_len, int64_t offset);
struct mask *mask_new_local(int64_t q_len, int64_t kv_len, int64_t left, int64_t right,
                            int64_t offset);
struct mask *mask_new_chunked(int64_t q_len, int64_t kv_len, int64_t chunk);
struct mask *mask_new_dense(int64_t q_len, int64_t kv_len, const uint8_t *data);

/* Returns a new MASK_AND or MASK_OR ('kind') of 'a' and 'b' (upstream `a & b`,
 * `a | b`).  Takes ownership of 'a' and 'b', also on failure.  If the shapes differ
 * returns NULL and writes upstream's message ("Invalid shape for other: (Q, K),
 * expected: (Q, K)") to 'err' (size 'n'). */
struct mask *mask_new_logical(enum mask_kind kind, struct mask *a, struct mask *b, char *err,
                              size_t n);

/* Parses "full", "causal[:OFFSET]", "local:LEFT,RIGHT[:OFFSET]" (LEFT/RIGHT are
 * integers >= 0 or "none") or "chunked:C" (C > 0) into a [q_len, kv_len] mask.
 * Returns a new mask; caller frees with mask_free().  On a bad spec returns NULL
 * and writes a one-line message to 'err' (size 'n'). */
struct mask *mask_parse_spec(const char *spec, int64_t q_len, int64_t kv_len, char *err, size_t n);

/* Returns a new MASK_DENSE with the contents of 'm' (upstream NumpyMask of
 * m[:, :]); caller frees with mask_free(). */
struct mask *mask_dense_from(const struct mask *m);


void mask_free(struct mask *m); /* NULL is a no-op; frees operands and dense data */

/* Returns a deep copy of 'm' (operands and dense data too; NULL for NULL);
 * caller frees with mask_free(). mask_equal(m, copy) holds. */
struct mask *mask_copy(const struct mask *m);

/* The mask's value at ('q', 'kv'); both must be in range. */
bool mask_at(const struct mask *m, int64_t q, int64_t kv);

/* Upstream __eq__, the key of head-mask deduplication: masks of different kinds
 * (e.g. MASK_FULL and an all-True MASK_DENSE) are never equal, except a mask with
 * itself; same-kind masks compare shape and parameters (causal: offset; local:
 * left, right, offset; chunked: chunk), MASK_DENSE compares contents and
 * MASK_AND/MASK_OR compare operands in order. */
bool mask_equal(const struct mask *a, const struct mask *b);

/* True for the kinds the kernel computes in-kernel from q_sequence and a mask
 * function (upstream _ComputableMask): MASK_CAUSAL, MASK_LOCAL, MASK_CHUNKED. */
bool mask_is_computable(const struct mask *m);

/* Upstream _check_mask (which _process_mask does not call): returns -1 and writes
 * upstream's message ("Some rows of the mask (along the kv dimension) are all
 * zeros. ...softmax.") to 'err' if a q row has no True entry, else 0. */
int mask_check_rows(const struct mask *m, char *err, size_t n);

/* MaskInfo of a multi-head mask, as the kernels see it in SMEM.
 * block_mask/data_next/mask_next are row-major [rows][nq][nk]; 'nq' x 'nk' is the
 * (possibly shrunk) grid: fwd/dq shrink nk (kept blocks packed left), dkv shrinks
 * nq (kept blocks packed at the bottom; with several q shards each shard has
 * nq / q_seq_shards rows).  rows = head_shards when every head shard uses a single
 * mask (the arrays are broadcast to the shard's heads), else the number of heads.
 * block_mask: 0 empty, 1 partial, 2 full.  data_next: kv block (fwd/dq) or q block
 * relative to the q shard (dkv) to fetch at that step.  mask_next: index into
 * partial_blocks.  Values stored are int32 whatever the SMEM type. */
struct mask_info {
    int rows, nq, nk;
    int32_t *block_mask, *data_next, *mask_next; /* owned; mask_next NULL when upstream's is
                                                    None: no partial block, or computable */
    int num_partial;         /* unique partial blocks (dynamic: all rows*nq_full*nk_full blocks);
                                0 when computable (upstream partial_mask_blocks is None) */
    uint8_t *partial_blocks; /* owned; [num_partial][bq][bkv] 0/1, dkv: [num_partial][bkv][bq];
                                NULL when num_partial == 0 */
    /* SMEM downcast (upstream _downcast_to_small_type, per array): bytes per element
     * (1, 2 or 4; 0 for an absent mask_next).  elem_bytes is the max of the three. */
    int elem_bytes;
    int block_mask_bytes, data_next_bytes, mask_next_bytes;
    bool computable; /* single computable mask: q_sequence = arange(Q) is used, no mask blocks */
    bool dynamic;    /* built by the dynamic path: no dedup, no lookahead, no shrinking */
    bool is_dkv;
    bool shrunk; /* the grid-shrinking step ran */
    int bq, bkv; /* block shape the info was built with */
    int heads;   /* heads of the input mask */
    int head_shards, q_seq_shards;
    int nq_full, nk_full; /* unshrunk grid: Q / bq, K / bkv */
};

struct maskinfo_params {
    int bq, bkv;      /* block_q / block_kv of the kernel (dkv: block_q_dkv, block_kv_dkv) */
    bool is_dkv;      /* process_mask_dkv instead of process_mask */
    int head_shards;  /* >= 1 */
    int q_seq_shards; /* >= 1 */
    bool shrink_grid; /* upstream default true; the dkv kernel passes !use_fused_bwd_kernel */
    bool dynamic;     /* process_dynamic_mask (a jax.Array mask) instead of process_mask */
    bool downcast;    /* downcast_smem_data, upstream default true */
};

/* Fills 'p' with upstream's defaults for a (bq, bkv) block: fwd, 1 head shard,
 * 1 q shard, shrink_grid and downcast on, static mask. */
void maskinfo_params_init(struct maskinfo_params *p, int bq, int bkv);

/* Computes the MaskInfo of the 'nheads' masks 'heads' (upstream MultiHeadMask;
 * borrowed) into 'out', which the caller later releases with maskinfo_free().
 * Returns 0, or -1 with 'out' zeroed and upstream's message in 'err' (size 'n'),
 * e.g. "q_block_size=48 should divide q_seq_len=64.".  Where upstream fails with a
 * Python/numpy exception rather than a ValueError (a q shard whose blocks are all
 * empty while shrinking; several q shards, shrinking and no partial block) this
 * returns -1 too, with a message naming that failure. */
int maskinfo_process(struct mask *const *heads, int nheads, const struct maskinfo_params *p,
                     struct mask_info *out, char *err, size_t n);

void maskinfo_free(struct mask_info *mi); /* frees the arrays and zeroes 'mi'; NULL is a no-op */

/* Number of entries with block_mask > 0 (blocks the kernel computes). */
int64_t maskinfo_nonempty_blocks(const struct mask_info *mi);

/* Fraction of blocks skipped: entries of the UNSHRUNK grid with block_mask == 0,
 * i.e. 1 - maskinfo_nonempty_blocks() / (rows * nq_full * nk_full).  Shrinking
 * only drops empty blocks, so this is the share of (row, q, kv) blocks whose
 * compute is skipped, not the share of grid steps left after shrinking. */
double maskinfo_skipped_fraction(const struct mask_info *mi);

/* The width maskinfo_process() would give the mask-driven axis of the
 * shrunk grid of mask 'm' with (bq, bkv) blocks, without building anything:
 * the most kv blocks (fwd/dq) or q blocks ('dkv') that one q (kv) block row
 * touches, in O(rows) closed form. Known for full, causal, local and chunked
 * masks whose blocks divide the lengths; -1 for the others. */
int64_t maskinfo_width(const struct mask *m, int64_t bq, int64_t bkv, bool dkv);

/* Width of the kernel grid's mask-driven axis: nk (fwd/dq) or nq (dkv). */
int maskinfo_grid_width(const struct mask_info *mi);

/* Prints block_mask, data_next, mask_next (or null), num_partial_blocks,
 * grid_width and skipped_fraction to 'out'.  'json': one JSON object on one line
 * with exactly those keys; the arrays nested as [rows][nq][nk]. */
void maskinfo_print(FILE *out, const struct mask_info *mi, bool json);

#endif
