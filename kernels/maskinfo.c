/* kernels/maskinfo.c -- splash-attention masks and their MaskInfo (see maskinfo.h).
 * A paraphrase in C of jax jax/experimental/pallas/ops/tpu/splash_attention/
 * splash_attention_mask.py and splash_attention_mask_info.py; each step names the
 * upstream function it follows.  Full, causal, local and chunked masks are one kv
 * interval per q row, so classifying a block costs O(bq), not O(bq * bkv). */
#include "kernels/maskinfo.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/xalloc.h"

static int64_t sat_add(int64_t x, int64_t y)
{
    int64_t r;
    if (__builtin_add_overflow(x, y, &r))
        return y > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t min64(int64_t x, int64_t y)
{
    return x < y ? x : y;
}
static int64_t max64(int64_t x, int64_t y)
{
    return x > y ? x : y;
}

/* ---- masks (splash_attention_mask.py) ---- */

static struct mask *mask_alloc(enum mask_kind kind, int64_t q_len, int64_t kv_len)
{
    struct mask *m = xcalloc(1, sizeof *m);
    m->kind = kind;
    m->q_len = q_len;
    m->kv_len = kv_len;
    m->left = m->right = -1;
    return m;
}

struct mask *mask_new_full(int64_t q_len, int64_t kv_len)
{
    return mask_alloc(MASK_FULL, q_len, kv_len);
}

struct mask *mask_new_causal(int64_t q_len, int64_t kv_len, int64_t offset)
{
    struct mask *m = mask_alloc(MASK_CAUSAL, q_len, kv_len);
    m->offset = offset;
    return m;
}

struct mask *mask_new_local(int64_t q_len, int64_t kv_len, int64_t left, int64_t right,
                            int64_t offset)
{
    struct mask *m = mask_alloc(MASK_LOCAL, q_len, kv_len);
    m->left = left < 0 ? -1 : left;
    m->right = right < 0 ? -1 : right;
    m->offset = offset;
    return m;
}

struct mask *mask_new_chunked(int64_t q_len, int64_t kv_len, int64_t chunk)
{
    if (chunk <= 0)
        return NULL;
    struct mask *m = mask_alloc(MASK_CHUNKED, q_len, kv_len);
    m->chunk = chunk;
    return m;
}

struct mask *mask_new_dense(int64_t q_len, int64_t kv_len, const uint8_t *data)
{
    struct mask *m = mask_alloc(MASK_DENSE, q_len, kv_len);
    size_t count = (size_t)q_len * (size_t)kv_len;
    m->dense = xcalloc((size_t)q_len, (size_t)kv_len); /* checks the product */
    for (size_t i = 0; data && i < count; i++)
        m->dense[i] = data[i] != 0;
    return m;
}

struct mask *mask_new_logical(enum mask_kind kind, struct mask *a, struct mask *b, char *err,
                              size_t n)
{
    if (a->q_len != b->q_len || a->kv_len != b->kv_len) {
        /* Mask.__or__ / Mask.__and__ */
        diag_fail(err, n,
                "Invalid shape for other: (%" PRId64 ", %" PRId64 "), expected: (%" PRId64
                ", %" PRId64 ")",
                b->q_len, b->kv_len, a->q_len, a->kv_len);
        mask_free(a);
        mask_free(b);
        return NULL;
    }
    struct mask *m = mask_alloc(kind == MASK_OR ? MASK_OR : MASK_AND, a->q_len, a->kv_len);
    m->a = a;
    m->b = b;
    return m;
}

struct mask *mask_copy(const struct mask *m)
{
    if (!m)
        return NULL;
    struct mask *c = xmalloc(sizeof *c);
    *c = *m;
    if (m->dense) {
        size_t n = (size_t)m->q_len * (size_t)m->kv_len;
        c->dense = xmalloc(n);
        memcpy(c->dense, m->dense, n);
    }
    c->a = mask_copy(m->a);
    c->b = mask_copy(m->b);
    return c;
}

void mask_free(struct mask *m)
{
    if (!m)
        return;
    mask_free(m->a);
    mask_free(m->b);
    free(m->dense);
    free(m);
}

bool mask_is_computable(const struct mask *m)
{
    return m->kind == MASK_CAUSAL || m->kind == MASK_LOCAL || m->kind == MASK_CHUNKED;
}

/* The inclusive kv range [*lo, *hi] that is True in row 'q', for the kinds whose
 * rows are one interval (full, causal, local, chunked); false for the others.
 * Mask functions: CausalMask, LocalMask, ChunkedCausalMask in upstream. */
static bool row_interval(const struct mask *m, int64_t q, int64_t *lo, int64_t *hi)
{
    int64_t s = sat_add(q, m->offset);
    switch (m->kind) {
    case MASK_FULL:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        return true;
    case MASK_CAUSAL:
        *lo = INT64_MIN;
        *hi = s;
        return true;
    case MASK_LOCAL:
        *lo = m->left < 0 ? INT64_MIN : sat_add(s, -m->left);
        *hi = m->right < 0 ? INT64_MAX : sat_add(s, m->right);
        return true;
    case MASK_CHUNKED:
        *lo = q / m->chunk * m->chunk; /* q >= 0: C division is Python's // */
        *hi = q;
        return true;
    default:
        return false;
    }
}

/* Writes mask values of row 'q', columns [k0, k0 + len), to 'out' as 0/1 bytes. */
static void mask_row(const struct mask *m, int64_t q, int64_t k0, int64_t len, uint8_t *out)
{
    int64_t lo, hi;
    if (row_interval(m, q, &lo, &hi)) {
        lo = max64(lo, k0);
        hi = min64(hi, k0 + len - 1);
        memset(out, 0, (size_t)len);
        if (lo <= hi)
            memset(out + (lo - k0), 1, (size_t)(hi - lo + 1));
        return;
    }
    if (m->kind == MASK_DENSE) {
        memcpy(out, m->dense + q * m->kv_len + k0, (size_t)len);
        return;
    }
    uint8_t *tmp = xmalloc((size_t)len);
    mask_row(m->a, q, k0, len, out);
    mask_row(m->b, q, k0, len, tmp);
    for (int64_t i = 0; i < len; i++)
        out[i] = m->kind == MASK_AND ? (out[i] & tmp[i]) : (out[i] | tmp[i]);
    free(tmp);
}

bool mask_at(const struct mask *m, int64_t q, int64_t kv)
{
    int64_t lo, hi;
    if (row_interval(m, q, &lo, &hi))
        return lo <= kv && kv <= hi;
    switch (m->kind) {
    case MASK_DENSE:
        return m->dense[q * m->kv_len + kv] != 0;
    case MASK_AND:
        return mask_at(m->a, q, kv) && mask_at(m->b, q, kv);
    default:
        return mask_at(m->a, q, kv) || mask_at(m->b, q, kv);
    }
}

bool mask_equal(const struct mask *a, const struct mask *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind || a->q_len != b->q_len || a->kv_len != b->kv_len)
        return false;
    switch (a->kind) {
    case MASK_FULL:
        return true;
    case MASK_CAUSAL:
        return a->offset == b->offset;
    case MASK_LOCAL:
        return a->left == b->left && a->right == b->right && a->offset == b->offset;
    case MASK_CHUNKED:
        return a->chunk == b->chunk;
    case MASK_DENSE:
        return memcmp(a->dense, b->dense, (size_t)a->q_len * (size_t)a->kv_len) == 0;
    default: /* dataclass __eq__ of LogicalAnd / LogicalOr: (left, right) in order */
        return mask_equal(a->a, b->a) && mask_equal(a->b, b->b);
    }
}

struct mask *mask_dense_from(const struct mask *m)
{
    struct mask *d = mask_alloc(MASK_DENSE, m->q_len, m->kv_len);
    d->dense = xcalloc((size_t)m->q_len, (size_t)m->kv_len); /* checks the product */
    for (int64_t q = 0; q < m->q_len; q++)
        mask_row(m, q, 0, m->kv_len, d->dense + q * m->kv_len);
    return d;
}

int mask_check_rows(const struct mask *m, char *err, size_t n)
{
    uint8_t *row = xmalloc((size_t)m->kv_len);
    int rc = 0;
    for (int64_t q = 0; q < m->q_len && rc == 0; q++) {
        mask_row(m, q, 0, m->kv_len, row);
        if (!memchr(row, 1, (size_t)m->kv_len))
            rc = diag_fail(err, n,
                           "Some rows of the mask (along the kv dimension) are all zeros.\nThis is"
                           " would result in a division by zero when computing the attention"
                           " softmax.");
    }
    free(row);
    return rc;
}

/* ---- mask_parse_spec ---- */

/* Parses the whole of 's' as an integer in [lo, hi], or "none" (-1) if 'none_ok'. */
static bool parse_int(const char *s, bool none_ok, int64_t lo, int64_t hi, int64_t *out)
{
    if (none_ok && strcmp(s, "none") == 0) {
        *out = -1;
        return true;
    }
    if (*s == '\0' || *s == ' ' || *s == '\t')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Parses "LEFT,RIGHT[:OFFSET]" of a local spec. */
static struct mask *parse_local(const char *spec, const char *args, int64_t q_len, int64_t kv_len,
                                char *err, size_t n)
{
    char buf[3][64] = {{0}};
    const char *comma = strchr(args, ',');
    const char *colon = comma ? strchr(comma + 1, ':') : NULL;
    size_t l0 = comma ? (size_t)(comma - args) : 0;
    size_t l1 = comma ? (colon ? (size_t)(colon - comma - 1) : strlen(comma + 1)) : 0;
    if (!comma || l0 >= sizeof buf[0] || l1 >= sizeof buf[1] ||
        (colon && strlen(colon + 1) >= sizeof buf[2])) {
        diag_fail(err, n, "bad mask spec '%s': expected local:LEFT,RIGHT[:OFFSET]", spec);
        return NULL;
    }
    memcpy(buf[0], args, l0);
    memcpy(buf[1], comma + 1, l1);
    strcpy(buf[2], colon ? colon + 1 : "0");
    int64_t left, right, offset;
    if (!parse_int(buf[0], true, 0, MASK_MAX_PARAM, &left) ||
        !parse_int(buf[1], true, 0, MASK_MAX_PARAM, &right)) {
        diag_fail(err, n,
                "bad mask spec '%s': LEFT and RIGHT must be 'none' or integers in [0, %" PRId64 "]",
                spec, MASK_MAX_PARAM);
        return NULL;
    }
    if (!parse_int(buf[2], false, -MASK_MAX_PARAM, MASK_MAX_PARAM, &offset)) {
        diag_fail(err, n,
                "bad mask spec '%s': OFFSET '%s' is not an integer in [-%" PRId64 ", %" PRId64 "]",
                spec, buf[2], MASK_MAX_PARAM, MASK_MAX_PARAM);
        return NULL;
    }
    return mask_new_local(q_len, kv_len, left, right, offset);
}

static struct mask *parse_causal(const char *spec, const char *args, int64_t q_len, int64_t kv_len,
                                 char *err, size_t n)
{
    int64_t offset = 0;
    if (args && !parse_int(args, false, -MASK_MAX_PARAM, MASK_MAX_PARAM, &offset)) {
        diag_fail(err, n,
                "bad mask spec '%s': OFFSET '%s' is not an integer in [-%" PRId64 ", %" PRId64 "]",
                spec, args, MASK_MAX_PARAM, MASK_MAX_PARAM);
        return NULL;
    }
    return mask_new_causal(q_len, kv_len, offset);
}

static struct mask *parse_chunked(const char *spec, const char *args, int64_t q_len, int64_t kv_len,
                                  char *err, size_t n)
{
    int64_t chunk;
    if (!args || !parse_int(args, false, INT64_MIN, INT64_MAX, &chunk)) {
        diag_fail(err, n, "bad mask spec '%s': expected chunked:C with an integer C", spec);
        return NULL;
    }
    if (chunk <= 0 || chunk > MASK_MAX_PARAM) {
        /* ChunkedCausalMask's own message for chunk <= 0 */
        diag_fail(err, n, "bad mask spec '%s': chunk_size must be positive%s", spec,
                  chunk > 0 ? " and at most 2^50" : "");
        return NULL;
    }
    return mask_new_chunked(q_len, kv_len, chunk);
}

struct mask *mask_parse_spec(const char *spec, int64_t q_len, int64_t kv_len, char *err, size_t n)
{
    if (q_len < 1 || kv_len < 1) {
        diag_fail(err, n, "mask shape (%" PRId64 ", %" PRId64 ") must be positive", q_len, kv_len);
        return NULL;
    }
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *args = colon ? colon + 1 : NULL;
    if (klen == 4 && strncmp(spec, "full", 4) == 0 && !args)
        return mask_new_full(q_len, kv_len);
    if (klen == 6 && strncmp(spec, "causal", 6) == 0)
        return parse_causal(spec, args, q_len, kv_len, err, n);
    if (klen == 5 && strncmp(spec, "local", 5) == 0 && args)
        return parse_local(spec, args, q_len, kv_len, err, n);
    if (klen == 7 && strncmp(spec, "chunked", 7) == 0)
        return parse_chunked(spec, args, q_len, kv_len, err, n);
    diag_fail(err, n,
              "bad mask spec '%s': expected full, causal[:OFFSET], local:LEFT,RIGHT[:OFFSET] or "
              "chunked:C",
              spec);
    return NULL;
}


/* ---- unique partial blocks (_HashableNDArray keys of partial_mask_block_ids) ---- */

struct blockset {
    size_t bytes;   /* per block */
    uint8_t *data;  /* [count][bytes] */
    uint64_t *hash; /* [count] */
    size_t count, cap;
    int32_t *slot; /* open addressing: block id + 1, 0 = empty */
    size_t nslot;  /* power of two, > 2 * count */
};

static uint64_t block_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h ^ (h >> 32);
}

static void blockset_place(struct blockset *s, size_t id)
{
    size_t i = s->hash[id] & (s->nslot - 1);
    while (s->slot[i])
        i = (i + 1) & (s->nslot - 1);
    s->slot[i] = (int32_t)id + 1;
}

static void blockset_rehash(struct blockset *s)
{
    free(s->slot);
    s->nslot = s->nslot ? s->nslot * 2 : 64;
    s->slot = xcalloc(s->nslot, sizeof *s->slot);
    for (size_t id = 0; id < s->count; id++)
        blockset_place(s, id);
}

/* Returns the id of 'blk' ('bytes' bytes), adding it with the next id if new:
 * ids follow first appearance, as collections.defaultdict(lambda: len(...)). */
static int32_t blockset_intern(struct blockset *s, const uint8_t *blk)
{
    uint64_t h = block_hash(blk, s->bytes);
    for (size_t i = s->nslot ? h & (s->nslot - 1) : 0; s->nslot && s->slot[i];
         i = (i + 1) & (s->nslot - 1)) {
        size_t id = (size_t)s->slot[i] - 1;
        if (s->hash[id] == h && memcmp(s->data + id * s->bytes, blk, s->bytes) == 0)
            return (int32_t)id;
    }
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->data = xrealloc(s->data, s->cap * s->bytes);
        s->hash = xrealloc(s->hash, s->cap * sizeof *s->hash);
    }
    memcpy(s->data + s->count * s->bytes, blk, s->bytes);
    s->hash[s->count++] = h;
    if (2 * s->count >= s->nslot)
        blockset_rehash(s);
    else
        blockset_place(s, s->count - 1);
    return (int32_t)s->count - 1;
}

static void blockset_fini(struct blockset *s)
{
    free(s->data);
    free(s->hash);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* ---- block classification ---- */

/* block_class() for the kinds whose rows are one interval [lo(q), hi(q)] with
 * lo <= hi and both non-decreasing in q (full, causal, local, chunked: see
 * row_interval), in O(log bq) rather than a row at a time: the block is all
 * True when its last row starts by k0 and its first row ends by k1; the rows
 * reaching k0 are a suffix and those starting by k1 a prefix, so some row meets
 * [k0, k1] when the first row reaching k0 starts by k1. */
static int interval_block_class(const struct mask *m, int64_t q0, int64_t k0, int bq, int bkv)
{
    int64_t k1 = k0 + bkv - 1, q1 = q0 + bq - 1, lo, hi, lo1, hi0;
    row_interval(m, q0, &lo, &hi0);
    row_interval(m, q1, &lo1, &hi);
    if (hi < k0)
        return 0; /* not even the last row reaches k0 */
    int64_t a = q0, b = q1; /* the first row with hi >= k0, in [a, b] */
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        row_interval(m, mid, &lo, &hi);
        if (hi >= k0)
            b = mid;
        else
            a = mid + 1;
    }
    row_interval(m, a, &lo, &hi);
    if (lo > k1)
        return 0;
    return lo1 <= k0 && hi0 >= k1 ? 2 : 1;
}

/* Class of block [q0, q0 + bq) x [k0, k0 + bkv) of 'm': 0 if it has no True, 2 if
 * all True, 1 if mixed (chunk.any() / chunk.all() in _process_mask).
 * 'row' is scratch of bkv bytes. */
static int block_class(const struct mask *m, int64_t q0, int64_t k0, int bq, int bkv, uint8_t *row)
{
    if (m->kind != MASK_DENSE && m->kind != MASK_AND && m->kind != MASK_OR)
        return interval_block_class(m, q0, k0, bq, bkv);
    bool any = false, all = true;
    int64_t k1 = k0 + bkv - 1;
    for (int64_t q = q0; q < q0 + bq && (all || !any); q++) {
        int64_t lo, hi;
        if (row_interval(m, q, &lo, &hi)) {
            any = any || (max64(lo, k0) <= min64(hi, k1));
            all = all && lo <= k0 && hi >= k1;
        } else {
            mask_row(m, q, k0, bkv, row);
            any = any || memchr(row, 1, (size_t)bkv) != NULL;
            all = all && memchr(row, 0, (size_t)bkv) == NULL;
        }
    }
    return any ? (all ? 2 : 1) : 0;
}

/* Writes block [q0, q0 + bq) x [k0, k0 + bkv) of 'm' to 'out' ([bq][bkv]). */
static void block_fill(const struct mask *m, int64_t q0, int64_t k0, int bq, int bkv, uint8_t *out)
{
    for (int i = 0; i < bq; i++)
        mask_row(m, q0 + i, k0, bkv, out + (size_t)i * (size_t)bkv);
}

/* Returns a new [bkv][bq] transpose of the 'count' [bq][bkv] blocks in 'src'. */
static uint8_t *blocks_transpose(const uint8_t *src, size_t count, int bq, int bkv)
{
    size_t bytes = (size_t)bq * (size_t)bkv;
    uint8_t *dst = xmalloc(count * bytes); /* xmalloc(0) is valid */
    for (size_t b = 0; b < count; b++)
        for (int i = 0; i < bq; i++)
            for (int j = 0; j < bkv; j++)
                dst[b * bytes + (size_t)j * bq + i] = src[b * bytes + (size_t)i * bkv + j];
    return dst;
}

/* ---- _process_mask ---- */

struct work {
    const struct maskinfo_params *p;
    struct mask *const *heads;
    int H, nq, nk, hps, qps, nuniq, rows;
    bool one_per_shard; /* masks_per_head_shard == 1 */
    bool has_partial;   /* has_mask_next */
    bool computable;    /* one unique mask with a mask_function */
    int *uid;           /* [H] unique mask id of each head */
    int *uhead;         /* [nuniq] first head of each unique mask */
    uint8_t *cls;       /* [nuniq][nq][nk] block class */
    int32_t *pid;       /* [nuniq][nq][nk] partial block id, -1 if not partial */
    struct blockset parts;
};

static size_t at3(int n1, int n2, int i0, int i1, int i2)
{
    return ((size_t)i0 * (size_t)n1 + (size_t)i1) * (size_t)n2 + (size_t)i2;
}

/* Shape and divisibility checks of MultiHeadMask and _process_mask, in upstream's order. */
static int check_inputs(struct mask *const *heads, int nheads, const struct maskinfo_params *p,
                        char *err, size_t n)
{
    if (nheads < 1)
        return diag_fail(err, n, "Unsupported empty tuple of masks");
    for (int h = 1; h < nheads; h++)
        if (heads[h]->q_len != heads[0]->q_len || heads[h]->kv_len != heads[0]->kv_len)
            return diag_fail(err, n,
                             "Unexpected mask shape, got: (%" PRId64 ", %" PRId64
                             "), expected: (%" PRId64 ", %" PRId64 ")",
                             heads[h]->q_len, heads[h]->kv_len, heads[0]->q_len, heads[0]->kv_len);
    if (p->bq < 1 || p->bkv < 1 || p->head_shards < 1 || p->q_seq_shards < 1)
        return diag_fail(err, n,
                         "block sizes and shard counts must be positive (bq=%d, bkv=%d, "
                         "head_shards=%d, q_seq_shards=%d)",
                         p->bq, p->bkv, p->head_shards, p->q_seq_shards);
    int64_t Q = heads[0]->q_len, K = heads[0]->kv_len;
    if (Q % p->bq)
        return diag_fail(err, n, "q_block_size=%d should divide q_seq_len=%" PRId64 ".", p->bq, Q);
    if (K % p->bkv)
        return diag_fail(err, n, "kv_block_size=%d should divide kv_seq_len=%" PRId64 ".", p->bkv,
                         K);
    if (Q % p->q_seq_shards)
        return diag_fail(err, n, "q_seq_shards=%d should divide q_seq_len=%" PRId64 ".",
                         p->q_seq_shards,
                         Q);
    if (Q / p->q_seq_shards % p->bq)
        return diag_fail(err, n, "q_block_size=%d should divide q_seq_len_per_shard=%" PRId64 ".",
                         p->bq,
                         Q / p->q_seq_shards);
    if (nheads % p->head_shards)
        return diag_fail(err, n, "head_shards=%d should divide head_count=%d.", p->head_shards,
                         nheads);
    int64_t cells;
    if (__builtin_mul_overflow((int64_t)nheads, Q / p->bq, &cells) ||
        __builtin_mul_overflow(cells, K / p->bkv, &cells) || cells > INT32_MAX)
        return diag_fail(err, n, "mask info too large: %d heads x %" PRId64 " x %" PRId64 " blocks",
                         nheads, Q / p->bq, K / p->bkv);
    return 0;
}

/* assign_unique_ids: unique mask ids in order of first appearance, and whether
 * every head shard uses exactly one of them (masks_per_head_shard == 1). */
static void work_unique(struct work *w)
{
    w->uid = xcalloc((size_t)w->H, sizeof *w->uid);
    w->uhead = xcalloc((size_t)w->H, sizeof *w->uhead);
    for (int h = 0; h < w->H; h++) {
        int u = 0;
        while (u < w->nuniq && !mask_equal(w->heads[w->uhead[u]], w->heads[h]))
            u++;
        if (u == w->nuniq)
            w->uhead[w->nuniq++] = h;
        w->uid[h] = u;
    }
    w->one_per_shard = true;
    for (int h = 0; h < w->H; h++)
        if (w->uid[h] != w->uid[h / w->hps * w->hps])
            w->one_per_shard = false;
    w->rows = w->one_per_shard ? w->p->head_shards : w->H;
    w->computable = w->nuniq == 1 && mask_is_computable(w->heads[0]);
}

/* Classifies every block of every unique mask and numbers the distinct partial
 * blocks: masks in id order, then (q, kv) in order.  With a single computable mask
 * the blocks are never loaded, so only their existence is recorded. */
static void work_classify(struct work *w)
{
    int bq = w->p->bq, bkv = w->p->bkv;
    size_t cells = (size_t)w->nuniq * (size_t)w->nq * (size_t)w->nk;
    w->cls = xmalloc(cells);
    w->pid = xmalloc(cells * sizeof *w->pid);
    w->parts.bytes = (size_t)bq * (size_t)bkv;
    uint8_t *row = xmalloc((size_t)bkv), *blk = xmalloc(w->parts.bytes);
    for (int u = 0; u < w->nuniq; u++) {
        const struct mask *m = w->heads[w->uhead[u]];
        for (int q = 0; q < w->nq; q++) {
            for (int kv = 0; kv < w->nk; kv++) {
                size_t i = at3(w->nq, w->nk, u, q, kv);
                int64_t q0 = (int64_t)q * bq, k0 = (int64_t)kv * bkv;
                w->cls[i] = (uint8_t)block_class(m, q0, k0, bq, bkv, row);
                w->pid[i] = -1;
                if (w->cls[i] != 1)
                    continue;
                w->has_partial = true;
                if (w->computable) {
                    w->pid[i] = 0;
                    continue;
                }
                block_fill(m, q0, k0, bq, bkv, blk);
                w->pid[i] = blockset_intern(&w->parts, blk);
            }
        }
    }
    free(row);
    free(blk);
}

/* The mask id used by local head 'h' of head shard 'hs'. */
static int shard_uid(const struct work *w, int hs, int h)
{
    return w->uid[hs * w->hps + (w->one_per_shard ? 0 : h)];
}

/* Decodes position 't' of a shard's blocked shape, (h, q, kv) for fwd/dq and
 * (kv, h, q) for dkv (np.ndindex order in _get_mask_info_for_shard). */
static void shard_coord(const struct work *w, int nh, size_t t, int *h, int *q, int *kv)
{
    size_t qps = (size_t)w->qps, nk = (size_t)w->nk;
    if (w->p->is_dkv) {
        *kv = (int)(t / ((size_t)nh * qps));
        *h = (int)(t / qps % (size_t)nh);
        *q = (int)(t % qps);
    } else {
        *h = (int)(t / (qps * nk));
        *q = (int)(t / nk % qps);
        *kv = (int)(t % nk);
    }
}

/* _get_mask_info_for_shard: data_next / mask_next of head shard 'hs', q shard 'qs'.
 * Every step points at the first non-empty (data) or partial (mask) block at or
 * after it in iteration order, wrapping to the first one; all 0 if none. */
static void shard_next(const struct work *w, int hs, int qs, int32_t *dn, int32_t *mn)
{
    int nh = w->one_per_shard ? 1 : w->hps, h, q, kv;
    size_t count = (size_t)nh * (size_t)w->qps * (size_t)w->nk;
    size_t first_ne = count, first_pa = count;
    for (size_t t = 0; t < count && first_pa == count; t++) {
        shard_coord(w, nh, t, &h, &q, &kv);
        int c = w->cls[at3(w->nq, w->nk, shard_uid(w, hs, h), qs * w->qps + q, kv)];
        if (c > 0 && first_ne == count)
            first_ne = t;
        if (c == 1)
            first_pa = t;
    }
    if (first_ne == count)
        return;
    size_t ne = first_ne, pa = first_pa;
    for (size_t t = count; t-- > 0;) {
        shard_coord(w, nh, t, &h, &q, &kv);
        int c = w->cls[at3(w->nq, w->nk, shard_uid(w, hs, h), qs * w->qps + q, kv)];
        ne = c > 0 ? t : ne;
        pa = c == 1 ? t : pa;
        int row = w->one_per_shard ? hs : hs * w->hps + h;
        size_t out = at3(w->nq, w->nk, row, qs * w->qps + q, kv);
        int nh_, nq_, nkv_;
        shard_coord(w, nh, ne, &nh_, &nq_, &nkv_);
        dn[out] = w->p->is_dkv ? nq_ : nkv_;
        if (mn && pa != count) {
            shard_coord(w, nh, pa, &nh_, &nq_, &nkv_);
            mn[out] = w->pid[at3(w->nq, w->nk, shard_uid(w, hs, nh_), qs * w->qps + nq_, nkv_)];
        }
    }
}

/* block_mask (set_block_mask), data_next and mask_next before shrinking. */
static void work_arrays(const struct work *w, struct mask_info *mi)
{
    size_t plane = (size_t)w->nq * (size_t)w->nk, cells = (size_t)w->rows * plane;
    mi->block_mask = xcalloc(cells, sizeof(int32_t));
    mi->data_next = xcalloc(cells, sizeof(int32_t));
    mi->mask_next = w->has_partial ? xcalloc(cells, sizeof(int32_t)) : NULL;
    for (int r = 0; r < w->rows; r++) {
        const uint8_t *src = w->cls + (size_t)w->uid[w->one_per_shard ? r * w->hps : r] * plane;
        for (size_t i = 0; i < plane; i++)
            mi->block_mask[(size_t)r * plane + i] = src[i];
    }
    for (int hs = 0; hs < w->p->head_shards; hs++)
        for (int qs = 0; qs < w->p->q_seq_shards; qs++)
            shard_next(w, hs, qs, mi->data_next, mi->mask_next);
}

static void replace_arrays(struct mask_info *mi, int32_t *bm, int32_t *dn, int32_t *mn)
{
    free(mi->block_mask);
    free(mi->data_next);
    free(mi->mask_next);
    mi->block_mask = bm;
    mi->data_next = dn;
    mi->mask_next = mn;
}

/* Shrinking leaves a q shard with no column (numpy: size-0 arrays, which
 * _process_mask asserts against), or has nothing to concatenate for mask_next. */
static int shrink_check(const struct mask_info *mi, const int *extent, int shards, char *err,
                        size_t n)
{
    for (int s = 0; s < shards; s++)
        if (extent[s] == 0)
            return diag_fail(err, n,
                             "grid shrinking left q shard %d with no non-empty block (upstream "
                             "_process_mask fails 'assert current_block_mask.size > 0')",
                             s);
    if (shards > 1 && !mi->mask_next)
        return diag_fail(err, n,
                         "need at least one array to concatenate (upstream _process_mask "
                         "pads mask_next of q shards when there is none)");
    return 0;
}

/* _shrink_mask_info (fwd/dq): per q row keep the non-empty kv columns, packed left
 * and padded with 0; then pad every q shard on the right to the widest one,
 * block_mask with 0 and data_next/mask_next with their last column ('edge'). */
static int shrink_fwd(struct mask_info *mi, const struct work *w, char *err, size_t n)
{
    int S = w->p->q_seq_shards, nk = w->nk, W = 0;
    int *cnt = xcalloc((size_t)w->nq, sizeof *cnt), *width = xcalloc((size_t)S, sizeof *width);
    int *cols = xcalloc((size_t)w->nq * (size_t)nk, sizeof *cols);
    for (int q = 0; q < w->nq; q++) {
        for (int kv = 0; kv < nk; kv++)
            if (mi->block_mask[(size_t)q * nk + kv])
                cols[(size_t)q * nk + (size_t)cnt[q]++] = kv;
        width[q / w->qps] = cnt[q] > width[q / w->qps] ? cnt[q] : width[q / w->qps];
        W = cnt[q] > W ? cnt[q] : W;
    }
    int rc = shrink_check(mi, width, S, err, n);
    size_t cells = (size_t)w->rows * (size_t)w->nq * (size_t)W;
    int32_t *bm = xcalloc(cells, 4), *dn = xcalloc(cells, 4);
    int32_t *mn = mi->mask_next ? xcalloc(cells, 4) : NULL;
    for (int r = 0; r < w->rows && rc == 0; r++) {
        for (int q = 0; q < w->nq; q++) {
            int ws = width[q / w->qps];
            for (int j = 0; j < W; j++) {
                size_t o = at3(w->nq, W, r, q, j);
                size_t src = j < cnt[q] ? at3(w->nq, nk, r, q, cols[(size_t)q * nk + j]) : 0;
                size_t edge = at3(w->nq, W, r, q, ws - 1);
                bm[o] = j < cnt[q] ? mi->block_mask[src] : 0;
                dn[o] = j < cnt[q] ? mi->data_next[src] : j < ws ? 0 : dn[edge];
                if (mn)
                    mn[o] = j < cnt[q] ? mi->mask_next[src] : j < ws ? 0 : mn[edge];
            }
        }
    }
    replace_arrays(mi, bm, dn, mn);
    mi->nk = W;
    free(cnt);
    free(width);
    free(cols);
    return rc;
}

/* _shrink_mask_info_dkv: per kv column of each q shard keep the non-empty q rows,
 * packed at the bottom and padded with 0 on top; then pad every q shard at its
 * bottom to the tallest one, block_mask with 0 and data_next/mask_next with
 * their last row ('edge'). */
static int shrink_dkv(struct mask_info *mi, const struct work *w, char *err, size_t n)
{
    int S = w->p->q_seq_shards, nk = w->nk, qps = w->qps, Hm = 0;
    int *cnt = xcalloc((size_t)S * nk, sizeof *cnt), *height = xcalloc((size_t)S, sizeof *height);
    int *rws = xcalloc((size_t)S * nk * qps, sizeof *rws);
    for (int s = 0; s < S; s++) {
        for (int kv = 0; kv < nk; kv++) {
            int *c = &cnt[(size_t)s * nk + kv];
            for (int q = 0; q < qps; q++)
                if (mi->block_mask[(size_t)(s * qps + q) * nk + kv])
                    rws[at3(nk, qps, s, kv, (*c)++)] = s * qps + q;
            height[s] = *c > height[s] ? *c : height[s];
        }
        Hm = height[s] > Hm ? height[s] : Hm;
    }
    int rc = shrink_check(mi, height, S, err, n);
    size_t cells = (size_t)w->rows * (size_t)S * (size_t)Hm * (size_t)nk;
    int32_t *bm = xcalloc(cells, 4), *dn = xcalloc(cells, 4);
    int32_t *mn = mi->mask_next ? xcalloc(cells, 4) : NULL;
    for (int r = 0; r < w->rows && rc == 0; r++) {
        for (int s = 0; s < S; s++) {
            for (int kv = 0; kv < nk; kv++) {
                int c = cnt[(size_t)s * nk + kv], hs = height[s];
                for (int i = 0; i < Hm; i++) {
                    size_t o = at3(S * Hm, nk, r, s * Hm + i, kv);
                    size_t edge = at3(S * Hm, nk, r, s * Hm + hs - 1, kv);
                    bool kept = i < hs && i >= hs - c;
                    size_t src =
                        kept ? at3(w->nq, nk, r, rws[at3(nk, qps, s, kv, i - (hs - c))], kv) : 0;
                    bm[o] = kept ? mi->block_mask[src] : 0;
                    dn[o] = kept ? mi->data_next[src] : i < hs ? 0 : dn[edge];
                    if (mn)
                        mn[o] = kept ? mi->mask_next[src] : i < hs ? 0 : mn[edge];
                }
            }
        }
    }
    replace_arrays(mi, bm, dn, mn);
    mi->nq = S * Hm;
    free(cnt);
    free(height);
    free(rws);
    return rc;
}

/* _downcast_to_small_type: int8 if max <= 127, int16 if max <= 32767, else int32. */
static int smem_bytes_for_max(int64_t max)
{
    return max <= INT8_MAX ? 1 : max <= INT16_MAX ? 2 : 4;
}

static int smem_bytes(const int32_t *a, size_t count, bool downcast)
{
    if (!a)
        return 0;
    if (!downcast || count == 0)
        return 4;
    int32_t max = 0;
    for (size_t i = 0; i < count; i++)
        max = a[i] > max ? a[i] : max;
    return smem_bytes_for_max(max);
}

static void set_elem_bytes(struct mask_info *mi)
{
    int b = mi->block_mask_bytes;
    b = mi->data_next_bytes > b ? mi->data_next_bytes : b;
    b = mi->mask_next_bytes > b ? mi->mask_next_bytes : b;
    mi->elem_bytes = b;
}

static void info_header(struct mask_info *mi, const struct work *w)
{
    const struct maskinfo_params *p = w->p;
    mi->bq = p->bq;
    mi->bkv = p->bkv;
    mi->is_dkv = p->is_dkv;
    mi->dynamic = p->dynamic;
    mi->heads = w->H;
    mi->head_shards = p->head_shards;
    mi->q_seq_shards = p->q_seq_shards;
    mi->rows = w->rows;
    mi->nq = mi->nq_full = w->nq;
    mi->nk = mi->nk_full = w->nk;
}

/* Steps after the arrays exist: shrink, downcast, drop what a computable mask
 * does not need (the end of _process_mask). */
static int work_finish(struct work *w, struct mask_info *mi, char *err, size_t n)
{
    const struct maskinfo_params *p = w->p;
    if (p->shrink_grid && w->nuniq == 1) {
        int rc = p->is_dkv ? shrink_dkv(mi, w, err, n) : shrink_fwd(mi, w, err, n);
        if (rc)
            return rc;
        mi->shrunk = true;
    }
    size_t cells = (size_t)mi->rows * (size_t)mi->nq * (size_t)mi->nk;
    mi->block_mask_bytes = smem_bytes(mi->block_mask, cells, p->downcast);
    mi->data_next_bytes = smem_bytes(mi->data_next, cells, p->downcast);
    mi->mask_next_bytes = smem_bytes(mi->mask_next, cells, p->downcast);
    if (w->computable) {
        free(mi->mask_next);
        mi->mask_next = NULL;
        mi->mask_next_bytes = 0;
        mi->computable = true;
    } else if (w->parts.count) {
        mi->num_partial = (int)w->parts.count;
        mi->partial_blocks = p->is_dkv
                                 ? blocks_transpose(w->parts.data, w->parts.count, p->bq, p->bkv)
                                 : w->parts.data;
        if (!p->is_dkv)
            w->parts.data = NULL;
    }
    set_elem_bytes(mi);
    return 0;
}

static void work_fini(struct work *w)
{
    free(w->uid);
    free(w->uhead);
    free(w->cls);
    free(w->pid);
    blockset_fini(&w->parts);
}

/* ---- _process_dynamic_mask ---- */

/* Every block becomes a mask block (no dedup); mask_next is the block's flat index
 * within its (head shard, q shard) slice where block_mask == 1, data_next the kv
 * block (fwd/dq) or the q block within the q shard (dkv) where block_mask != 0;
 * 0 elsewhere.  SMEM types come from the largest possible value, not the data. */
static void process_dynamic(const struct work *w, struct mask_info *mi)
{
    const struct maskinfo_params *p = w->p;
    size_t bytes = (size_t)p->bq * (size_t)p->bkv, cells = (size_t)w->H * w->nq * w->nk;
    uint8_t *blocks = xmalloc(cells * bytes);
    mi->block_mask = xcalloc(cells, sizeof(int32_t));
    mi->data_next = xcalloc(cells, sizeof(int32_t));
    mi->mask_next = xcalloc(cells, sizeof(int32_t));
    for (int h = 0; h < w->H; h++) {
        for (int q = 0; q < w->nq; q++) {
            for (int kv = 0; kv < w->nk; kv++) {
                size_t i = at3(w->nq, w->nk, h, q, kv);
                uint8_t *b = blocks + i * bytes;
                block_fill(w->heads[h], (int64_t)q * p->bq, (int64_t)kv * p->bkv, p->bq, p->bkv, b);
                bool any = memchr(b, 1, bytes) != NULL, all = memchr(b, 0, bytes) == NULL;
                int c = any ? (all ? 2 : 1) : 0;
                int hl = h % w->hps, ql = q % w->qps;
                mi->block_mask[i] = c;
                mi->mask_next[i] = c == 1 ? (int32_t)at3(w->qps, w->nk, hl, ql, kv) : 0;
                mi->data_next[i] = c == 0 ? 0 : p->is_dkv ? ql : kv;
            }
        }
    }
    mi->num_partial = (int)cells;
    mi->partial_blocks = blocks;
    if (p->is_dkv) {
        mi->partial_blocks = blocks_transpose(blocks, cells, p->bq, p->bkv);
        free(blocks);
    }
    mi->block_mask_bytes = p->downcast ? 1 : 4;
    mi->data_next_bytes = p->downcast ? smem_bytes_for_max(p->is_dkv ? w->qps : w->nk) : 4;
    mi->mask_next_bytes = p->downcast ? smem_bytes_for_max((int64_t)w->hps * w->qps * w->nk) : 4;
    set_elem_bytes(mi);
}

void maskinfo_params_init(struct maskinfo_params *p, int bq, int bkv)
{
    memset(p, 0, sizeof *p);
    p->bq = bq;
    p->bkv = bkv;
    p->head_shards = 1;
    p->q_seq_shards = 1;
    p->shrink_grid = true;
    p->downcast = true;
}

int maskinfo_process(struct mask *const *heads, int nheads, const struct maskinfo_params *p,
                     struct mask_info *out, char *err, size_t n)
{
    memset(out, 0, sizeof *out);
    if (check_inputs(heads, nheads, p, err, n))
        return -1;
    struct work w = {.p = p, .heads = heads, .H = nheads};
    w.nq = (int)(heads[0]->q_len / p->bq);
    w.nk = (int)(heads[0]->kv_len / p->bkv);
    w.hps = nheads / p->head_shards;
    w.qps = w.nq / p->q_seq_shards;
    int rc = 0;
    if (p->dynamic) {
        w.rows = nheads;
        info_header(out, &w);
        process_dynamic(&w, out);
        return 0;
    }
    work_unique(&w);
    work_classify(&w);
    info_header(out, &w);
    work_arrays(&w, out);
    rc = work_finish(&w, out, err, n);
    work_fini(&w);
    if (rc)
        maskinfo_free(out);
    return rc;
}

void maskinfo_free(struct mask_info *mi)
{
    if (!mi)
        return;
    free(mi->block_mask);
    free(mi->data_next);
    free(mi->mask_next);
    free(mi->partial_blocks);
    memset(mi, 0, sizeof *mi);
}

/* ---- summaries and printing ---- */

int64_t maskinfo_nonempty_blocks(const struct mask_info *mi)
{
    size_t cells = (size_t)mi->rows * (size_t)mi->nq * (size_t)mi->nk;
    int64_t count = 0;
    for (size_t i = 0; i < cells; i++)
        count += mi->block_mask[i] > 0;
    return count;
}

double maskinfo_skipped_fraction(const struct mask_info *mi)
{
    double total = (double)mi->rows * mi->nq_full * mi->nk_full;
    return total > 0 ? 1.0 - (double)maskinfo_nonempty_blocks(mi) / total : 0.0;
}

int maskinfo_grid_width(const struct mask_info *mi)
{
    return mi->is_dkv ? mi->nq : mi->nk;
}

static void print_array_json(FILE *out, const struct mask_info *mi, const int32_t *a)
{
    if (!a) {
        fputs("null", out);
        return;
    }
    fputc('[', out);
    for (int r = 0; r < mi->rows; r++) {
        fputs(r ? ",[" : "[", out);
        for (int q = 0; q < mi->nq; q++) {
            fputs(q ? ",[" : "[", out);
            for (int kv = 0; kv < mi->nk; kv++)
                fprintf(out, kv ? ",%" PRId32 : "%" PRId32, a[at3(mi->nq, mi->nk, r, q, kv)]);
            fputc(']', out);
        }
        fputc(']', out);
    }
    fputc(']', out);
}

static void print_array_text(FILE *out, const struct mask_info *mi, const char *name,
                             const int32_t *a)
{
    if (!a) {
        fprintf(out, "%s: null\n", name);
        return;
    }
    size_t cells = (size_t)mi->rows * (size_t)mi->nq * (size_t)mi->nk;
    int32_t max = 0;
    for (size_t i = 0; i < cells; i++)
        max = a[i] > max ? a[i] : max;
    int wd = snprintf(NULL, 0, "%" PRId32, max);
    fprintf(out, "%s [%d][%d][%d]:\n", name, mi->rows, mi->nq, mi->nk);
    for (int r = 0; r < mi->rows; r++) {
        fprintf(out, "  row %d:\n", r);
        for (int q = 0; q < mi->nq; q++) {
            fputs("   ", out);
            for (int kv = 0; kv < mi->nk; kv++)
                fprintf(out, " %*" PRId32, wd, a[at3(mi->nq, mi->nk, r, q, kv)]);
            fputc('\n', out);
        }
    }
}

void maskinfo_print(FILE *out, const struct mask_info *mi, bool json)
{
    double skipped = maskinfo_skipped_fraction(mi);
    if (json) {
        fputs("{\"block_mask\":", out);
        print_array_json(out, mi, mi->block_mask);
        fputs(",\"data_next\":", out);
        print_array_json(out, mi, mi->data_next);
        fputs(",\"mask_next\":", out);
        print_array_json(out, mi, mi->mask_next);
        fprintf(out, ",\"num_partial_blocks\":%d,\"grid_width\":%d,\"skipped_fraction\":%.17g}\n",
                mi->num_partial, maskinfo_grid_width(mi), skipped);
        return;
    }
    print_array_text(out, mi, "block_mask", mi->block_mask);
    print_array_text(out, mi, "data_next", mi->data_next);
    print_array_text(out, mi, "mask_next", mi->mask_next);
    fprintf(out, "num_partial_blocks: %d\n", mi->num_partial);
    fprintf(out, "grid_width: %d\n", maskinfo_grid_width(mi));
    fprintf(out, "skipped_fraction: %.6f (%" PRId64 " of %" PRId64 " blocks computed)\n", skipped,
            maskinfo_nonempty_blocks(mi), (int64_t)mi->rows * mi->nq_full * mi->nk_full);
}

/* ---------------------------------------------------------------- width, closed form */

#define SPAN_INF ((int64_t)1 << 62)

/* The kv positions (or with 'dkv' the q positions) that positions [a, b] of
 * the other axis may attend to: an interval [*lo, *hi] (unclipped) for the
 * masks whose allowed set per row is one run. False for other kinds. */
static bool allowed_span(const struct mask *m, int64_t a, int64_t b, bool dkv, int64_t *lo,
                         int64_t *hi)
{
    int64_t o = m->offset, L = m->left < 0 ? SPAN_INF : m->left;
    int64_t R = m->right < 0 ? SPAN_INF : m->right, C = m->chunk;
    switch (m->kind) {
    case MASK_FULL:
        *lo = -SPAN_INF, *hi = SPAN_INF;
        return true;
    case MASK_CAUSAL: /* q + o >= kv */
        *lo = dkv ? a - o : -SPAN_INF, *hi = dkv ? SPAN_INF : b + o;
        return true;
    case MASK_LOCAL: /* q + o - L <= kv <= q + o + R */
        *lo = dkv ? a - o - R : a + o - L, *hi = dkv ? b - o + L : b + o + R;
        return true;
    case MASK_CHUNKED: /* same chunk, q >= kv */
        *lo = dkv ? a : a / C * C, *hi = dkv ? b / C * C + C - 1 : b;
        return true;
    default:
        return false;
    }
}

int64_t maskinfo_width(const struct mask *m, int64_t bq, int64_t bkv, bool dkv)
{
    int64_t rows_len = dkv ? m->kv_len : m->q_len, cols_len = dkv ? m->q_len : m->kv_len;
    int64_t rb = dkv ? bkv : bq, cb = dkv ? bq : bkv, lo, hi, width = 0;
    if (bq < 1 || bkv < 1 || m->q_len % bq || m->kv_len % bkv ||
        !allowed_span(m, 0, 0, dkv, &lo, &hi))
        return -1;
    for (int64_t r = 0; r < rows_len / rb; r++) {
        allowed_span(m, r * rb, r * rb + rb - 1, dkv, &lo, &hi);
        lo = lo < 0 ? 0 : lo, hi = hi > cols_len - 1 ? cols_len - 1 : hi;
        int64_t n = lo > hi ? 0 : hi / cb - lo / cb + 1;
        width = n > width ? n : width;
    }
    return width;
}
