/* config/cfg_yaml.c -- stage 1 of the config loader: YAML text -> cfg_node tree.
 * The only file that includes <yaml.h>. The tree is built from libyaml's
 * event stream (yaml_parser_parse), not its document loader, so every limit
 * holds while parsing: nesting stops at CFG_MAX_DEPTH at once (libyaml's
 * scanner is quadratic in the depth), aliases are counted against
 * CFG_MAX_NODES and CFG_MAX_EXPANDED_BYTES as they come (an alias bomb stops
 * at the limit instead of exhausting memory) and stay placeholders (a node
 * whose 'alias' names its anchored node) until the document has ended within
 * the limits: only then are they expanded into copies, so a document past a
 * limit is refused without building it first. A second document and tags other
 * than !!str are errors. Marks are 1-based. Uses base/ and config/cfg_tree.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/xalloc.h"
#include "config/cfg_tree.h"

#define STR_TAG "tag:yaml.org,2002:str"

struct anchor {
    char *name;
    const struct cfg_node *node; /* in the tree being built */
    size_t nodes, bytes;         /* what one copy of it costs */
};

struct frame {
    struct cfg_node *n;
    char *key;           /* a map's key waiting for its value, or NULL */
    int kl, kc;          /* and its mark */
    char *anchor;        /* the collection's anchor, registered when it ends */
    size_t nodes, bytes; /* the totals when it started */
};

struct loader {
    const char *file;
    struct diag *d;
    struct cfg_node *root;
    struct frame stack[CFG_MAX_DEPTH + 1];
    int depth;
    struct anchor *anchors;
    size_t nanchors, cap;
    size_t nodes, bytes; /* expanded so far */
    bool failed, done;   /* an error was reported; the document ended */
    bool aliases;        /* the tree holds placeholders to expand */
};

static void fail(struct loader *L, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct loader *L, const yaml_mark_t *m, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct diag_loc loc = {L->file, (int)m->line + 1, (int)m->column + 1};
    diag_error(L->d, &loc, NULL, "%s", msg);
    L->failed = true;
}

/* Counts 'nodes' more nodes and 'bytes' more bytes; false (and a message) past a limit. */
static bool spend(struct loader *L, const yaml_mark_t *m, size_t nodes, size_t bytes)
{
    L->nodes += nodes;
    L->bytes += bytes;
    if (L->nodes > CFG_MAX_NODES) {
        fail(L, m, "the document expands to more than %d nodes (aliases included), the limit",
             CFG_MAX_NODES);
        return false;
    }
    if (L->bytes > CFG_MAX_EXPANDED_BYTES) {
        fail(L, m, "the document expands to more than %d MiB (aliases included), the limit",
             (int)(CFG_MAX_EXPANDED_BYTES >> 20));
        return false;
    }
    return true;
}

static size_t node_cost(const struct loader *L, size_t text)
{
    return sizeof(struct cfg_node) + strlen(L->file) + 1 + text;
}

static const struct anchor *find_anchor(const struct loader *L, const char *name)
{
    for (size_t i = L->nanchors; i-- > 0;) /* a redefined anchor: the latest wins */
        if (strcmp(L->anchors[i].name, name) == 0)
            return &L->anchors[i];
    return NULL;
}

static void add_anchor(struct loader *L, const char *name, const struct cfg_node *n,
                       size_t nodes, size_t bytes)
{
    xgrow(&L->anchors, &L->cap, L->nanchors + 1, sizeof *L->anchors);
    L->anchors[L->nanchors++] = (struct anchor){xstrdup(name), n, nodes, bytes};
}

/* A tag: !!str makes a scalar a string; any other is an error. */
static bool tag_ok(struct loader *L, const yaml_event_t *e, const yaml_char_t *tag, bool *str)
{
    if (!tag)
        return true;
    if (str && strcmp((const char *)tag, STR_TAG) == 0) {
        *str = true;
        return true;
    }
    fail(L, &e->start_mark, "unsupported tag '%s' (tpusim reads plain YAML; only !!str is allowed)",
         (const char *)tag);
    return false;
}

/* Hangs 'n' (a new node) under the innermost open collection, or makes it the root. */
static void attach(struct loader *L, struct cfg_node *n)
{
    if (L->depth == 0) {
        L->root = n;
        return;
    }
    struct frame *f = &L->stack[L->depth - 1];
    if (f->n->type == CFG_SEQ) {
        cfg_node_add(f->n, NULL, 0, 0, n);
        return;
    }
    if (cfg_get(f->n, f->key)) {
        struct diag_loc kl = {L->file, f->kl, f->kc};
        diag_error(L->d, &kl, f->key, "duplicate key");
    }
    cfg_node_add(f->n, f->key, f->kl, f->kc, n);
    free(f->key);
    f->key = NULL;
}

/* True when the next node of the innermost collection is a map key. */
static bool wants_key(const struct loader *L)
{
    return L->depth > 0 && L->stack[L->depth - 1].n->type == CFG_MAP &&
           !L->stack[L->depth - 1].key;
}

static void set_key(struct loader *L, const char *key, const yaml_mark_t *m)
{
    struct frame *f = &L->stack[L->depth - 1];
    f->key = xstrdup(key);
    f->kl = (int)m->line + 1;
    f->kc = (int)m->column + 1;
}

/* The dotted path of the scalar being read ("workload.0.name"), into 'buf': an
 * outer collection's last child is the one open, the innermost's next one is it. */
static void node_path(const struct loader *L, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < L->depth && at < n; i++) {
        const struct cfg_node *c = L->stack[i].n;
        int k = i == L->depth - 1 ? c->n : c->n - 1;
        if (c->type == CFG_SEQ) {
            at += (size_t)snprintf(buf + at, n - at, "%s%d", at ? "." : "", k);
            continue;
        }
        const char *key = i == L->depth - 1 ? L->stack[i].key : k >= 0 ? c->keys[k] : NULL;
        if (key)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "." : "", key);
    }
}

/* A scalar with a NUL byte (a "\u0000" or "\0" escape): C strings would cut it
 * there ("v5e\u0000junk" read as v5e), so it is refused, NULs shown escaped. */
static bool nul_free(struct loader *L, const yaml_event_t *e, bool key)
{
    const char *v = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    if (!memchr(v, '\0', len))
        return true;
    char got[96], path[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < len && at + 8 < sizeof got - 4; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, v[i] ? "%c" : "\\u0000", v[i]);
    if (at + 8 >= sizeof got - 4)
        snprintf(got + at, sizeof got - at, "...");
    if (!key)
        node_path(L, path, sizeof path);
    fail(L, &e->start_mark, "%s%sexpected %s without a NUL character (\\u0000), got \"%s\"", path,
         *path ? ": " : "", key ? "a key" : "text", got);
    return false;
}

static void on_scalar(struct loader *L, const yaml_event_t *e)
{
    bool str = false;
    size_t len = e->data.scalar.length;
    if (!tag_ok(L, e, e->data.scalar.tag, &str) || !spend(L, &e->start_mark, 1, node_cost(L, len)))
        return;
    if (!nul_free(L, e, wants_key(L)))
        return;
    const char *v = (const char *)e->data.scalar.value;
    if (wants_key(L)) {
        set_key(L, v, &e->start_mark);
        return;
    }
    struct cfg_node *n =
        cfg_node_new(CFG_SCALAR, L->file, (int)e->start_mark.line + 1, (int)e->start_mark.column + 1);
    n->value = xstrdup(v);
    n->quoted = str || e->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                e->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    attach(L, n);
    if (e->data.scalar.anchor)
        add_anchor(L, (const char *)e->data.scalar.anchor, n, 1, node_cost(L, len));
}

static void on_alias(struct loader *L, const yaml_event_t *e)
{
    const char *name = (const char *)e->data.alias.anchor;
    const struct anchor *a = find_anchor(L, name);
    if (!a) {
        fail(L, &e->start_mark, "undefined alias '*%s' (an anchor &%s must come first)", name,
             name);
        return;
    }
    if (!spend(L, &e->start_mark, a->nodes, a->bytes))
        return;
    if (wants_key(L)) {
        if (a->node->type != CFG_SCALAR)
            fail(L, &e->start_mark, "expected a key (a plain word), got an alias of a %s",
                 a->node->type == CFG_MAP ? "mapping" : "sequence");
        else
            set_key(L, a->node->value, &e->start_mark);
        return;
    }
    /* a placeholder (anchored nodes are complete and never change) */
    struct cfg_node *n = cfg_node_new(a->node->type, L->file, (int)e->start_mark.line + 1,
                                      (int)e->start_mark.column + 1);
    n->alias = a->node;
    L->aliases = true;
    attach(L, n);
}

/* A copy of 'n' (no placeholder) at 'line':'col', its placeholders expanded. */
static struct cfg_node *expand(const struct cfg_node *n, int line, int col)
{
    struct cfg_node *c = cfg_node_new(n->type, n->file, line, col);
    c->value = n->value ? xstrdup(n->value) : NULL;
    c->quoted = n->quoted;
    for (int i = 0; i < n->n; i++) {
        const struct cfg_node *k = n->kids[i];
        cfg_node_add(c, n->keys ? n->keys[i] : NULL, n->key_line ? n->key_line[i] : 0,
                     n->key_col ? n->key_col[i] : 0,
                     expand(k->alias ? k->alias : k, k->line, k->col));
    }
    return c;
}

/* Replaces every placeholder under 'n' by a copy of its anchored node, at the
 * alias's mark. A copy made before or after the placeholders inside its
 * anchored node are replaced is the same tree. */
static void expand_aliases(struct cfg_node *n)
{
    for (int i = 0; i < n->n; i++) {
        struct cfg_node *k = n->kids[i];
        if (k->alias) {
            n->kids[i] = expand(k->alias, k->line, k->col);
            cfg_node_free(k);
        } else {
            expand_aliases(k);
        }
    }
}

static void on_start(struct loader *L, const yaml_event_t *e, enum cfg_type t)
{
    const yaml_char_t *tag = t == CFG_MAP ? e->data.mapping_start.tag : e->data.sequence_start.tag;
    const yaml_char_t *anchor =
        t == CFG_MAP ? e->data.mapping_start.anchor : e->data.sequence_start.anchor;
    if (wants_key(L)) {
        fail(L, &e->start_mark, "expected a key (a plain word), got a %s",
             t == CFG_MAP ? "mapping" : "sequence");
        return;
    }
    if (L->depth >= CFG_MAX_DEPTH) {
        fail(L, &e->start_mark, "document nested too deeply (more than %d levels)",
             CFG_MAX_DEPTH);
        return;
    }
    if (!tag_ok(L, e, tag, NULL) || !spend(L, &e->start_mark, 1, node_cost(L, 0)))
        return;
    struct cfg_node *n =
        cfg_node_new(t, L->file, (int)e->start_mark.line + 1, (int)e->start_mark.column + 1);
    size_t nodes = L->nodes - 1, bytes = L->bytes - node_cost(L, 0);
    attach(L, n);
    L->stack[L->depth++] = (struct frame){n, NULL, 0, 0, anchor ? xstrdup((const char *)anchor)
                                                                  : NULL, nodes, bytes};
}

static void on_end(struct loader *L)
{
    struct frame *f = &L->stack[--L->depth];
    if (f->anchor)
        add_anchor(L, f->anchor, f->n, L->nodes - f->nodes, L->bytes - f->bytes);
    free(f->anchor);
    free(f->key);
}

/* Handles one event; false at the end of the stream. */
static bool on_event(struct loader *L, const yaml_event_t *e)
{
    switch (e->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (L->done)
            fail(L, &e->start_mark,
                 "expected one YAML document, got a second one (a '---' after the first)");
        return true;
    case YAML_DOCUMENT_END_EVENT:
        L->done = true;
        return true;
    case YAML_SCALAR_EVENT:
        on_scalar(L, e);
        return true;
    case YAML_ALIAS_EVENT:
        on_alias(L, e);
        return true;
    case YAML_SEQUENCE_START_EVENT:
        on_start(L, e, CFG_SEQ);
        return true;
    case YAML_MAPPING_START_EVENT:
        on_start(L, e, CFG_MAP);
        return true;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        on_end(L);
        return true;
    case YAML_STREAM_END_EVENT:
        return false;
    default:
        return true;
    }
}

static void syntax_error(struct loader *L, const yaml_parser_t *p)
{
    struct diag_loc loc = {L->file, (int)p->problem_mark.line + 1,
                           (int)p->problem_mark.column + 1};
    const char *what = p->problem ? p->problem : "syntax error";
    if (p->context)
        diag_error(L->d, &loc, NULL, "%s %s", what, p->context);
    else
        diag_error(L->d, &loc, NULL, "%s", what);
    L->failed = true;
}

static void loader_fini(struct loader *L)
{
    while (L->depth > 0) {
        struct frame *f = &L->stack[--L->depth];
        free(f->anchor);
        free(f->key);
    }
    for (size_t i = 0; i < L->nanchors; i++)
        free(L->anchors[i].name);
    free(L->anchors);
}

struct cfg_node *cfg_parse(const char *text, size_t len, const char *file, struct diag *d)
{
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    struct loader L = {.file = file, .d = d};
    for (bool more = true; more && !L.failed;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e)) {
            syntax_error(&L, &parser);
            break;
        }
        more = on_event(&L, &e);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&parser);
    loader_fini(&L);
    struct cfg_node *n = L.root;
    if (L.failed) {
        cfg_node_free(n);
        return NULL;
    }
    if (!n)
        return cfg_node_new(CFG_MAP, file, 1, 1); /* an empty document */
    if (L.aliases)
        expand_aliases(n);
    if (n->type == CFG_SCALAR && n->value[0] == '\0' && !n->quoted) {
        n->type = CFG_MAP;
        free(n->value);
        n->value = NULL;
    }
    return n;
}
