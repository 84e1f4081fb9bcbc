/* kernels/tune.c -- feasible block-size candidates ordered by a lower bound
 * (see kernels/tune.h). Bounds that need a dry run of the grid are computed
 * lazily: the candidates wait in a heap keyed by their floor (no dry run)
 * until one reaches the top, whose bound is then computed and its key raised
 * to it; a candidate whose bound is at the top is next in bound order, since
 * every other key is at most the bound it stands for. */
#include "kernels/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "models/hbm.h"

const char *tune_format(const struct kern_tune *t, const int64_t *v, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->nparams && len < n; i++) /* 0: unset (None upstream), YAML null */
        len += v[i] ? (size_t)snprintf(buf + len, n - len, "%s%s=%lld", i ? " " : "",
                                       t->names[i], (long long)v[i])
                    : (size_t)snprintf(buf + len, n - len, "%s%s=null", i ? " " : "",
                                       t->names[i]);
    return buf;
}

int tune_divisors(int64_t dim, int64_t lo, int64_t hi, int64_t *out)
{
    int n = 0;
    bool dim_seen = false;
    for (int64_t p = 1; p <= hi && p > 0 && n < 63; p <<= 1) {
        if (p >= lo && dim % p == 0) {
            out[n++] = p;
            dim_seen |= p == dim;
        }
    }
    if (!dim_seen && dim >= lo && dim <= hi) {
        int i = n;
        while (i > 0 && out[i - 1] > dim) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = dim;
        n++;
    }
    return n;
}

int tune_multiples(int64_t dim, int64_t quantum, int64_t *out)
{
    if (dim < quantum) {
        out[0] = dim;
        return 1;
    }
    /* quantum x j divides dim only when quantum does: j runs over the divisors of
     * dim / quantum, found in pairs up to its square root */
    int64_t q = dim % quantum == 0 ? dim / quantum : 0, lo[64], hi[64];
    int nl = 0, nh = 0;
    for (int64_t j = 1; j * j <= q && nl < 32; j++)
        if (q % j == 0) {
            lo[nl++] = j;
            if (j * j != q)
                hi[nh++] = q / j;
        }
    int n = 0;
    for (int i = 0; i < nl && n < 63; i++)
        if (quantum * lo[i] < dim)
            out[n++] = quantum * lo[i];
    for (int i = nh - 1; i >= 0 && n < 63; i--)
        if (quantum * hi[i] < dim)
            out[n++] = quantum * hi[i];
    out[n++] = dim; /* the whole dim is a block whatever its factors */
    return n;
}

int tune_compute_blocks(int64_t major, int64_t *out)
{
    int n = 0;
    for (int64_t c = 128; c <= 512; c *= 2)
        if (c <= major && major % c == 0)
            out[n++] = c;
    if (major > 512 || n == 0)
        out[n++] = major;
    return n;
}

/* The cores that split a call's parallel dims, and how many run the whole op. */
static int split_cores(const struct chip_params *chip)
{
    return chip->megacore ? chip->cores : 1;
}

static int copies(const struct chip_params *chip)
{
    return chip->megacore ? 1 : chip->cores;
}

/* Launches and the step overheads of the busiest core: a bound without a dry run. */
static double cheap_bound(const struct kern *k)
{
    double t = 0;
    for (int i = 0; i < k->ncalls; i++) {
        int64_t b, e;
        pl_core_range(&k->calls[i], 0, split_cores(k->chip), &b, &e);
        t += k->chip->launch_s + (double)(e - b) * k->chip->step_overhead_s;
    }
    return t;
}

double tune_dry_bound(const struct kern *k)
{
    const struct chip_params *chip = k->chip;
    int nsplit = split_cores(chip);
    double core_s[8] = {0}, bytes = 0, launch = 0;
    for (int i = 0; i < k->ncalls; i++) {
        launch += chip->launch_s;
        for (int c = 0; c < nsplit && c < 8; c++) {
            int64_t b, e;
            struct pl_stats st = {0};
            pl_core_range(&k->calls[i], c, nsplit, &b, &e);
            pl_dry_run(&k->calls[i], chip, b, e, &st);
            core_s[c] += st.overhead_s + st.mxu_s + st.vpu_s;
            bytes += st.hbm_bytes * copies(chip);
        }
    }
    double busy = 0;
    for (int c = 0; c < nsplit && c < 8; c++)
        busy = core_s[c] > busy ? core_s[c] : busy;
    double hbm = hbm_busy_s(chip, bytes);
    return launch + (busy > hbm ? busy : hbm);
}

/* Steps in [b, e) of 'call' that 'runs' says run a block (the grid walked as an odometer). */
static int64_t count_runs(const struct pl_call *call, int64_t b, int64_t e,
                          bool (*runs)(const struct pl_call *call, const int64_t *idx))
{
    int64_t idx[PL_MAX_GRID] = {0}, s = b, n = 0;
    for (int i = call->ngrid - 1; i >= 0; i--) {
        idx[i] = s % call->grid[i];
        s /= call->grid[i];
    }
    for (int64_t t = b; t < e; t++) {
        n += runs(call, idx);
        for (int i = call->ngrid - 1; i >= 0 && ++idx[i] == call->grid[i]; i--)
            idx[i] = 0;
    }
    return n;
}

double tune_floor_steps(const struct kern *k, const double *run_s,
                        bool (*runs)(const struct pl_call *call, const int64_t *idx))
{
    const struct chip_params *chip = k->chip;
    int nsplit = split_cores(chip);
    double core_s[8] = {0}, busy = 0;
    for (int i = 0; i < k->ncalls; i++)
        for (int c = 0; c < nsplit && c < 8; c++) {
            int64_t b, e;
            pl_core_range(&k->calls[i], c, nsplit, &b, &e);
            core_s[c] += (double)(e - b) * chip->step_overhead_s;
            if (run_s[i] > 0)
                core_s[c] += (double)count_runs(&k->calls[i], b, e, runs) * run_s[i];
        }
    for (int c = 0; c < nsplit && c < 8; c++)
        busy = core_s[c] > busy ? core_s[c] : busy;
    return (double)k->ncalls * chip->launch_s + busy;
}

/* A candidate and its key: its floor until its bound is computed. */
struct ranked {
    struct tune_point p;
    bool exact; /* p.bound_s computed */
};

struct tune_order {
    const struct kern_tune *t;
    const struct kern_kind *kind;
    struct op op; /* shallow copy: the builder only reads it */
    const struct chip_params *chip;
    struct ranked *r;
    int nr;
    int *heap; /* indices into r not handed out yet, by key */
    int nheap;
    int dflt; /* index into r of the default blocks, -1 */
    int bounds;
};

bool tune_point_before(const struct tune_point *a, const struct tune_point *b)
{
    if (a->bound_s != b->bound_s)
        return a->bound_s < b->bound_s;
    return a->order < b->order;
}

static double key(const struct ranked *x)
{
    return x->exact ? x->p.bound_s : x->p.floor_s;
}

/* Heap order: smaller key; at equal keys a floor before a bound (its bound may
 * equal the key and come first by listing order), then listing order. */
static bool heap_less(const struct tune_order *o, int a, int b)
{
    const struct ranked *x = &o->r[a], *y = &o->r[b];
    if (key(x) != key(y))
        return key(x) < key(y);
    if (x->exact != y->exact)
        return !x->exact;
    return x->p.order < y->p.order;
}

static void heap_swap(struct tune_order *o, int i, int j)
{
    int t = o->heap[i];
    o->heap[i] = o->heap[j];
    o->heap[j] = t;
}

static void sift_down(struct tune_order *o, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < o->nheap && heap_less(o, o->heap[l], o->heap[m]))
            m = l;
        if (r < o->nheap && heap_less(o, o->heap[r], o->heap[m]))
            m = r;
        if (m == i)
            return;
        heap_swap(o, i, m);
        i = m;
    }
}

/* Computes the bound of candidate 'i' (a dry run for most kernels). */
static void full_bound(struct tune_order *o, int i)
{
    struct ranked *x = &o->r[i];
    if (x->exact)
        return;
    o->t->set(&o->op, x->p.v);
    struct kern k;
    char err[512];
    x->p.bound_s = x->p.floor_s;
    if (kern_init(&k, o->kind, &o->op, o->chip, false, err, sizeof err) == 0)
        x->p.bound_s = o->t->bound(&k);
    kern_fini(&k);
    x->exact = true;
    o->bounds++;
}

static bool listed_before(int64_t (*v)[TUNE_MAX_PARAMS], int i, int np)
{
    for (int j = 0; j < i; j++)
        if (memcmp(v[j], v[i], sizeof(int64_t) * (size_t)np) == 0)
            return true;
    return false;
}

/* The floor of a built candidate: the kernel's, or the launches and step overheads. */
static double floor_of(const struct kern_tune *t, const struct kern *k)
{
    double f = cheap_bound(k);
    if (t->floor) {
        double g = t->floor(k) * (1 - 1e-9); /* rounding: never above a bound it equals */
        f = g > f ? g : f;
    }
    return f;
}

/* Builds every listed candidate; keeps the feasible ones in 'r' with their
 * floors; notes why the default and the first other candidate failed. */
static int build_all(const struct kern_tune *t, const struct kern_kind *kind, const struct op *op,
                     const struct chip_params *chip, int64_t (*v)[TUNE_MAX_PARAMS], int nv,
                     struct ranked *r, int *tried, char *e0, char *e1, size_t n)
{
    struct op tmp = *op; /* shallow: the builder only reads it */
    int nr = 0;
    *tried = 0;
    for (int i = 0; i < nv; i++) {
        if (listed_before(v, i, t->nparams))
            continue;
        (*tried)++;
        t->set(&tmp, v[i]);
        struct kern k;
        char err[512];
        if (kern_init(&k, kind, &tmp, chip, false, err, sizeof err) == 0) {
            struct ranked *x = &r[nr++];
            memset(x, 0, sizeof *x);
            memcpy(x->p.v, v[i], sizeof x->p.v);
            x->p.dflt = i == 0;
            x->p.steps = kern_steps(&k) * copies(chip);
            x->p.order = i;
            x->p.floor_s = floor_of(t, &k);
        } else if (i == 0 || !e1[0]) {
            char vals[256];
            snprintf(i == 0 ? e0 : e1, n, "%s (%s): %s",
                     i == 0 ? "the default" : "the smallest other candidate",
                     tune_format(t, v[i], vals, sizeof vals), err);
        }
        kern_fini(&k);
    }
    return nr;
}

struct tune_order *tune_order_new(const struct kern_tune *t, const struct kern_kind *kind,
                                  const struct op *op, const struct chip_params *chip,
                                  int *tried, char *err, size_t n)
{
    int64_t (*v)[TUNE_MAX_PARAMS] = xcalloc(TUNE_MAX_ENUM + 1, sizeof *v);
    if (n)
        err[0] = '\0';
    t->get(op, v[0]);
    int nv = 1 + t->enumerate(op, chip, v + 1, TUNE_MAX_ENUM);
    struct tune_order *o = xcalloc(1, sizeof *o);
    o->t = t, o->kind = kind, o->op = *op, o->chip = chip;
    o->r = xcalloc((size_t)nv, sizeof *o->r);
    char e0[600] = "", e1[600] = "";
    o->nr = build_all(t, kind, op, chip, v, nv, o->r, tried, e0, e1, sizeof e0);
    if (o->nr == 0)
        snprintf(err, n, "no feasible blocks among %d candidates; %s%s%s", *tried, e0,
                 e0[0] && e1[0] ? "; " : "", e1);
    o->heap = xcalloc((size_t)o->nr + 1, sizeof *o->heap);
    o->dflt = -1;
    for (int i = 0; i < o->nr; i++) {
        o->heap[o->nheap++] = i;
        o->dflt = o->r[i].p.dflt ? i : o->dflt;
    }
    for (int i = o->nheap / 2 - 1; i >= 0; i--)
        sift_down(o, i);
    free(v);
    return o;
}

void tune_order_free(struct tune_order *o)
{
    if (!o)
        return;
    free(o->r);
    free(o->heap);
    free(o);
}

int tune_order_feasible(const struct tune_order *o)
{
    return o->nr;
}

int tune_order_bounds(const struct tune_order *o)
{
    return o->bounds;
}

bool tune_order_next(struct tune_order *o, double limit, struct tune_point *p)
{
    while (o->nheap > 0) {
        int top = o->heap[0];
        if (!(key(&o->r[top]) < limit))
            return false; /* its bound is at least its key */
        if (o->r[top].exact) {
            *p = o->r[top].p;
            o->heap[0] = o->heap[--o->nheap];
            sift_down(o, 0);
            return true;
        }
        full_bound(o, top); /* its key grows to its bound */
        sift_down(o, 0);
    }
    return false;
}

bool tune_order_default(struct tune_order *o, double limit, struct tune_point *p)
{
    if (o->dflt < 0 || !(key(&o->r[o->dflt]) < limit))
        return false;
    if (!o->r[o->dflt].exact) { /* its key grows: it moves down the heap */
        full_bound(o, o->dflt);
        for (int i = 0; i < o->nheap; i++)
            if (o->heap[i] == o->dflt)
                sift_down(o, i);
    }
    *p = o->r[o->dflt].p;
    return p->bound_s < limit;
}

int tune_candidates(const struct kern_tune *t, const struct kern_kind *kind, const struct op *op,
                    const struct chip_params *chip, struct tune_point *out, int max, int *tried,
                    char *err, size_t n)
{
    struct tune_order *o = tune_order_new(t, kind, op, chip, tried, err, n);
    int keep = 0;
    bool dflt = false;
    while (keep < max && tune_order_next(o, INFINITY, &out[keep])) {
        dflt |= out[keep].dflt;
        keep++;
    }
    if (!dflt && keep > 0 && keep == max) /* the default is always among them */
        tune_order_default(o, INFINITY, &out[keep - 1]);
    tune_order_free(o);
    return keep;
}
