/* sim/cfg.c -- YAML documents as trees with marks; `--set` overrides; merge.
 * libyaml's loader gives a node graph whose marks are 0-based; we copy it
 * into our own tree (1-based marks) so overrides and preset merging can
 * edit it before the schema walk in cfg_schema.c. */
#include "sim/cfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "sim/cfg_node.h"
#include "base/fsutil.h"
#include "base/xalloc.h"
#include "sim/embedded.h"

static struct cfg_node *node_new(enum cfg_type t, const char *file, int line, int col)
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
    free(n->value);
    free(n->file);
    free(n);
}

static void add_kid(struct cfg_node *p, const char *key, int kl, int kc, struct cfg_node *kid)
{
    int i = p->n++;
    p->kids = xrealloc(p->kids, sizeof *p->kids * (size_t)p->n);
    p->kids[i] = kid;
    if (p->type != CFG_MAP)
        return;
    p->keys = xrealloc(p->keys, sizeof *p->keys * (size_t)p->n);
    p->key_line = xrealloc(p->key_line, sizeof(int) * (size_t)p->n);
    p->key_col = xrealloc(p->key_col, sizeof(int) * (size_t)p->n);
    p->keys[i] = xstrdup(key);
    p->key_line[i] = kl;
    p->key_col[i] = kc;
}

static struct cfg_node *convert(yaml_document_t *doc, yaml_node_t *yn, const char *file,
                                int depth, struct diag *d)
{
    int line = (int)yn->start_mark.line + 1, col = (int)yn->start_mark.column + 1;
    struct diag_loc loc = {file, line, col};
    if (depth > 64) {
        diag_error(d, &loc, NULL, "document nested too deeply");
        return NULL;
    }
    if (yn->type == YAML_SCALAR_NODE) {
        struct cfg_node *n = node_new(CFG_SCALAR, file, line, col);
        n->value = xstrdup((const char *)yn->data.scalar.value);
        n->quoted = yn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    yn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return n;
    }
    if (yn->type == YAML_SEQUENCE_NODE) {
        struct cfg_node *n = node_new(CFG_SEQ, file, line, col);
        for (yaml_node_item_t *it = yn->data.sequence.items.start;
             it < yn->data.sequence.items.top; it++) {
            struct cfg_node *k = convert(doc, yaml_document_get_node(doc, *it), file, depth + 1, d);
            if (!k) {
                cfg_node_free(n);
                return NULL;
            }
            add_kid(n, NULL, 0, 0, k);
        }
        return n;
    }
    struct cfg_node *n = node_new(CFG_MAP, file, line, col);
    for (yaml_node_pair_t *p = yn->data.mapping.pairs.start; p < yn->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        struct diag_loc kl = {file, (int)kn->start_mark.line + 1, (int)kn->start_mark.column + 1};
        if (kn->type != YAML_SCALAR_NODE) {
            diag_error(d, &kl, NULL, "expected a key (a plain word), got a %s",
                       kn->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
            cfg_node_free(n);
            return NULL;
        }
        const char *key = (const char *)kn->data.scalar.value;
        if (cfg_get(n, key))
            diag_error(d, &kl, key, "duplicate key");
        struct cfg_node *v = convert(doc, yaml_document_get_node(doc, p->value), file, depth + 1, d);
        if (!v) {
            cfg_node_free(n);
            return NULL;
        }
        add_kid(n, key, kl.line, kl.col, v);
    }
    return n;
}

struct cfg_node *cfg_parse(const char *text, size_t len, const char *file, struct diag *d)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        struct diag_loc loc = {file, (int)parser.problem_mark.line + 1,
                               (int)parser.problem_mark.column + 1};
        if (parser.context)
            diag_error(d, &loc, NULL, "%s %s", parser.problem ? parser.problem : "syntax error",
                       parser.context);
        else
            diag_error(d, &loc, NULL, "%s", parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    struct cfg_node *n = root ? convert(&doc, root, file, 0, d) : node_new(CFG_MAP, file, 1, 1);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (n && n->type == CFG_SCALAR && n->value[0] == '\0') {
        n->type = CFG_MAP; /* an empty document */
    }
    return n;
}

static char *read_file(const char *path, size_t *len, struct diag *d)
{
    char *buf = fs_read_all(path, CFG_MAX_FILE_BYTES, len);
    if (!buf) {
        struct diag_loc loc = {path, 0, 0};
        if (errno == EFBIG)
            diag_error(d, &loc, NULL, "file is larger than the limit of %d MiB",
                       (int)(CFG_MAX_FILE_BYTES >> 20));
        else if (errno == EISDIR)
            diag_error(d, &loc, NULL, "expected a file, got a directory");
        else
            diag_error(d, &loc, NULL, "cannot open: %s", strerror(errno));
    }
    return buf;
}

struct cfg_node *cfg_parse_file(const char *path, struct diag *d)
{
    const struct embedded_file *e = embedded_find(path);
    if (e)
        return cfg_parse(e->data, e->len, path, d);
    size_t len;
    char *text = read_file(path, &len, d);
    if (!text)
        return NULL;
    struct cfg_node *n = cfg_parse(text, len, path, d);
    free(text);
    return n;
}

struct cfg_node *cfg_get(const struct cfg_node *m, const char *key)
{
    if (!m || m->type != CFG_MAP)
        return NULL;
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], key) == 0)
            return m->kids[i];
    return NULL;
}

void cfg_put(struct cfg_node *m, const char *key, struct cfg_node *v)
{
    for (int i = 0; i < m->n; i++) {
        if (strcmp(m->keys[i], key) == 0) {
            cfg_node_free(m->kids[i]);
            m->kids[i] = v;
            return;
        }
    }
    add_kid(m, key, v->line, v->col, v);
}

struct cfg_node *cfg_copy(const struct cfg_node *n)
{
    struct cfg_node *c = node_new(n->type, n->file, n->line, n->col);
    c->value = n->value ? xstrdup(n->value) : NULL;
    c->quoted = n->quoted;
    for (int i = 0; i < n->n; i++)
        add_kid(c, n->keys ? n->keys[i] : NULL, n->key_line ? n->key_line[i] : 0,
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

/* Walks 'root' along the dotted 'path', creating maps for missing keys. */
static struct cfg_node **set_target(struct cfg_node **slot, char *path, const char *file,
                                    struct diag *d, const char *whole)
{
    struct diag_loc loc = {file, 0, 0};
    for (char *seg = strtok(path, "."); seg; seg = strtok(NULL, ".")) {
        struct cfg_node *n = *slot;
        if (n->type == CFG_SEQ) {
            if (!all_digits(seg) || atoi(seg) >= n->n) {
                diag_error(d, &loc, whole, "expected an index below %d, got '%s'", n->n, seg);
                return NULL;
            }
            slot = &n->kids[atoi(seg)];
            continue;
        }
        if (n->type != CFG_MAP) {
            n->type = CFG_MAP;
            free(n->value);
            n->value = NULL;
        }
        if (!cfg_get(n, seg))
            cfg_put(n, seg, node_new(CFG_MAP, file, 0, 0));
        for (int i = 0; i < n->n; i++)
            if (strcmp(n->keys[i], seg) == 0)
                slot = &n->kids[i];
    }
    return slot;
}

int cfg_apply_set(struct cfg_node *root, const char *set, struct diag *d)
{
    const char *eq = strchr(set, '=');
    char *file = xasprintf("--set %s", set);
    struct diag_loc loc = {file, 0, 0};
    int rc = -1;
    if (!eq || eq == set) {
        diag_error(d, &loc, NULL, "expected key.path=value");
        goto out;
    }
    char *path = xmalloc((size_t)(eq - set) + 1);
    memcpy(path, set, (size_t)(eq - set));
    path[eq - set] = '\0';
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
