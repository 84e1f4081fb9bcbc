/* outputs/plot_serve.c -- latency_throughput.svg: a serving sweep's TTFT
 * against its load. One load curve (only the rate or concurrency swept):
 * TTFT p50/p90/p99 (log scale, ms) against each point's request throughput,
 * the knee highlighted. With other keys too (chips, engine settings): one
 * p99 TTFT curve per combination of them against the swept load. The TTFT
 * SLO is the grey line; the knees are named under the plot. */
#include "outputs/plot_serve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "outputs/svg.h"
#include "outputs/table.h"

static bool serving_ok(const struct table_row *r)
{
    return r->status == TABLE_OK && r->has_serving;
}

/* The key that sets the load (arrival rate or concurrency), or -1. */
static int load_key(const struct table *t)
{
    for (int k = 0; k < t->nkeys; k++)
        if (strstr(t->keys[k], "arrival.rate") || strstr(t->keys[k], "requests.concurrency"))
            return k;
    return -1;
}

/* Rows a and b differ only in the load key (every row is one group without one). */
static bool same_group(const struct table *t, int a, int b)
{
    int lk = load_key(t);
    for (int k = 0; lk >= 0 && k < t->nkeys; k++)
        if (k != lk && strcmp(t->rows[a].values[k], t->rows[b].values[k]))
            return false;
    return true;
}

/* The first row of row i's group. */
static int group_head(const struct table *t, int i)
{
    int h = 0;
    while (!same_group(t, h, i))
        h++;
    return h;
}

static int knee_in_group(const struct table *t, int head, const char **why)
{
    for (int i = head; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (!serving_ok(r) || !same_group(t, head, i))
            continue;
        bool slo = r->sv.slo_ttft_s > 0 && r->sv.ttft_s[2] > r->sv.slo_ttft_s;
        if (slo || r->sv.overloaded) {
            if (why)
                *why = slo ? "p99 TTFT above the SLO" : "overloaded";
            return i;
        }
    }
    return -1;
}

int plot_serve_knee(const struct table *t, const char **why)
{
    return t->nrows ? knee_in_group(t, 0, why) : -1;
}

/* "shape=[1, 1], tensor=1" (the group's other keys), or "" for one group. */
static char *group_name(const struct table *t, int i)
{
    int lk = load_key(t);
    char *s = xstrdup("");
    for (int k = 0; lk >= 0 && k < t->nkeys; k++) {
        if (k == lk)
            continue;
        char *n = xasprintf("%s%s%s=%s", s, *s ? ", " : "", table_short_key(t, k),
                            t->rows[i].values[k]);
        free(s);
        s = n;
    }
    return s;
}

char *plot_serve_note(const struct table *t)
{
    char *s = xstrdup("");
    for (int h = 0; h < t->nrows; h++) {
        if (group_head(t, h) != h)
            continue;
        const char *why = NULL;
        int k = knee_in_group(t, h, &why);
        char *g = group_name(t, h), *n;
        const char *sep = *s ? "; " : "";
        if (k < 0)
            n = xasprintf("%s%s%s%sno knee (every point within the TTFT SLO)", s, sep, g,
                          *g ? ": " : "");
        else
            n = xasprintf("%s%s%s%sknee: point %d (%s, %.4g req/s): %s", s, sep, g, *g ? ": " : "",
                          t->rows[k].point, t->nkeys ? t->rows[k].values[load_key(t) < 0 ? 0 : load_key(t)] : "",
                          t->rows[k].sv.request_throughput, why);
        free(s);
        free(g);
        s = n;
    }
    return s;
}

static int write_plot(const char *dir, const struct svg_plot *p)
{
    char *path = xasprintf("%s/latency_throughput.svg", dir);
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    if (rc == 0) {
        svg_write_plot(a.f, p);
        rc = fs_atomic_commit(&a);
    }
    free(path);
    return rc;
}

/* One group: TTFT p50/p90/p99 against each point's throughput. */
static int plot_one(const struct table *t, const char *dir, int n)
{
    char **ticks = xcalloc((size_t)n, sizeof *ticks);
    double *y = xcalloc((size_t)n * 4, sizeof *y);
    int knee = plot_serve_knee(t, NULL), best_x = -1;
    bool slo = false;
    for (int i = 0, x = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (!serving_ok(r))
            continue;
        ticks[x] = xasprintf("%.4g/s", r->sv.request_throughput);
        for (int p = 0; p < 3; p++)
            y[p * n + x] = r->sv.ttft_s[p] > 0 ? 1e3 * r->sv.ttft_s[p] : NAN;
        y[3 * n + x] = r->sv.slo_ttft_s > 0 ? 1e3 * r->sv.slo_ttft_s : NAN;
        slo |= r->sv.slo_ttft_s > 0;
        if (i == knee)
            best_x = x;
        x++;
    }
    struct svg_series se[4] = {{"TTFT p50", y, false, false},
                               {"TTFT p90", y + n, false, false},
                               {"TTFT p99", y + 2 * n, false, false},
                               {"SLO (TTFT)", y + 3 * n, false, true}};
    char *note = plot_serve_note(t);
    struct svg_plot p = {.title = "Latency against throughput",
                         .xlabel = "request throughput (completed requests/s), point by point",
                         .ylabel = "TTFT (ms)", .nx = n, .xticks = (const char *const *)ticks,
                         .nseries = slo ? 4 : 3, .series = se, .log_y = true,
                         .best_series = best_x >= 0 ? 2 : -1, .best_x = best_x, .note = note};
    int rc = write_plot(dir, &p);
    free(note);
    for (int x = 0; x < n; x++)
        free(ticks[x]);
    free(ticks);
    free(y);
    return rc;
}

/* Several groups: p99 TTFT of each against the load values. */
static int plot_groups(const struct table *t, const char *dir)
{
    int lk = load_key(t), nx = 0, ng = 0;
    const char **ticks = xcalloc((size_t)t->nrows, sizeof *ticks);
    int *gx = xcalloc((size_t)t->nrows, sizeof *gx), *heads = xcalloc((size_t)t->nrows, sizeof *heads);
    for (int i = 0; i < t->nrows; i++) {
        int x = 0;
        while (x < nx && strcmp(ticks[x], t->rows[i].values[lk]))
            x++;
        if (x == nx)
            ticks[nx++] = t->rows[i].values[lk];
        gx[i] = x;
        if (group_head(t, i) == i)
            heads[ng++] = i;
    }
    double *y = xcalloc((size_t)(ng + 1) * (size_t)nx, sizeof *y);
    for (int k = 0; k < (ng + 1) * nx; k++)
        y[k] = NAN;
    struct svg_series *se = xcalloc((size_t)ng + 1, sizeof *se);
    char **names = xcalloc((size_t)ng, sizeof *names);
    bool slo = false;
    for (int g = 0; g < ng; g++) {
        names[g] = group_name(t, heads[g]);
        se[g] = (struct svg_series){names[g], y + (size_t)g * nx, false, false};
    }
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (!serving_ok(r))
            continue;
        int g = 0;
        while (heads[g] != group_head(t, i))
            g++;
        y[g * nx + gx[i]] = r->sv.ttft_s[2] > 0 ? 1e3 * r->sv.ttft_s[2] : NAN;
        if (r->sv.slo_ttft_s > 0) {
            y[ng * nx + gx[i]] = 1e3 * r->sv.slo_ttft_s;
            slo = true;
        }
    }
    se[ng] = (struct svg_series){"SLO (TTFT)", y + (size_t)ng * nx, false, true};
    char *note = xstrdup("each curve's knee: where it crosses the grey SLO line or its run is "
                         "overloaded (named in report.html)");
    char xl[160];
    snprintf(xl, sizeof xl, "%s (offered load)", t->keys[lk]);
    struct svg_plot p = {.title = "p99 TTFT against load", .xlabel = xl, .ylabel = "p99 TTFT (ms)",
                         .nx = nx, .xticks = ticks, .nseries = slo ? ng + 1 : ng, .series = se,
                         .log_y = true, .best_series = -1, .note = note};
    int rc = write_plot(dir, &p);
    free(note);
    for (int g = 0; g < ng; g++)
        free(names[g]);
    free(names);
    free(se);
    free(y);
    free(ticks);
    free(gx);
    free(heads);
    return rc;
}

int plot_serve_write(const struct table *t, const char *dir)
{
    int n = 0;
    bool groups = false;
    for (int i = 0; i < t->nrows; i++) {
        n += serving_ok(&t->rows[i]);
        groups |= group_head(t, i) != 0;
    }
    if (n == 0)
        return 0;
    return groups ? plot_groups(t, dir) : plot_one(t, dir, n);
}
