/* sim/sweep_spec.c -- sweep specs: YAML -> points (lists of --set overrides).
 * The spec is read with the same YAML tree as scenarios (sim/cfg_node.h) and
 * its keys are --set key paths, so a point is exactly `tpusim run BASE --set
 * k=v ...`. An inline base is written out as a block-style YAML file with a
 * line map, so messages about it point back into the spec. */
#include "sim/sweep_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cfg_tree.h"
#include "sim/cfg_walk.h"
#include "base/fsutil.h"
#include "base/xalloc.h"

#define SWEEP_MAX_POINTS 100000

/* ---------------- YAML text of a node ---------------- */

/* True when 's' reads back as the same plain scalar in flow and block context. */
static bool plain_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || s[n - 1] == ' ' || s[n - 1] == ':' || strchr("#&*!|>'\"%@`,[]{} \t", s[0]))
        return false;
    if (strchr("-?:", s[0]) && (n == 1 || s[1] == ' '))
        return false;
    return !strpbrk(s, ",[]{}\n\t\r") && !strstr(s, ": ") && !strstr(s, " #");
}

static void quoted(char **out, size_t *len, size_t *cap, const char *s)
{
    xgrow(out, cap, *len + 4 * strlen(s) + 3, 1);
    char *o = *out + *len;
    *o++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            *o++ = '\\', *o++ = *s;
        else if (*s == '\n')
            *o++ = '\\', *o++ = 'n';
        else if ((unsigned char)*s < 0x20)
            o += sprintf(o, "\\x%02x", (unsigned char)*s);
        else
            *o++ = *s;
    }
    *o++ = '"';
    *o = '\0';
    *len = (size_t)(o - *out);
}

static void append(char **out, size_t *len, size_t *cap, const char *s)
{
    size_t k = strlen(s);
    xgrow(out, cap, *len + k + 1, 1);
    memcpy(*out + *len, s, k + 1);
    *len += k;
}

static void scalar_text(char **out, size_t *len, size_t *cap, const struct cfg_node *n)
{
    if (!n->quoted && !n->value[0])
        append(out, len, cap, "null");
    else if (n->quoted || !plain_ok(n->value))
        quoted(out, len, cap, n->value);
    else
        append(out, len, cap, n->value);
}

static void key_text(char **out, size_t *len, size_t *cap, const char *k)
{
    bool simple = *k != '\0';
    for (const char *c = k; *c; c++)
        simple &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || strchr("_./-", *c);
    if (simple && *k != '-')
        append(out, len, cap, k);
    else
        quoted(out, len, cap, k);
}

static void node_text(char **out, size_t *len, size_t *cap, const struct cfg_node *n)
{
    if (n->type == CFG_SCALAR) {
        scalar_text(out, len, cap, n);
        return;
    }
    append(out, len, cap, n->type == CFG_SEQ ? "[" : "{");
    for (int i = 0; i < n->n; i++) {
        if (i)
            append(out, len, cap, ", ");
        if (n->type == CFG_MAP) {
            key_text(out, len, cap, n->keys[i]);
            append(out, len, cap, ": ");
        }
        node_text(out, len, cap, n->kids[i]);
    }
    append(out, len, cap, n->type == CFG_SEQ ? "]" : "}");
}

char *sweep_node_text(const struct cfg_node *n)
{
    size_t len = 0, cap = 32;
    char *s = xmalloc(cap);
    s[0] = '\0';
    node_text(&s, &len, &cap, n);
    return s;
}

static char *node_shown(const struct cfg_node *n)
{
    return n->type == CFG_SCALAR ? xstrdup(n->value) : sweep_node_text(n);
}

/* ---------------- block-style writer with a line map ---------------- */

struct emitter {
    FILE *f;
    int line; /* 1-based line being written */
    struct sweep_linemap *map;
};

static void map_line(struct emitter *e, int kl, int kc, int vcol, const struct cfg_node *v)
{
    struct sweep_linemap *m = e->map;
    if (e->line >= m->n) {
        int n = e->line + 64;
        int **arrs[] = {&m->key_line, &m->key_col, &m->val_col, &m->val_line, &m->val_spec_col};
        for (int a = 0; a < 5; a++) {
            *arrs[a] = xrealloc(*arrs[a], sizeof(int) * (size_t)n);
            memset(*arrs[a] + m->n, 0, sizeof(int) * (size_t)(n - m->n));
        }
        m->n = n;
    }
    m->key_line[e->line] = kl, m->key_col[e->line] = kc, m->val_col[e->line] = vcol;
    m->val_line[e->line] = v ? v->line : 0, m->val_spec_col[e->line] = v ? v->col : 0;
}

static bool is_leaf(const struct cfg_node *n)
{
    return n->type == CFG_SCALAR || n->n == 0;
}

static void emit_leaf(struct emitter *e, const struct cfg_node *n)
{
    char *t = sweep_node_text(n);
    fputs(t, e->f);
    free(t);
}

static void newline(struct emitter *e)
{
    fputc('\n', e->f);
    e->line++;
}

static void emit_block(struct emitter *e, const struct cfg_node *n, int indent)
{
    for (int i = 0; i < n->n; i++) {
        const struct cfg_node *v = n->kids[i];
        int col = indent + 1;
        fprintf(e->f, "%*s", indent, "");
        if (n->type == CFG_MAP) {
            size_t len = 0, cap = 16;
            char *k = xmalloc(cap);
            k[0] = '\0';
            key_text(&k, &len, &cap, n->keys[i]);
            fprintf(e->f, "%s:", k);
            col += (int)len + 2;
            free(k);
            map_line(e, n->key_line[i], n->key_col[i], is_leaf(v) ? col : 0, v);
        } else {
            fputc('-', e->f);
            col += 2;
            map_line(e, v->line, v->col, is_leaf(v) ? col : 0, v);
        }
        if (is_leaf(v)) {
            fputc(' ', e->f);
            emit_leaf(e, v);
            newline(e);
        } else {
            newline(e);
            emit_block(e, v, indent + 2);
        }
    }
}

/* Writes the inline base 'n' (a mapping) to 'f', naming it 'name' when it has no name. */
static void emit_base(FILE *f, const struct cfg_node *n, const char *name, struct sweep_linemap *m)
{
    struct emitter e = {f, 1, m};
    fputs("# generated by tpusim sweep from the spec's inline base\n", f);
    e.line++;
    if (!cfg_get(n, "name")) {
        size_t len = 0, cap = 16;
        char *t = xmalloc(cap);
        t[0] = '\0';
        quoted(&t, &len, &cap, name);
        fprintf(f, "name: %s\n", t);
        free(t);
        e.line++;
    }
    emit_block(&e, n, 0);
}

static void linemap_fini(struct sweep_linemap *m)
{
    free(m->key_line);
    free(m->key_col);
    free(m->val_col);
    free(m->val_line);
    free(m->val_spec_col);
    memset(m, 0, sizeof *m);
}

/* Maps one line of a message. */
static char *map_one(const struct sweep_spec *sp, const char *msg)
{
    size_t bl = sp->base_path ? strlen(sp->base_path) : 0;
    if (!sp->base_inline || !bl || strncmp(msg, sp->base_path, bl) || msg[bl] != ':')
        return xstrdup(msg);
    const char *rest = msg + bl + 1;
    int line, col, used = 0;
    if (sscanf(rest, "%d:%d:%n", &line, &col, &used) == 2 && used > 0) {
        const struct sweep_linemap *m = &sp->map;
        int l = 0, c = 0;
        if (line > 0 && line < m->n && m->key_line[line]) {
            bool val = m->val_col[line] && col >= m->val_col[line] && m->val_line[line];
            l = val ? m->val_line[line] : m->key_line[line];
            c = val ? m->val_spec_col[line] : m->key_col[line];
        }
        if (l)
            return xasprintf("%s:%d:%d:%s", sp->file, l, c, rest + used);
        return xasprintf("%s:%s", sp->file, rest + used);
    }
    return xasprintf("%s:%s", sp->file, rest);
}

char *sweep_map_message(const struct sweep_spec *sp, const char *msg)
{
    size_t cap = strlen(msg) + 64, len = 0;
    char *out = xmalloc(cap);
    out[0] = '\0';
    const char *p = msg;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t k = nl ? (size_t)(nl - p) : strlen(p);
        char *line = xmalloc(k + 1);
        memcpy(line, p, k);
        line[k] = '\0';
        char *m = map_one(sp, line);
        append(&out, &len, &cap, m);
        if (nl)
            append(&out, &len, &cap, "\n");
        free(m);
        free(line);
        p += k + (nl ? 1 : 0);
    }
    return out;
}

/* ---------------- spec structure ---------------- */

/* One dimension of the cartesian product: one sweep key, or every zip key. */
struct dim {
    int nkeys, len;
    int keys[64];                     /* indices into sp->keys */
    const struct cfg_node *lists[64]; /* each key's list of values */
};

struct parse {
    struct sweep_spec *sp;
    struct diag *d;
    struct dim *dims;
    int ndims;
    const struct cfg_node *points; /* explicit points (a sequence) or NULL */
    const struct cfg_node *vars;   /* vars: {name: [key paths]} (checked) or NULL */
    bool *var_used;                /* per var */
};

static void err_at(struct parse *p, const struct cfg_node *n, const char *path, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

static void err_at(struct parse *p, const struct cfg_node *n, const char *path, const char *fmt,
                   ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct diag_loc loc = {p->sp->file, n ? n->line : 1, n ? n->col : 1};
    diag_error(p->d, &loc, path, "%s", msg);
}

static const char *kind(const struct cfg_node *n)
{
    return n->type == CFG_MAP ? "a mapping" : n->type == CFG_SEQ ? "a list" : "a scalar";
}

static void check_top_keys(struct parse *p, const struct cfg_node *root)
{
    static const char *const keys[] = {"name", "base", "vars", "sweep", "zip", "points", NULL};
    for (int i = 0; i < root->n; i++) {
        bool known;
        const char *best = walk_suggest(root->keys[i], keys, &known);
        if (known)
            continue;
        struct diag_loc loc = {p->sp->file, root->key_line[i], root->key_col[i]};
        if (best)
            diag_error(p->d, &loc, NULL, "unknown key '%s' (did you mean '%s'?)", root->keys[i],
                       best);
        else
            diag_error(p->d, &loc, NULL,
                       "unknown key '%s' (expected name, base, vars, sweep, zip or points)",
                       root->keys[i]);
    }
}

static bool valid_path(const char *s)
{
    if (!*s || *s == '.' || s[strlen(s) - 1] == '.' || strstr(s, "..") || strchr(s, '='))
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ')
            return false;
    return true;
}

/* The index of var 'name' in p->vars, or -1. */
static int find_var(const struct parse *p, const char *name)
{
    for (int i = 0; p->vars && i < p->vars->n; i++)
        if (!strcmp(p->vars->keys[i], name))
            return i;
    return -1;
}

/* Sets the key paths of key 'k': var 'v''s, or its own path. */
static void key_paths(struct parse *p, struct sweep_key *key, int v)
{
    const struct cfg_node *l = v >= 0 ? p->vars->kids[v] : NULL;
    int n = l ? l->type == CFG_SEQ ? l->n : 0 : 1;
    key->paths = xcalloc((size_t)n + 1, sizeof *key->paths);
    for (int j = 0; j < n; j++)
        if (!l || l->kids[j]->type == CFG_SCALAR) /* parse_vars reported the others */
            key->paths[key->npaths++] = xstrdup(l ? l->kids[j]->value : key->path);
    if (v >= 0)
        p->var_used[v] = true;
}

/* Adds key 'path' (a key path or a var; named at 'line:col' under 'section'), or finds it. */
static int add_key(struct parse *p, const char *path, const char *section, int line, int col,
                   bool unique)
{
    struct sweep_spec *sp = p->sp;
    char *where = xasprintf("%s.%s", section, path);
    int v = find_var(p, path);
    if (v < 0 && !valid_path(path)) {
        struct diag_loc loc = {sp->file, line, col};
        diag_error(p->d, &loc, where, "expected a key path like workload.0.block.bm, got '%s'",
                   path);
        free(where);
        return -1;
    }
    for (int k = 0; k < sp->nkeys; k++) {
        if (strcmp(sp->keys[k].path, path))
            continue;
        if (unique) {
            struct diag_loc loc = {sp->file, line, col};
            diag_error(p->d, &loc, where, "key already swept (%s:%d:%d)", sp->file,
                       sp->keys[k].line, sp->keys[k].col);
            free(where);
            return -1;
        }
        free(where);
        return k;
    }
    sp->keys = xrealloc(sp->keys, sizeof *sp->keys * (size_t)(sp->nkeys + 1));
    struct sweep_key *key = &sp->keys[sp->nkeys];
    *key = (struct sweep_key){.path = xstrdup(path), .spec_path = where, .line = line, .col = col};
    key_paths(p, key, v);
    return sp->nkeys++;
}

static bool value_list(struct parse *p, const struct cfg_node *v, const char *section,
                       const char *key)
{
    if (v->type == CFG_SEQ && v->n > 0)
        return true;
    char *where = xasprintf("%s.%s", section, key);
    err_at(p, v, where, "expected a non-empty list of values, got %s", kind(v));
    free(where);
    return false;
}

static void parse_sweep(struct parse *p, const struct cfg_node *sw)
{
    if (sw->type != CFG_MAP) {
        err_at(p, sw, "sweep", "expected a mapping of key paths to lists of values, got %s",
               kind(sw));
        return;
    }
    for (int i = 0; i < sw->n; i++) {
        int k = add_key(p, sw->keys[i], "sweep", sw->key_line[i], sw->key_col[i], true);
        if (k < 0 || !value_list(p, sw->kids[i], "sweep", sw->keys[i]))
            continue;
        struct dim *dm = &p->dims[p->ndims++];
        *dm = (struct dim){.nkeys = 1, .len = sw->kids[i]->n};
        dm->keys[0] = k;
        dm->lists[0] = sw->kids[i];
    }
}

static void parse_zip(struct parse *p, const struct cfg_node *z)
{
    if (z->type != CFG_MAP || z->n == 0 || z->n > 64) {
        err_at(p, z, "zip", "expected a mapping of 1 to 64 key paths to equal-length lists, got %s",
               kind(z));
        return;
    }
    struct dim dm = {0};
    for (int i = 0; i < z->n; i++) {
        int k = add_key(p, z->keys[i], "zip", z->key_line[i], z->key_col[i], true);
        if (k < 0 || !value_list(p, z->kids[i], "zip", z->keys[i]))
            continue;
        if (dm.nkeys && z->kids[i]->n != dm.len) {
            char want[160], got[32];
            snprintf(want, sizeof want, "%d values (like zip.%s)", dm.len, z->keys[0]);
            snprintf(got, sizeof got, "%d", z->kids[i]->n);
            char *where = xasprintf("zip.%s", z->keys[i]);
            err_at(p, z->kids[i], where, "expected a list of %s, got %s", want, got);
            free(where);
            continue;
        }
        dm.len = z->kids[i]->n;
        dm.keys[dm.nkeys] = k;
        dm.lists[dm.nkeys++] = z->kids[i];
    }
    if (dm.nkeys)
        p->dims[p->ndims++] = dm;
}

static void parse_points(struct parse *p, const struct cfg_node *pts)
{
    if (pts->type != CFG_SEQ || pts->n == 0) {
        err_at(p, pts, "points", "expected a non-empty list of {key.path: value} maps, got %s",
               kind(pts));
        return;
    }
    for (int i = 0; i < pts->n; i++) {
        const struct cfg_node *m = pts->kids[i];
        char *sec = xasprintf("points.%d", i);
        if (m->type != CFG_MAP)
            err_at(p, m, sec, "expected a mapping of key paths to values, got %s", kind(m));
        for (int j = 0; m->type == CFG_MAP && j < m->n; j++)
            add_key(p, m->keys[j], sec, m->key_line[j], m->key_col[j], false);
        free(sec);
    }
    p->points = pts;
}

/* vars: {name: [key.path, ...]}: each name stands for its key paths. */
static void parse_vars(struct parse *p, const struct cfg_node *v)
{
    if (v->type != CFG_MAP || v->n == 0) {
        err_at(p, v, "vars", "expected a mapping of names to lists of key paths, got %s",
               kind(v));
        return;
    }
    for (int i = 0; i < v->n; i++) {
        const struct cfg_node *l = v->kids[i];
        char *where = xasprintf("vars.%s", v->keys[i]);
        struct diag_loc loc = {p->sp->file, v->key_line[i], v->key_col[i]};
        if (!cfg_name_ok(v->keys[i]))
            diag_error(p->d, &loc, where,
                       "expected a name of letters, digits, '_', '-' or ':' (no dots: key "
                       "paths have them), got '%s'",
                       v->keys[i]);
        for (int j = 0; l->type == CFG_SEQ && j < l->n; j++)
            if (l->kids[j]->type != CFG_SCALAR || !valid_path(l->kids[j]->value))
                err_at(p, l->kids[j], where, "expected a key path like workload.0.block.bm, got %s",
                       l->kids[j]->type == CFG_SCALAR ? l->kids[j]->value : kind(l->kids[j]));
        if (l->type != CFG_SEQ || l->n == 0)
            err_at(p, l, where, "expected a non-empty list of key paths, got %s", kind(l));
        free(where);
    }
    p->vars = v; /* even with errors: a use of a bad var is not a key path */
    p->var_used = xcalloc((size_t)v->n + 1, sizeof *p->var_used);
}

/* Every var is used, and no key path is set by two keys. */
static void check_key_paths(struct parse *p)
{
    struct sweep_spec *sp = p->sp;
    for (int i = 0; p->vars && i < p->vars->n; i++)
        if (!p->var_used[i]) {
            struct diag_loc loc = {sp->file, p->vars->key_line[i], p->vars->key_col[i]};
            diag_error(p->d, &loc, NULL, "vars.%s: not used by sweep, zip or points",
                       p->vars->keys[i]);
        }
    for (int k = 0; k < sp->nkeys; k++)
        for (int j = 0; j < k; j++)
            for (int a = 0; a < sp->keys[k].npaths; a++)
                for (int b = 0; b < sp->keys[j].npaths; b++) {
                    if (strcmp(sp->keys[k].paths[a], sp->keys[j].paths[b]))
                        continue;
                    struct diag_loc loc = {sp->file, sp->keys[k].line, sp->keys[k].col};
                    diag_error(p->d, &loc, sp->keys[k].spec_path,
                               "sets %s, which %s (%s:%d:%d) sets too", sp->keys[k].paths[a],
                               sp->keys[j].spec_path, sp->file, sp->keys[j].line,
                               sp->keys[j].col);
                }
}

/* ---------------- the base scenario ---------------- */

uint64_t sweep_fnv1a(const void *s, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)s)[i]) * 1099511628211ull;
    return h;
}

/* The hash of the file 'path', read by the reader every input goes through
 * (fs_read_all: capped, devices and directories refused). Returns 0, or -1
 * with errno. */
static int hash_file(const char *path, uint64_t *h)
{
    size_t n;
    char *text = fs_read_all(path, CFG_MAX_FILE_BYTES, &n);
    if (!text)
        return -1;
    *h = sweep_fnv1a(text, n, SWEEP_FNV_BASIS);
    free(text);
    return 0;
}

static char *resolve(const char *spec, const char *rel)
{
    const char *slash = strrchr(spec, '/');
    if (rel[0] == '/' || !slash)
        return xstrdup(rel);
    return xasprintf("%.*s/%s", (int)(slash - spec), spec, rel);
}

static void write_base_file(struct sweep_spec *sp, const struct cfg_node *base, FILE *f)
{
    linemap_fini(&sp->map);
    emit_base(f, base, sp->name, &sp->map);
}

static int parse_base(struct parse *p, const struct cfg_node *b)
{
    struct sweep_spec *sp = p->sp;
    if (b->type == CFG_SCALAR) {
        sp->base_path = resolve(sp->file, b->value);
        if (hash_file(sp->base_path, &sp->base_hash) != 0) {
            char why[128];
            fs_read_error(errno, CFG_MAX_FILE_BYTES, why, sizeof why);
            err_at(p, b, "base",
                   "expected a scenario file (relative to the spec's directory), got '%s' (%s: %s)",
                   b->value, sp->base_path, why);
            return -1;
        }
        return 0;
    }
    if (b->type != CFG_MAP) {
        err_at(p, b, "base", "expected a scenario file or an inline scenario mapping, got %s",
               kind(b));
        return -1;
    }
    sp->base_inline = true;
    char tmpl[] = "/tmp/tpusim-sweep-base-XXXXXX";
    int fd = mkstemp(tmpl);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f)
        write_base_file(sp, b, f);
    if (!f || ferror(f) || fclose(f) != 0) {
        struct diag_loc loc = {tmpl, 0, 0};
        diag_error(p->d, &loc, NULL, "cannot write a temporary file: %s", strerror(errno));
        if (fd >= 0)
            unlink(tmpl);
        return -1;
    }
    sp->base_path = xstrdup(tmpl);
    if (hash_file(tmpl, &sp->base_hash) != 0) {
        struct diag_loc loc = {tmpl, 0, 0};
        diag_error(p->d, &loc, NULL, "cannot read a temporary file: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int sweep_spec_write_base(struct sweep_spec *sp, const char *path)
{
    if (!sp->base_inline)
        return 0;
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    write_base_file(sp, sp->base_tree, a.f);
    if (fs_atomic_commit(&a) != 0)
        return -1;
    free(sp->base_path);
    sp->base_path = xstrdup(path);
    return 0;
}

static const struct cfg_node *lookup(const struct cfg_node *n, const char *path)
{
    char *p = xstrdup(path), *save = NULL;
    for (char *seg = strtok_r(p, ".", &save); seg && n; seg = strtok_r(NULL, ".", &save)) {
        if (n->type == CFG_MAP) {
            n = cfg_get(n, seg);
        } else if (n->type == CFG_SEQ) {
            char *end;
            long i = strtol(seg, &end, 10);
            n = *end || i < 0 || i >= n->n ? NULL : n->kids[i];
        } else {
            n = NULL;
        }
    }
    free(p);
    return n;
}

/* Loads the base with its --set edits and one override; returns the messages (a new string) or
 * NULL. */
static char *try_load(const struct sweep_spec *sp, const char *set)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char **sets = xcalloc((size_t)sp->nbase_sets + 2, sizeof *sets);
    int nsets = 0;
    for (; nsets < sp->nbase_sets; nsets++)
        sets[nsets] = sp->base_sets[nsets];
    if (set)
        sets[nsets++] = set;
    if (cfg_load_scenario(sp->base_path, sets, nsets, &sc, d) == 0)
        cfg_scenario_fini(&sc);
    char *msgs = sweep_diag_text(sp, d);
    free(sets);
    diag_free(d);
    return msgs;
}

char *sweep_diag_text(const struct sweep_spec *sp, const struct diag *d)
{
    if (!diag_count(d))
        return NULL;
    char *msgs = xstrdup("");
    for (int i = 0; i < diag_count(d); i++) {
        char *n = xasprintf("%s%s%s", msgs, i ? "\n" : "", diag_message(d, i));
        free(msgs);
        msgs = n;
    }
    char *m = sweep_map_message(sp, msgs);
    free(msgs);
    return m;
}

/* Key 'k''s path 'path' must name a place in the base (with one of its values). */
static void check_key_path(struct parse *p, int k, const char *path)
{
    struct sweep_spec *sp = p->sp;
    const char *v = NULL;
    for (int i = 0; i < sp->npoints && !v; i++)
        v = sp->points[i].values[k];
    char *set = xasprintf("%s=%s", path, v ? v : "null");
    char *msgs = try_load(sp, set);
    free(set);
    if (!msgs)
        return;
    char *first = NULL, *save = NULL;
    const char *dot = strrchr(path, '.');
    char *needle = xasprintf("unknown key '%s'", dot ? dot + 1 : path);
    for (char *l = strtok_r(msgs, "\n", &save); l && !first; l = strtok_r(NULL, "\n", &save))
        if (!strncmp(l, "--set ", 6) || strstr(l, needle))
            first = l;
    free(needle);
    if (first) {
        struct diag_loc loc = {sp->file, sp->keys[k].line, sp->keys[k].col};
        diag_error(p->d, &loc, sp->keys[k].spec_path,
                   "expected a key path of the base scenario, got %s", first);
    }
    free(msgs);
}

/* The base must load; each key path must name a place in it (with one of its values). */
static void check_base(struct parse *p)
{
    struct sweep_spec *sp = p->sp;
    char *msgs = try_load(sp, NULL);
    if (msgs) {
        char *save = NULL;
        for (char *l = strtok_r(msgs, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            diag_error(p->d, NULL, NULL, "%s", l);
        free(msgs);
        return;
    }
    for (int k = 0; k < sp->nkeys; k++)
        for (int j = 0; j < sp->keys[k].npaths; j++)
            check_key_path(p, k, sp->keys[k].paths[j]);
}

/* ---------------- expansion ---------------- */

static void set_value(struct sweep_spec *sp, int i, int k, const struct cfg_node *v)
{
    struct sweep_point *pt = &sp->points[i];
    free(pt->values[k]);
    free(pt->shown[k]);
    pt->values[k] = sweep_node_text(v);
    pt->shown[k] = node_shown(v);
}

static int expand(struct parse *p)
{
    struct sweep_spec *sp = p->sp;
    int64_t prod = p->ndims ? 1 : 0;
    for (int d = 0; d < p->ndims && prod <= SWEEP_MAX_POINTS; d++)
        prod *= p->dims[d].len;
    int64_t total = prod + (p->points ? p->points->n : 0);
    if (total > SWEEP_MAX_POINTS || total == 0) {
        if (total)
            err_at(p, NULL, NULL, "expected at most %d points, got %lld", SWEEP_MAX_POINTS,
                   (long long)total);
        else
            err_at(p, NULL, NULL, "expected at least one of sweep, zip or points");
        return -1;
    }
    sp->npoints = (int)total;
    sp->points = xcalloc((size_t)total, sizeof *sp->points);
    for (int i = 0; i < sp->npoints; i++) {
        sp->points[i].values = xcalloc((size_t)sp->nkeys + 1, sizeof(char *));
        sp->points[i].shown = xcalloc((size_t)sp->nkeys + 1, sizeof(char *));
    }
    for (int i = 0; i < prod; i++) {
        int64_t rest = i;
        for (int d = p->ndims - 1; d >= 0; d--) { /* the last dimension varies fastest */
            int j = (int)(rest % p->dims[d].len);
            rest /= p->dims[d].len;
            for (int k = 0; k < p->dims[d].nkeys; k++)
                set_value(sp, i, p->dims[d].keys[k], p->dims[d].lists[k]->kids[j]);
        }
    }
    for (int e = 0; p->points && e < p->points->n; e++) {
        const struct cfg_node *m = p->points->kids[e];
        for (int j = 0; j < m->n; j++)
            for (int k = 0; k < sp->nkeys; k++)
                if (!strcmp(sp->keys[k].path, m->keys[j]))
                    set_value(sp, (int)prod + e, k, m->kids[j]);
    }
    return 0;
}

/* The base's value at 'path': in the document as written ('raw'), else as
 * the loader sees it ('norm': chip presets as {base: NAME}). */
static const struct cfg_node *base_at(const struct cfg_node *raw, const struct cfg_node *norm,
                                      const char *path)
{
    const struct cfg_node *v = lookup(raw, path);
    return v ? v : lookup(norm, path);
}

/* Key 'k''s base value and how it is shown: its paths' values, when they agree. */
static void key_base_value(struct sweep_key *key, const struct cfg_node *raw,
                           const struct cfg_node *norm)
{
    const struct cfg_node *v0 = base_at(raw, norm, key->paths[0]);
    char *text = v0 ? sweep_node_text(v0) : NULL;
    char *shown = v0 ? node_shown(v0) : xstrdup("");
    bool same = true;
    for (int j = 1; j < key->npaths; j++) {
        const struct cfg_node *v = base_at(raw, norm, key->paths[j]);
        char *t = v ? sweep_node_text(v) : NULL;
        same &= (t && text && !strcmp(t, text)) || (!t && !text);
        char *sh = xasprintf("%s / %s", shown, v ? v->type == CFG_SCALAR ? v->value : t : "");
        free(shown);
        shown = sh;
        free(t);
    }
    if (!same) { /* the paths differ in the base: no point has its values */
        free(text);
        text = NULL;
    } else if (key->npaths > 1) {
        free(shown);
        shown = v0 ? node_shown(v0) : xstrdup("");
    }
    key->base_value = text;
    key->base_shown = shown;
}

static void base_values(struct sweep_spec *sp)
{
    struct cfg_node *raw = cfg_copy(sp->base_tree), *norm = cfg_copy(sp->base_tree);
    struct diag *ignored = diag_new(); /* check_base reports bad --set edits */
    cfg_normalize_chip(norm);
    for (int i = 0; i < sp->nbase_sets; i++) {
        cfg_apply_set(raw, sp->base_sets[i], ignored);
        cfg_apply_set(norm, sp->base_sets[i], ignored);
    }
    diag_free(ignored);
    for (int k = 0; k < sp->nkeys; k++)
        key_base_value(&sp->keys[k], raw, norm);
    cfg_node_free(norm);
    cfg_node_free(raw);
    for (int i = 0; i < sp->npoints; i++)
        for (int k = 0; k < sp->nkeys; k++)
            if (!sp->points[i].values[k])
                sp->points[i].shown[k] = xstrdup(sp->keys[k].base_shown);
}

/* The default point: the first with the base's own values, else a new last
 * point that overrides nothing. */
static void default_point(struct sweep_spec *sp)
{
    for (int i = 0; i < sp->npoints; i++) {
        bool eq = true;
        for (int k = 0; k < sp->nkeys && eq; k++) {
            const char *v = sp->points[i].values[k];
            eq = !v || (sp->keys[k].base_value && !strcmp(v, sp->keys[k].base_value));
        }
        if (eq) {
            sp->default_point = i;
            return;
        }
    }
    sp->points = xrealloc(sp->points, sizeof *sp->points * (size_t)(sp->npoints + 1));
    struct sweep_point *pt = &sp->points[sp->npoints];
    pt->values = xcalloc((size_t)sp->nkeys + 1, sizeof(char *));
    pt->shown = xcalloc((size_t)sp->nkeys + 1, sizeof(char *));
    for (int k = 0; k < sp->nkeys; k++)
        pt->shown[k] = xstrdup(sp->keys[k].base_shown);
    sp->default_point = sp->npoints++;
    sp->default_added = true;
}

static char *spec_name(const char *path)
{
    if (strcmp(path, CFG_STDIN_NAME) == 0)
        return xstrdup("stdin");
    const char *b = strrchr(path, '/');
    char *s = xstrdup(b ? b + 1 : path);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

static int parse_root(struct parse *p, const struct cfg_node *root)
{
    struct sweep_spec *sp = p->sp;
    if (root->type != CFG_MAP) {
        err_at(p, root, NULL, "expected a mapping with base and sweep, got %s", kind(root));
        return -1;
    }
    check_top_keys(p, root);
    const struct cfg_node *nm = cfg_get(root, "name");
    if (nm && (nm->type != CFG_SCALAR || !walk_name_ok(nm->value))) {
        struct walk w = {.d = p->d};
        walk_type_error(&w, nm, "name", WALK_NAME_RULE);
    }
    sp->name = nm && nm->type == CFG_SCALAR ? xstrdup(nm->value) : spec_name(sp->file);
    const struct cfg_node *b = cfg_get(root, "base");
    if (!b)
        err_at(p, NULL, "base", "expected a scenario file or an inline scenario, got nothing");
    const struct cfg_node *sw = cfg_get(root, "sweep"), *z = cfg_get(root, "zip");
    const struct cfg_node *pts = cfg_get(root, "points"), *vars = cfg_get(root, "vars");
    if (vars)
        parse_vars(p, vars);
    p->dims = xcalloc((size_t)(sw && sw->type == CFG_MAP ? sw->n : 0) + 2, sizeof *p->dims);
    if (sw)
        parse_sweep(p, sw);
    if (z)
        parse_zip(p, z);
    if (pts)
        parse_points(p, pts);
    check_key_paths(p);
    if (b && parse_base(p, b) != 0)
        return -1;
    if (diag_count(p->d) || expand(p) != 0)
        return -1;
    return 0;
}

int sweep_spec_load(const char *path, const char *const *sets, int nsets, struct sweep_spec *sp,
                    struct diag *d)
{
    memset(sp, 0, sizeof *sp);
    sp->file = xstrdup(strcmp(path, "-") ? path : CFG_STDIN_NAME);
    struct cfg_node *root = cfg_parse_file(path, d);
    if (!root) {
        sweep_spec_fini(sp);
        return -1;
    }
    sp->base_sets = xcalloc((size_t)nsets + 1, sizeof *sp->base_sets);
    for (; sp->nbase_sets < nsets; sp->nbase_sets++)
        sp->base_sets[sp->nbase_sets] = xstrdup(sets[sp->nbase_sets]);
    struct parse p = {.sp = sp, .d = d};
    int rc = parse_root(&p, root);
    if (rc == 0) {
        const struct cfg_node *b = cfg_get(root, "base");
        sp->base_tree = sp->base_inline ? cfg_copy(b) : cfg_parse_file(sp->base_path, d);
        if (!sp->base_tree)
            rc = -1;
    }
    if (rc == 0) {
        base_values(sp);
        default_point(sp);
        check_base(&p);
        rc = diag_count(d) ? -1 : 0;
    }
    if (sp->base_inline && sp->base_path) { /* the temporary copy; the run writes base.yaml */
        unlink(sp->base_path);
    }
    free(p.dims);
    free(p.var_used);
    cfg_node_free(root);
    if (rc != 0)
        sweep_spec_fini(sp); /* a failed load owns nothing (fini twice is harmless) */
    return rc;
}

void sweep_spec_fini(struct sweep_spec *sp)
{
    for (int i = 0; i < sp->npoints; i++) {
        for (int k = 0; k < sp->nkeys; k++) {
            free(sp->points[i].values[k]);
            free(sp->points[i].shown[k]);
        }
        free(sp->points[i].values);
        free(sp->points[i].shown);
    }
    for (int k = 0; k < sp->nkeys; k++) {
        free(sp->keys[k].path);
        free(sp->keys[k].spec_path);
        free(sp->keys[k].base_value);
        free(sp->keys[k].base_shown);
        for (int j = 0; j < sp->keys[k].npaths; j++)
            free(sp->keys[k].paths[j]);
        free(sp->keys[k].paths);
    }
    for (int i = 0; i < sp->nbase_sets; i++)
        free(sp->base_sets[i]);
    free(sp->base_sets);
    free(sp->points);
    free(sp->keys);
    free(sp->file);
    free(sp->name);
    free(sp->base_path);
    cfg_node_free(sp->base_tree);
    linemap_fini(&sp->map);
    memset(sp, 0, sizeof *sp);
}

char **sweep_point_sets(const struct sweep_spec *sp, int i, int *n)
{
    int max = sp->nbase_sets;
    for (int k = 0; k < sp->nkeys; k++)
        max += sp->keys[k].npaths;
    char **sets = xcalloc((size_t)max + 1, sizeof *sets);
    *n = 0;
    for (int j = 0; j < sp->nbase_sets; j++)
        sets[(*n)++] = xstrdup(sp->base_sets[j]);
    for (int k = 0; k < sp->nkeys; k++)
        for (int j = 0; sp->points[i].values[k] && j < sp->keys[k].npaths; j++)
            sets[(*n)++] = xasprintf("%s=%s", sp->keys[k].paths[j], sp->points[i].values[k]);
    return sets;
}

void sweep_sets_free(char **sets)
{
    for (char **s = sets; s && *s; s++)
        free(*s);
    free(sets);
}

bool sweep_spec_detect(const char *path)
{
    if (!path || !strcmp(path, "-"))
        return false;
    struct diag *d = diag_new();
    struct cfg_node *root = cfg_parse_file(path, d);
    bool spec = false;
    static const char *const keys[] = {"base", "sweep", "zip", "points", "vars", NULL};
    for (int i = 0; root && root->type == CFG_MAP && keys[i] && !spec; i++)
        spec = cfg_get(root, keys[i]) != NULL;
    spec &= root && !cfg_get(root, "workload");
    cfg_node_free(root);
    diag_free(d);
    return spec;
}

uint64_t sweep_spec_hash(const struct sweep_spec *sp)
{
    uint64_t h = sweep_fnv1a(sp->name, strlen(sp->name) + 1, SWEEP_FNV_BASIS);
    for (int k = 0; k < sp->nkeys; k++)
        h = sweep_fnv1a(sp->keys[k].path, strlen(sp->keys[k].path) + 1, h);
    for (int i = 0; i < sp->npoints; i++) {
        int n;
        char **sets = sweep_point_sets(sp, i, &n);
        for (int j = 0; j < n; j++)
            h = sweep_fnv1a(sets[j], strlen(sets[j]) + 1, h);
        h = sweep_fnv1a("\n", 1, h);
        sweep_sets_free(sets);
    }
    return h;
}
