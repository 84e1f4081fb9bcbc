/* outputs/plots.c -- plot_<key>.svg (time against each swept key) and
 * heatmap.svg (two-key sweeps) from a sweep table, drawn by outputs/svg.h.
 * May use: libc, base/ (fsutil, xalloc), outputs/table.h, outputs/svg.h. */
#include "outputs/plots.h"
#include "outputs/plot_serve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "outputs/svg.h"
#include "outputs/table.h"

char *plot_file_name(const char *key)
{
    char *s = xasprintf("plot_%s.svg", key);
    for (char *c = s + 5; *c && strcmp(c, ".svg"); c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *c))
            *c = '_';
    return s;
}

/* The distinct values of column 'k', numerically sorted when all are numbers,
 * else in order of appearance. Returns the count; '*vals' borrowed strings. */
static int categories(const struct table *t, int k, const char ***vals)
{
    const char **v = xcalloc((size_t)t->nrows + 1, sizeof *v);
    int n = 0;
    bool numeric = true;
    for (int i = 0; i < t->nrows; i++) {
        const char *s = t->rows[i].values[k];
        int j = 0;
        while (j < n && strcmp(v[j], s))
            j++;
        if (j == n) {
            char *end;
            strtod(s, &end);
            numeric &= *s && !*end;
            v[n++] = s;
        }
    }
    for (int i = 1; numeric && i < n; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && strtod(v[j - 1], NULL) > strtod(v[j], NULL); j--) {
            const char *x = v[j];
            v[j] = v[j - 1], v[j - 1] = x;
        }
    *vals = v;
    return n;
}

static int index_of(const char *const *v, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return i;
    return -1;
}

/* The unit to show times in: a scale and a name. */
static double time_unit(const struct table *t, const char **unit)
{
    double max = 0;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK && t->rows[i].time_s > max)
            max = t->rows[i].time_s;
    *unit = max >= 1 ? "s" : max >= 1e-3 ? "ms" : max >= 1e-6 ? "us" : "ns";
    return max >= 1 ? 1 : max >= 1e-3 ? 1e-3 : max >= 1e-6 ? 1e-6 : 1e-9;
}

static bool wide_range(const struct table *t)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (r->status != TABLE_OK || !(r->time_s > 0))
            continue;
        lo = lo == 0 || r->time_s < lo ? r->time_s : lo;
        hi = r->time_s > hi ? r->time_s : hi;
    }
    return lo > 0 && hi / lo > 5;
}

/* The other keys' values of row 'r' as "a=1, b=2" (a new string). */
static char *group_label(const struct table *t, const struct table_row *r, int k)
{
    char *s = xstrdup("");
    for (int j = 0; j < t->nkeys; j++) {
        if (j == k)
            continue;
        char *n = xasprintf("%s%s%s=%s", s, *s ? ", " : "", table_short_key(t, j), r->values[j]);
        free(s);
        s = n;
    }
    return s;
}

struct plot_data {
    int nx, ngroups;
    const char **xs;
    char **groups;  /* ngroups labels */
    double *y;      /* ngroups * nx */
    double *best_y; /* nx: min over the groups */
    bool *inf;      /* nx */
    int *row_group; /* group of each row */
};

static void plot_collect(const struct table *t, int k, double scale, struct plot_data *d)
{
    d->nx = categories(t, k, &d->xs);
    d->groups = xcalloc((size_t)t->nrows + 1, sizeof *d->groups);
    d->row_group = xcalloc((size_t)t->nrows + 1, sizeof *d->row_group);
    for (int i = 0; i < t->nrows; i++) {
        char *g = group_label(t, &t->rows[i], k);
        int j = index_of((const char *const *)d->groups, d->ngroups, g);
        if (j < 0)
            d->groups[j = d->ngroups++] = g;
        else
            free(g);
        d->row_group[i] = j;
    }
    d->y = xcalloc((size_t)(d->ngroups * d->nx) + 1, sizeof *d->y);
    d->best_y = xcalloc((size_t)d->nx + 1, sizeof *d->best_y);
    d->inf = xcalloc((size_t)d->nx + 1, sizeof *d->inf);
    for (int i = 0; i < d->ngroups * d->nx; i++)
        d->y[i] = NAN;
    for (int x = 0; x < d->nx; x++)
        d->best_y[x] = NAN;
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        int x = index_of(d->xs, d->nx, r->values[k]);
        double *cell = &d->y[d->row_group[i] * d->nx + x];
        if (r->status != TABLE_OK) {
            d->inf[x] = true;
            continue;
        }
        double v = r->time_s / scale;
        if (isnan(*cell) || v < *cell)
            *cell = v;
        if (isnan(d->best_y[x]) || v < d->best_y[x])
            d->best_y[x] = v;
    }
}

static void plot_data_fini(struct plot_data *d)
{
    for (int g = 0; g < d->ngroups; g++)
        free(d->groups[g]);
    free(d->groups);
    free(d->xs);
    free(d->y);
    free(d->best_y);
    free(d->inf);
    free(d->row_group);
}

static int write_svg_file(const char *path, const struct svg_plot *p, const struct svg_heatmap *h)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    if (p)
        svg_write_plot(f, p);
    else
        svg_write_heatmap(f, h);
    return fs_atomic_commit(&a);
}

static int plot_key(const struct table *t, int k, const char *dir)
{
    const char *unit;
    double scale = time_unit(t, &unit);
    struct plot_data d = {0};
    plot_collect(t, k, scale, &d);
    bool lines = t->nkeys == 1 || d.ngroups <= 8;
    int ns = lines ? d.ngroups : d.ngroups + 1;
    struct svg_series *se = xcalloc((size_t)ns, sizeof *se);
    int first = lines ? 0 : 1; /* without lines per group, series 0 is the best over them */
    for (int g = 0; g < d.ngroups; g++)
        se[first + g] = (struct svg_series){lines && t->nkeys > 1 ? d.groups[g] : NULL,
                                            &d.y[g * d.nx], !lines, !lines};
    if (!lines)
        se[0] = (struct svg_series){"best over the other keys", d.best_y, false, false};
    char **labels = xcalloc((size_t)ns, sizeof *labels);
    for (int g = 0; lines && t->nkeys > 1 && g < d.ngroups; g++) {
        bool any = false;
        for (int x = 0; x < d.nx; x++)
            any |= !isnan(d.y[g * d.nx + x]);
        if (!any) /* a legend entry without a line: say why */
            se[g].label = labels[g] = xasprintf("%s: infeasible", d.groups[g]);
    }
    int best = table_best_row(t);
    char *title = xasprintf("%s: time against %s", t->name, table_short_key(t, k));
    char *ylabel = xasprintf("time (%s)", unit);
    struct svg_plot p = {.title = title,
                         .xlabel = t->keys[k],
                         .ylabel = ylabel,
                         .nx = d.nx,
                         .xticks = d.xs,
                         .nseries = ns,
                         .series = se,
                         .log_y = wide_range(t),
                         .x_infeasible = d.inf,
                         .best_series = best < 0 ? -1
                                        : lines  ? d.row_group[best]
                                                 : 0,
                         .best_x = best < 0 ? -1 : index_of(d.xs, d.nx, t->rows[best].values[k]),
                         .note = t->nkeys == 1 ? NULL
                                 : lines       ? "one line per combination of the other keys"
                                         : "grey: every point; line: the best over the other keys"};
    char *name = plot_file_name(t->keys[k]);
    char *path = xasprintf("%s/%s", dir, name);
    int rc = write_svg_file(path, &p, NULL);
    free(path);
    free(name);
    for (int g = 0; g < ns; g++)
        free(labels[g]);
    free(labels);
    free(title);
    free(ylabel);
    free(se);
    plot_data_fini(&d);
    return rc;
}

static void heat_cells(const struct table *t, const char **xs, int nx, const char **ys, int ny,
                       double *z, enum svg_cell *cells)
{
    for (int i = 0; i < nx * ny; i++)
        z[i] = NAN, cells[i] = SVG_CELL_EMPTY;
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        int c = index_of(ys, ny, r->values[0]) * nx + index_of(xs, nx, r->values[1]);
        if (r->status == TABLE_OK) {
            if (cells[c] != SVG_CELL_VALUE || r->time_s < z[c])
                z[c] = r->time_s;
            cells[c] = SVG_CELL_VALUE;
        } else if (cells[c] != SVG_CELL_VALUE) {
            cells[c] = r->status == TABLE_INFEASIBLE ? SVG_CELL_INFEASIBLE : SVG_CELL_FAILED;
        }
    }
}

static int plot_heatmap(const struct table *t, const char *dir)
{
    const char **xs, **ys;
    int nx = categories(t, 1, &xs), ny = categories(t, 0, &ys);
    double *z = xcalloc((size_t)(nx * ny) + 1, sizeof *z);
    enum svg_cell *cells = xcalloc((size_t)(nx * ny) + 1, sizeof *cells);
    char **text = xcalloc((size_t)(nx * ny) + 1, sizeof *text);
    heat_cells(t, xs, nx, ys, ny, z, cells);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < nx * ny; i++) {
        if (cells[i] != SVG_CELL_VALUE)
            continue;
        char buf[32];
        table_format_time(buf, sizeof buf, z[i]);
        text[i] = xstrdup(buf);
        lo = z[i] < lo ? z[i] : lo;
        hi = z[i] > hi ? z[i] : hi;
    }
    char los[32] = "", his[32] = "";
    if (hi > 0) {
        table_format_time(los, sizeof los, lo);
        table_format_time(his, sizeof his, hi);
    }
    int best = table_best_row(t);
    char *title =
        xasprintf("%s: time by %s and %s", t->name, table_short_key(t, 0), table_short_key(t, 1));
    struct svg_heatmap h = {
        .title = title,
        .xlabel = t->keys[1],
        .ylabel = t->keys[0],
        .nx = nx,
        .ny = ny,
        .xticks = xs,
        .yticks = ys,
        .z = z,
        .cell_text = (const char *const *)text,
        .cells = cells,
        .log_z = hi > 0 && hi / lo > 10,
        .best_x = best < 0 ? -1 : index_of(xs, nx, t->rows[best].values[1]),
        .best_y = best < 0 ? -1 : index_of(ys, ny, t->rows[best].values[0]),
        .low_label = hi > 0 ? los : NULL,
        .high_label = hi > 0 ? his : NULL,
        .note = "green: fast, red: slow; hatched: infeasible (breaks a block-size rule or VMEM)"};
    char *path = xasprintf("%s/heatmap.svg", dir);
    int rc = write_svg_file(path, NULL, &h);
    for (int i = 0; i < nx * ny; i++)
        free(text[i]);
    free(path);
    free(title);
    free(text);
    free(cells);
    free(z);
    free((void *)xs);
    free((void *)ys);
    return rc;
}

int plot_write_sweep(const struct table *t, const char *dir)
{
    int rc = 0;
    for (int k = 0; k < t->nkeys && rc == 0; k++)
        rc = plot_key(t, k, dir);
    if (rc == 0 && t->nkeys == 2)
        rc = plot_heatmap(t, dir);
    if (rc == 0)
        rc = plot_serve_write(t, dir);
    return rc;
}
