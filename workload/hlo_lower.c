/* workload/hlo_lower.c -- an HLO module as a program (workload/hlo.h says
 * how each instruction is priced). Each instruction's value is the list of
 * tensors it holds (a tuple's elements, flattened); called computations are
 * lowered with their parameters bound to the caller's operands. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "kernels/ops.h"
#include "topology/mesh.h"
#include "workload/hlo.h"
#include "workload/hlo_fuse.h"
#include "workload/hlo_int.h"
#include "workload/hlo_work.h"
#include "workload/schedule.h"

#define HLO_MAX_DEPTH 64 /* computations calling each other */

struct val {
    int *t;
    int n;
};

struct lw {
    const struct hlo_module *m;
    const struct topo *topo;
    struct program *p;
    struct diag *d;
    FILE *warn;
    struct hlo_names *used; /* op names given */
    struct hlo_names *next; /* a base name -> the last ":N" suffix given to it */
    int nops;
    char **names;           /* owned keys of 'used' */
    int nnames;
    size_t ncap;
    int64_t ndev;
    const int *chip_of;     /* device -> slice chip (program.device_order); NULL: the same */
    bool failed;
    bool *active; /* per computation: being lowered (a cycle) */
    int depth;
    bool unfused;          /* dumped before XLA's fusion: fuse as it would (hlo_fuse.c) */
    struct hlo_fuse *fz;   /* the plan of the computation being lowered */
    int *mark, *stack;     /* its scratch for hlo_work_fused */
    double *sink;          /* the next body's sunk tuple elements (hlo_fuse_sink), or NULL */
    int nsink;
    const struct prog_block *body; /* the while body being lowered (pipelined gathers) */
    struct hlo_report rep;
};

static void lfail(struct lw *w, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void lfail(struct lw *w, int line, int col, const char *fmt, ...)
{
    if (w->failed)
        return;
    w->failed = true;
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    struct diag_loc loc = {w->m->file, line, col};
    diag_error(w->d, &loc, "", "%s", msg);
    free(msg);
}

static void val_push(struct val *v, int t)
{
    v->t = xrealloc(v->t, sizeof *v->t * (size_t)(v->n + 1));
    v->t[v->n++] = t;
}

static void val_cat(struct val *v, const struct val *a)
{
    for (int i = 0; i < a->n; i++)
        val_push(v, a->t[i]);
}

/* The arrays a shape holds (a tuple's, flattened). */
static int leaves(const struct hlo_shape *s)
{
    if (s->type != HLO_TUPLE)
        return 1;
    int n = 0;
    for (int i = 0; i < s->nelem; i++)
        n += leaves(&s->elem[i]);
    return n;
}

/* Keeps 's' (a key of a name table) until the end. */
static void keep(struct lw *w, char *s)
{
    xgrow(&w->names, &w->ncap, (size_t)w->nnames + 1, sizeof *w->names);
    w->names[w->nnames++] = s;
}

/* An op name from an instruction name: '.' (a scope in a workload) becomes ':'
 * (never in an HLO name), unique by a ":N" suffix, at most 64 characters. */
static const char *op_name(struct lw *w, const char *hlo)
{
    if (++w->nops > HLO_MAX_OPS && !w->failed) {
        w->failed = true;
        diag_error(w->d, NULL, "", "%s: expected at most %d ops once calls are inlined, got "
                   "more", w->m->file, HLO_MAX_OPS);
    }
    char base[48];
    snprintf(base, sizeof base, "%s", hlo);
    for (char *c = base; *c; c++)
        if (*c == '.')
            *c = ':';
    char *s = xstrdup(base);
    int k = hlo_names_get(w->next, base); /* the last suffix given to 'base' */
    if (k < 0)
        k = 1;
    while (hlo_names_put(w->used, s, 0) >= 0) {
        free(s);
        s = xasprintf("%s:%d", base, ++k);
    }
    keep(w, s);
    if (k > 1) {
        char *b = xstrdup(base);
        keep(w, b);
        if (hlo_names_put(w->next, b, k) >= 0)
            hlo_names_set(w->next, b, k);
    }
    return s;
}

/* A new tensor written by op 'op' of 'b'. */
static int written(struct lw *w, struct prog_block *b, int op, const char *name)
{
    int t = prog_tensor(w->p, name);
    prog_write(w->p, b, op, t);
    return t;
}

static void reads(struct prog_block *b, int op, const struct val *vals, const struct hlo_instr *in)
{
    for (int k = 0; k < in->nops; k++)
        for (int i = 0; i < vals[in->operand[k]].n; i++)
            prog_read(b, op, vals[in->operand[k]].t[i]);
}

static double operand_bytes(const struct hlo_comp *c, const struct hlo_instr *in)
{
    double b = 0;
    for (int k = 0; k < in->nops; k++)
        b += hlo_shape_bytes(&c->ins[in->operand[k]].shape);
    return b;
}

/* ---------------- priced by bytes (a copy) and vector work (a fusion) ---------------- */

static const char *copy_dtype(int type)
{
    int b = hlo_type_bytes(type);
    return b >= 4 ? "f32" : b == 2 ? "bf16" : "int8";
}

#define WORK_MAX_PER_ELEM 1e6 /* the fusion op's bound on vpu_ops, transcendentals */

/* A fusion reading [elems] and writing [elems] of 'dt' with the vector work
 * 'wk' spread evenly over its elements (a copy's bytes, a loop's work). */
static int work_op(struct lw *w, struct prog_block *b, const struct hlo_instr *in, int64_t elems,
                   const char *dt, const struct hlo_work *wk)
{
    int op = prog_op(b, "fusion", op_name(w, in->name), 0);
    struct prog_params *ps = &b->op[op].params;
    char buf[96];
    snprintf(buf, sizeof buf, "[{shape: [%lld], dtype: %s}]", (long long)elems, dt);
    prog_raw(ps, "inputs", buf);
    prog_raw(ps, "outputs", buf);
    double alu = fmin(wk->alu / (double)elems, WORK_MAX_PER_ELEM);
    double eup = fmin(wk->eup / (double)elems, WORK_MAX_PER_ELEM);
    snprintf(buf, sizeof buf, "%.6g", alu);
    prog_raw(ps, "vpu_ops", buf);
    if (eup > 0) {
        snprintf(buf, sizeof buf, "%.6g", eup);
        prog_raw(ps, "transcendentals", buf);
    }
    return op;
}

/* A loop moving 'bytes' (read + written) over a flat array of the output's
 * element type, half read and half written: a copy, or with vector work
 * 'wk' (totals) a fusion doing it spread evenly over those elements. */
static int bytes_op(struct lw *w, struct prog_block *b, const struct hlo_instr *in, double bytes,
                    const struct hlo_work *wk)
{
    int type = in->shape.type == HLO_TUPLE && in->shape.nelem ? in->shape.elem[0].type
                                                                : in->shape.type;
    const char *dt = copy_dtype(type);
    int esize = strcmp(dt, "f32") == 0 ? 4 : strcmp(dt, "bf16") == 0 ? 2 : 1;
    double n = bytes / 2 / esize;
    int64_t elems = n < 1 ? 1 : (int64_t)(n + 0.5);
    if (wk && (wk->alu > 0 || wk->eup > 0))
        return work_op(w, b, in, elems, dt, wk);
    int op = prog_op(b, "copy", op_name(w, in->name), 0);
    struct prog_params *ps = &b->op[op].params;
    struct prog_param *q = NULL;
    prog_ints(ps, "shape", elems, 0);
    q = &ps->p[ps->n - 1];
    q->ni = 1;
    prog_word(ps, "dtype", dt);
    return op;
}

static double priced_bytes(const struct hlo_comp *c, const struct hlo_instr *in)
{
    switch (hlo_class_of(in->opcode)) {
    case HLO_C_SLICE:
        return 2 * hlo_shape_bytes(&in->shape);
    case HLO_C_UPDATE:
        return in->nops > 1 ? 2 * hlo_shape_bytes(&c->ins[in->operand[in->opcode == HLO_OP_SCATTER ? in->nops - 1 : 1]].shape) : 0;
    default:
        return operand_bytes(c, in) + hlo_shape_bytes(&in->shape);
    }
}

/* ---------------- dots ---------------- */

/* The integers of "{1,2}" into 'v' (at most 'max'); returns how many, or -1. */
static int int_list(const char *s, int64_t *v, int max)
{
    int n = 0;
    while (*s && *s != '{')
        s++;
    if (*s != '{')
        return -1;
    s++;
    while (*s && *s != '}') {
        char *e;
        long long x = strtoll(s, &e, 10);
        if (e == s || n == max)
            return -1;
        v[n++] = x;
        s = e;
        while (*s == ',' || *s == ' ')
            s++;
    }
    return *s == '}' ? n : -1;
}

static bool in_list(const int64_t *v, int n, int64_t x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

struct dims {
    int64_t c[HLO_MAX_RANK], b[HLO_MAX_RANK];
    int nc, nb;
};

static bool dot_dims(struct lw *w, const struct hlo_instr *in, const char *side, struct dims *d,
                     int rank)
{
    char key[40];
    d->nc = d->nb = 0;
    snprintf(key, sizeof key, "%s_contracting_dims", side);
    const struct hlo_attr *a = hlo_attr(in, key);
    if (a)
        d->nc = int_list(a->value, d->c, HLO_MAX_RANK);
    snprintf(key, sizeof key, "%s_batch_dims", side);
    const struct hlo_attr *bt = hlo_attr(in, key);
    if (bt)
        d->nb = int_list(bt->value, d->b, HLO_MAX_RANK);
    bool ok = d->nc >= 0 && d->nb >= 0;
    for (int i = 0; ok && i < d->nc; i++)
        ok = d->c[i] >= 0 && d->c[i] < rank;
    for (int i = 0; ok && i < d->nb; i++)
        ok = d->b[i] >= 0 && d->b[i] < rank;
    if (!ok) {
        const struct hlo_attr *at = a ? a : bt;
        lfail(w, at ? at->line : in->line, at ? at->col : in->col,
              "expected %s's dimension numbers as {d, ...} below its operand's rank %d", in->name,
              rank);
    }
    return ok;
}

/* Products of the dims of 's' that are in 'd''s batch, contracting and neither. */
static void dim_products(const struct hlo_shape *s, const struct dims *d, int64_t *batch,
                         int64_t *contract, int64_t *free_)
{
    *batch = *contract = *free_ = 1;
    for (int i = 0; i < s->rank; i++) {
        if (in_list(d->b, d->nb, i))
            *batch *= s->dims[i];
        else if (in_list(d->c, d->nc, i))
            *contract *= s->dims[i];
        else
            *free_ *= s->dims[i];
    }
}

static const char *dot_dtype(int type)
{
    const char *n = hlo_type_name(type);
    if (strcmp(n, "f32") == 0 || strcmp(n, "f64") == 0)
        return "f32";
    if (strcmp(n, "s8") == 0 || strcmp(n, "u8") == 0)
        return "int8";
    if (strncmp(n, "f8", 2) == 0)
        return "fp8";
    return "bf16";
}

/* The einsum of convolution 'conv' (in 'c'), named after 'in': m, k, n of
 * its im2col matmul (workload/hlo_conv.c). */
static int conv_op(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                   const struct hlo_instr *conv, const struct hlo_instr *in)
{
    int64_t m, k, n;
    if (conv->nops != 2 || !hlo_conv_dims(conv, &c->ins[conv->operand[1]].shape, &m, &k, &n)) {
        lfail(w, conv->line, conv->col, "expected convolution %s to have 2 operands and "
              "dim_labels naming its batch (b), features (f) and kernel features (i, o), like "
              "b01f_01io->b01f", conv->name);
        return -1;
    }
    int op = prog_op(b, "einsum", op_name(w, in->name), 0);
    struct prog_params *ps = &b->op[op].params;
    prog_int(ps, "batch", 1);
    prog_int(ps, "m", m);
    prog_int(ps, "k", k);
    prog_int(ps, "n", n);
    prog_word(ps, "dtype", dot_dtype(c->ins[conv->operand[0]].shape.type));
    prog_word(ps, "block", "auto");
    return op;
}

/* The einsum of dot 'dot' (in computation 'c'), named after 'in'. */
static int dot_op(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                  const struct hlo_instr *dot, const struct hlo_instr *in)
{
    if (dot->opcode == HLO_OP_CONVOLUTION)
        return conv_op(w, b, c, dot, in);
    if (dot->nops != 2) {
        lfail(w, dot->line, dot->col, "expected a dot with 2 operands, got %d", dot->nops);
        return -1;
    }
    const struct hlo_shape *l = &c->ins[dot->operand[0]].shape, *r = &c->ins[dot->operand[1]].shape;
    struct dims ld, rd;
    if (l->type == HLO_TUPLE || r->type == HLO_TUPLE || !dot_dims(w, dot, "lhs", &ld, l->rank) ||
        !dot_dims(w, dot, "rhs", &rd, r->rank)) {
        if (!w->failed)
            lfail(w, dot->line, dot->col, "expected a dot of two arrays");
        return -1;
    }
    int64_t lb, lk, m, rb, rk, n;
    dim_products(l, &ld, &lb, &lk, &m);
    dim_products(r, &rd, &rb, &rk, &n);
    if (lb != rb || lk != rk) {
        lfail(w, dot->line, dot->col, "expected the operands' batch (%lld, %lld) and contracting "
              "(%lld, %lld) sizes to agree", (long long)lb, (long long)rb, (long long)lk,
              (long long)rk);
        return -1;
    }
    int op = prog_op(b, "einsum", op_name(w, in->name), 0);
    struct prog_params *ps = &b->op[op].params;
    prog_int(ps, "batch", lb);
    prog_int(ps, "m", m);
    prog_int(ps, "k", lk);
    prog_int(ps, "n", n);
    prog_word(ps, "dtype", dot_dtype(l->type));
    prog_word(ps, "block", "auto");
    return op;
}

/* The dot or convolution a fused computation holds (the first), or NULL. */
static const struct hlo_instr *fused_dot(const struct hlo_module *m, const struct hlo_instr *in,
                                         const struct hlo_comp **fc)
{
    const struct hlo_attr *a = hlo_attr(in, "calls");
    int ci = a ? hlo_find_comp(m, a->value) : -1;
    if (ci < 0)
        return NULL;
    *fc = &m->comp[ci];
    for (int i = 0; i < (*fc)->nins; i++)
        if ((*fc)->ins[i].opcode == HLO_OP_DOT || (*fc)->ins[i].opcode == HLO_OP_CONVOLUTION)
            return &(*fc)->ins[i];
    return NULL;
}

/* ---------------- replica groups ---------------- */

/* The groups of 'in' as device ids: 'ng' groups of 'gs' (all ndev devices when none). */
struct groups {
    int64_t *dev; /* ng x gs */
    int ng, gs;
};

static bool parse_iota_groups(struct lw *w, const struct hlo_attr *a, struct groups *g);
static bool parse_list_groups(struct lw *w, const struct hlo_attr *a, struct groups *g);

/* XLA's mesh-axes form (workload/hlo_mesh.c). */
static bool parse_mesh_groups(struct lw *w, const struct hlo_attr *a, const char *v,
                              struct groups *g)
{
    struct hlo_mesh_groups mg;
    char err[160];
    if (!hlo_mesh_groups(v, w->ndev, &mg, err, sizeof err)) {
        lfail(w, a->line, a->col, "%s", err);
        return false;
    }
    g->dev = mg.dev, g->ng = mg.ng, g->gs = mg.gs;
    return true;
}

static bool read_groups(struct lw *w, const struct hlo_instr *in, struct groups *g)
{
    const struct hlo_attr *a = hlo_attr(in, "replica_groups");
    const char *v = a ? a->value : "{}";
    while (*v == ' ')
        v++;
    bool ok;
    if (strncmp(v, "mesh[", 5) == 0)
        ok = parse_mesh_groups(w, a, v, g);
    else if (*v == '[')
        ok = parse_iota_groups(w, a, g);
    else if (strcmp(v, "{}") == 0 || strcmp(v, "{{}}") == 0) {
        g->ng = 0;
        ok = true;
    } else
        ok = parse_list_groups(w, a, g);
    return ok;
}

static bool iota_fail(struct lw *w, const struct hlo_attr *a)
{
    lfail(w, a->line, a->col, "expected replica_groups as {{0,1},...} or [groups,size]<=[dims]"
                              "T(perm), got '%.40s'", a->value);
    return false;
}

/* [G,S]<=[d0,...]T(p0,...): iota over d, transposed by p, as G groups of S. */
static bool parse_iota_groups(struct lw *w, const struct hlo_attr *a, struct groups *g)
{
    const char *s = a->value;
    char *e;
    int64_t gs[2], dims[HLO_MAX_RANK], perm[HLO_MAX_RANK];
    int nd = 0;
    /* [G,S] with strtoll (saturating), not sscanf (out of range there is undefined) */
    if (*s++ != '[')
        return iota_fail(w, a);
    for (int k = 0; k < 2; k++) {
        gs[k] = strtoll(s, &e, 10);
        if (e == s || *e != (k ? ']' : ','))
            return iota_fail(w, a);
        s = e + 1;
    }
    s = a->value;
    if (gs[0] < 1 || gs[1] < 1 || gs[0] > w->ndev || gs[1] > w->ndev) { /* before gs[0] * gs[1] */
        lfail(w, a->line, a->col, "expected replica_groups over at most the program's %lld "
              "devices, got '%.40s'", (long long)w->ndev, a->value);
        return false;
    }
    s = strstr(s, "<=[");
    if (!s)
        return iota_fail(w, a);
    s += 3;
    while (*s != ']') {
        if (nd == HLO_MAX_RANK)
            return iota_fail(w, a);
        dims[nd++] = strtoll(s, &e, 10);
        if (e == s)
            return iota_fail(w, a);
        s = *e == ',' ? e + 1 : e;
    }
    s++;
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    if (*s == 'T') {
        s += 2;
        bool used[HLO_MAX_RANK] = {false};
        for (int i = 0; i < nd; i++) { /* a permutation of 0..nd-1: each once */
            perm[i] = strtoll(s, &e, 10);
            if (e == s || perm[i] < 0 || perm[i] >= nd || used[perm[i]])
                return iota_fail(w, a);
            used[perm[i]] = true;
            s = *e == ',' ? e + 1 : e;
        }
    }
    int64_t total = 1;
    for (int i = 0; i < nd; i++)
        total *= dims[i] > 0 && dims[i] <= w->ndev ? dims[i] : w->ndev + 1;
    if (gs[0] < 1 || gs[1] < 1 || total != gs[0] * gs[1] || total > w->ndev) {
        lfail(w, a->line, a->col, "expected replica_groups over at most the program's %lld "
              "devices, got '%.40s'", (long long)w->ndev, a->value);
        return false;
    }
    g->ng = (int)gs[0], g->gs = (int)gs[1];
    g->dev = xcalloc((size_t)total, sizeof *g->dev);
    /* element i of the transposed array: its coordinates in the transposed
     * shape, mapped back to the iota's index */
    for (int64_t i = 0; i < total; i++) {
        int64_t rem = i, idx = 0, c[HLO_MAX_RANK];
        for (int k = nd - 1; k >= 0; k--) {
            c[k] = rem % dims[perm[k]];
            rem /= dims[perm[k]];
        }
        int64_t orig[HLO_MAX_RANK];
        for (int k = 0; k < nd; k++)
            orig[perm[k]] = c[k];
        for (int k = 0; k < nd; k++)
            idx = idx * dims[k] + orig[k];
        g->dev[i] = idx;
    }
    return true;
}

static bool parse_list_groups(struct lw *w, const struct hlo_attr *a, struct groups *g)
{
    const char *s = a->value;
    size_t cap = 0;
    int cur = 0;
    g->ng = 0, g->gs = -1;
    if (*s++ != '{')
        return iota_fail(w, a);
    while (*s == ' ')
        s++;
    while (*s == '{') {
        s++;
        cur = 0;
        while (*s && *s != '}') {
            char *e;
            long long x = strtoll(s, &e, 10);
            if (e == s)
                return iota_fail(w, a);
            if (x < 0 || x >= w->ndev) {
                lfail(w, a->line, a->col, "expected device ids below the program's %lld "
                      "devices in replica_groups, got %lld", (long long)w->ndev, x);
                return false;
            }
            xgrow(&g->dev, &cap, (size_t)(g->ng * (g->gs > 0 ? g->gs : 0) + cur + 1),
                  sizeof *g->dev);
            g->dev[(size_t)g->ng * (size_t)(g->gs > 0 ? g->gs : 0) + (size_t)cur++] = x;
            s = e;
            while (*s == ',' || *s == ' ')
                s++;
        }
        if (*s != '}' || (g->gs >= 0 && cur != g->gs)) {
            lfail(w, a->line, a->col, "expected replica groups of one size, got '%.40s'",
                  a->value);
            return false;
        }
        g->gs = cur;
        g->ng++;
        s++;
        while (*s == ',' || *s == ' ')
            s++;
    }
    if (*s != '}' || g->ng == 0)
        return iota_fail(w, a);
    return true;
}

/* ---------------- groups as a mesh ---------------- */

/* A mesh axis over the device ids: stride 'stride', 'size' values. */
struct dax {
    int64_t stride, size;
    bool group;
};

/* Group 0 (sorted) as strided axes, innermost first; returns how many, or -1. */
static int group_axes(const int64_t *m, int gs, struct dax *ax, int max)
{
    int n = 0;
    int64_t have = 1; /* members generated by the axes so far */
    while (have < gs) {
        if (n == max)
            return -1;
        int64_t stride = m[have], size = 1;
        while (have * (size + 1) <= gs && m[have * size] == stride * size)
            size++;
        ax[n++] = (struct dax){stride, size, true};
        have *= size;
    }
    for (int64_t i = 0; i < gs; i++) { /* every member is a sum of axis steps */
        int64_t rem = i, v = 0;
        for (int k = 0; k < n; k++) {
            v += (rem % ax[k].size) * ax[k].stride;
            rem /= ax[k].size;
        }
        if (v != m[i])
            return -1;
    }
    return n;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* All of the device id space as axes, innermost first: the group's axes and the gaps. */
static int fill_axes(const struct dax *g, int ng, int64_t ndev, struct dax *all, int max)
{
    int n = 0;
    int64_t at = 1;
    for (int k = 0; k <= ng; k++) {
        int64_t next = k < ng ? g[k].stride : ndev;
        if (next % at != 0 || next < at)
            return -1;
        if (next > at) {
            if (n == max)
                return -1;
            all[n++] = (struct dax){at, next / at, false};
        }
        if (k < ng) {
            if (n == max)
                return -1;
            all[n++] = g[k];
            at = g[k].stride * g[k].size;
        }
    }
    return n;
}

/* Every group is group 0 moved along the other axes. */
static bool groups_match(const struct groups *gr, const struct dax *all, int n)
{
    for (int g = 0; g < gr->ng; g++) {
        int64_t key = -1;
        for (int i = 0; i < gr->gs; i++) {
            int64_t d = gr->dev[(size_t)g * (size_t)gr->gs + (size_t)i], k = 0;
            for (int a = 0; a < n; a++)
                if (!all[a].group)
                    k += (d / all[a].stride % all[a].size) * all[a].stride;
            if (key >= 0 && k != key)
                return false;
            key = k;
        }
    }
    return true;
}

/* Axis 'a' as physical factors "[[phys, extent], ...]" of the slice (chip
 * id = x + X (y + Y z); "[]" for none) and, on several slices (chip ids past
 * the slice's, 'ndev' in all), the slices it spans as its outer factor
 * ('*dcn', 1: none); false if it does not fall on whole factors (or spans
 * only some of the slices). */
static bool axis_factors(const struct topo *t, int64_t ndev, const struct dax *a, char *buf,
                         size_t n, int64_t *dcn)
{
    int64_t lo = a->stride, hi = a->stride * a->size, place = 1;
    *dcn = 1;
    if (hi > t->nchips) { /* over the DCN: all the slices, outside the slice's factors */
        if (hi != ndev || ndev % t->nchips || lo > t->nchips || t->nchips % lo)
            return false;
        *dcn = ndev / t->nchips;
    }
    size_t len = (size_t)snprintf(buf, n, "[");
    bool first = true;
    for (int p = 0; p < t->ndims; p++) {
        int64_t next = place * t->shape[p];
        int64_t b = lo > place ? lo : place, e = hi < next ? hi : next;
        if (b < e) {
            if (b % place || e % b)
                return false;
            len += (size_t)snprintf(buf + len, n - len, "%s[%d, %lld]", first ? "" : ", ", p,
                                    (long long)(e / b));
            first = false;
        }
        place = next;
    }
    snprintf(buf + len, n - len, "]");
    return len < n;
}

/* On several slices: the groups of 'gr' (global chip ids) in slice 0 into
 * 'one' (its ids a new array), if every group lies within a slice and each
 * slice holds slice 0's groups moved to it. */
static bool slice_groups(const struct lw *w, const struct groups *gr, struct groups *one)
{
    int64_t N = w->topo->nchips;
    int *pos = xcalloc((size_t)N, sizeof *pos); /* slice 0's chip -> its group + 1 */
    int first = -1, n0 = 0;
    for (int g = 0; g < gr->ng; g++)
        if (gr->dev[(size_t)g * (size_t)gr->gs] < N) {
            first = first < 0 ? g : first;
            n0++;
        }
    bool ok = first >= 0 && (int64_t)n0 * gr->gs == N;
    for (int g = 0; ok && g < gr->ng; g++)
        for (int i = 0; ok && i < gr->gs; i++) {
            int64_t d = gr->dev[(size_t)g * (size_t)gr->gs + (size_t)i];
            ok = d / N == gr->dev[(size_t)g * (size_t)gr->gs] / N;
            if (ok && d < N)
                pos[d] = g + 1;
        }
    for (int g = 0; ok && g < gr->ng; g++) { /* member i of g is member i of its slice-0 group */
        const int64_t *m = gr->dev + (size_t)g * (size_t)gr->gs;
        int64_t base = m[0] / N * N;
        int h = pos[m[0] - base] - 1;
        for (int i = 0; ok && i < gr->gs; i++)
            ok = h >= 0 && gr->dev[(size_t)h * (size_t)gr->gs + (size_t)i] == m[i] - base;
    }
    free(pos);
    if (!ok)
        return false;
    int64_t *kept = xcalloc((size_t)N, sizeof *kept);
    int k = 0;
    for (int g = 0; g < gr->ng; g++)
        if (gr->dev[(size_t)g * (size_t)gr->gs] < N)
            memcpy(kept + (size_t)k++ * (size_t)gr->gs, gr->dev + (size_t)g * (size_t)gr->gs,
                   sizeof *kept * (size_t)gr->gs);
    *one = (struct groups){.dev = kept, .ng = n0, .gs = gr->gs};
    return true;
}

/* replica_groups: [[chip, ...], ...] of 'gr' (slice chips, each group a ring in its
 * order, its hops routed over the torus); false (and a message) unless every chip is
 * in one group once. */
static bool replica_param(struct lw *w, const struct hlo_instr *in, const struct groups *gr,
                          struct prog_params *ps)
{
    int64_t n = (int64_t)gr->ng * gr->gs;
    char *seen = xcalloc((size_t)w->ndev, 1);
    bool ok = n == w->ndev;
    for (int64_t i = 0; ok && i < n; i++)
        ok = !seen[gr->dev[i]]++;
    free(seen);
    if (!ok) {
        lfail(w, in->line, in->col, "expected %s's replica groups to hold each of the "
              "program's %lld devices once, got %d groups of %d", in->name, (long long)w->ndev,
              gr->ng, gr->gs);
        return false;
    }
    struct groups one = *gr;
    if (w->ndev > w->topo->nchips && !slice_groups(w, gr, &one)) {
        lfail(w, in->line, in->col, "expected %s's replica groups, which are no mesh axes, to "
              "lie within a slice each, the same in every slice (across the slices only mesh "
              "axes run, over the DCN), got %d groups of %d", in->name, gr->ng, gr->gs);
        return false;
    }
    int64_t *owned = one.dev != gr->dev ? one.dev : NULL;
    gr = &one;
    n = (int64_t)gr->ng * gr->gs;
    size_t cap = (size_t)n * 22 + (size_t)gr->ng * 4 + 4, len = 0;
    char *buf = xcalloc(cap, 1);
    len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int g = 0; g < gr->ng; g++)
        for (int i = 0; i < gr->gs; i++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld%s",
                                    i ? ", " : g ? ", [" : "[",
                                    (long long)gr->dev[(size_t)g * (size_t)gr->gs + (size_t)i],
                                    i == gr->gs - 1 ? "]" : "");
    snprintf(buf + len, cap - len, "]");
    prog_raw(ps, "replica_groups", buf);
    free(buf);
    free(owned);
    w->rep.routed_collectives++;
    return true;
}

/* groups: {mesh: {...}, axes: [...]} of 'gr' on 'op' when its groups are the axes of
 * a mesh laid on whole factors of the slice's axes; else replica_groups (replica_param). */
static bool groups_param(struct lw *w, const struct hlo_instr *in, struct groups *gr,
                         struct prog_params *ps)
{
    int64_t *g0 = xcalloc((size_t)gr->gs, sizeof *g0);
    int gi = 0;
    for (int g = 0; g < gr->ng; g++)
        for (int i = 0; i < gr->gs; i++)
            if (gr->dev[(size_t)g * (size_t)gr->gs + (size_t)i] == 0)
                gi = g;
    memcpy(g0, gr->dev + (size_t)gi * (size_t)gr->gs, sizeof *g0 * (size_t)gr->gs);
    qsort(g0, (size_t)gr->gs, sizeof *g0, cmp64);
    struct dax gax[MESH_MAX_AXES], all[MESH_MAX_AXES];
    int ng = g0[0] == 0 ? group_axes(g0, gr->gs, gax, MESH_MAX_AXES) : -1;
    free(g0);
    int n = ng >= 0 ? fill_axes(gax, ng, w->ndev, all, MESH_MAX_AXES) : -1;
    char f[MESH_MAX_AXES][96];
    int64_t dcn[MESH_MAX_AXES];
    bool ok = n > 0 && groups_match(gr, all, n);
    for (int a = 0; ok && a < n; a++)
        ok = axis_factors(w->topo, w->ndev, &all[a], f[a], sizeof f[a], &dcn[a]);
    if (!ok)
        return replica_param(w, in, gr, ps);
    struct prog_params *g = prog_map(ps, "groups");
    struct prog_params *mesh = prog_map(g, "mesh");
    char axes[MESH_MAX_AXES * 4] = "";
    for (int a = n - 1; a >= 0; a--) { /* outermost first */
        char name[16];
        snprintf(name, sizeof name, "d%d", a);
        struct prog_params *ax = prog_map(mesh, name);
        prog_int(ax, "size", all[a].size);
        if (strcmp(f[a], "[]") != 0)
            prog_raw(ax, "on", f[a]);
        if (dcn[a] > 1)
            prog_int(ax, "dcn", dcn[a]);
        if (all[a].group)
            snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", axes[0] ? ", " : "",
                     name);
    }
    prog_axes(g, "axes", axes);
    return true;
}

/* ---------------- collectives ---------------- */

/* The tpusim op of a collective opcode. */
static const char *coll_kind(int opcode)
{
    switch (opcode) {
    case HLO_OP_ALL_GATHER:
    case HLO_OP_ALL_GATHER_START:
    case HLO_OP_COLLECTIVE_BROADCAST:
        return "all_gather";
    case HLO_OP_ALL_REDUCE:
    case HLO_OP_ALL_REDUCE_START:
        return "all_reduce";
    case HLO_OP_REDUCE_SCATTER:
        return "reduce_scatter";
    case HLO_OP_ALL_TO_ALL:
    case HLO_OP_RAGGED_ALL_TO_ALL:
        return "all_to_all";
    case HLO_OP_COLLECTIVE_PERMUTE:
    case HLO_OP_COLLECTIVE_PERMUTE_START:
        return "remote_copy";
    default:
        return NULL;
    }
}

/* The groups in global device ids (cross-replica, cross-partition or global). */
static void globalize(const struct lw *w, const struct hlo_instr *in, struct groups *g)
{
    int64_t P = w->m->num_partitions, R = w->m->replica_count;
    bool channel = hlo_attr(in, "channel_id") != NULL;
    const struct hlo_attr *ug = hlo_attr(in, "use_global_device_ids");
    bool global = ug && strcmp(ug->value, "true") == 0;
    if (global || (P == 1 && !channel) || (R == 1 && channel))
        return;
    int64_t copies = channel ? R : P;
    int64_t *dev = xcalloc((size_t)(g->ng * g->gs * copies), sizeof *dev);
    for (int64_t c = 0; c < copies; c++)
        for (int64_t i = 0; i < (int64_t)g->ng * g->gs; i++)
            dev[c * g->ng * g->gs + i] = channel ? c * P + g->dev[i] : g->dev[i] * P + c;
    free(g->dev);
    g->dev = dev;
    g->ng = (int)(g->ng * copies);
}

/* The slice chip that runs device 'dev'. */
static int chip(const struct lw *w, int64_t dev)
{
    return w->chip_of ? w->chip_of[dev] : (int)dev;
}

/* The most common torus shift of the pairs, as "[dx, dy, ...]"; false if none. */
static bool permute_shift(struct lw *w, const struct hlo_instr *in, char *buf, size_t n)
{
    const struct hlo_attr *a = hlo_attr(in, "source_target_pairs");
    if (!a)
        return false;
    int64_t best = 0, bestn = 0, npairs = 0, distinct = 0;
    int64_t *key = xcalloc((size_t)w->ndev + 1, sizeof *key);
    int64_t *cnt = xcalloc((size_t)w->ndev + 1, sizeof *cnt);
    const char *s = a->value;
    long long src, dst;
    int used;
    bool ok = true;
    while ((s = strchr(s, '{'))) {
        used = 0; /* set only when the pair's '}' matched */
        if (sscanf(s, "{%lld,%lld}%n", &src, &dst, &used) != 2 || used == 0) {
            s++; /* the list's own brace, or no pair */
            continue;
        }
        s += used;
        if (src < 0 || dst < 0 || src >= w->ndev || dst >= w->ndev) {
            lfail(w, a->line, a->col, "expected device ids below the program's %lld devices in "
                  "source_target_pairs, got {%lld,%lld}", (long long)w->ndev, src, dst);
            ok = false;
            break;
        }
        int cs[TOPO_MAX_DIMS], cd[TOPO_MAX_DIMS], N = w->topo->nchips;
        if (chip(w, src) / N != chip(w, dst) / N) {
            lfail(w, a->line, a->col, "expected source_target_pairs within a slice (a "
                  "collective-permute across the slices is not supported), got {%lld,%lld}",
                  src, dst);
            ok = false;
            break;
        }
        topo_coords(w->topo, chip(w, src) % N, cs);
        topo_coords(w->topo, chip(w, dst) % N, cd);
        int64_t k = 0;
        for (int d = w->topo->ndims - 1; d >= 0; d--)
            k = k * w->topo->shape[d] + (cd[d] - cs[d] + w->topo->shape[d]) % w->topo->shape[d];
        int j = 0;
        while (j < distinct && key[j] != k)
            j++;
        if (j == distinct && distinct <= w->ndev)
            key[distinct++] = k;
        if (++cnt[j] > bestn)
            bestn = cnt[j], best = k;
        npairs++;
    }
    free(key);
    free(cnt);
    if (!ok || npairs == 0)
        return false;
    if (distinct > 1 && w->warn)
        fprintf(w->warn, "tpusim: warning: %s:%d:%d: %s: its %lld pairs take %lld different "
                "shifts; all are priced as the most common one\n", w->m->file, in->line, in->col,
                in->name, (long long)npairs, (long long)distinct);
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < w->topo->ndims; d++) {
        int64_t v = best % w->topo->shape[d];
        best /= w->topo->shape[d];
        if (v > w->topo->shape[d] / 2)
            v -= w->topo->shape[d];
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)v);
    }
    snprintf(buf + len, n - len, "]");
    return true;
}

/* A collective 'in' (its kind from 'kin', its bytes from 'in''s operands in
 * 'c'); returns the op, -2 when it moves nothing (one-device groups), -1 on error. */
static int coll_op(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                   const struct hlo_instr *kin, const struct hlo_instr *in, unsigned flags)
{
    const char *kind = coll_kind(kin->opcode);
    double bytes = operand_bytes(c, in);
    if (strcmp(kind, "remote_copy") == 0) {
        char shift[64];
        if (!permute_shift(w, kin, shift, sizeof shift))
            return w->failed ? -1 : -2;
        int op = prog_op(b, kind, op_name(w, in->name), flags);
        prog_bytes(&b->op[op].params, "bytes", bytes);
        prog_raw(&b->op[op].params, "shift", shift);
        return op;
    }
    struct groups g = {0};
    if (!read_groups(w, kin, &g)) {
        free(g.dev);
        return -1;
    }
    if (g.ng == 0) { /* every device */
        g.ng = 1, g.gs = (int)w->ndev;
        g.dev = xcalloc((size_t)w->ndev, sizeof *g.dev);
        for (int64_t i = 0; i < w->ndev; i++)
            g.dev[i] = i;
    } else {
        globalize(w, kin, &g);
    }
    for (int64_t i = 0; i < (int64_t)g.ng * g.gs; i++) /* device ids -> the chips running them */
        g.dev[i] = chip(w, g.dev[i]);
    int op = -2, ds = -1;
    if (w->unfused && kin == in && in->opcode == HLO_OP_ALL_REDUCE && (ds = hlo_fuse_scatter_slice(
            c, (int)(in - c->ins))) >= 0 && hlo_shape_elems(&c->ins[ds].shape) * g.gs ==
            hlo_shape_elems(&in->shape)) {
        kind = "reduce_scatter"; /* XLA's ReduceScatterCreator: the slice is its result */
        w->fz->free_slice[ds] = true;
    }
    if (g.gs > 1 && bytes > 0) {
        op = prog_op(b, kind, op_name(w, in->name), flags);
        prog_bytes(&b->op[op].params, "bytes", bytes);
        if (!groups_param(w, kin, &g, &b->op[op].params))
            op = -1;
    } else {
        w->rep.idle_collectives++;
    }
    free(g.dev);
    return op;
}

/* ---------------- computations ---------------- */

static struct val lower_comp(struct lw *w, int ci, struct prog_block *b, const struct val *args,
                             int nargs, const struct hlo_instr *caller);
static void tag_source(struct lw *w, struct prog_block *b, int op, const struct hlo_instr *in);

/* The called computation 'key' of 'in', or -1 with a message. */
static int called(struct lw *w, const struct hlo_instr *in, const char *key)
{
    const struct hlo_attr *a = hlo_attr(in, key);
    if (!a) {
        lfail(w, in->line, in->col, "expected %s to name its computation (%s=...)", in->name, key);
        return -1;
    }
    int ci = hlo_find_comp(w->m, a->value);
    if (ci < 0)
        lfail(w, a->line, a->col, "expected a computation of the module, got '%s'", a->value);
    return ci;
}

/* The trip count the condition gives (workload/hlo_trip.c), or -1 with a message. */
static int64_t trip_from_code(struct lw *w, const struct hlo_comp *c, const struct hlo_instr *in,
                              int cond, int body)
{
    int64_t n = 0;
    int rc = hlo_trip_from_condition(w->m, c, in, cond, body, &n);
    if (rc == -2)
        lfail(w, in->line, in->col, "expected while %s to end: its condition never turns "
              "false for its counter's start and step", in->name);
    else if (rc == 0 && n > HLO_MAX_TRIP_COUNT)
        lfail(w, in->line, in->col, "expected a trip count of 0 to %lld, got %lld (from the "
              "condition of while %s)", (long long)HLO_MAX_TRIP_COUNT, (long long)n, in->name);
    else if (rc != 0)
        lfail(w, in->line, in->col, "expected while %s to have a known trip count "
              "(backend_config={\"known_trip_count\":{\"n\":\"N\"}}, or a condition "
              "comparing a counter that starts at a constant and steps by a constant against a "
              "constant), got neither", in->name);
    if (rc == 0 && n <= HLO_MAX_TRIP_COUNT) {
        w->rep.trips_from_condition++;
        return n;
    }
    return -1;
}

static int64_t trip_count(struct lw *w, const struct hlo_comp *c, const struct hlo_instr *in,
                          int cond, int body)
{
    const struct hlo_attr *a = hlo_attr(in, "backend_config");
    const char *k = a ? strstr(a->value, "known_trip_count") : NULL;
    const char *n = k ? strstr(k, "\"n\"") : NULL;
    if (!n)
        return trip_from_code(w, c, in, cond, body);
    n += 3;
    while (*n == ':' || *n == '"' || *n == ' ')
        n++;
    char *e;
    long long v = strtoll(n, &e, 10);
    if (e == n || v < 0 || v > HLO_MAX_TRIP_COUNT) {
        lfail(w, a->line, a->col, "expected a trip count of 0 to %lld, got '%.*s'",
              (long long)HLO_MAX_TRIP_COUNT, (int)strspn(n, "-0123456789"), n);
        return -1;
    }
    return v;
}

/* Which elements of while 'in''s tuple XLA would sink into its body 'bi'
 * (loop-invariant fusible values; workload/hlo_fuse.h) into w->sink. */
static void sink_plan(struct lw *w, const struct hlo_comp *c, const struct hlo_instr *in, int bi)
{
    w->sink = NULL;
    const struct hlo_instr *t = in->nops == 1 && in->operand[0] >= 0 && in->operand[0] < c->nins
                                    ? &c->ins[in->operand[0]] : NULL;
    if (!w->unfused || !t || t->opcode != HLO_OP_TUPLE || t->nops < 1)
        return;
    w->nsink = t->nops;
    w->sink = xcalloc((size_t)t->nops, sizeof *w->sink);
    for (int k = 0; k < t->nops; k++)
        w->sink[k] = hlo_fuse_invariant(&w->m->comp[bi], k) ? hlo_fuse_sinkable(c, t->operand[k])
                                                            : -1;
}

/* while: a loop whose body's parameter elements are carried. */
static struct val lower_while(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                              const struct val *vals, const struct hlo_instr *in)
{
    struct val out = {0};
    int bi = called(w, in, "body"), ci = bi < 0 ? -1 : called(w, in, "condition");
    if (ci < 0)
        return out;
    int64_t n = trip_count(w, c, in, ci, bi);
    if (n < 0 || in->nops != 1) {
        if (!w->failed)
            lfail(w, in->line, in->col, "expected while %s to have one operand", in->name);
        return out;
    }
    if (n == 0)
        return out;
    struct prog_block *body = prog_loop(b, op_name(w, in->name), n);
    const struct val *init = &vals[in->operand[0]];
    struct val param = {0};
    for (int i = 0; i < init->n; i++) {
        int t = prog_tensor(w->p, "carry");
        prog_carry(body, t, init->t[i]);
        val_push(&param, t);
    }
    const struct prog_block *outer = w->body;
    w->body = body;
    sink_plan(w, c, in, bi);
    out = lower_comp(w, bi, body, &param, 1, in);
    free(w->sink);
    w->sink = NULL;
    w->body = outer;
    for (int i = 0; !w->failed && i < param.n && i < out.n; i++)
        if (w->p->t[out.t[i]].by == body)
            prog_carry_next(body, param.t[i], out.t[i]);
    free(param.t);
    return out;
}

/* A rough cost of a computation, to pick a conditional's branch: bytes and dot work. */
static double comp_cost(const struct hlo_module *m, int ci, int depth)
{
    const struct hlo_comp *c = &m->comp[ci];
    double cost = 0;
    for (int i = 0; i < c->nins && depth < HLO_MAX_DEPTH; i++) {
        const struct hlo_instr *in = &c->ins[i];
        cost += hlo_shape_bytes(&in->shape);
        const struct hlo_attr *a = hlo_attr(in, "to_apply");
        if (in->opcode == HLO_OP_CALL && a && hlo_find_comp(m, a->value) >= 0)
            cost += comp_cost(m, hlo_find_comp(m, a->value), depth + 1);
    }
    return cost;
}

/* The branch names of a conditional, as 'k' -> name; returns how many. */
static int branches(const struct hlo_instr *in, char names[][128], int max)
{
    const struct hlo_attr *a = hlo_attr(in, "branch_computations");
    int n = 0;
    if (a) {
        const char *s = a->value;
        while (*s && n < max) {
            while (*s && (*s == '{' || *s == ',' || *s == ' ' || *s == '}' || *s == '%'))
                s++;
            size_t k = 0;
            while (s[k] && s[k] != ',' && s[k] != '}' && s[k] != ' ')
                k++;
            if (k == 0)
                break;
            snprintf(names[n++], 128, "%.*s", (int)k, s);
            s += k;
        }
        return n;
    }
    const char *keys[2] = {"true_computation", "false_computation"};
    for (int i = 0; i < 2; i++) {
        const struct hlo_attr *t = hlo_attr(in, keys[i]);
        if (t)
            snprintf(names[n++], 128, "%s", t->value[0] == '%' ? t->value + 1 : t->value);
    }
    return n;
}

static struct val lower_cond(struct lw *w, struct prog_block *b, const struct val *vals,
                             const struct hlo_instr *in)
{
    struct val out = {0};
    char names[16][128];
    int nb = branches(in, names, 16), best = -1;
    double bc = -1;
    for (int i = 0; i < nb; i++) {
        int ci = hlo_find_comp(w->m, names[i]);
        if (ci < 0) {
            lfail(w, in->line, in->col, "expected a computation of the module, got '%s'",
                  names[i]);
            return out;
        }
        double cc = comp_cost(w->m, ci, 0);
        if (cc > bc)
            bc = cc, best = i;
    }
    if (best < 0 || in->nops != nb + 1) {
        lfail(w, in->line, in->col, "expected conditional %s to have its branches and one "
              "operand per branch", in->name);
        return out;
    }
    w->rep.branches_skipped += nb - 1;
    if (w->warn && nb > 1)
        fprintf(w->warn, "tpusim: warning: %s:%d:%d: conditional %s: runs branch %s, the most "
                "expensive of %d\n", w->m->file, in->line, in->col, in->name, names[best], nb);
    return lower_comp(w, hlo_find_comp(w->m, names[best]), b, &vals[in->operand[best + 1]], 1,
                      in);
}

/* call (its computation in 'key'): inlined, its parameters the operands. */
static struct val lower_call(struct lw *w, struct prog_block *b, const struct val *vals,
                             const struct hlo_instr *in, const char *key)
{
    struct val out = {0};
    int ci = called(w, in, key);
    if (ci < 0)
        return out;
    struct val *args = xcalloc((size_t)in->nops + 1, sizeof *args);
    for (int k = 0; k < in->nops; k++)
        args[k] = vals[in->operand[k]];
    out = lower_comp(w, ci, b, args, in->nops, in);
    free(args);
    return out;
}

/* async-start: a collective it wraps runs async; other computations inline. */
static struct val lower_async(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                              const struct val *vals, const struct hlo_instr *in)
{
    struct val out = {0};
    int ci = called(w, in, "calls");
    if (ci < 0)
        return out;
    const struct hlo_comp *ac = &w->m->comp[ci];
    const struct hlo_instr *root = &ac->ins[ac->root];
    if (coll_kind(root->opcode)) {
        int op = coll_op(w, b, c, root, in, PROG_ASYNC);
        if (op >= 0) {
            tag_source(w, b, op, in);
            reads(b, op, vals, in);
            val_push(&out, written(w, b, op, in->name));
        }
        return out;
    }
    return lower_call(w, b, vals, in, "calls");
}

static void warn_custom(struct lw *w, const struct hlo_instr *in)
{
    const struct hlo_attr *t = hlo_attr(in, "custom_call_target");
    w->rep.custom_calls++;
    if (w->warn)
        fprintf(w->warn, "tpusim: warning: %s:%d:%d: custom-call %s (%s) is priced by its bytes "
                "only\n", w->m->file, in->line, in->col, in->name, t ? t->value : "no target");
}

/* A custom call with a cost estimate (a Pallas TPU kernel): a pallas_call
 * streaming its bytes through VMEM in f32 blocks of 8 x 32768 (1 MiB; 32-bit
 * rows fill the (8, 128) tiles, no padding)
 * while its MXU flops and transcendentals are spread evenly over the steps:
 * the kernel's roofline as tpusim's Pallas pipeline runs it (DMA beside
 * compute, a step's overhead, the launch). */
#define CUSTOM_BLOCK_W 32768 /* f32 elements of a block's row */
static int estimated_op(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                        const struct hlo_instr *in, const struct hlo_cost *e)
{
    double bytes = e->bytes > 0 ? e->bytes : priced_bytes(c, in);
    double nsteps = ceil(bytes / (8.0 * 4 * CUSTOM_BLOCK_W));
    int64_t width = CUSTOM_BLOCK_W, steps = nsteps < 1 ? 1 : nsteps > 1e12 ? (int64_t)1e12
                                                                             : (int64_t)nsteps;
    if (steps == 1) /* a small kernel: one block of its bytes in rows of 128 */
        width = ((int64_t)ceil(bytes / 32) + 127) / 128 * 128;
    if (width < 128)
        width = 128;
    if (steps > ((int64_t)1 << 30)) {
        lfail(w, in->line, in->col, "expected custom-call %s's cost estimate to move at most "
              "2^50 bytes, got %.17g", in->name, bytes);
        return -1;
    }
    if (e->flops / (double)steps > 1e18 || e->transcendentals / (double)steps > 1e18) {
        lfail(w, in->line, in->col, "expected custom-call %s's cost estimate to have at most "
              "1e18 flops and transcendentals per MiB it moves, got %.17g flops and %.17g "
              "transcendentals over %.17g bytes", in->name, e->flops, e->transcendentals, bytes);
        return -1;
    }
    int type = in->nops ? c->ins[in->operand[0]].shape.type : in->shape.type;
    int op = prog_op(b, "pallas_call", op_name(w, in->name), 0);
    struct prog_params *ps = &b->op[op].params;
    char buf[256];
    snprintf(buf, sizeof buf, "[%lld]", (long long)steps);
    prog_raw(ps, "grid", buf);
    snprintf(buf, sizeof buf, "[{name: x, shape: [%lld, %lld], dtype: f32, block_shape: [8, %lld], "
             "index_map: [i, 0]}]", (long long)(8 * steps), (long long)width, (long long)width);
    prog_raw(ps, "in_specs", buf);
    prog_raw(ps, "out_specs", "[{name: o, shape: [8, 128], dtype: f32}]");
    snprintf(buf, sizeof buf, "{mxu_flops: {%s: %.17g}, transcendentals: %.17g}",
             type >= 0 && type != HLO_TUPLE ? dot_dtype(type) : "bf16",
             e->flops / (double)steps, e->transcendentals / (double)steps);
    prog_raw(ps, "work", buf);
    w->rep.estimated_calls++;
    return op;
}

/* op_name: "SOURCE" on op 'op' of 'b': the metadata's op_name of 'in', or
 * (a fusion without metadata, as CPU dumps write them) of its fused root. */
static void tag_source(struct lw *w, struct prog_block *b, int op, const struct hlo_instr *in)
{
    char name[OP_MAX_OP_NAME], quoted[2 * OP_MAX_OP_NAME + 3];
    const char *s = hlo_metadata_op_name(in, name, sizeof name);
    const struct hlo_attr *a = s ? NULL : hlo_attr(in, "calls");
    int ci = a ? hlo_find_comp(w->m, a->value) : -1;
    if (ci >= 0)
        s = hlo_metadata_op_name(&w->m->comp[ci].ins[w->m->comp[ci].root], name, sizeof name);
    if (!s)
        return;
    size_t k = 0;
    quoted[k++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            quoted[k++] = '\\';
        quoted[k++] = *s;
    }
    quoted[k++] = '"';
    quoted[k] = '\0';
    prog_raw(&b->op[op].params, "op_name", quoted);
}

/* An instruction that runs as one op: returns the op or -1 (-2: none). */
static int priced_op(struct lw *w, struct prog_block *b, const struct hlo_comp *c,
                     const struct hlo_instr *in)
{
    int i = (int)(in - c->ins);
    struct hlo_work wk = {0, 0};
    if (w->unfused) /* it and the producers fused into it */
        hlo_work_fused(w->m, c, i, w->fz->fused, w->mark, w->stack, &wk);
    else
        hlo_work_instr(w->m, c, in, &wk);
    if (w->unfused && hlo_class_of(in->opcode) == HLO_C_BYTES) /* its fused operands' reads */
        return bytes_op(w, b, in, w->fz->in_bytes[i] + hlo_shape_bytes(&in->shape), &wk);
    switch (hlo_class_of(in->opcode)) {
    case HLO_C_DOT:
        return dot_op(w, b, c, in, in);
    case HLO_C_FUSION: {
        const struct hlo_comp *fc = NULL;
        const struct hlo_instr *dot = fused_dot(w->m, in, &fc);
        if (dot)
            return dot_op(w, b, fc, dot, in);
        if (!hlo_attr(in, "calls") || !fc)
            if (called(w, in, "calls") < 0)
                return -1;
        return bytes_op(w, b, in, priced_bytes(c, in), &wk);
    }
    case HLO_C_COLL: /* before XLA's scheduling (is_scheduled=false): async, as TPU runs it */
        return coll_op(w, b, c, in, in, w->m->scheduled ? 0 : PROG_ASYNC);
    case HLO_C_START:
        return coll_op(w, b, c, in, in, PROG_ASYNC);
    case HLO_C_CUSTOM: {
        const char *kernel = hlo_pallas_kind(c, in); /* a Pallas kernel tpusim has */
        if (kernel) {
            int op = prog_op(b, kernel, op_name(w, in->name), 0);
            hlo_pallas_params(&b->op[op].params, c, in, kernel);
            return op;
        }
        struct hlo_cost e;
        if (hlo_cost_estimate(in, &e))
            return estimated_op(w, b, c, in, &e);
        warn_custom(w, in);
        return bytes_op(w, b, in, priced_bytes(c, in), NULL);
    }
    default:
        return bytes_op(w, b, in, priced_bytes(c, in), &wk);
    }
}

/* Whether a tensor of 'v' is written by an async op (a collective). */
static bool from_async(const struct lw *w, const struct val *v)
{
    for (int i = 0; i < v->n; i++) {
        const struct prog_tensor *t = &w->p->t[v->t[i]];
        if (t->by && (t->by->op[t->op].flags & PROG_ASYNC))
            return true;
    }
    return false;
}

/* What instruction 'i' of 'c' holds, lowering it into 'b'. */
static struct val lower_instr(struct lw *w, const struct hlo_comp *c, int i,
                              struct prog_block *b, struct val *vals, const struct val *args,
                              int nargs)
{
    const struct hlo_instr *in = &c->ins[i];
    struct val v = {0};
    if (w->fz && (w->fz->fused[i] || w->fz->free_slice[i])) { /* inside its reader: no op */
        for (int k = 0; k < (w->fz->fused[i] ? in->nops : 1); k++)
            val_cat(&v, &vals[in->operand[k]]);
        return v;
    }
    switch (hlo_class_of(in->opcode)) {
    case HLO_C_PARAM: {
        long k = strtol(in->raw ? in->raw : "", NULL, 10);
        if (args && k >= 0 && k < nargs)
            val_cat(&v, &args[k]);
        else if (args)
            lfail(w, in->line, in->col, "expected parameter(0 to %d), got parameter(%ld)",
                  nargs - 1, k);
        else
            val_push(&v, prog_tensor(w->p, in->name));
        return v;
    }
    case HLO_C_CONST:
        val_push(&v, prog_tensor(w->p, in->name));
        return v;
    case HLO_C_FREE:
    case HLO_C_DONE:
        if (in->opcode == HLO_OP_GET_TUPLE_ELEMENT && in->nops == 1) {
            const struct hlo_attr *a = hlo_attr(in, "index");
            long k = a ? strtol(a->value, NULL, 10) : -1;
            const struct hlo_shape *ts = &c->ins[in->operand[0]].shape;
            const struct val *src = &vals[in->operand[0]];
            int at = 0;
            if (ts->type != HLO_TUPLE || k < 0 || k >= ts->nelem || leaves(ts) != src->n) {
                val_cat(&v, src); /* one tensor for the whole tuple (an op's output) */
                return v;
            }
            for (long e = 0; e < k; e++)
                at += leaves(&ts->elem[e]);
            for (int e = 0; e < leaves(&ts->elem[k]); e++)
                val_push(&v, src->t[at + e]);
            return v;
        }
        for (int k = 0; k < in->nops; k++)
            val_cat(&v, &vals[in->operand[k]]);
        return v;
    case HLO_C_WHILE:
        return lower_while(w, b, c, vals, in);
    case HLO_C_CALL:
        return lower_call(w, b, vals, in, "to_apply");
    case HLO_C_COND:
        return lower_cond(w, b, vals, in);
    case HLO_C_ASYNC:
        return lower_async(w, b, c, vals, in);
    case HLO_C_REFUSED:
        lfail(w, in->line, in->col, "expected no %s (%s): tpusim does not simulate host "
              "transfers and point-to-point channels yet", hlo_opcode_name(in->opcode), in->name);
        return v;
    default:
        break;
    }
    int op = priced_op(w, b, c, in);
    if (op >= 0 && w->unfused && b == w->body && (b->op[op].flags & PROG_ASYNC) &&
        hlo_fuse_pipelined(c, i)) { /* gathered one iteration ahead: its result carried */
        tag_source(w, b, op, in);
        reads(b, op, vals, in);
        int cur = prog_tensor(w->p, "carry");
        prog_carry(b, cur, -1);
        prog_carry_next(b, cur, written(w, b, op, in->name));
        val_push(&v, cur);
    } else if (op >= 0) {
        tag_source(w, b, op, in);
        reads(b, op, vals, in);
        if (w->unfused && b == w->body && in->opcode == HLO_OP_DYNAMIC_UPDATE_SLICE &&
            in->nops > 1 && from_async(w, &vals[in->operand[1]]))
            b->op[op].flags |= PROG_ASYNC; /* sunk with its collective (XLA's pipeliner) */
        val_push(&v, written(w, b, op, in->name));
    } else if (op == -2) { /* moves nothing: holds its operands */
        for (int k = 0; k < in->nops; k++)
            val_cat(&v, &vals[in->operand[k]]);
    }
    return v;
}

/* Lowers computation 'ci' into 'b' with its parameters bound to 'args'
 * (NULL: the entry's, inputs). A get-tuple-element of a tuple parameter
 * reads element k of the flattened value, so a tuple parameter binds the
 * caller's one tuple value. */
static struct val lower_comp(struct lw *w, int ci, struct prog_block *b, const struct val *args,
                             int nargs, const struct hlo_instr *caller)
{
    struct val out = {0};
    if (w->active[ci] || w->depth >= HLO_MAX_DEPTH) {
        lfail(w, caller ? caller->line : 1, caller ? caller->col : 1, "expected computations "
              "that do not call themselves, got '%s' called within itself (or %d deep)",
              w->m->comp[ci].name, HLO_MAX_DEPTH);
        return out;
    }
    w->active[ci] = true;
    w->depth++;
    const struct hlo_comp *c = &w->m->comp[ci];
    struct val *vals = xcalloc((size_t)c->nins, sizeof *vals);
    struct hlo_fuse plan, *outer = w->fz;
    int *mark = w->mark, *stack = w->stack;
    hlo_fuse_plan(c, w->unfused, &plan);
    if (w->sink && caller && caller->opcode == HLO_OP_WHILE) { /* the body of that while */
        hlo_fuse_sink(c, w->sink, w->nsink, &plan);
        free(w->sink);
        w->sink = NULL;
    }
    w->fz = &plan;
    w->mark = xcalloc((size_t)c->nins + 1, sizeof *w->mark);
    w->stack = xcalloc((size_t)c->nins + 1, sizeof *w->stack);
    for (int i = 0; i < c->nins && !w->failed; i++)
        vals[i] = lower_instr(w, c, i, b, vals, args, nargs);
    free(w->mark);
    free(w->stack);
    w->fz = outer;
    w->mark = mark, w->stack = stack;
    hlo_fuse_free(&plan);
    if (!w->failed)
        val_cat(&out, &vals[c->root]);
    for (int i = 0; i < c->nins; i++)
        free(vals[i].t);
    free(vals);
    w->depth--;
    w->active[ci] = false;
    return out;
}

struct program *hlo_program(const struct hlo_module *m, const struct topo *t, struct diag *d,
                            FILE *warn)
{
    struct hlo_report rep;
    return hlo_program_report(m, t, d, warn, &rep);
}

struct program *hlo_program_report(const struct hlo_module *m, const struct topo *t,
                                   struct diag *d, FILE *warn, struct hlo_report *rep)
{
    return hlo_program_ordered(m, t, NULL, d, warn, rep);
}

struct program *hlo_program_ordered(const struct hlo_module *m, const struct topo *t,
                                    const int *chip_of, struct diag *d, FILE *warn,
                                    struct hlo_report *rep)
{
    char comment[160];
    snprintf(comment, sizeof comment, "HLO module %.100s, per device", m->name);
    struct lw w = {.m = m, .topo = t, .p = prog_new(comment), .d = d, .warn = warn,
                   .used = hlo_names_new(), .next = hlo_names_new(), .ndev = hlo_devices(m),
                   .chip_of = chip_of, .unfused = hlo_unfused(m)};
    w.active = xcalloc((size_t)m->ncomp, sizeof *w.active);
    struct val out = lower_comp(&w, m->entry, &w.p->top, NULL, 0, NULL);
    for (int i = 0; i < out.n; i++)
        prog_output(w.p, out.t[i]);
    free(out.t);
    char err[256];
    if (!w.failed && sched_program(w.p, err, sizeof err) != 0)
        lfail(&w, m->comp[m->entry].line, m->comp[m->entry].col, "%s", err);
    hlo_names_free(w.used);
    hlo_names_free(w.next);
    for (int i = 0; i < w.nnames; i++)
        free(w.names[i]);
    free(w.names);
    free(w.active);
    *rep = w.rep;
    if (w.failed) {
        prog_free(w.p);
        return NULL;
    }
    return w.p;
}
