/* workload/program.c -- a step's program as data, and its YAML (see
 * workload/program.h). Uses base/ only. */
#include "workload/program.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

struct program *prog_new(const char *comment)
{
    struct program *p = xcalloc(1, sizeof *p);
    p->comment = comment ? xstrdup(comment) : NULL;
    p->top.count = 1;
    return p;
}

static void params_free(struct prog_params *ps)
{
    for (int i = 0; i < ps->n; i++) {
        free(ps->p[i].key);
        free(ps->p[i].s);
        params_free(&ps->p[i].sub);
    }
    free(ps->p);
}

static void block_fini(struct prog_block *b);

static void op_fini(struct prog_op *o)
{
    free(o->name);
    free(o->kind);
    params_free(&o->params);
    free(o->reads);
    free(o->writes);
    free(o->wait);
    if (o->loop) {
        block_fini(o->loop);
        free(o->loop);
    }
}

static void block_fini(struct prog_block *b)
{
    for (int i = 0; i < b->nops; i++)
        op_fini(&b->op[i]);
    free(b->op);
    free(b->carry);
    free(b->name);
}

void prog_free(struct program *p)
{
    if (!p)
        return;
    block_fini(&p->top);
    for (int i = 0; i < p->nt; i++)
        free(p->t[i].name);
    free(p->t);
    free(p->comment);
    free(p);
}

int prog_tensor(struct program *p, const char *name)
{
    xgrow(&p->t, &p->cap, (size_t)p->nt + 1, sizeof *p->t);
    p->t[p->nt] = (struct prog_tensor){.name = xstrdup(name), .by = NULL, .op = -1};
    return p->nt++;
}

int prog_op(struct prog_block *b, const char *kind, const char *name, unsigned flags)
{
    xgrow(&b->op, &b->cap, (size_t)b->nops + 1, sizeof *b->op);
    b->op[b->nops] = (struct prog_op){.name = xstrdup(name), .kind = kind ? xstrdup(kind) : NULL,
                                      .flags = flags, .issue = -1};
    return b->nops++;
}

struct prog_block *prog_loop(struct prog_block *b, const char *name, int64_t count)
{
    int at = prog_op(b, NULL, name, 0);
    struct prog_block *body = xcalloc(1, sizeof *body);
    *body = (struct prog_block){.name = xstrdup(name), .count = count, .parent = b, .at = at};
    b->op[at].loop = body;
    return body;
}

int prog_carry(struct prog_block *body, int param, int init)
{
    xgrow(&body->carry, &body->ccap, (size_t)body->ncarry + 1, sizeof *body->carry);
    body->carry[body->ncarry] = (struct prog_carry){.param = param, .init = init, .next = -1};
    return body->ncarry++;
}

void prog_carry_next(struct prog_block *body, int param, int next)
{
    for (int i = 0; i < body->ncarry; i++)
        if (body->carry[i].param == param)
            body->carry[i].next = next;
}

static void push(int **a, int *n, int v)
{
    *a = xrealloc(*a, sizeof **a * (size_t)(*n + 1));
    (*a)[(*n)++] = v;
}

void prog_read(struct prog_block *b, int op, int tensor)
{
    if (tensor >= 0)
        push(&b->op[op].reads, &b->op[op].nreads, tensor);
}

void prog_write(struct program *p, struct prog_block *b, int op, int tensor)
{
    push(&b->op[op].writes, &b->op[op].nwrites, tensor);
    p->t[tensor].by = b;
    p->t[tensor].op = op;
}

static struct prog_param *add(struct prog_params *ps, const char *key, enum prog_val kind)
{
    xgrow(&ps->p, &ps->cap, (size_t)ps->n + 1, sizeof *ps->p);
    struct prog_param *q = &ps->p[ps->n++];
    *q = (struct prog_param){.key = xstrdup(key), .kind = kind, .wrap = ps->wrap_next};
    ps->wrap_next = false;
    return q;
}

void prog_wrap(struct prog_params *ps)
{
    ps->wrap_next = true;
}

void prog_int(struct prog_params *ps, const char *key, int64_t v)
{
    struct prog_param *q = add(ps, key, PV_INT);
    q->i[0] = v, q->ni = 1;
}

void prog_ints(struct prog_params *ps, const char *key, int64_t a, int64_t b)
{
    struct prog_param *q = add(ps, key, PV_INTS);
    q->i[0] = a, q->i[1] = b, q->ni = 2;
}

void prog_bytes(struct prog_params *ps, const char *key, double bytes)
{
    add(ps, key, PV_BYTES)->x = bytes;
}

void prog_word(struct prog_params *ps, const char *key, const char *word)
{
    add(ps, key, PV_WORD)->s = xstrdup(word);
}

void prog_axes(struct prog_params *ps, const char *key, const char *axis)
{
    add(ps, key, PV_AXES)->s = xstrdup(axis);
}

void prog_raw(struct prog_params *ps, const char *key, const char *yaml)
{
    add(ps, key, PV_RAW)->s = xstrdup(yaml);
}

struct prog_params *prog_map(struct prog_params *ps, const char *key)
{
    return &add(ps, key, PV_MAP)->sub;
}

void prog_output(struct program *p, int tensor)
{
    if (tensor >= 0)
        p->t[tensor].output = true;
}

bool prog_encloses(const struct prog_block *a, const struct prog_block *b)
{
    for (; b; b = b->parent)
        if (a == b)
            return true;
    return false;
}

/* "fwd.x": the loops between 'in' and the first block enclosing 'from', outermost first. */
static char *loop_path(const struct prog_block *in, const struct prog_block *from,
                       const char *name)
{
    if (!in || prog_encloses(in, from))
        return xstrdup(name);
    char *tail = xasprintf("%s.%s", in->name, name);
    char *s = loop_path(in->parent, from, tail);
    free(tail);
    return s;
}

char *prog_ref_text(const struct prog_ref *r, const struct prog_block *from)
{
    if (r->prev)
        return xasprintf("prev.%s", r->op->name);
    return loop_path(r->in, from, r->op->name);
}

bool prog_is_transfer(const char *kind)
{
    static const char *const transfers[] = {"all_gather", "reduce_scatter", "all_reduce",
                                            "all_to_all", "ppermute",       "remote_copy",
                                            "hbm_copy",   "host_copy",      NULL};
    for (int i = 0; kind && transfers[i]; i++)
        if (strcmp(kind, transfers[i]) == 0)
            return true;
    return false;
}

/* ---------------- YAML ---------------- */

struct text {
    char *s;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    xgrow(&t->s, &t->cap, t->n + (size_t)len + 1, 1);
    va_start(ap, fmt);
    t->n += (size_t)vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
}

static void put_params(struct text *t, const struct prog_params *ps, const char *indent,
                       bool first);

static void put_value(struct text *t, const struct prog_param *q, const char *indent)
{
    switch (q->kind) {
    case PV_INT:
        put(t, "%lld", (long long)q->i[0]);
        break;
    case PV_INTS:
        put(t, "[");
        for (int i = 0; i < q->ni; i++)
            put(t, "%s%lld", i ? ", " : "", (long long)q->i[i]);
        put(t, "]");
        break;
    case PV_BYTES:
        put(t, "%.0f", q->x);
        break;
    case PV_WORD:
    case PV_RAW:
        put(t, "%s", q->s);
        break;
    case PV_AXES:
        put(t, "[%s]", q->s);
        break;
    case PV_MAP:
        put(t, "{");
        put_params(t, &q->sub, indent, true);
        put(t, "}");
        break;
    }
}

static void put_params(struct text *t, const struct prog_params *ps, const char *indent,
                       bool first)
{
    for (int i = 0; i < ps->n; i++) {
        const struct prog_param *q = &ps->p[i];
        if (q->wrap)
            put(t, ",\n%s   ", indent);
        else if (!first || i > 0)
            put(t, ", ");
        put(t, "%s: ", q->key);
        put_value(t, q, indent);
    }
}

static void put_wait(struct text *t, const struct prog_op *o, const struct prog_block *b)
{
    if (!o->has_wait)
        return;
    put(t, ", after: [");
    for (int i = 0; i < o->nwait; i++) {
        char *r = prog_ref_text(&o->wait[i], b);
        put(t, "%s%s", i ? ", " : "", r);
        free(r);
    }
    put(t, "]");
}

static void put_block(struct text *t, const struct prog_block *b, const char *indent);

static void put_op(struct text *t, const struct prog_op *o, const struct prog_block *b,
                   const char *indent)
{
    if (o->loop) {
        put(t, "%s- repeat:\n%s    name: %s\n%s    count: %lld\n%s    ops:\n", indent, indent,
            o->name, indent, (long long)o->loop->count, indent);
        char *inner = xasprintf("%s    ", indent);
        put_block(t, o->loop, inner);
        free(inner);
        return;
    }
    put(t, "%s- {op: %s, name: %s", indent, o->kind, o->name);
    put_params(t, &o->params, indent, false);
    put_wait(t, o, b);
    put(t, "}\n");
}

static void put_block(struct text *t, const struct prog_block *b, const char *indent)
{
    for (int i = 0; i < b->nops; i++)
        put_op(t, &b->op[i], b, indent);
}

char *prog_yaml(const struct program *p)
{
    struct text t = {0};
    put(&t, "%s", "");
    if (p->comment)
        put(&t, "  # %s\n", p->comment);
    put_block(&t, &p->top, "  ");
    return t.s;
}
