/* traces/report.c -- sweep tables (CSV, JSON, Markdown, SVG plots), a minimal
 * JSON reader, and `tpusim compare`. Rows come sorted by point index and no
 * file carries a timestamp, so a sweep's outputs do not depend on how many
 * processes ran it. Every file is written atomically (base/fsutil.h). */
#include "traces/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "traces/svg.h"

/* ---------------- rows ---------------- */

const char *report_status_name(enum report_status s)
{
    static const char *const names[] = {"ok", "infeasible", "failed"};
    return s < REPORT_STATUS_COUNT ? names[s] : "?";
}

int report_status_parse(const char *name, enum report_status *s)
{
    for (int i = 0; i < REPORT_STATUS_COUNT; i++)
        if (name && !strcmp(name, report_status_name((enum report_status)i))) {
            *s = (enum report_status)i;
            return 0;
        }
    return -1;
}

int report_row_from_summary(struct report_row *r, const struct json *j, char *err,
                            size_t errn)
{
    const struct json *ops = json_get(j, "ops");
    const struct json *tt = json_get(j, "total_time_s");
    if (!ops || ops->type != JSON_ARR || !tt || tt->type != JSON_NUM) {
        snprintf(err, errn, "not a summary.json (no total_time_s and ops)");
        return -1;
    }
    r->status = REPORT_OK;
    r->time_s = tt->num;
    r->scenario = xstrdup(json_str(j, "scenario", ""));
    r->chip = xstrdup(json_str(j, "chip", ""));
    const struct json *top = NULL;
    r->vmem_peak_bytes = 0;
    r->grid_steps = 0;
    for (int i = 0; i < ops->n; i++) {
        const struct json *o = ops->kids[i];
        if (!top || json_num(o, "time_s", 0) > json_num(top, "time_s", 0))
            top = o;
        double v = json_num(o, "vmem_peak_bytes", 0);
        if (v > (double)r->vmem_peak_bytes)
            r->vmem_peak_bytes = (uint64_t)v;
        r->grid_steps += (int64_t)json_num(o, "grid_steps", 0);
    }
    r->op = xstrdup(json_str(top, "name", ""));
    r->bound = xstrdup(json_str(top, "bound", ""));
    r->peak_fraction = json_num(top, "peak_fraction", 0);
    return 0;
}

void report_row_fini(struct report_row *r, int nkeys)
{
    for (int k = 0; r->values && k < nkeys; k++)
        free(r->values[k]);
    free(r->values);
    free(r->reason);
    free(r->scenario);
    free(r->chip);
    free(r->op);
    free(r->bound);
    memset(r, 0, sizeof *r);
}

int report_best_row(const struct report_table *t)
{
    int best = -1;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == REPORT_OK &&
            (best < 0 || t->rows[i].time_s < t->rows[best].time_s))
            best = i;
    return best;
}

int report_find_row(const struct report_table *t, int point)
{
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].point == point)
            return i;
    return -1;
}

/* ---------------- formatting helpers ---------------- */

void report_format_time(char *buf, size_t n, double s)
{
    static const struct {
        double scale;
        const char *unit;
    } u[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
    int i = 0;
    while (i < 3 && fabs(s) < u[i].scale * 0.9995)
        i++;
    snprintf(buf, n, "%.4g %s", s / u[i].scale, u[i].unit);
}

static void format_bytes(char *buf, size_t n, uint64_t b)
{
    if (b >= (1u << 30))
        snprintf(buf, n, "%.3g GiB", (double)b / (1u << 30));
    else if (b >= (1u << 20))
        snprintf(buf, n, "%.3g MiB", (double)b / (1u << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.3g KiB", (double)b / 1024);
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
}

/* Short column names: the last segment of each key path, or the whole path
 * when two keys share a last segment. Borrowed from 'keys'. */
static const char *short_key(const struct report_table *t, int k)
{
    const char *dot = strrchr(t->keys[k], '.');
    const char *s = dot ? dot + 1 : t->keys[k];
    for (int j = 0; j < t->nkeys; j++) {
        const char *d2 = strrchr(t->keys[j], '.');
        if (j != k && !strcmp(d2 ? d2 + 1 : t->keys[j], s))
            return t->keys[k];
    }
    return s;
}

/* True when 's' is a JSON number (so it can be written unquoted). */
static bool is_json_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

/* ---------------- sweep.csv ---------------- */

static void csv_field(FILE *f, const char *s)
{
    s = s ? s : "";
    if (!strpbrk(s, ",\"\r\n") && s[0] != ' ' && (!*s || s[strlen(s) - 1] != ' ')) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int report_write_csv(const struct report_table *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    fputs("point", f);
    for (int k = 0; k < t->nkeys; k++)
        fputc(',', f), csv_field(f, t->keys[k]);
    fputs(",time_s,peak_fraction,bound,vmem_peak_bytes,grid_steps,status,reason\n", f);
    for (int i = 0; i < t->nrows; i++) {
        const struct report_row *r = &t->rows[i];
        fprintf(f, "%d", r->point);
        for (int k = 0; k < t->nkeys; k++)
            fputc(',', f), csv_field(f, r->values[k]);
        if (r->status == REPORT_OK)
            fprintf(f, ",%.9e,%.6f,%s,%llu,%lld", r->time_s, r->peak_fraction, r->bound,
                    (unsigned long long)r->vmem_peak_bytes, (long long)r->grid_steps);
        else
            fputs(",,,,,", f);
        fprintf(f, ",%s,", report_status_name(r->status));
        csv_field(f, r->reason);
        fputc('\n', f);
    }
    return fs_atomic_commit(&a);
}

/* ---------------- sweep.json ---------------- */

static void json_value(FILE *f, const char *v)
{
    if (!v || !*v)
        fputs("null", f);
    else if (is_json_number(v))
        fputs(v, f);
    else
        json_write_string(f, v);
}

static void json_row(FILE *f, const struct report_table *t, const struct report_row *r)
{
    fprintf(f, "    {\"point\": %d, \"dir\": \"points/%04d\", \"values\": {", r->point, r->point);
    for (int k = 0; k < t->nkeys; k++) {
        fputs(k ? ", " : "", f);
        json_write_string(f, t->keys[k]);
        fputs(": ", f);
        json_value(f, r->values[k]);
    }
    fprintf(f, "},\n     \"status\": \"%s\", \"reason\": ", report_status_name(r->status));
    json_write_string(f, r->reason);
    if (r->status == REPORT_OK) {
        fputs(",\n     \"scenario\": ", f);
        json_write_string(f, r->scenario);
        fputs(", \"chip\": ", f);
        json_write_string(f, r->chip);
        fprintf(f, ", \"time_s\": %.9e, \"op\": ", r->time_s);
        json_write_string(f, r->op);
        fputs(", \"bound\": ", f);
        json_write_string(f, r->bound);
        fprintf(f, ", \"peak_fraction\": %.6f, \"vmem_peak_bytes\": %llu, \"grid_steps\": %lld}",
                r->peak_fraction, (unsigned long long)r->vmem_peak_bytes, (long long)r->grid_steps);
    } else {
        fputs(",\n     \"time_s\": null, \"bound\": null, \"peak_fraction\": null, "
              "\"vmem_peak_bytes\": null, \"grid_steps\": null}",
              f);
    }
}

int report_write_json(const struct report_table *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    int best = report_best_row(t);
    fputs("{\n  \"sweep\": ", f);
    json_write_string(f, t->name);
    fputs(",\n  \"base\": ", f);
    json_write_string(f, t->base);
    fputs(",\n  \"keys\": [", f);
    for (int k = 0; k < t->nkeys; k++) {
        fputs(k ? ", " : "", f);
        json_write_string(f, t->keys[k]);
    }
    fprintf(f, "],\n  \"points_total\": %d, \"points_done\": %d, \"complete\": %s,\n", t->npoints,
            t->nrows, t->nrows == t->npoints ? "true" : "false");
    fprintf(f, "  \"best_point\": ");
    if (best >= 0)
        fprintf(f, "%d", t->rows[best].point);
    else
        fputs("null", f);
    fputs(", \"default_point\": ", f);
    if (t->default_point >= 0)
        fprintf(f, "%d", t->default_point);
    else
        fputs("null", f);
    fprintf(f, ", \"default_is_base\": %s,\n  \"points\": [\n",
            t->default_is_base ? "true" : "false");
    for (int i = 0; i < t->nrows; i++) {
        json_row(f, t, &t->rows[i]);
        fputs(i + 1 < t->nrows ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    return fs_atomic_commit(&a);
}

/* ---------------- report.md ---------------- */

static void md_cell(FILE *f, const char *s)
{
    for (s = s ? s : ""; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n')
            fputs(s[1] ? "<br>" : "", f);
        else
            fputc(*s, f);
    }
}

static const char *bound_words(const char *b)
{
    static const char *const from[] = {"mxu", "vpu", "hbm", "ici", "overhead", "latency"};
    static const char *const to[] = {"the MXU",       "the VPU",           "HBM bandwidth",
                                     "ICI bandwidth", "per-step overhead", "DMA latency"};
    for (int i = 0; i < 6; i++)
        if (b && !strcmp(b, from[i]))
            return to[i];
    return b ? b : "?";
}

static void md_values(FILE *f, const struct report_table *t, const struct report_row *r)
{
    for (int k = 0; k < t->nkeys; k++) {
        fprintf(f, "%s%s=", k ? ", " : "", short_key(t, k));
        md_cell(f, r->values[k][0] ? r->values[k] : "(unset)");
    }
}

static void md_point_line(FILE *f, const struct report_table *t, const char *what,
                          const struct report_row *r, const struct report_row *def)
{
    char tm[32];
    fprintf(f, "- **%s**: point %d (", what, r->point);
    md_values(f, t, r);
    fputs(")", f);
    if (r->status != REPORT_OK) {
        fprintf(f, ": %s: ", report_status_name(r->status));
        md_cell(f, r->reason);
        fputs("\n", f);
        return;
    }
    report_format_time(tm, sizeof tm, r->time_s);
    fprintf(f, ": **%s**", tm);
    if (def && def != r && def->status == REPORT_OK && r->time_s > 0)
        fprintf(f, ", **%.2f\xc3\x97** the speed of the default", def->time_s / r->time_s);
    fprintf(f, "; bound by %s (`%s`, op `", bound_words(r->bound), r->bound);
    md_cell(f, r->op);
    fprintf(f, "`, %.1f%% of peak)\n", 100.0 * r->peak_fraction);
}

static void md_header(FILE *f, const struct report_table *t)
{
    int count[REPORT_STATUS_COUNT] = {0};
    for (int i = 0; i < t->nrows; i++)
        count[t->rows[i].status]++;
    int best = report_best_row(t);
    fputs("# Sweep `", f);
    md_cell(f, t->name);
    fputs("`\n\nBase scenario: `", f);
    md_cell(f, t->base);
    fputs("`", f);
    if (best >= 0)
        fprintf(f, " on %s", t->rows[best].chip);
    fprintf(f, " · %d points: %d ok, %d infeasible, %d failed\n\n", t->npoints, count[REPORT_OK],
            count[REPORT_INFEASIBLE], count[REPORT_FAILED]);
    if (t->nrows < t->npoints)
        fprintf(f,
                "> **Interrupted**: %d of %d points finished; run the sweep again with "
                "`--resume` to finish it.\n\n",
                t->nrows, t->npoints);
    fputs("Swept keys:", f);
    for (int k = 0; k < t->nkeys; k++)
        fprintf(f, "%s `%s`", k ? "," : "", t->keys[k]);
    fputs("\n\n", f);
}

static void md_summary(FILE *f, const struct report_table *t)
{
    int best = report_best_row(t), d = report_find_row(t, t->default_point);
    const struct report_row *def = d >= 0 ? &t->rows[d] : NULL;
    fputs("## Result\n\n", f);
    if (best < 0)
        fputs("- **No feasible point.**\n", f);
    else
        md_point_line(f, t, "Best", &t->rows[best], def);
    if (def) {
        md_point_line(f, t, "Default", def, NULL);
        fprintf(f, "  (%s)\n",
                t->default_is_base ? "the point with the base scenario's own values"
                                   : "the first point: the base scenario's values are not in "
                                     "the sweep");
    }
    fputs("\n", f);
}

static int cmp_time(const void *a, const void *b)
{
    const struct report_row *x = *(const struct report_row *const *)a;
    const struct report_row *y = *(const struct report_row *const *)b;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    return x->point - y->point;
}

static void md_ranked(FILE *f, const struct report_table *t)
{
    const struct report_row **ok = xcalloc((size_t)t->nrows + 1, sizeof *ok);
    int n = 0;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == REPORT_OK)
            ok[n++] = &t->rows[i];
    qsort(ok, (size_t)n, sizeof *ok, cmp_time);
    int d = report_find_row(t, t->default_point);
    const struct report_row *def = d >= 0 && t->rows[d].status == REPORT_OK ? &t->rows[d] : NULL;
    fputs("## Ranked points\n\n| rank | point |", f);
    for (int k = 0; k < t->nkeys; k++)
        fprintf(f, " %s |", short_key(t, k));
    fputs(" time | vs default | % peak | bound | op | VMEM peak | grid steps |\n|---:|---:|", f);
    for (int k = 0; k < t->nkeys; k++)
        fputs("---:|", f);
    fputs("---:|---:|---:|:---|:---|---:|---:|\n", f);
    for (int i = 0; i < n; i++) {
        const struct report_row *r = ok[i];
        char tm[32], vm[32];
        report_format_time(tm, sizeof tm, r->time_s);
        format_bytes(vm, sizeof vm, r->vmem_peak_bytes);
        fprintf(f, "| %d | %d%s |", i + 1, r->point, r == def ? " (default)" : "");
        for (int k = 0; k < t->nkeys; k++)
            fputc(' ', f), md_cell(f, r->values[k]), fputs(" |", f);
        fprintf(f, " %s | ", tm);
        if (def && r->time_s > 0)
            fprintf(f, "%.2f\xc3\x97", def->time_s / r->time_s);
        else
            fputs("-", f);
        fprintf(f, " | %.1f%% | %s | ", 100.0 * r->peak_fraction, r->bound);
        md_cell(f, r->op);
        fprintf(f, " | %s | %lld |\n", vm, (long long)r->grid_steps);
    }
    if (!n)
        fputs("\n(no feasible point)\n", f);
    fputs("\n`vs default`: the default point's time over this point's time (above 1: faster).\n\n",
          f);
    free(ok);
}

static void md_infeasible(FILE *f, const struct report_table *t)
{
    int n = 0;
    for (int i = 0; i < t->nrows; i++)
        n += t->rows[i].status != REPORT_OK;
    if (!n)
        return;
    fputs("## Infeasible and failed points\n\n| point |", f);
    for (int k = 0; k < t->nkeys; k++)
        fprintf(f, " %s |", short_key(t, k));
    fputs(" status | reason |\n|---:|", f);
    for (int k = 0; k < t->nkeys; k++)
        fputs("---:|", f);
    fputs(":---|:---|\n", f);
    for (int i = 0; i < t->nrows; i++) {
        const struct report_row *r = &t->rows[i];
        if (r->status == REPORT_OK)
            continue;
        fprintf(f, "| %d |", r->point);
        for (int k = 0; k < t->nkeys; k++)
            fputc(' ', f), md_cell(f, r->values[k]), fputs(" |", f);
        fprintf(f, " %s | ", report_status_name(r->status));
        md_cell(f, r->reason);
        fputs(" |\n", f);
    }
    fputs("\n", f);
}

static void md_files(FILE *f, const struct report_table *t)
{
    fputs("## Plots\n\n", f);
    for (int k = 0; k < t->nkeys; k++) {
        char *p = report_plot_name(t->keys[k]);
        fprintf(f, "![time against %s](%s)\n\n", short_key(t, k), p);
        free(p);
    }
    if (t->nkeys == 2)
        fputs("![time by both keys](heatmap.svg)\n\n", f);
    if (t->best_trace || t->default_trace) {
        fputs("## Traces\n\nOpen them in <https://ui.perfetto.dev>.\n\n", f);
        if (t->best_trace)
            fprintf(f, "- best: [%s](%s)\n", t->best_trace, t->best_trace);
        if (t->default_trace)
            fprintf(f, "- default: [%s](%s)\n", t->default_trace, t->default_trace);
        fputs("\n", f);
    }
    fputs("Every point's summary is in `points/NNNN/summary.json`; `sweep.csv` and `sweep.json` "
          "hold this table.\n",
          f);
}

int report_write_markdown(const struct report_table *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    md_header(f, t);
    md_summary(f, t);
    md_ranked(f, t);
    md_infeasible(f, t);
    md_files(f, t);
    return fs_atomic_commit(&a);
}

/* ---------------- plots ---------------- */

char *report_plot_name(const char *key)
{
    char *s = xasprintf("plot_%s.svg", key);
    for (char *c = s + 5; *c && strcmp(c, ".svg"); c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *c))
            *c = '_';
    return s;
}

/* The distinct values of column 'k', numerically sorted when all are numbers,
 * else in order of appearance. Returns the count; '*vals' borrowed strings. */
static int categories(const struct report_table *t, int k, const char ***vals)
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
static double time_unit(const struct report_table *t, const char **unit)
{
    double max = 0;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == REPORT_OK && t->rows[i].time_s > max)
            max = t->rows[i].time_s;
    *unit = max >= 1 ? "s" : max >= 1e-3 ? "ms" : max >= 1e-6 ? "us" : "ns";
    return max >= 1 ? 1 : max >= 1e-3 ? 1e-3 : max >= 1e-6 ? 1e-6 : 1e-9;
}

static bool wide_range(const struct report_table *t)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < t->nrows; i++) {
        const struct report_row *r = &t->rows[i];
        if (r->status != REPORT_OK || !(r->time_s > 0))
            continue;
        lo = lo == 0 || r->time_s < lo ? r->time_s : lo;
        hi = r->time_s > hi ? r->time_s : hi;
    }
    return lo > 0 && hi / lo > 5;
}

/* The other keys' values of row 'r' as "a=1, b=2" (a new string). */
static char *group_label(const struct report_table *t, const struct report_row *r, int k)
{
    char *s = xstrdup("");
    for (int j = 0; j < t->nkeys; j++) {
        if (j == k)
            continue;
        char *n = xasprintf("%s%s%s=%s", s, *s ? ", " : "", short_key(t, j), r->values[j]);
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

static void plot_collect(const struct report_table *t, int k, double scale, struct plot_data *d)
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
        const struct report_row *r = &t->rows[i];
        int x = index_of(d->xs, d->nx, r->values[k]);
        double *cell = &d->y[d->row_group[i] * d->nx + x];
        if (r->status != REPORT_OK) {
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

static int plot_key(const struct report_table *t, int k, const char *dir)
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
    int best = report_best_row(t);
    char *title = xasprintf("%s: time against %s", t->name, short_key(t, k));
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
    char *name = report_plot_name(t->keys[k]);
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

static void heat_cells(const struct report_table *t, const char **xs, int nx, const char **ys,
                       int ny, double *z, enum svg_cell *cells)
{
    for (int i = 0; i < nx * ny; i++)
        z[i] = NAN, cells[i] = SVG_CELL_EMPTY;
    for (int i = 0; i < t->nrows; i++) {
        const struct report_row *r = &t->rows[i];
        int c = index_of(ys, ny, r->values[0]) * nx + index_of(xs, nx, r->values[1]);
        if (r->status == REPORT_OK) {
            if (cells[c] != SVG_CELL_VALUE || r->time_s < z[c])
                z[c] = r->time_s;
            cells[c] = SVG_CELL_VALUE;
        } else if (cells[c] != SVG_CELL_VALUE) {
            cells[c] = r->status == REPORT_INFEASIBLE ? SVG_CELL_INFEASIBLE : SVG_CELL_FAILED;
        }
    }
}

static int plot_heatmap(const struct report_table *t, const char *dir)
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
        report_format_time(buf, sizeof buf, z[i]);
        text[i] = xstrdup(buf);
        lo = z[i] < lo ? z[i] : lo;
        hi = z[i] > hi ? z[i] : hi;
    }
    char los[32] = "", his[32] = "";
    if (hi > 0) {
        report_format_time(los, sizeof los, lo);
        report_format_time(his, sizeof his, hi);
    }
    int best = report_best_row(t);
    char *title = xasprintf("%s: time by %s and %s", t->name, short_key(t, 0), short_key(t, 1));
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

int report_write_plots(const struct report_table *t, const char *dir)
{
    int rc = 0;
    for (int k = 0; k < t->nkeys && rc == 0; k++)
        rc = plot_key(t, k, dir);
    if (rc == 0 && t->nkeys == 2)
        rc = plot_heatmap(t, dir);
    return rc;
}

/* ---------------- reading sweep.json back ---------------- */

static char *value_text(const struct json *v)
{
    if (!v || v->type == JSON_NULL)
        return xstrdup("");
    if (v->type == JSON_STR)
        return xstrdup(v->str);
    if (v->type == JSON_BOOL)
        return xstrdup(v->b ? "true" : "false");
    return v->type == JSON_NUM ? xasprintf("%.15g", v->num) : xstrdup("?");
}

static int row_from_json(struct report_table *t, struct report_row *r, const struct json *p)
{
    const struct json *vals = json_get(p, "values");
    r->point = (int)json_num(p, "point", -1);
    r->values = xcalloc((size_t)t->nkeys + 1, sizeof *r->values);
    for (int k = 0; k < t->nkeys; k++)
        r->values[k] = value_text(json_get(vals, t->keys[k]));
    r->reason = xstrdup(json_str(p, "reason", ""));
    if (report_status_parse(json_str(p, "status", NULL), &r->status) != 0)
        return -1;
    r->time_s = json_num(p, "time_s", 0);
    r->scenario = xstrdup(json_str(p, "scenario", ""));
    r->chip = xstrdup(json_str(p, "chip", ""));
    r->op = xstrdup(json_str(p, "op", ""));
    r->bound = xstrdup(json_str(p, "bound", ""));
    r->peak_fraction = json_num(p, "peak_fraction", 0);
    r->vmem_peak_bytes = (uint64_t)json_num(p, "vmem_peak_bytes", 0);
    r->grid_steps = (int64_t)json_num(p, "grid_steps", 0);
    return 0;
}

int report_table_from_json(struct report_table *t, const struct json *j, char *err,
                           size_t errn)
{
    memset(t, 0, sizeof *t);
    t->owned = true;
    t->default_point = -1;
    const struct json *keys = json_get(j, "keys");
    const struct json *pts = json_get(j, "points");
    if (!keys || keys->type != JSON_ARR || !pts || pts->type != JSON_ARR) {
        snprintf(err, errn, "not a sweep.json (no keys and points)");
        return -1;
    }
    t->name = xstrdup(json_str(j, "sweep", ""));
    t->base = xstrdup(json_str(j, "base", ""));
    t->keys = xcalloc((size_t)keys->n + 1, sizeof *t->keys);
    for (int k = 0; k < keys->n; k++)
        t->keys[t->nkeys++] = value_text(keys->kids[k]);
    t->npoints = (int)json_num(j, "points_total", pts->n);
    t->default_point = (int)json_num(j, "default_point", -1);
    t->rows = xcalloc((size_t)pts->n + 1, sizeof *t->rows);
    for (int i = 0; i < pts->n; i++) {
        if (row_from_json(t, &t->rows[t->nrows++], pts->kids[i]) != 0) {
            snprintf(err, errn, "point %d: bad status", i);
            return -1;
        }
    }
    return 0;
}

void report_table_fini(struct report_table *t)
{
    if (!t->owned)
        return;
    for (int i = 0; i < t->nrows; i++)
        report_row_fini(&t->rows[i], t->nkeys);
    for (int k = 0; k < t->nkeys; k++)
        free(t->keys[k]);
    free(t->keys);
    free(t->rows);
    free(t->name);
    free(t->base);
    free(t->best_trace);
    free(t->default_trace);
    memset(t, 0, sizeof *t);
}

/* ---------------- compare ---------------- */

struct cmp_input {
    char *path; /* the JSON file read */
    struct json *j;
    bool sweep;
};

static int cmp_load(const char *arg, struct cmp_input *in, FILE *err)
{
    struct stat st;
    char why[512];
    in->path = NULL;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        char *s = xasprintf("%s/sweep.json", arg);
        if (stat(s, &st) != 0) {
            free(s);
            s = xasprintf("%s/summary.json", arg);
        }
        in->path = s;
    } else {
        in->path = xstrdup(arg);
    }
    in->j = json_read_file(in->path, JSON_MAX_BYTES, why, sizeof why);
    if (!in->j) {
        fprintf(err, "tpusim compare: %s\n", why);
        return -1;
    }
    in->sweep = json_get(in->j, "points") != NULL;
    if (!in->sweep && !json_get(in->j, "ops")) {
        fprintf(err, "tpusim compare: %s: expected a summary.json or a sweep.json\n", in->path);
        return -1;
    }
    return 0;
}

static void delta_cols(FILE *out, double a, double b)
{
    char ta[32], tb[32], td[32], sd[40];
    report_format_time(ta, sizeof ta, a);
    report_format_time(tb, sizeof tb, b);
    report_format_time(td, sizeof td, b - a);
    snprintf(sd, sizeof sd, "%s%s", b > a ? "+" : "", td);
    fprintf(out, " %12s %12s %13s", ta, tb, sd);
    if (a > 0)
        fprintf(out, " %+8.1f%%", 100.0 * (b - a) / a);
    else
        fprintf(out, " %9s", "-");
}

static const struct json *find_op(const struct json *ops, const char *name, int i)
{
    for (int k = 0; k < ops->n; k++)
        if (!strcmp(json_str(ops->kids[k], "name", ""), name))
            return ops->kids[k];
    return i < ops->n && !json_get(ops->kids[i], "name") ? ops->kids[i] : NULL;
}

static void cmp_summaries(const struct cmp_input *a, const struct cmp_input *b, FILE *out)
{
    const struct json *oa = json_get(a->j, "ops"), *ob = json_get(b->j, "ops");
    fprintf(out, "A: %s (%s on %s)\nB: %s (%s on %s)\n", a->path,
            json_str(a->j, "scenario", "?"), json_str(a->j, "chip", "?"), b->path,
            json_str(b->j, "scenario", "?"), json_str(b->j, "chip", "?"));
    fprintf(out, "%-24s %-16s %12s %12s %13s %9s  %s\n", "op", "kind", "time A", "time B", "delta",
            "delta %", "bound A -> B");
    for (int i = 0; oa && i < oa->n; i++) {
        const struct json *x = oa->kids[i];
        const char *name = json_str(x, "name", "?");
        const struct json *y = ob ? find_op(ob, name, i) : NULL;
        fprintf(out, "%-24.24s %-16.16s", name, json_str(x, "kind", ""));
        if (y) {
            delta_cols(out, json_num(x, "time_s", 0), json_num(y, "time_s", 0));
            fprintf(out, "  %s -> %s\n", json_str(x, "bound", "?"),
                    json_str(y, "bound", "?"));
        } else {
            char ta[32];
            report_format_time(ta, sizeof ta, json_num(x, "time_s", 0));
            fprintf(out, " %12s %12s  (only in A)\n", ta, "-");
        }
    }
    for (int i = 0; ob && i < ob->n; i++) {
        const char *name = json_str(ob->kids[i], "name", "?");
        if (oa && find_op(oa, name, i))
            continue;
        char tb[32];
        report_format_time(tb, sizeof tb, json_num(ob->kids[i], "time_s", 0));
        fprintf(out, "%-24.24s %-16.16s %12s %12s  (only in B)\n", name,
                json_str(ob->kids[i], "kind", ""), "-", tb);
    }
    fprintf(out, "%-24s %-16s", "total", "");
    delta_cols(out, json_num(a->j, "total_time_s", 0),
               json_num(b->j, "total_time_s", 0));
    fputc('\n', out);
}

/* Row of 'tb' matching row 'r' of 'ta': same values when the keys agree, else the same point. */
static const struct report_row *match_row(const struct report_table *ta, const struct report_row *r,
                                          const struct report_table *tb)
{
    bool same_keys = ta->nkeys == tb->nkeys;
    for (int k = 0; same_keys && k < ta->nkeys; k++)
        same_keys = !strcmp(ta->keys[k], tb->keys[k]);
    for (int i = 0; i < tb->nrows; i++) {
        const struct report_row *s = &tb->rows[i];
        bool eq = true;
        for (int k = 0; same_keys && eq && k < ta->nkeys; k++)
            eq = !strcmp(r->values[k], s->values[k]);
        if (same_keys ? eq : s->point == r->point)
            return s;
    }
    return NULL;
}

static void row_label(char *buf, size_t n, const struct report_table *t, const struct report_row *r)
{
    size_t o = (size_t)snprintf(buf, n, "%d", r->point);
    for (int k = 0; k < t->nkeys && o < n; k++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s=%s", k ? ", " : " ", short_key(t, k),
                              r->values[k]);
}

static void cmp_sweeps(const struct cmp_input *a, const struct cmp_input *b, FILE *out)
{
    struct report_table ta, tb;
    char err[256], label[512];
    report_table_from_json(&ta, a->j, err, sizeof err);
    report_table_from_json(&tb, b->j, err, sizeof err);
    int w = 5;
    for (int i = 0; i < ta.nrows; i++) {
        row_label(label, sizeof label, &ta, &ta.rows[i]);
        w = (int)strlen(label) > w ? (int)strlen(label) : w;
    }
    w = w > 80 ? 80 : w;
    fprintf(out, "A: %s (sweep %s, %d points)\nB: %s (sweep %s, %d points)\n", a->path, ta.name,
            ta.nrows, b->path, tb.name, tb.nrows);
    fprintf(out, "%-*s %12s %12s %13s %9s  %s\n", w, "point", "time A", "time B", "delta",
            "delta %", "status A -> B");
    for (int i = 0; i < ta.nrows; i++) {
        const struct report_row *r = &ta.rows[i], *s = match_row(&ta, r, &tb);
        row_label(label, sizeof label, &ta, r);
        fprintf(out, "%-*.*s", w, w, label);
        if (s && r->status == REPORT_OK && s->status == REPORT_OK)
            delta_cols(out, r->time_s, s->time_s);
        else
            fprintf(out, " %12s %12s %13s %9s", "-", "-", "-", "-");
        fprintf(out, "  %s -> %s\n", report_status_name(r->status),
                s ? report_status_name(s->status) : "(missing)");
    }
    for (int i = 0; i < tb.nrows; i++) {
        if (match_row(&tb, &tb.rows[i], &ta))
            continue;
        row_label(label, sizeof label, &tb, &tb.rows[i]);
        fprintf(out, "%-*.*s  (only in B: %s)\n", w, w, label,
                report_status_name(tb.rows[i].status));
    }
    int ba = report_best_row(&ta), bb = report_best_row(&tb);
    if (ba >= 0 && bb >= 0) {
        fprintf(out, "%-*s", w, "best");
        delta_cols(out, ta.rows[ba].time_s, tb.rows[bb].time_s);
        fprintf(out, "  point %d -> point %d\n", ta.rows[ba].point, tb.rows[bb].point);
    }
    report_table_fini(&ta);
    report_table_fini(&tb);
}

int report_compare(const char *a, const char *b, FILE *out, FILE *err)
{
    struct cmp_input in[2] = {{0}, {0}};
    int rc = 0;
    if (cmp_load(a, &in[0], err) != 0 || cmp_load(b, &in[1], err) != 0) {
        rc = 2;
    } else if (in[0].sweep != in[1].sweep) {
        fprintf(err, "tpusim compare: %s is a %s and %s a %s; compare like with like\n", in[0].path,
                in[0].sweep ? "sweep" : "summary", in[1].path, in[1].sweep ? "sweep" : "summary");
        rc = 2;
    } else {
        struct report_table t;
        char why[256];
        for (int i = 0; i < 2 && in[0].sweep; i++) {
            if (report_table_from_json(&t, in[i].j, why, sizeof why) != 0) {
                fprintf(err, "tpusim compare: %s: %s\n", in[i].path, why);
                rc = 2;
            }
            report_table_fini(&t);
        }
        if (rc == 0 && in[0].sweep)
            cmp_sweeps(&in[0], &in[1], out);
        else if (rc == 0)
            cmp_summaries(&in[0], &in[1], out);
    }
    for (int i = 0; i < 2; i++) {
        free(in[i].path);
        json_free(in[i].j);
    }
    return rc;
}
