/* config/cfg_tree.c -- the config tree: nodes with source marks, lookup,
 * copy, merge (chip presets), `--set key.path=value` overrides, and reading
 * a file (or an embedded one) through the YAML stage. Uses base/, config/cfg_yaml.c
 * (cfg_parse) and config/embedded.h. */
#include "config/cfg_tree.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "config/embedded.h"

struct cfg_node *cfg_node_new(enum cfg_type t, const char *file, int line, int col)
{
    struct cfg_node *n = xcalloc(1, sizeof *n);
    n->type = t;
    n->file = xstrdup(file);
    n->line = line;
    n->col = col;
    return n;
}

void cfg_node_free(struct cfg_node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->n; i++) {
        if (n->keys)
            free(n->keys[i]);
        cfg_node_free(n->kids[i]);
    }
    free(n->keys);
    free(n->kids);
    free(n->key_line);
    free(n->key_col);
    free(n->index);
    free(n->value);
    free(n->file);
    free(n);
}

/* Maps of at least this many keys get a hash index: a document of N keys
 * in one map is read in O(N) (duplicate-key checks look every key up). */
#define INDEX_MIN_KEYS 16

static uint32_t key_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Puts key 'i' of 'm' in its index (the first of equal keys stays first). */
static void index_put(struct cfg_node *m, int i)
{
    uint32_t mask = (uint32_t)m->index_cap - 1;
    uint32_t h = key_hash(m->keys[i]) & mask;
    while (m->index[h] >= 0)
        h = (h + 1) & mask;
    m->index[h] = i;
}

/* (Re)builds the index of 'm' at most half full. */
static void index_build(struct cfg_node *m)
{
    int cap = 64;
    while (cap < 2 * m->n + 2)
        cap *= 2;
    free(m->index);
    m->index = xmalloc(sizeof *m->index * (size_t)cap);
    for (int i = 0; i < cap; i++)
        m->index[i] = -1;
    m->index_cap = cap;
    for (int i = 0; i < m->n; i++)
        index_put(m, i);
}

/* The index of 'key' in map 'm' (its first), or -1; marks nothing. */
static int key_at(const struct cfg_node *m, const char *key)
{
    if (m->n < INDEX_MIN_KEYS) {
        for (int i = 0; i < m->n; i++)
            if (strcmp(m->keys[i], key) == 0)
                return i;
        return -1;
    }
    if (!m->index)
        index_build((struct cfg_node *)m); /* (a cache: the map is unchanged) */
    uint32_t mask = (uint32_t)m->index_cap - 1;
    for (uint32_t h = key_hash(key) & mask; m->index[h] >= 0; h = (h + 1) & mask)
        if (strcmp(m->keys[m->index[h]], key) == 0)
            return m->index[h];
    return -1;
}

void cfg_node_add(struct cfg_node *p, const char *key, int kl, int kc, struct cfg_node *kid)
{
    int i = p->n++;
    if (p->n > p->cap) { /* doubling: N adds cost O(N) */
        p->cap = p->cap ? 2 * p->cap : 4;
        p->kids = xrealloc(p->kids, sizeof *p->kids * (size_t)p->cap);
        if (p->type == CFG_MAP) {
            p->keys = xrealloc(p->keys, sizeof *p->keys * (size_t)p->cap);
            p->key_line = xrealloc(p->key_line, sizeof(int) * (size_t)p->cap);
            p->key_col = xrealloc(p->key_col, sizeof(int) * (size_t)p->cap);
        }
    }
    p->kids[i] = kid;
    if (p->type != CFG_MAP)
        return;
    p->keys[i] = xstrdup(key);
    p->key_line[i] = kl;
    p->key_col[i] = kc;
    if (p->index && 2 * p->n + 2 > p->index_cap)
        index_build(p);
    else if (p->index)
        index_put(p, i);
}

/* Reads 'path' ("-": standard input); NULL with a message at 'at' (or the
 * file itself) naming 'key'. */
static char *read_file(const char *path, const struct cfg_node *at, const char *key,
                       size_t *len, struct diag *d)
{
    bool in = strcmp(path, "-") == 0;
    char *buf = in ? fs_read_fd(0, CFG_MAX_FILE_BYTES, len)
                   : fs_read_all(path, CFG_MAX_FILE_BYTES, len);
    if (!buf) {
        char why[128];
        fs_read_error(errno, CFG_MAX_FILE_BYTES, why, sizeof why);
        struct diag_loc loc = {in ? CFG_STDIN_NAME : path, 0, 0};
        if (at) {
            struct diag_loc al = {at->file, at->line, at->col};
            diag_error(d, &al, key, "cannot read '%s': %s", path, why);
        } else {
            diag_error(d, &loc, NULL, "%s", why);
        }
    }
    return buf;
}

struct cfg_node *cfg_parse_file_at(const char *path, const struct cfg_node *at, const char *key,
                                   struct diag *d)
{
    const struct embedded_file *e = embedded_find(path);
    if (e)
        return cfg_parse(e->data, e->len, path, d);
    size_t len;
    char *text = read_file(path, at, key, &len, d);
    if (!text)
        return NULL;
    struct cfg_node *n = cfg_parse(text, len, strcmp(path, "-") ? path : CFG_STDIN_NAME, d);
    free(text);
    return n;
}

struct cfg_node *cfg_parse_file(const char *path, struct diag *d)
{
    return cfg_parse_file_at(path, NULL, NULL, d);
}

struct cfg_node *cfg_get(const struct cfg_node *m, const char *key)
{
    if (!m || m->type != CFG_MAP)
        return NULL;
    int i = key_at(m, key);
    if (i < 0)
        return NULL;
    m->kids[i]->read = true;
    return m->kids[i];
}

void cfg_copy_reads(const struct cfg_node *dst, const struct cfg_node *src)
{
    if (!dst || !src || dst->type != CFG_MAP || src->type != CFG_MAP)
        return;
    for (int i = 0; i < dst->n; i++) {
        int j = key_at(src, dst->keys[i]);
        if (j < 0)
            continue;
        dst->kids[i]->read |= src->kids[j]->read;
        cfg_copy_reads(dst->kids[i], src->kids[j]);
    }
}

void cfg_forget_reads(struct cfg_node *n)
{
    n->read = n->checked = false;
    for (int i = 0; i < n->n && n->type != CFG_SCALAR; i++)
        cfg_forget_reads(n->kids[i]);
}

void cfg_put(struct cfg_node *m, const char *key, struct cfg_node *v)
{
    int i = m->type == CFG_MAP ? key_at(m, key) : -1;
    if (i >= 0) {
        cfg_node_free(m->kids[i]);
        m->kids[i] = v;
        return;
    }
    cfg_node_add(m, key, v->line, v->col, v);
}

struct cfg_node *cfg_copy(const struct cfg_node *n)
{
    struct cfg_node *c = cfg_node_new(n->type, n->file, n->line, n->col);
    c->value = n->value ? xstrdup(n->value) : NULL;
    c->quoted = n->quoted;
    for (int i = 0; i < n->n; i++)
        cfg_node_add(c, n->keys ? n->keys[i] : NULL, n->key_line ? n->key_line[i] : 0,
                n->key_col ? n->key_col[i] : 0, cfg_copy(n->kids[i]));
    return c;
}

void cfg_merge(struct cfg_node *base, const struct cfg_node *over, const char *const *skip)
{
    for (int i = 0; i < over->n; i++) {
        bool skipped = false;
        for (const char *const *s = skip; s && *s; s++)
            skipped |= strcmp(*s, over->keys[i]) == 0;
        if (skipped)
            continue;
        struct cfg_node *b = cfg_get(base, over->keys[i]);
        if (b && b->type == CFG_MAP && over->kids[i]->type == CFG_MAP)
            cfg_merge(b, over->kids[i], NULL);
        else
            cfg_put(base, over->keys[i], cfg_copy(over->kids[i]));
    }
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* A list index: an all-digit segment below 'n'; never wraps (no atoi). */
static bool parse_index(const char *seg, int n, int *out)
{
    if (!all_digits(seg))
        return false;
    errno = 0;
    unsigned long long v = strtoull(seg, NULL, 10);
    if (errno == ERANGE || v >= (unsigned long long)n)
        return false;
    *out = (int)v;
    return true;
}

/* True when every segment of the dotted 'path' is non-empty. */
static bool path_ok(const char *path)
{
    size_t n = strlen(path);
    return n && path[0] != '.' && path[n - 1] != '.' && !strstr(path, "..");
}

/* Walks 'root' along the dotted 'path', creating maps for missing keys. */
static struct cfg_node **set_target(struct cfg_node **slot, char *path, const char *file,
                                    struct diag *d, const char *whole)
{
    struct diag_loc loc = {file, 0, 0};
    char *save = NULL;
    for (char *seg = strtok_r(path, ".", &save); seg; seg = strtok_r(NULL, ".", &save)) {
        struct cfg_node *n = *slot;
        if (n->type == CFG_SEQ) {
            int i = 0;
            if (!all_digits(seg)) {
                diag_error(d, &loc, whole, "expected an index below %d, got '%s'", n->n, seg);
                return NULL;
            }
            if (!parse_index(seg, n->n, &i)) {
                diag_error(d, &loc, whole, "index %s is out of range (the list has %d item%s)",
                           seg, n->n, n->n == 1 ? "" : "s");
                return NULL;
            }
            slot = &n->kids[i];
            continue;
        }
        if (n->type != CFG_MAP) {
            n->type = CFG_MAP;
            free(n->value);
            n->value = NULL;
        }
        if (!cfg_get(n, seg))
            cfg_put(n, seg, cfg_node_new(CFG_MAP, file, 0, 0));
        slot = &n->kids[key_at(n, seg)];
    }
    return slot;
}

int cfg_apply_set(struct cfg_node *root, const char *set, struct diag *d)
{
    const char *eq = strchr(set, '=');
    char *file = xasprintf("--set %s", set);
    struct diag_loc loc = {file, 0, 0};
    int rc = -1;
    char *path = eq ? xasprintf("%.*s", (int)(eq - set), set) : NULL;
    if (!path || !path_ok(path)) {
        /* an empty segment would name the root itself, which the caller owns */
        diag_error(d, &loc, NULL, "expected key.path=value (dot-separated keys, none empty)");
        free(path);
        goto out;
    }
    struct cfg_node *v = cfg_parse(eq + 1, strlen(eq + 1), file, d);
    if (v) {
        char *whole = xstrdup(path);
        struct cfg_node **slot = set_target(&root, path, file, d, whole);
        if (slot) {
            cfg_node_free(*slot);
            *slot = v;
            rc = 0;
        } else {
            cfg_node_free(v);
        }
        free(whole);
    }
    free(path);
out:
    free(file);
    return rc;
}

void cfg_normalize_chip(struct cfg_node *root)
{
    struct cfg_node *ch = cfg_get(root, "chip");
    if (!ch || ch->type != CFG_SCALAR)
        return;
    struct cfg_node *base = cfg_copy(ch);
    ch->type = CFG_MAP;
    free(ch->value);
    ch->value = NULL;
    cfg_put(ch, "base", base);
}
