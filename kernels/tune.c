/* kernels/tune.c -- feasible block-size candidates ordered by a lower bound
 * (see kernels/tune.h). Bounds that need a dry run of the grid are only
 * computed for candidates whose cheap bound (launches and step overheads)
 * could still put them among the first 'max'. */
#include "kernels/tune.h"

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

/* Candidates are compared by bound, then by the order they were listed in. */
struct ranked {
    struct tune_point p;
    int order;
    double cheap;
};

static int by_cheap(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->cheap != y->cheap)
        return x->cheap < y->cheap ? -1 : 1;
    return x->order - y->order;
}

static int by_bound(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->p.bound_s != y->p.bound_s)
        return x->p.bound_s < y->p.bound_s ? -1 : 1;
    return x->order - y->order;
}

static bool listed_before(int64_t (*v)[TUNE_MAX_PARAMS], int i, int np)
{
    for (int j = 0; j < i; j++)
        if (memcmp(v[j], v[i], sizeof(int64_t) * (size_t)np) == 0)
            return true;
    return false;
}

/* Builds every listed candidate; keeps the feasible ones in 'r' with their
 * cheap bounds; notes why the default and the first other candidate failed. */
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
            x->order = i;
            x->cheap = cheap_bound(&k);
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

/* Full bounds, cheapest first, skipping those that cannot reach the first 'max'. */
static void bound_all(const struct kern_tune *t, const struct kern_kind *kind, const struct op *op,
                      const struct chip_params *chip, struct ranked *r, int nr, int max)
{
    qsort(r, (size_t)nr, sizeof *r, by_cheap);
    double *best = xcalloc((size_t)max + 1, sizeof *best); /* the 'max' smallest bounds, sorted */
    int nbest = 0;
    struct op tmp = *op;
    for (int i = 0; i < nr; i++) {
        r[i].p.bound_s = r[i].cheap;
        if (nbest == max && r[i].cheap >= best[max - 1])
            continue; /* its bound is at least its cheap one: it cannot get in */
        t->set(&tmp, r[i].p.v);
        struct kern k;
        char err[512];
        if (kern_init(&k, kind, &tmp, chip, false, err, sizeof err) == 0)
            r[i].p.bound_s = t->bound(&k);
        kern_fini(&k);
        double b = r[i].p.bound_s;
        if (nbest < max)
            nbest++;
        else if (b >= best[max - 1])
            continue;
        int j = nbest - 1;
        while (j > 0 && best[j - 1] > b) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = b;
    }
    free(best);
}

int tune_candidates(const struct kern_tune *t, const struct kern_kind *kind, const struct op *op,
                    const struct chip_params *chip, struct tune_point *out, int max, int *tried,
                    char *err, size_t n)
{
    int64_t (*v)[TUNE_MAX_PARAMS] = xcalloc(TUNE_MAX_ENUM + 1, sizeof *v);
    if (n)
        err[0] = '\0';
    t->get(op, v[0]);
    int nv = 1 + t->enumerate(op, chip, v + 1, TUNE_MAX_ENUM);
    struct ranked *r = xcalloc((size_t)nv, sizeof *r);
    char e0[600] = "", e1[600] = "";
    int nr = build_all(t, kind, op, chip, v, nv, r, tried, e0, e1, sizeof e0);
    if (nr == 0)
        snprintf(err, n, "no feasible blocks among %d candidates; %s%s%s", *tried, e0,
                 e0[0] && e1[0] ? "; " : "", e1);
    bound_all(t, kind, op, chip, r, nr, max > 0 ? max : 1);
    qsort(r, (size_t)nr, sizeof *r, by_bound);
    int keep = nr < max ? nr : max, d = -1;
    for (int i = 0; i < nr; i++)
        d = r[i].p.dflt ? i : d;
    for (int i = 0; i < keep; i++)
        out[i] = r[i].p;
    if (d >= keep && keep > 0) /* the default is always among them */
        out[keep - 1] = r[d].p;
    free(r);
    free(v);
    return keep;
}
