/* config/cfg_ops.c -- the op loaders that a key table cannot express: attention
 * kernels (block sizes with None, segment ids, masks, length generators),
 * collective axes, remote-copy targets, the shapes and arrays of XLA ops.
 * The op table (config/op_table.c) names them. Uses base/, kernels/
 * (parameters, masks, shape rules) and config/cfg_walk.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/sat.h"
#include "base/xalloc.h"
#include "topology/dcn.h"
#include "kernels/fusion.h"
#include "kernels/kernel.h"
#include "kernels/maskinfo.h"
#include "kernels/xla.h"
#include "config/cfg_int.h"
#include "config/mask_file.h"
#include "config/op_table.h"


static int get_mode(struct walk *w, const struct cfg_node *m, const char *p, enum attn_mode *mode)
{
    static const char *const modes[] = {"fwd", "bwd", "fwd_bwd", NULL};
    int v = (int)*mode;
    int rc = walk_enum(w, m, p, "mode", modes, &v);
    *mode = (enum attn_mode)v;
    return rc;
}

/* A list of positive integers (segment lengths) into 'out'; returns the count. */
static int get_lengths(struct walk *w, const struct cfg_node *n, const char *p, int64_t *out,
                       int max, int64_t total)
{
    if (n->type != CFG_SEQ || n->n < 1 || n->n > max) {
        char want[96];
        snprintf(want, sizeof want, "a list of 1 to %d segment lengths", max);
        walk_type_error(w, n, p, want);
        return 0;
    }
    int64_t sum = 0;
    for (int i = 0; i < n->n; i++) { /* each at most the total: the sum cannot wrap */
        if (walk_item(w, n, p, i, 1, total ? total : INT64_MAX, &out[i]) != 0)
            return 0;
        sum = sat_add64(sum, out[i]);
    }
    if (total && sum != total) {
        char want[96];
        snprintf(want, sizeof want, "segment lengths adding up to %lld", (long long)total);
        char got_s[32];
        snprintf(got_s, sizeof got_s, "%lld", (long long)sum);
        struct diag_loc loc;
        walk_loc(n, &loc);
        diag_error(w->d, &loc, p, "expected %s, got a total of %s", want, got_s);
        return 0;
    }
    return n->n;
}

static void load_flash_blocks(struct walk *w, const struct cfg_node *m, const char *p,
                              struct flash_block_sizes *bs)
{
    *bs = (struct flash_block_sizes){128, 128, 128, 1, 128, 128, 128, 128, 128, 128, 128};
    const struct cfg_node *b = walk_field(w, m, p, "block_sizes", false);
    char *bp = walk_join(p, "block_sizes");
    if (b && walk_is_map(w, b, bp)) {
        static const char *const keys[] = {
            "block_q",     "block_k_major",     "block_k",     "block_b",
            "block_q_major_dkv", "block_k_major_dkv", "block_k_dkv", "block_q_dkv",
            "block_k_major_dq",  "block_k_dq",  "block_q_dq",  NULL};
        walk_check_keys(w, b, bp, keys);
        int64_t *dst[] = {&bs->block_q,           &bs->block_k_major,     &bs->block_k,
                          &bs->block_b,           &bs->block_q_major_dkv, &bs->block_k_major_dkv,
                          &bs->block_k_dkv,       &bs->block_q_dkv,       &bs->block_k_major_dq,
                          &bs->block_k_dq,        &bs->block_q_dq};
        for (int i = 0; keys[i]; i++) {
            const struct cfg_node *v = cfg_get(b, keys[i]);
            if (v && v->type == CFG_SCALAR && !strcmp(v->value, "null"))
                *dst[i] = 0; /* None */
            else
                walk_int(w, b, bp, keys[i], false, 1, 1 << 24, dst[i]);
        }
    }
    free(bp);
}

void cfg_load_flash(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {CFG_OP_COMMON_KEYS, "batch", "heads", "q_seq_len", "kv_seq_len",
                                       "head_dim", "dtype", "causal", "sm_scale", "mode", "bias",
                                       "segment_ids", "block_sizes", NULL};
    walk_check_keys(w, m, p, keys);
    struct op_flash *f = &op->u.flash;
    f->dt = DT_BF16;
    f->sm_scale = 1.0;
    walk_int(w, m, p, "batch", true, 1, 1 << 20, &f->batch);
    walk_int(w, m, p, "heads", true, 1, 1 << 16, &f->heads);
    walk_int(w, m, p, "q_seq_len", true, 1, 1 << 24, &f->q_seq_len);
    f->kv_seq_len = f->q_seq_len;
    walk_int(w, m, p, "kv_seq_len", false, 1, 1 << 24, &f->kv_seq_len);
    walk_int(w, m, p, "head_dim", true, 1, 1 << 16, &f->head_dim);
    walk_mxu_dtype(w, m, p, "dtype", &f->dt);
    walk_bool(w, m, p, "causal", &f->causal);
    walk_bool(w, m, p, "bias", &f->bias);
    get_mode(w, m, p, &f->mode);
    walk_positive(w, m, p, "sm_scale", &f->sm_scale);
    const struct cfg_node *seg = walk_field(w, m, p, "segment_ids", false);
    char *sp = walk_join(p, "segment_ids");
    if (seg && walk_is_map(w, seg, sp)) {
        static const char *const sk[] = {"q", "kv", NULL};
        walk_check_keys(w, seg, sp, sk);
        const struct cfg_node *q = walk_field(w, seg, sp, "q", true);
        const struct cfg_node *kv = cfg_get(seg, "kv");
        char *qp = walk_join(sp, "q"), *kp = walk_join(sp, "kv");
        if (q)
            f->nseg_q = get_lengths(w, q, qp, f->seg_q, OP_MAX_SEGMENTS, f->q_seq_len);
        if (kv)
            f->nseg_kv = get_lengths(w, kv, kp, f->seg_kv, OP_MAX_SEGMENTS, f->kv_seq_len);
        else if (q && f->q_seq_len == f->kv_seq_len) {
            f->nseg_kv = f->nseg_q;
            memcpy(f->seg_kv, f->seg_q, sizeof f->seg_kv);
        } else if (q) {
            walk_type_error(w, seg, sp, "a kv list when kv_seq_len differs from q_seq_len");
        }
        free(qp);
        free(kp);
    }
    free(sp);
    load_flash_blocks(w, m, p, &f->bs);
}

/* A splash mask: {type: causal|local|chunked|full|file, ...}, {and: [..]}, {or: [..]}. */
static struct mask *load_mask(struct walk *w, const struct cfg_node *n, const char *p, int64_t q,
                              int64_t kv, int depth)
{
    if (!walk_is_map(w, n, p) || depth > 16)
        return NULL;
    const struct cfg_node *a = cfg_get(n, "and"), *o = cfg_get(n, "or");
    if (a || o) {
        const struct cfg_node *l = a ? a : o;
        static const char *const lk[] = {"and", "or", NULL};
        walk_check_keys(w, n, p, lk);
        char *lp = walk_join(p, a ? "and" : "or");
        struct mask *acc = NULL;
        if (l->type != CFG_SEQ || l->n < 2)
            walk_type_error(w, l, lp, "a list of at least 2 masks");
        for (int i = 0; l->type == CFG_SEQ && i < l->n; i++) {
            char *ip = xasprintf("%s.%d", lp, i);
            struct mask *m = load_mask(w, l->kids[i], ip, q, kv, depth + 1);
            free(ip);
            char err[256];
            if (m && acc)
                acc = mask_new_logical(a ? MASK_AND : MASK_OR, acc, m, err, sizeof err);
            else if (m)
                acc = m;
        }
        free(lp);
        return acc;
    }
    static const char *const keys[] = {"type", "offset", "left", "right", "chunk", "path", NULL};
    walk_check_keys(w, n, p, keys);
    static const char *const types[] = {"causal", "local", "chunked", "full", "file", NULL};
    int t = -1;
    if (!walk_field(w, n, p, "type", true) || walk_enum(w, n, p, "type", types, &t) != 0 || t < 0)
        return NULL;
    int64_t off = 0, left = -1, right = -1, chunk = 0;
    walk_int(w, n, p, "offset", false, -(1 << 24), 1 << 24, &off);
    const struct cfg_node *ln = cfg_get(n, "left"), *rn = cfg_get(n, "right");
    if (ln && !(ln->type == CFG_SCALAR && !strcmp(ln->value, "null")))
        walk_int(w, n, p, "left", false, 0, 1 << 24, &left);
    if (rn && !(rn->type == CFG_SCALAR && !strcmp(rn->value, "null")))
        walk_int(w, n, p, "right", false, 0, 1 << 24, &right);
    switch (t) {
    case 0:
        return mask_new_causal(q, kv, off);
    case 1:
        return mask_new_local(q, kv, left, right, off);
    case 2:
        if (walk_int(w, n, p, "chunk", true, 1, 1 << 24, &chunk) != 0)
            return NULL;
        return mask_new_chunked(q, kv, chunk);
    case 3:
        return mask_new_full(q, kv);
    default: {
        const struct cfg_node *pn = walk_field(w, n, p, "path", true);
        if (!pn || pn->type != CFG_SCALAR)
            return NULL;
        char err[512];
        struct mask *m = mask_load_file(pn->value, err, sizeof err);
        char *pp = walk_join(p, "path");
        struct diag_loc loc;
        walk_loc(pn, &loc);
        if (!m)
            diag_error(w->d, &loc, pp, "%s", err);
        else if (m->q_len != q || m->kv_len != kv) {
            char want[96];
            snprintf(want, sizeof want, "a %lldx%lld mask file", (long long)q, (long long)kv);
            walk_type_error(w, pn, pp, want);
            mask_free(m);
            m = NULL;
        }
        free(pp);
        return m;
    }
    }
}

static void load_splash_masks(struct walk *w, const struct cfg_node *m, const char *p,
                              struct op_splash *s)
{
    const struct cfg_node *mk = walk_field(w, m, p, "mask", true);
    if (!mk)
        return;
    char *mp = walk_join(p, "mask");
    const struct cfg_node *heads = mk->type == CFG_MAP ? cfg_get(mk, "heads") : NULL;
    bool dense = false;
    if (mk->type == CFG_MAP) {
        walk_bool(w, mk, mp, "dense", &dense);
        walk_bool(w, mk, mp, "dynamic", &s->dynamic);
    }
    if (heads) {
        static const char *const hk[] = {"heads", "dense", "dynamic", NULL};
        walk_check_keys(w, mk, mp, hk);
        char *hp = walk_join(mp, "heads");
        if (heads->type != CFG_SEQ || heads->n != s->q_heads) {
            char want[64];
            snprintf(want, sizeof want, "a list of %lld masks (one per q head)",
                     (long long)s->q_heads);
            walk_type_error(w, heads, hp, want);
        } else {
            s->nmasks = heads->n;
            s->masks = xcalloc((size_t)heads->n, sizeof *s->masks);
            for (int i = 0; i < heads->n; i++) {
                char *ip = xasprintf("%s.%d", hp, i);
                s->masks[i] = load_mask(w, heads->kids[i], ip, s->q_seq_len, s->kv_seq_len, 0);
                free(ip);
            }
        }
        free(hp);
    } else {
        struct cfg_node *copy = cfg_copy(mk);
        for (int i = 0; copy->type == CFG_MAP && i < copy->n; i++) {
            if (!strcmp(copy->keys[i], "dense") || !strcmp(copy->keys[i], "dynamic")) {
                cfg_node_free(copy->kids[i]);
                free(copy->keys[i]);
                memmove(&copy->keys[i], &copy->keys[i + 1], sizeof(char *) * (size_t)(copy->n - i - 1));
                memmove(&copy->kids[i], &copy->kids[i + 1], sizeof(void *) * (size_t)(copy->n - i - 1));
                memmove(&copy->key_line[i], &copy->key_line[i + 1], sizeof(int) * (size_t)(copy->n - i - 1));
                memmove(&copy->key_col[i], &copy->key_col[i + 1], sizeof(int) * (size_t)(copy->n - i - 1));
                copy->n--, i--;
            }
        }
        s->nmasks = 1;
        s->masks = xcalloc(1, sizeof *s->masks);
        s->masks[0] = load_mask(w, copy, mp, s->q_seq_len, s->kv_seq_len, 0);
        cfg_node_free(copy);
    }
    if (dense && s->nmasks > 0 &&
        s->q_seq_len * s->kv_seq_len > (int64_t)MASK_FILE_MAX_BYTES / s->nmasks) {
        /* each length <= 2^24: the product does not overflow */
        const struct cfg_node *dn = cfg_get(mk, "dense");
        char *dp = walk_join(mp, "dense");
        char want[160];
        snprintf(want, sizeof want, "false for %d x %lld x %lld mask bytes (at most 1 GiB dense)",
                 s->nmasks, (long long)s->q_seq_len, (long long)s->kv_seq_len);
        walk_type_error(w, dn ? dn : mk, dp, want);
        free(dp);
        dense = false;
    }
    for (int i = 0; dense && i < s->nmasks; i++) {
        if (s->masks[i] && s->masks[i]->kind != MASK_DENSE) {
            struct mask *d = mask_dense_from(s->masks[i]);
            mask_free(s->masks[i]);
            s->masks[i] = d;
        }
    }
    free(mp);
}

void cfg_load_splash(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {CFG_OP_COMMON_KEYS, "batch", "q_heads", "kv_heads", "q_seq_len",
                                       "kv_seq_len", "head_dim", "dtype", "mask", "mode",
                                       "segment_ids", "block_sizes", NULL};
    walk_check_keys(w, m, p, keys);
    struct op_splash *s = &op->u.splash;
    s->dt = DT_BF16;
    s->batch = 1;
    walk_int(w, m, p, "batch", false, 1, 1 << 20, &s->batch);
    walk_int(w, m, p, "q_heads", true, 1, 1 << 16, &s->q_heads);
    s->kv_heads = s->q_heads;
    walk_int(w, m, p, "kv_heads", false, 1, 1 << 16, &s->kv_heads);
    walk_int(w, m, p, "q_seq_len", true, 1, 1 << 24, &s->q_seq_len);
    s->kv_seq_len = s->q_seq_len;
    walk_int(w, m, p, "kv_seq_len", false, 1, 1 << 24, &s->kv_seq_len);
    walk_int(w, m, p, "head_dim", true, 1, 1 << 16, &s->head_dim);
    walk_mxu_dtype(w, m, p, "dtype", &s->dt);
    get_mode(w, m, p, &s->mode);
    const struct cfg_node *seg = cfg_get(m, "segment_ids");
    if (seg) {
        char *sp = walk_join(p, "segment_ids");
        s->nseg = get_lengths(w, seg, sp, s->seg, OP_MAX_SEGMENTS, s->q_seq_len);
        free(sp);
    }
    if (diag_count(w->d) == 0)
        load_splash_masks(w, m, p, s);
    struct splash_block_sizes *bs = &s->bs;
    *bs = (struct splash_block_sizes){128, 128, 0, 128, 128, 0, 128, 128, false};
    const struct cfg_node *b = walk_field(w, m, p, "block_sizes", false);
    char *bp = walk_join(p, "block_sizes");
    if (b && walk_is_map(w, b, bp)) {
        static const char *const bk[] = {"block_q", "block_kv", "block_kv_compute", "block_q_dkv",
                                         "block_kv_dkv", "block_kv_dkv_compute", "block_q_dq",
                                         "block_kv_dq", "use_fused_bwd_kernel", NULL};
        walk_check_keys(w, b, bp, bk);
        int64_t *dst[] = {&bs->block_q,     &bs->block_kv,     &bs->block_kv_compute,
                          &bs->block_q_dkv, &bs->block_kv_dkv, &bs->block_kv_dkv_compute,
                          &bs->block_q_dq,  &bs->block_kv_dq};
        for (int i = 0; i < 8; i++) {
            const struct cfg_node *v = cfg_get(b, bk[i]);
            if (v && v->type == CFG_SCALAR && !strcmp(v->value, "null"))
                *dst[i] = 0;
            else
                walk_int(w, b, bp, bk[i], false, 1, 1 << 24, dst[i]);
        }
        walk_bool(w, b, bp, "use_fused_bwd_kernel", &bs->use_fused_bwd_kernel);
        if (bs->use_fused_bwd_kernel && !cfg_get(b, "block_q_dq") && !cfg_get(b, "block_kv_dq"))
            bs->block_q_dq = bs->block_kv_dq = 0;
    }
    free(bp);
}

/* Sequence-length generators: {batch, kv_len: N | {min, max}, seed}. */
static int64_t gen_len(struct walk *w, const struct cfg_node *g, const char *p, const char *key,
                       uint64_t seed, int i, int64_t dflt)
{
    const struct cfg_node *n = cfg_get(g, key);
    if (!n)
        return dflt;
    char *kp = walk_join(p, key);
    int64_t v = dflt;
    if (n->type == CFG_MAP) {
        static const char *const k[] = {"min", "max", NULL};
        walk_check_keys(w, n, kp, k);
        int64_t lo = 1, hi = 1;
        walk_int(w, n, kp, "min", true, 0, 1 << 24, &lo);
        walk_int(w, n, kp, "max", true, 0, 1 << 24, &hi);
        if (hi < lo)
            walk_type_error(w, n, kp, "min <= max");
        else
            v = lo + (int64_t)(((double)kern_rand(seed, (uint64_t)i) + 1.0) / 2.0 *
                               (double)(hi - lo + 1));
        if (v > hi)
            v = hi;
    } else {
        walk_int(w, g, p, key, false, 0, 1 << 24, &v);
    }
    free(kp);
    return v;
}

/* paged_attention's 'batch', when given, is the number of sequences (issue
 * 18.11: it was allowed and never read). */
static void paged_batch_matches(struct walk *w, const struct cfg_node *m, const char *p,
                                int64_t batch, int64_t got, const char *from)
{
    if (!batch || batch == got)
        return;
    char want[96], *bp = walk_join(p, "batch");
    snprintf(want, sizeof want, "the number of sequences (%lld, from %s)", (long long)got, from);
    walk_type_error(w, cfg_get(m, "batch"), bp, want);
    free(bp);
}

void cfg_load_paged(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {CFG_OP_COMMON_KEYS, "batch", "q_heads", "kv_heads", "head_dim",
                                       "dtype", "kv_dtype", "page_size", "pages_per_seq",
                                       "pages_per_compute_block", "megacore_mode",
                                       "inline_seq_dim", "lengths", "decode", "pages", "seed",
                                       NULL};
    walk_check_keys(w, m, p, keys);
    struct op_paged *g = &op->u.paged;
    g->dt = g->kv_dt = DT_BF16;
    g->inline_seq_dim = true;
    g->page_size = 16;
    walk_int(w, m, p, "q_heads", true, 1, 1 << 16, &g->q_heads);
    walk_int(w, m, p, "kv_heads", true, 1, 1 << 16, &g->kv_heads);
    walk_int(w, m, p, "head_dim", true, 1, 1 << 16, &g->head_dim);
    walk_mxu_dtype(w, m, p, "dtype", &g->dt);
    walk_dtype(w, m, p, "kv_dtype", &g->kv_dt);
    walk_int(w, m, p, "page_size", false, 1, 1 << 16, &g->page_size);
    walk_int(w, m, p, "pages_per_seq", true, 1, 1 << 20, &g->pages_per_seq);
    walk_int(w, m, p, "pages_per_compute_block", true, 1, 1 << 20, &g->pages_per_compute_block);
    static const char *const mm[] = {"none", "kv_head", "batch", NULL};
    int mode = 0;
    walk_enum(w, m, p, "megacore_mode", mm, &mode);
    g->megacore_mode = (enum megacore_mode)mode;
    walk_bool(w, m, p, "inline_seq_dim", &g->inline_seq_dim);
    static const char *const pg[] = {"contiguous", "shuffled", NULL};
    int sh = 0;
    walk_enum(w, m, p, "pages", pg, &sh);
    g->shuffled_pages = sh == 1;
    int64_t seed = 0;
    walk_int(w, m, p, "seed", false, 0, INT64_MAX, &seed);
    g->seed = (uint64_t)seed;
    int64_t max_len = g->page_size * g->pages_per_seq;
    int64_t batch = 0; /* optional: the number of sequences, checked against them */
    walk_int(w, m, p, "batch", false, 1, 1 << 20, &batch);
    const struct cfg_node *ln = cfg_get(m, "lengths"), *dec = cfg_get(m, "decode");
    if ((ln != NULL) == (dec != NULL)) {
        walk_type_error(w, m, p, "exactly one of lengths: [...] or decode: {...}");
        return;
    }
    if (ln) {
        char *lp = walk_join(p, "lengths");
        if (ln->type != CFG_SEQ || ln->n < 1) {
            walk_type_error(w, ln, lp, "a list of sequence lengths");
        } else {
            g->batch = ln->n;
            g->lengths = xcalloc((size_t)ln->n, sizeof *g->lengths);
            for (int i = 0; i < ln->n; i++)
                walk_item(w, ln, lp, i, 0, max_len, &g->lengths[i]);
        }
        free(lp);
        paged_batch_matches(w, m, p, batch, g->batch, "lengths");
        return;
    }
    char *dp = walk_join(p, "decode");
    if (walk_is_map(w, dec, dp)) {
        static const char *const dk[] = {"batch", "kv_len", "seed", NULL};
        walk_check_keys(w, dec, dp, dk);
        int64_t b = batch ? batch : 1, ds = (int64_t)g->seed;
        walk_int(w, dec, dp, "batch", batch == 0, 1, 1 << 20, &b);
        paged_batch_matches(w, m, p, batch, b, "decode.batch");
        walk_int(w, dec, dp, "seed", false, 0, INT64_MAX, &ds);
        g->batch = b;
        g->lengths = xcalloc((size_t)b, sizeof *g->lengths);
        int before = diag_count(w->d);
        for (int i = 0; i < b && diag_count(w->d) == before; i++) { /* one message, not b */
            g->lengths[i] = gen_len(w, dec, dp, "kv_len", (uint64_t)ds, i, max_len);
            if (g->lengths[i] > max_len) {
                char want[96];
                snprintf(want, sizeof want, "kv_len at most page_size x pages_per_seq = %lld",
                         (long long)max_len);
                walk_type_error(w, dec, dp, want);
                break;
            }
        }
    }
    free(dp);
}

/* ragged: sequences: [{q_len, kv_len}], or decode/prefill/mixed generators. */
static void ragged_gen(struct walk *w, const struct cfg_node *g, const char *p, const char *kind,
                       struct op_ragged *r)
{
    static const char *const gk[] = {"batch", "kv_len", "q_len", "seed", "prefill", "decode",
                                     NULL};
    walk_check_keys(w, g, p, gk);
    int64_t seed = 0, nd = 0, np = 0;
    walk_int(w, g, p, "seed", false, 0, INT64_MAX, &seed);
    if (!strcmp(kind, "mixed")) {
        walk_int(w, g, p, "decode", true, 0, 1 << 16, &nd);
        walk_int(w, g, p, "prefill", true, 0, 1 << 16, &np);
    } else {
        int64_t b = 1;
        walk_int(w, g, p, "batch", true, 1, 1 << 16, &b);
        if (!strcmp(kind, "decode"))
            nd = b;
        else
            np = b;
    }
    r->nseqs = (int)(nd + np);
    if (r->nseqs < 1) {
        walk_type_error(w, g, p, "at least one sequence");
        return;
    }
    r->q_lens = xcalloc((size_t)r->nseqs, sizeof *r->q_lens);
    r->kv_lens = xcalloc((size_t)r->nseqs, sizeof *r->kv_lens);
    int before = diag_count(w->d);
    for (int i = 0; i < r->nseqs && diag_count(w->d) == before; i++) { /* one message, not n */
        r->kv_lens[i] = gen_len(w, g, p, "kv_len", (uint64_t)seed, i, 1024);
        if (r->kv_lens[i] < 1)
            r->kv_lens[i] = 1;
        int64_t q = i < nd ? 1 : gen_len(w, g, p, "q_len", (uint64_t)seed + 7, i, r->kv_lens[i]);
        r->q_lens[i] = q < 1 ? 1 : q > r->kv_lens[i] ? r->kv_lens[i] : q;
    }
}

static void load_ragged_seqs(struct walk *w, const struct cfg_node *m, const char *p,
                             struct op_ragged *r)
{
    static const char *const srcs[] = {"sequences", "decode", "prefill", "mixed"};
    const struct cfg_node *src = NULL;
    int which = -1, count = 0;
    for (int i = 0; i < 4; i++)
        if (cfg_get(m, srcs[i]))
            src = cfg_get(m, srcs[i]), which = i, count++;
    if (count != 1) {
        walk_type_error(w, m, p, "exactly one of sequences, decode, prefill or mixed");
        return;
    }
    char *sp = walk_join(p, srcs[which]);
    if (which > 0) {
        if (walk_is_map(w, src, sp))
            ragged_gen(w, src, sp, srcs[which], r);
    } else if (src->type != CFG_SEQ || src->n < 1) {
        walk_type_error(w, src, sp, "a list of {q_len, kv_len}");
    } else {
        r->nseqs = src->n;
        r->q_lens = xcalloc((size_t)src->n, sizeof *r->q_lens);
        r->kv_lens = xcalloc((size_t)src->n, sizeof *r->kv_lens);
        for (int i = 0; i < src->n; i++) {
            char *ip = xasprintf("%s.%d", sp, i);
            if (walk_is_map(w, src->kids[i], ip)) {
                static const char *const k[] = {"q_len", "kv_len", NULL};
                walk_check_keys(w, src->kids[i], ip, k);
                walk_int(w, src->kids[i], ip, "q_len", true, 1, 1 << 24, &r->q_lens[i]);
                walk_int(w, src->kids[i], ip, "kv_len", true, 1, 1 << 24, &r->kv_lens[i]);
                if (r->q_lens[i] > r->kv_lens[i])
                    walk_type_error(w, src->kids[i], ip, "q_len <= kv_len");
            }
            free(ip);
        }
    }
    free(sp);
}

/* The keys both RPA versions read (v2's block sizes and v3's are apart). */
static void load_ragged_common(struct walk *w, const struct cfg_node *m, const char *p,
                               struct op_ragged *r)
{
    r->dt = r->kv_dt = DT_BF16;
    r->page_size = 16;
    walk_int(w, m, p, "q_heads", true, 1, 1 << 16, &r->q_heads);
    walk_int(w, m, p, "kv_heads", true, 1, 1 << 16, &r->kv_heads);
    walk_int(w, m, p, "head_dim", true, 1, 1 << 16, &r->head_dim);
    walk_mxu_dtype(w, m, p, "dtype", &r->dt);
    walk_dtype(w, m, p, "kv_dtype", &r->kv_dt);
    walk_int(w, m, p, "page_size", false, 1, 1 << 16, &r->page_size);
    walk_int(w, m, p, "max_model_len", true, 1, 1 << 24, &r->max_model_len);
    walk_int(w, m, p, "sliding_window", false, 1, 1 << 24, &r->sliding_window);
    walk_positive(w, m, p, "soft_cap", &r->soft_cap);
    r->sm_scale = 1.0;
    walk_positive(w, m, p, "sm_scale", &r->sm_scale);
    walk_int(w, m, p, "max_num_batched_tokens", false, 1, 1 << 24, &r->max_num_batched_tokens);
    static const char *const pg[] = {"contiguous", "shuffled", NULL};
    int sh = 0;
    walk_enum(w, m, p, "pages", pg, &sh);
    r->shuffled_pages = sh == 1;
    int64_t seed = 0;
    walk_int(w, m, p, "seed", false, 0, INT64_MAX, &seed);
    r->seed = (uint64_t)seed;
    load_ragged_seqs(w, m, p, r);
    for (int i = 0; i < r->nseqs && r->kv_lens; i++) {
        if (r->kv_lens[i] > r->max_model_len) {
            char want[96];
            snprintf(want, sizeof want, "kv_len at most max_model_len = %lld",
                     (long long)r->max_model_len);
            walk_type_error(w, m, p, want);
            break;
        }
    }
}

#define RAGGED_KEYS                                                                                \
    CFG_OP_COMMON_KEYS, "q_heads", "kv_heads", "head_dim", "dtype", "kv_dtype", "page_size",      \
        "max_model_len", "sliding_window", "soft_cap", "sequences", "decode", "prefill", "mixed", \
        "pages", "seed", "sm_scale", "max_num_batched_tokens"

void cfg_load_ragged(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {RAGGED_KEYS, "num_kv_pages_per_block",
                                       "num_queries_per_block", NULL};
    walk_check_keys(w, m, p, keys);
    struct op_ragged *r = &op->u.ragged;
    load_ragged_common(w, m, p, r);
    walk_int(w, m, p, "num_kv_pages_per_block", false, 1, 1 << 16, &r->num_kv_pages_per_block);
    walk_int(w, m, p, "num_queries_per_block", false, 1, 1 << 16, &r->num_queries_per_block);
}

/* d_block_sizes / m_block_sizes: [bq_sz, bkv_sz, bq_csz, bkv_csz], each in
 * [1, 2^20] (upstream's _validate_block_sizes checks them in the kernel). */
void cfg_read_rpa3_blocks(struct walk *w, const struct cfg_node *m, const char *p,
                          const char *key, int64_t *out)
{
    const struct cfg_node *l = cfg_get(m, key);
    if (!l)
        return;
    char *lp = walk_join(p, key);
    if (l->type != CFG_SEQ || l->n != 4)
        walk_type_error(w, l, lp, "a list [bq_sz, bkv_sz, bq_csz, bkv_csz]");
    else
        for (int i = 0; i < 4; i++)
            walk_item(w, l, lp, i, 1, 1 << 20, &out[i]);
    free(lp);
}

void cfg_load_ragged3(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {RAGGED_KEYS, "d_block_sizes", "m_block_sizes",
                                       "update_kv_cache", NULL};
    walk_check_keys(w, m, p, keys);
    struct op_ragged *r = &op->u.ragged;
    load_ragged_common(w, m, p, r);
    cfg_read_rpa3_blocks(w, m, p, "d_block_sizes", r->d_block_sizes);
    cfg_read_rpa3_blocks(w, m, p, "m_block_sizes", r->m_block_sizes);
    bool update = true;
    walk_bool(w, m, p, "update_kv_cache", &update);
    r->no_kv_update = !update;
}

/* groups: [tensor] or {axes: [tensor], mesh: {...}} */
static void load_groups(struct walk *w, const struct cfg_node *g, const char *p,
                        struct op_collective *c)
{
    char *gp = walk_join(p, "groups");
    const struct cfg_node *list = g;
    if (g->type == CFG_MAP) {
        static const char *const keys[] = {"axes", "mesh", NULL};
        walk_check_keys(w, g, gp, keys);
        list = walk_field(w, g, gp, "axes", true);
        const struct cfg_node *mm = cfg_get(g, "mesh");
        char *mp = walk_join(gp, "mesh");
        if (mm && cfg_load_mesh(w, mm, mp, &c->mesh) == 0)
            c->own_mesh = true;
        free(mp);
    }
    char *ap = g->type == CFG_MAP ? walk_join(gp, "axes") : xstrdup(gp);
    c->grouped = true;
    if (list && (list->type != CFG_SEQ || list->n < 1 || list->n > MESH_MAX_AXES)) {
        walk_type_error(w, list, ap, "a list of mesh axis names, like [tensor] or [fsdp, data]");
    } else if (list) {
        c->ngroup = list->n;
        for (int i = 0; i < list->n; i++) {
            const struct cfg_node *it = list->kids[i];
            if (it->type != CFG_SCALAR || strlen(it->value) >= MESH_NAME_MAX) {
                char *ip = xasprintf("%s.%d", ap, i);
                walk_type_error(w, it, ip, "a mesh axis name");
                free(ip);
                continue;
            }
            snprintf(c->group_names[i], MESH_NAME_MAX, "%s", it->value);
        }
    }
    free(ap);
    free(gp);
}

void cfg_load_axes(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    struct op_collective *c = &op->u.coll;
    const struct cfg_node *ax = cfg_get(m, "axes"), *g = cfg_get(m, "groups");
    const struct cfg_node *rg = cfg_get(m, "replica_groups");
    char *ap = walk_join(p, "axes");
    c->naxes = 1;
    c->axes[0] = 0;
    if (ax && g) {
        walk_type_error(w, m, p, "either axes: (physical axes) or groups: (mesh axes), not both");
    } else if (rg && (ax || g)) {
        walk_type_error(w, m, p, "either replica_groups: (chips) or axes:/groups:, not both");
    } else if (rg) {
        cfg_load_replica_groups(w, walk_field(w, m, p, "replica_groups", true), p, c);
    } else if (g) {
        load_groups(w, g, p, c);
    } else if (ax && (ax->type != CFG_SEQ || ax->n < 1 || ax->n > 4)) {
        walk_type_error(w, ax, ap, "a list of 1 to 3 axes and dcn, like [0], [0, 1] or [dcn, 0]");
    } else if (ax) {
        c->naxes = 0;
        for (int i = 0; i < ax->n; i++) {
            const struct cfg_node *it = ax->kids[i];
            if (it->type == CFG_SCALAR && strcmp(it->value, "dcn") == 0) {
                if (c->dcn) {
                    char *ip = xasprintf("%s.%d", ap, i);
                    walk_type_error(w, it, ip, "dcn at most once");
                    free(ip);
                }
                c->dcn = true; /* across the slices (topology.slices) */
                continue;
            }
            int64_t v = 0;
            walk_item(w, ax, ap, i, 0, TOPO_MAX_DIMS - 1, &v);
            if (c->naxes < 3)
                c->axes[c->naxes++] = (int)v;
            else {
                char *ip = xasprintf("%s.%d", ap, i);
                walk_type_error(w, it, ip, "at most 3 physical axes");
                free(ip);
            }
        }
    }
    free(ap);
}

/* collective_matmul's groups: [tensor] (mesh axes), instead of its physical axis:. */
void cfg_load_cmm_groups(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    const struct cfg_node *g = cfg_get(m, "groups");
    if (g && cfg_get(m, "axis"))
        walk_type_error(w, m, p, "either axis: (a physical axis) or groups: (mesh axes), not both");
    else if (g)
        load_groups(w, g, p, &op->u.coll_matmul.g);
}

/* One axis of a mesh: "name: size" or "name: {size: N, on: [[axis, extent], ...]}". */
static void load_mesh_axis(struct walk *w, const struct cfg_node *m, int i, const char *p,
                           struct mesh_axis *a)
{
    const struct cfg_node *v = m->kids[i];
    char *ap = walk_join(p, m->keys[i]);
    snprintf(a->name, sizeof a->name, "%s", m->keys[i]);
    int64_t size = 1;
    if (v->type == CFG_MAP) {
        static const char *const keys[] = {"size", "on", "dcn", NULL};
        walk_check_keys(w, v, ap, keys);
        walk_int(w, v, ap, "size", true, 1, 1 << 20, &size);
        int64_t dcn = 0;
        walk_int(w, v, ap, "dcn", false, 1, DCN_MAX_SLICES, &dcn);
        a->dcn = (int)dcn;
        const struct cfg_node *on = cfg_get(v, "on");
        char *op = walk_join(ap, "on");
        if (on && (on->type != CFG_SEQ || on->n < 1 || on->n > MESH_MAX_FACTORS)) {
            walk_type_error(w, on, op, "a list of [physical axis, chips] pairs, like [[0, 4]]");
        } else if (on) {
            a->placed = true;
            a->nfactors = on->n;
            for (int k = 0; k < on->n; k++) {
                const struct cfg_node *pr = on->kids[k];
                char *kp = xasprintf("%s.%d", op, k);
                int64_t phys = 0, ext = 1;
                if (pr->type != CFG_SEQ || pr->n != 2) {
                    walk_type_error(w, pr, kp, "a [physical axis, chips] pair, like [0, 4]");
                } else {
                    walk_item(w, pr, kp, 0, 0, TOPO_MAX_DIMS - 1, &phys);
                    walk_item(w, pr, kp, 1, 1, 1 << 20, &ext);
                }
                a->f[k] = (struct mesh_factor){(int)phys, 1, (int)ext};
                free(kp);
            }
        }
        free(op);
    } else {
        walk_int(w, m, p, m->keys[i], true, 1, 1 << 20, &size);
    }
    a->size = (int)size;
    free(ap);
}

int cfg_load_mesh(struct walk *w, const struct cfg_node *m, const char *p, struct mesh *mesh)
{
    int before = diag_count(w->d);
    memset(mesh, 0, sizeof *mesh);
    if (!walk_is_map(w, m, p))
        return -1;
    if (m->n < 1 || m->n > MESH_MAX_AXES) {
        walk_type_error(w, m, p, "1 to 8 mesh axes, like {fsdp: 64, tensor: 4}");
        return -1;
    }
    mesh->naxes = m->n;
    for (int i = 0; i < m->n; i++) {
        if (strlen(m->keys[i]) >= MESH_NAME_MAX) {
            struct diag_loc loc = {m->file, m->key_line[i], m->key_col[i]};
            diag_error(w->d, &loc, p, "mesh axis name '%s' is longer than %d characters",
                       m->keys[i], MESH_NAME_MAX - 1);
            continue;
        }
        load_mesh_axis(w, m, i, p, &mesh->axis[i]);
    }
    return diag_count(w->d) > before ? -1 : 0;
}

void cfg_load_remote_copy(struct walk *w, const struct cfg_node *m, const char *p,
                             struct op *op)
{
    static const char *const keys[] = {CFG_OP_COMMON_KEYS, "bytes", "shift", "device_id", "recv_bytes",
                                       NULL};
    walk_check_keys(w, m, p, keys);
    struct op_remote_copy *r = &op->u.remote_copy;
    walk_bytes(w, m, p, "bytes", true, &r->bytes);
    r->recv_bytes = r->bytes;
    const struct cfg_node *rb = cfg_get(m, "recv_bytes");
    if (rb && rb->type == CFG_SCALAR && !strcmp(rb->value, "0"))
        r->recv_bytes = 0;
    else
        walk_bytes(w, m, p, "recv_bytes", false, &r->recv_bytes);
    const struct cfg_node *sh = cfg_get(m, "shift"), *id = cfg_get(m, "device_id");
    if ((sh != NULL) == (id != NULL)) {
        walk_type_error(w, m, p, "exactly one of shift: [..] or device_id: N | [x, y, z]");
        return;
    }
    const struct cfg_node *t = sh ? sh : id;
    char *tp = walk_join(p, sh ? "shift" : "device_id");
    if (id && id->type == CFG_SCALAR) {
        r->id_kind = 2;
        walk_int(w, m, p, "device_id", true, INT32_MIN, INT32_MAX, &r->logical);
    } else if (t->type != CFG_SEQ || t->n < 1 || t->n > 3) {
        walk_type_error(w, t, tp, "a list of 1 to 3 coordinates");
    } else {
        r->id_kind = sh ? 0 : 1;
        r->ncoords = t->n;
        for (int i = 0; i < t->n; i++) {
            int64_t v = 0;
            walk_item(w, t, tp, i, INT32_MIN / 2, INT32_MAX / 2, &v);
            r->coords[i] = (int)v;
        }
    }
    free(tp);
}

/* ---- XLA ops: shapes, fusion arrays ---- */

/* A shape: a list of 0 to OP_MAX_RANK positive dims, at most 2^50 elements. */
static int load_shape(struct walk *w, const struct cfg_node *n, const char *p, struct op_array *a)
{
    char want[64];
    snprintf(want, sizeof want, "a shape: a list of 0 to %d positive dims", OP_MAX_RANK);
    if (n->type != CFG_SEQ) {
        walk_type_error(w, n, p, want);
        return -1;
    }
    if (n->n > OP_MAX_RANK) {
        struct diag_loc loc;
        walk_loc(n, &loc);
        diag_error(w->d, &loc, p, "expected %s, got %d dims", want, n->n);
        return -1;
    }
    double elems = 1;
    for (int i = 0; i < n->n; i++) {
        if (walk_item(w, n, p, i, 1, (int64_t)1 << 40, &a->shape[i]) != 0)
            return -1;
        elems *= (double)a->shape[i];
    }
    a->rank = n->n;
    if (elems > 1125899906842624.0) { /* 2^50 */
        walk_type_error(w, n, p, "a shape of at most 2^50 elements");
        return -1;
    }
    return 0;
}

/* The got-part of a shape error: "[4096, 4096]". */
static void shape_error(struct walk *w, const struct cfg_node *n, const char *p,
                        const struct op_array *a, const char *want)
{
    char got[128];
    fusion_shape_str(a, got, sizeof got);
    struct diag_loc loc;
    walk_loc(n, &loc);
    diag_error(w->d, &loc, p, "expected %s, got %s", want, got);
}

void cfg_load_xla(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    const struct cfg_node *sh = walk_field(w, m, p, "shape", true);
    char *sp = walk_join(p, "shape");
    if (sh && load_shape(w, sh, sp, &op->u.xla.x) == 0) {
        const char *key;
        char want[160];
        if (xla_check(op, &key, want, sizeof want) != 0) {
            const struct cfg_node *at = cfg_get(m, key);
            char *kp = walk_join(p, key);
            if (strcmp(key, "shape") == 0)
                shape_error(w, sh, kp, &op->u.xla.x, want);
            else
                walk_type_error(w, at ? at : m, kp, want);
            free(kp);
        }
    }
    free(sp);
}

/* A number >= 0 (work per element). */
static void load_count(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                       double *out)
{
    const struct cfg_node *n = cfg_get(m, key);
    if (!n)
        return;
    char *end = NULL;
    double v = n->type == CFG_SCALAR ? strtod(n->value, &end) : -1;
    char *kp = walk_join(p, key);
    if (!end || *end || end == n->value || !(v >= 0 && v <= 1e6))
        walk_type_error(w, n, kp, "a number of operations per element in [0, 1e6]");
    else
        *out = v;
    free(kp);
}

/* inputs: or outputs: [{shape: [..], dtype}, ...] into 'a'; returns the count. */
static int load_arrays(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                       struct op_array *a)
{
    const struct cfg_node *l = walk_field(w, m, p, key, true);
    if (!l)
        return 0;
    char *lp = walk_join(p, key);
    int n = 0;
    if (l->type != CFG_SEQ || l->n < 1 || l->n > OP_FUSION_MAX_IO) {
        char want[96];
        snprintf(want, sizeof want, "a list of 1 to %d arrays {shape: [..], dtype}",
                 OP_FUSION_MAX_IO);
        walk_type_error(w, l, lp, want);
    } else {
        n = l->n;
        for (int i = 0; i < n; i++) {
            char *ip = xasprintf("%s.%d", lp, i);
            const struct cfg_node *e = l->kids[i];
            if (walk_is_map(w, e, ip)) {
                static const char *const k[] = {"shape", "dtype", NULL};
                walk_check_keys(w, e, ip, k);
                a[i].dt = DT_BF16;
                walk_dtype(w, e, ip, "dtype", &a[i].dt);
                const struct cfg_node *sh = walk_field(w, e, ip, "shape", true);
                char *sp = walk_join(ip, "shape");
                if (sh)
                    load_shape(w, sh, sp, &a[i]);
                free(sp);
            }
            free(ip);
        }
    }
    free(lp);
    return n;
}

/* Reports the first array of 'f' its loop cannot read, at its shape. */
static void check_fusion_arrays(struct walk *w, const struct cfg_node *m, const char *p,
                                const struct op_fusion *f)
{
    bool out;
    int i;
    char want[320];
    if (fusion_check_op(f, &out, &i, want, sizeof want) == 0)
        return;
    const struct cfg_node *l = cfg_get(m, out ? "outputs" : "inputs");
    const struct cfg_node *sh = cfg_get(l->kids[i], "shape");
    char *sp = xasprintf("%s.%s.%d.shape", p, out ? "outputs" : "inputs", i);
    shape_error(w, sh, sp, out ? &f->out[i] : &f->in[i], want);
    free(sp);
}

void cfg_load_fusion(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    struct op_fusion *f = &op->u.fusion;
    int before = diag_count(w->d);
    f->reduce_axis = -1;
    f->nin = load_arrays(w, m, p, "inputs", f->in);
    f->nout = load_arrays(w, m, p, "outputs", f->out);
    load_count(w, m, p, "vpu_ops", &f->vpu_ops);
    load_count(w, m, p, "transcendentals", &f->transcendentals);
    if (diag_count(w->d) > before)
        return;
    int64_t a = -1;
    if (walk_int(w, m, p, "reduce_axis", false, 0, OP_MAX_RANK - 1, &a) != 0)
        return;
    if (a >= f->in[0].rank) {
        char want[160], sh[96];
        fusion_shape_str(&f->in[0], sh, sizeof sh);
        snprintf(want, sizeof want, "an axis of inputs.0 %s, the array it reduces", sh);
        char *ap = walk_join(p, "reduce_axis");
        walk_type_error(w, cfg_get(m, "reduce_axis"), ap, want);
        free(ap);
        return;
    }
    f->reduce_axis = (int)a;
    check_fusion_arrays(w, m, p, f);
}
