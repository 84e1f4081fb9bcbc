/* config/cfg_walk.c -- stage 3 of the config loader: the typed walk over a
 * cfg_node tree (see config/cfg_walk.h). Uses base/ and config/cfg_tree.h. */
#include "config/cfg_walk.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "base/xalloc.h"

void walk_loc(const struct cfg_node *n, struct diag_loc *loc)
{
    loc->file = n->file;
    loc->line = n->line;
    loc->col = n->col;
}

char *walk_join(const char *path, const char *key)
{
    return *path ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *walk_suggest(const char *word, const char *const *candidates, bool *known)
{
    /* a known word first: every key of every config is checked, and distances
     * to the candidates before it in the list would be wasted */
    for (const char *const *a = candidates; *a; a++)
        if (strcmp(*a, word) == 0) {
            *known = true;
            return NULL;
        }
    const char *best = NULL;
    int best_d = 3;
    *known = false;
    for (const char *const *a = candidates; *a; a++) {
        int dist = edit_distance(*a, word);
        if (dist < best_d)
            best_d = dist, best = *a;
    }
    return best;
}

bool walk_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f || *s == '/' || *s == '=')
            return false;
    return true;
}

/* Reports every key of map 'm' that is not in 'allowed'. */
void walk_check_keys(struct walk *w, const struct cfg_node *m, const char *path,
                       const char *const *allowed)
{
    ((struct cfg_node *)m)->checked = true; /* walk_check_unread looks at it */
    for (int i = 0; w->log && allowed[i]; i++) {
        w->log->keys = xrealloc(w->log->keys, sizeof(char *) * (size_t)(w->log->n + 1));
        w->log->keys[w->log->n++] = xstrdup(allowed[i]);
    }
    for (int i = 0; i < m->n; i++) {
        bool found;
        const char *best = walk_suggest(m->keys[i], allowed, &found);
        if (found)
            continue;
        struct diag_loc loc = {m->file, m->key_line[i], m->key_col[i]};
        if (best)
            diag_error(w->d, &loc, path, "unknown key '%s' (did you mean '%s'?)", m->keys[i], best);
        else
            diag_error(w->d, &loc, path, "unknown key '%s'", m->keys[i]);
    }
}

void walk_check_unread(struct walk *w, const struct cfg_node *n, const char *path)
{
    if (!n || n->type == CFG_SCALAR)
        return;
    for (int i = 0; i < n->n; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%d", i);
        char *p = walk_join(path, n->type == CFG_MAP ? n->keys[i] : idx);
        if (n->type == CFG_MAP && n->checked && !n->kids[i]->read) {
            struct diag_loc loc = {n->file, n->key_line[i], n->key_col[i]};
            diag_error(w->d, &loc, p, "not used here: nothing reads '%s' (remove it)",
                       n->keys[i]);
        }
        walk_check_unread(w, n->kids[i], p);
        free(p);
    }
}

#define SHOWN_MAX 60 /* characters of a bad value echoed back */

struct brief {
    char buf[SHOWN_MAX + 8];
    size_t n;
    bool full;
};

static void put(struct brief *b, const char *s, size_t len)
{
    for (size_t i = 0; i < len && !b->full; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8] = "";
        if (c == '\n' || c == '\t' || c == '\r')
            snprintf(esc, sizeof esc, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
        else if (c < 0x20 || c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", c);
        size_t k = *esc ? strlen(esc) : 1;
        if (b->n + k > SHOWN_MAX) {
            memcpy(b->buf + b->n, "...", 4);
            b->full = true;
            return;
        }
        memcpy(b->buf + b->n, *esc ? esc : (const char *)&s[i], k);
        b->n += k;
        b->buf[b->n] = '\0';
    }
}

static void brief_node(struct brief *b, const struct cfg_node *n)
{
    if (n->type == CFG_SCALAR) {
        put(b, n->value, strlen(n->value));
        return;
    }
    put(b, n->type == CFG_SEQ ? "[" : "{", 1);
    for (int i = 0; i < n->n && !b->full; i++) {
        if (i)
            put(b, ", ", 2);
        const struct cfg_node *k = n->kids[i];
        bool null = k->type == CFG_SCALAR && !k->quoted && !k->value[0];
        if (n->type == CFG_MAP) {
            put(b, n->keys[i], strlen(n->keys[i]));
            if (!null)
                put(b, ": ", 2);
        }
        if (!null || n->type == CFG_SEQ)
            brief_node(b, k);
    }
    put(b, n->type == CFG_SEQ ? "]" : "}", 1);
}

void walk_type_error(struct walk *w, const struct cfg_node *n, const char *path, const char *what)
{
    struct diag_loc loc;
    walk_loc(n, &loc);
    struct brief b = {.n = 0};
    brief_node(&b, n);
    if (n->type == CFG_SCALAR)
        diag_error(w->d, &loc, path, "expected %s, got '%s'", what, b.buf);
    else
        diag_error(w->d, &loc, path, "expected %s, got a %s %s", what,
                   n->type == CFG_SEQ ? "sequence" : "mapping", b.buf);
}

bool walk_is_map(struct walk *w, const struct cfg_node *n, const char *path)
{
    if (n->type == CFG_MAP)
        return true;
    walk_type_error(w, n, path, "a mapping");
    return false;
}

/* Fetches map[key]; reports it missing when 'required'. */
const struct cfg_node *walk_field(struct walk *w, const struct cfg_node *m, const char *path,
                                    const char *key, bool required)
{
    const struct cfg_node *n = cfg_get(m, key);
    if (!n && required) {
        struct diag_loc loc;
        walk_loc(m, &loc);
        diag_error(w->d, &loc, path, "missing required key '%s'", key);
    }
    return n;
}

int walk_int(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   bool required, int64_t min, int64_t max, int64_t *out)
{
    const struct cfg_node *n = walk_field(w, m, path, key, required);
    if (!n)
        return required ? -1 : 0;
    char *p = walk_join(path, key);
    char *end = NULL;
    long long v = 0;
    int rc = -1;
    if (n->type == CFG_SCALAR && !n->quoted) {
        errno = 0;
        v = strtoll(n->value, &end, 10);
    }
    if (!end || end == n->value || *end || errno) {
        char what[64];
        snprintf(what, sizeof what, min > 0 ? "a positive integer" : "an integer");
        walk_type_error(w, n, p, what);
    } else if (v < min || v > max) {
        char want[96];
        if (max == INT64_MAX)
            snprintf(want, sizeof want, "an integer >= %lld", (long long)min);
        else
            snprintf(want, sizeof want, "an integer in [%lld, %lld]", (long long)min,
                     (long long)max);
        walk_type_error(w, n, p, want);
    } else {
        *out = v;
        rc = 0;
    }
    free(p);
    return rc;
}

int walk_int32(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                 bool required, int64_t min, int64_t max, int *out)
{
    int64_t v = *out;
    int rc = walk_int(w, m, path, key, required, min, max, &v);
    *out = (int)v;
    return rc;
}

/* Item 'i' of sequence 'seq' (path 'p') as an integer in [min, max]. */
int walk_item(struct walk *w, const struct cfg_node *seq, const char *p, int i, int64_t min,
                    int64_t max, int64_t *out)
{
    char key[16];
    snprintf(key, sizeof key, "%d", i);
    char *keys[1] = {key};
    struct cfg_node *kids[1] = {seq->kids[i]};
    struct cfg_node holder = {.type = CFG_MAP, .n = 1, .keys = keys, .kids = kids,
                              .file = seq->file};
    return walk_int(w, &holder, p, key, true, min, max, out);
}

/* A real number (no unit) in [min, max] described by 'want'; leaves '*out' if
 * absent (an error when 'required'). NaN and infinities are refused. Returns 0 or -1. */
int walk_real(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                    bool required, double min, double max, const char *want, double *out)
{
    const struct cfg_node *n = walk_field(w, m, p, key, required);
    if (!n)
        return required ? -1 : 0;
    char *end = NULL;
    double v = n->type == CFG_SCALAR ? strtod(n->value, &end) : 0;
    char *q = walk_join(p, key);
    int rc = -1;
    if (!end || *end || !(v >= min && v <= max))
        walk_type_error(w, n, q, want);
    else
        *out = v, rc = 0;
    free(q);
    return rc;
}

/* A positive real number, like sm_scale. */
void walk_positive(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                         double *out)
{
    walk_real(w, m, p, key, false, 1e-6, 1e6, "a positive number from 1e-6 to 1e6", out);
}

int walk_bool(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                    bool *out)
{
    const struct cfg_node *n = walk_field(w, m, path, key, false);
    if (!n)
        return 0;
    static const char *const t[] = {"true", "True", "yes", "on", NULL};
    static const char *const f[] = {"false", "False", "no", "off", NULL};
    if (n->type == CFG_SCALAR && !n->quoted) {
        for (int i = 0; t[i]; i++) {
            if (strcmp(n->value, t[i]) == 0) {
                *out = true;
                return 0;
            }
            if (strcmp(n->value, f[i]) == 0) {
                *out = false;
                return 0;
            }
        }
    }
    char *p = walk_join(path, key);
    walk_type_error(w, n, p, "true or false");
    free(p);
    return -1;
}

/* Every quantity's range, wide enough for any real or hypothetical chip and
 * narrow enough that times stay finite in SimGrid (1e300TBps aborted it). */
static const struct {
    double lo, hi;
    const char *text;
} bounds[] = {
    [UNITS_BYTES] = {0, 1e18, "below 1EB"},
    [UNITS_BANDWIDTH] = {1e6, 1e15, "from 1MBps to 1PBps"},
    [UNITS_TIME] = {1e-12, 1, "(0s, or from 1ps to 1s)"},
    [UNITS_FLOPS] = {1e9, 1e18, "from 1Gf to 1Ef"},
    [UNITS_FREQ] = {1e6, 1e11, "from 1MHz to 100GHz"},
};

/* A quantity with a unit, > 0 unless 'zero_ok'. */
int walk_qty(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   bool required, enum units_kind kind, bool zero_ok, double *out)
{
    const struct cfg_node *n = walk_field(w, m, path, key, required);
    if (!n)
        return required ? -1 : 0;
    char *p = walk_join(path, key);
    double v;
    int rc = -1;
    char want[128];
    snprintf(want, sizeof want, "%s %s", units_expect(kind), bounds[kind].text);
    if (n->type != CFG_SCALAR || units_parse(n->value, kind, &v) != 0) {
        walk_type_error(w, n, p, units_expect(kind));
    } else if (!zero_ok && v <= 0) {
        snprintf(want, sizeof want, "%s greater than 0", units_expect(kind));
        walk_type_error(w, n, p, want);
    } else if (kind == UNITS_BYTES && (v != floor(v) || v > 1e18)) {
        walk_type_error(w, n, p, "a whole number of bytes below 1EB");
    } else if (!(v >= bounds[kind].lo && v <= bounds[kind].hi) && !(v == 0 && zero_ok)) {
        walk_type_error(w, n, p, want); /* the engine cannot run what it cannot represent */
    } else {
        *out = v;
        rc = 0;
    }
    free(p);
    return rc;
}

int walk_bytes(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                     bool required, uint64_t *out)
{
    double v = (double)*out;
    int rc = walk_qty(w, m, path, key, required, UNITS_BYTES, false, &v);
    *out = (uint64_t)v;
    return rc;
}

int walk_size(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
              bool required, uint64_t lo, uint64_t hi, const char *range, uint64_t *out)
{
    uint64_t v = *out;
    if (walk_bytes(w, m, path, key, required, &v) != 0)
        return -1;
    const struct cfg_node *n = cfg_get(m, key);
    if (n && (v < lo || v > hi)) {
        char *p = walk_join(path, key);
        char want[96];
        snprintf(want, sizeof want, "a size %s", range);
        walk_type_error(w, n, p, want);
        free(p);
        return -1;
    }
    *out = v;
    return 0;
}

int walk_dtype(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                     enum dtype *out)
{
    const struct cfg_node *n = walk_field(w, m, path, key, false);
    if (!n)
        return 0;
    if (n->type == CFG_SCALAR && dtype_parse(n->value, out) == 0)
        return 0;
    char *p = walk_join(path, key);
    walk_type_error(w, n, p, "a dtype (bf16, f32, int8, fp8)");
    free(p);
    return -1;
}

int walk_mxu_dtype(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   enum dtype *out)
{
    if (walk_dtype(w, m, path, key, out) != 0)
        return -1;
    const struct chip_params *c = w->chip;
    const struct cfg_node *n = cfg_get(m, key);
    if (!n || !c || c->hypothetical || c->mxu_dtype[*out] || !c->mxu_dtype[DT_BF16])
        return 0; /* (no bf16: the chip did not load, and said why) */
    char want[256], list[64] = "";
    for (int dt = 0; dt < DT_COUNT; dt++)
        if (c->mxu_dtype[dt] && dt != DT_INT32)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                     dtype_name((enum dtype)dt));
    snprintf(want, sizeof want,
             "a dtype the %s MXU takes (%s; chip: {base: %s, hypothetical: true} allows others)",
             c->name, list, c->name);
    char *p = walk_join(path, key);
    walk_type_error(w, n, p, want);
    free(p);
    return -1;
}

/* An efficiency: a fraction in [0.01, 1], default 1. */
void walk_fraction(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                         double *out)
{
    *out = 1.0;
    walk_real(w, m, p, key, false, 0.01, 1.0, "a fraction in [0.01, 1]", out);
}

int walk_enum(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                    const char *const *names, int *out)
{
    const struct cfg_node *n = walk_field(w, m, path, key, false);
    if (!n)
        return 0;
    for (int i = 0; n->type == CFG_SCALAR && names[i]; i++) {
        if (strcmp(n->value, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    char want[1024] = "one of";
    for (int i = 0; names[i]; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s %s", i ? "," : "", names[i]);
    char *p = walk_join(path, key);
    walk_type_error(w, n, p, want);
    free(p);
    return -1;
}


/* ---- field tables ---- */

static void store_default(const struct walk_key *k, char *base)
{
    void *p = base + k->offset;
    switch (k->type) {
    case WALK_INT:
        *(int64_t *)p = (int64_t)k->dflt;
        break;
    case WALK_INT32:
    case WALK_ENUM:
        *(int *)p = (int)k->dflt;
        break;
    case WALK_BYTES:
        *(uint64_t *)p = (uint64_t)k->dflt;
        break;
    case WALK_BOOL:
        *(bool *)p = k->dflt != 0;
        break;
    case WALK_DTYPE:
    case WALK_MXU_DTYPE:
        *(enum dtype *)p = (enum dtype)k->dflt;
        break;
    case WALK_REAL:
        *(double *)p = k->dflt;
        break;
    case WALK_MAP:
        for (const struct walk_key *s = k->sub; s->key; s++)
            store_default(s, base);
        break;
    }
}

static void read_key(struct walk *w, const struct cfg_node *m, const char *path,
                     const struct walk_key *k, char *base)
{
    void *p = base + k->offset;
    switch (k->type) {
    case WALK_INT:
        walk_int(w, m, path, k->key, k->required, k->min, k->max, p);
        break;
    case WALK_INT32:
        walk_int32(w, m, path, k->key, k->required, k->min, k->max, p);
        break;
    case WALK_ENUM:
        walk_enum(w, m, path, k->key, k->names, p);
        break;
    case WALK_BYTES:
        walk_bytes(w, m, path, k->key, k->required, p);
        break;
    case WALK_BOOL:
        walk_bool(w, m, path, k->key, p);
        break;
    case WALK_DTYPE:
        walk_dtype(w, m, path, k->key, p);
        break;
    case WALK_MXU_DTYPE:
        walk_mxu_dtype(w, m, path, k->key, p);
        break;
    case WALK_REAL:
        walk_positive(w, m, path, k->key, p);
        break;
    case WALK_MAP: {
        const struct cfg_node *n = walk_field(w, m, path, k->key, k->required);
        char *sp = walk_join(path, k->key);
        if (n && walk_is_map(w, n, sp))
            walk_fields(w, n, sp, k->sub, NULL, base);
        free(sp);
        break;
    }
    }
}

/* The keys 'extra' followed by those of table 'keys', NULL-terminated; caller frees. */
static const char **allowed_keys(const struct walk_key *keys, const char *const *extra)
{
    size_t n = 0, e = 0;
    while (keys[n].key)
        n++;
    while (extra && extra[e])
        e++;
    const char **all = xcalloc(n + e + 1, sizeof *all);
    for (size_t i = 0; i < e; i++)
        all[i] = extra[i];
    for (size_t i = 0; i < n; i++)
        all[e + i] = keys[i].key;
    return all;
}

void walk_fields(struct walk *w, const struct cfg_node *m, const char *path,
                 const struct walk_key *keys, const char *const *extra, void *base)
{
    const char **all = allowed_keys(keys, extra);
    walk_check_keys(w, m, path, all);
    free(all);
    for (const struct walk_key *k = keys; k->key; k++)
        store_default(k, base);
    for (const struct walk_key *k = keys; k->key; k++)
        read_key(w, m, path, k, base);
}
