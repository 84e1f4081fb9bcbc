/* config/cfg_emit.c -- the one YAML writer (see config/cfg_emit.h). */
#include "config/cfg_emit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"


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

static void scalar_text(char **out, size_t *len, size_t *cap, const struct cfg_node *n)
{
    if (!n->quoted && !n->value[0])
        xappend(out, len, cap, "null");
    else if (n->quoted || !plain_ok(n->value))
        quoted(out, len, cap, n->value);
    else
        xappend(out, len, cap, n->value);
}

static void key_text(char **out, size_t *len, size_t *cap, const char *k)
{
    bool simple = *k != '\0';
    for (const char *c = k; *c; c++)
        simple &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || strchr("_./-", *c);
    if (simple && *k != '-')
        xappend(out, len, cap, k);
    else
        quoted(out, len, cap, k);
}

static void node_text(char **out, size_t *len, size_t *cap, const struct cfg_node *n)
{
    if (n->type == CFG_SCALAR) {
        scalar_text(out, len, cap, n);
        return;
    }
    xappend(out, len, cap, n->type == CFG_SEQ ? "[" : "{");
    for (int i = 0; i < n->n; i++) {
        if (i)
            xappend(out, len, cap, ", ");
        if (n->type == CFG_MAP) {
            key_text(out, len, cap, n->keys[i]);
            xappend(out, len, cap, ": ");
        }
        node_text(out, len, cap, n->kids[i]);
    }
    xappend(out, len, cap, n->type == CFG_SEQ ? "]" : "}");
}

char *cfg_node_text(const struct cfg_node *n)
{
    size_t len = 0, cap = 32;
    char *s = xmalloc(cap);
    s[0] = '\0';
    node_text(&s, &len, &cap, n);
    return s;
}

/* ---------------- block style, with a line map ---------------- */

struct emitter {
    FILE *f;
    int line; /* 1-based line being written */
    struct cfg_linemap *map;
};

static void map_line(struct emitter *e, int kl, int kc, int vcol, const struct cfg_node *v)
{
    struct cfg_linemap *m = e->map;
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
    char *t = cfg_node_text(n);
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


char *cfg_quote(const char *s)
{
    size_t len = 0, cap = 16;
    char *t = xmalloc(cap);
    t[0] = '\0';
    quoted(&t, &len, &cap, s);
    return t;
}

void cfg_emit_block(FILE *f, const struct cfg_node *n, int first_line, struct cfg_linemap *m)
{
    struct emitter e = {f, first_line, m};
    emit_block(&e, n, 0);
}

void cfg_linemap_fini(struct cfg_linemap *m)
{
    free(m->key_line);
    free(m->key_col);
    free(m->val_col);
    free(m->val_line);
    free(m->val_spec_col);
    memset(m, 0, sizeof *m);
}

