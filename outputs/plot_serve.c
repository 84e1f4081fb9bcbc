/* outputs/plot_serve.c -- latency_throughput.svg: a serving sweep's TTFT
 * p50/p90/p99 (log scale, ms) against each point's request throughput, the
 * TTFT SLO as a grey line, and the knee (plot_serve_knee) highlighted and
 * named under the plot. */
#include "outputs/plot_serve.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "outputs/svg.h"
#include "outputs/table.h"

int plot_serve_knee(const struct table *t, const char **why)
{
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (r->status != TABLE_OK || !r->has_serving)
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

char *plot_serve_note(const struct table *t)
{
    const char *why = NULL;
    int k = plot_serve_knee(t, &why);
    if (k < 0)
        return xstrdup("no knee: every point within the TTFT SLO and not overloaded");
    const struct table_row *r = &t->rows[k];
    return xasprintf("knee: point %d (%s%s%.4g req/s): %s", r->point, t->nkeys ? r->values[0] : "",
                     t->nkeys ? ", " : "", r->sv.request_throughput, why);
}

int plot_serve_write(const struct table *t, const char *dir)
{
    int n = 0;
    for (int i = 0; i < t->nrows; i++)
        n += t->rows[i].status == TABLE_OK && t->rows[i].has_serving;
    if (n == 0)
        return 0;
    char **ticks = xcalloc((size_t)n, sizeof *ticks);
    double *y = xcalloc((size_t)n * 4, sizeof *y);
    int knee = plot_serve_knee(t, NULL), best_x = -1;
    bool slo = false;
    for (int i = 0, x = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (r->status != TABLE_OK || !r->has_serving)
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
                         .ylabel = "TTFT (ms)",
                         .nx = n,
                         .xticks = (const char *const *)ticks,
                         .nseries = slo ? 4 : 3,
                         .series = se,
                         .log_y = true,
                         .best_series = best_x >= 0 ? 2 : -1,
                         .best_x = best_x,
                         .note = note};
    char *path = xasprintf("%s/latency_throughput.svg", dir);
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    if (rc == 0) {
        svg_write_plot(a.f, &p);
        rc = fs_atomic_commit(&a);
    }
    free(path);
    free(note);
    for (int x = 0; x < n; x++)
        free(ticks[x]);
    free(ticks);
    free(y);
    return rc;
}
