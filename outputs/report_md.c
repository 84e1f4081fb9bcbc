/* outputs/report_md.c -- report.md: the result, the ranked points, the
 * infeasible ones, links to the plots and traces.
 * May use: libc, base/ (fsutil, json: its UTF-8 rule, xalloc), outputs/table.h, outputs/plots.h. */
#include "outputs/report_md.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "outputs/plots.h"
#include "outputs/table.h"

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

/* Writes 's' in a table cell or code span: '|' escaped, newlines as <br>, a
 * byte that is not UTF-8 (a file name's) as U+FFFD. */
static void md_cell(FILE *f, const char *s)
{
    s = s ? s : "";
    for (size_t left = strlen(s); *s; s++, left--) {
        size_t len = (unsigned char)*s < 0x80 ? 1 : json_utf8_seq(s, left);
        if (*s == '|') {
            fputs("\\|", f);
        } else if (*s == '\n') {
            fputs(s[1] ? "<br>" : "", f);
        } else if (!len) {
            fputs("\xef\xbf\xbd", f);
        } else {
            fwrite(s, 1, len, f);
            s += len - 1, left -= len - 1;
        }
    }
}

static const char *bound_words(const char *b)
{
    static const char *const from[] = {"mxu", "vpu", "hbm", "ici", "overhead", "latency", "dcn"};
    static const char *const to[] = {"the MXU",       "the VPU",           "HBM bandwidth",
                                     "ICI bandwidth", "per-step overhead", "DMA latency",
                                     "DCN bandwidth"};
    for (int i = 0; i < 7; i++)
        if (b && !strcmp(b, from[i]))
            return to[i];
    return b ? b : "?";
}

static void md_values(FILE *f, const struct table *t, const struct table_row *r)
{
    for (int k = 0; k < t->nkeys; k++) {
        fprintf(f, "%s%s=", k ? ", " : "", table_short_key(t, k));
        md_cell(f, r->values[k][0] ? r->values[k] : "(unset)");
    }
}

static void md_point_line(FILE *f, const struct table *t, const char *what,
                          const struct table_row *r, const struct table_row *def)
{
    char tm[32];
    fprintf(f, "- **%s**: point %d (", what, r->point);
    md_values(f, t, r);
    fputs(")", f);
    if (r->status != TABLE_OK) {
        fprintf(f, ": %s: ", table_status_name(r->status));
        md_cell(f, r->reason);
        fputs("\n", f);
        return;
    }
    table_format_time(tm, sizeof tm, r->time_s);
    fprintf(f, ": **%s**", tm);
    if (r->sigma_s > 0) { /* the error bar (docs/reference.md, "Error bars") */
        table_format_time(tm, sizeof tm, r->sigma_s);
        fprintf(f, " \xc2\xb1 %s", tm);
    }
    bool tr = def && r->time_to_train_s > 0 && def->time_to_train_s > 0; /* ranked by it */
    if (def && def != r && def->status == TABLE_OK && r->time_s > 0)
        fprintf(f, ", **%.2f\xc3\x97** the speed of the default%s",
                tr ? def->time_to_train_s / r->time_to_train_s : def->time_s / r->time_s,
                tr ? " (time to train)" : "");
    if (r->time_to_train_s > 0) {
        table_format_time(tm, sizeof tm, r->time_to_train_s);
        fprintf(f, "; time to train **%s**", tm);
    }
    fprintf(f, "; bound by %s (`%s`, op `", bound_words(r->bound), r->bound);
    md_cell(f, r->op);
    fprintf(f, "`, %.1f%% of peak)\n", 100.0 * r->peak_fraction);
}

static void md_header(FILE *f, const struct table *t)
{
    int count[TABLE_STATUS_COUNT] = {0};
    for (int i = 0; i < t->nrows; i++)
        count[t->rows[i].status]++;
    int best = table_best_row(t);
    fputs("# Sweep `", f);
    md_cell(f, t->name);
    fputs("`\n\nBase scenario: `", f);
    md_cell(f, t->base);
    fputs("`", f);
    if (best >= 0)
        fprintf(f, " on %s", t->rows[best].chip);
    fprintf(f, " · %d points: %d ok, %d infeasible, %d failed\n\n", t->npoints, count[TABLE_OK],
            count[TABLE_INFEASIBLE], count[TABLE_FAILED]);
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

static void md_summary(FILE *f, const struct table *t)
{
    int best = table_best_row(t), d = table_find_row(t, t->default_point);
    const struct table_row *def = d >= 0 ? &t->rows[d] : NULL;
    fputs("## Result\n\n", f);
    if (best < 0)
        fputs("- **No feasible point.**\n", f);
    else
        md_point_line(f, t, "Best", &t->rows[best], def);
    if (def) {
        md_point_line(f, t, "Default", def, NULL);
        fprintf(f, "  (%s)\n",
                t->default_added     ? "the base scenario's own values, run as an extra point: "
                                       "the sweep does not contain them"
                : t->default_is_base ? "the point with the base scenario's own values"
                                     : "the first point: the base scenario's values are not in "
                                       "the sweep");
    }
    fputs("\n", f);
}

/* A table's header and alignment rows: the 'lead' columns, one right-aligned
 * column per swept key, then the 'tail' columns. */
static void md_table_head(FILE *f, const struct table *t, const char *lead, const char *tail,
                          const char *lead_align, const char *tail_align)
{
    fputs(lead, f);
    for (int k = 0; k < t->nkeys; k++)
        fprintf(f, " %s |", table_short_key(t, k));
    fprintf(f, "%s\n%s", tail, lead_align);
    for (int k = 0; k < t->nkeys; k++)
        fputs("---:|", f);
    fprintf(f, "%s\n", tail_align);
}

static int cmp_time(const void *a, const void *b)
{
    const struct table_row *x = *(const struct table_row *const *)a;
    const struct table_row *y = *(const struct table_row *const *)b;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    return x->point - y->point;
}

/* By time to train (a scenario with train:), then point. */
static int cmp_train(const void *a, const void *b)
{
    const struct table_row *x = *(const struct table_row *const *)a;
    const struct table_row *y = *(const struct table_row *const *)b;
    if (x->time_to_train_s != y->time_to_train_s)
        return x->time_to_train_s < y->time_to_train_s ? -1 : 1;
    return x->point - y->point;
}

static void md_ranked(FILE *f, const struct table *t)
{
    const struct table_row **ok = xcalloc((size_t)t->nrows + 1, sizeof *ok);
    int n = 0;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK)
            ok[n++] = &t->rows[i];
    qsort(ok, (size_t)n, sizeof *ok,
          table_rank_by_train(t->rows, t->nrows, NULL) ? cmp_train : cmp_time);
    int d = table_find_row(t, t->default_point);
    const struct table_row *def = d >= 0 && t->rows[d].status == TABLE_OK ? &t->rows[d] : NULL;
    fputs("## Ranked points\n\n", f);
    bool model = table_has_model(t);
    if (model) /* a model step: its own headline figures */
        md_table_head(f, t, "| rank | point |",
                      " step time | vs default | MFU | tokens/s | memory/chip | collectives "
                      "exposed | bound | op |",
                      "|---:|---:|", "---:|---:|---:|---:|---:|---:|:---|:---|");
    else
        md_table_head(f, t, "| rank | point |",
                      " time | vs default | % peak | bound | op | VMEM peak | grid steps |",
                      "|---:|---:|", "---:|---:|---:|:---|:---|---:|---:|");
    for (int i = 0; i < n; i++) {
        const struct table_row *r = ok[i];
        char tm[32], vm[32];
        table_format_time(tm, sizeof tm, r->time_s);
        format_bytes(vm, sizeof vm, r->vmem_peak_bytes);
        fprintf(f, "| %d | %d%s |", i + 1, r->point, r == def ? " (default)" : "");
        for (int k = 0; k < t->nkeys; k++)
            fputc(' ', f), md_cell(f, r->values[k]), fputs(" |", f);
        fprintf(f, " %s | ", tm);
        if (def && r->time_s > 0)
            fprintf(f, "%.2f\xc3\x97", def->time_s / r->time_s);
        else
            fputs("-", f);
        if (model) {
            char mem[32], ce[32];
            format_bytes(mem, sizeof mem, (uint64_t)r->memory_bytes);
            table_format_time(ce, sizeof ce, r->collective_exposed_s);
            fprintf(f, " | %.1f%% | %.4g | %s | %s | %s | ", 100.0 * r->mfu, r->tokens_per_s, mem,
                    ce, r->bound);
            md_cell(f, r->op);
            fputs(" |\n", f);
            continue;
        }
        fprintf(f, " | %.1f%% | %s | ", 100.0 * r->peak_fraction, r->bound);
        md_cell(f, r->op);
        fprintf(f, " | %s | %lld |\n", vm, (long long)r->grid_steps);
    }
    if (!n)
        fputs("\n(no feasible point)\n", f);
    fputs("\n`vs default`: the default point's time over this point's time (above 1: faster).\n",
          f);
    if (model)
        fputs("MFU: the model's FLOPs per step over the step time and the chips' bf16 peak "
              "(MaxText's formula); memory/chip: the model's estimate of one chip's HBM use; "
              "collectives exposed: chip 0's time waiting for collectives.\n",
              f);
    fputc('\n', f);
    free(ok);
}

static void md_infeasible(FILE *f, const struct table *t)
{
    int n = 0;
    for (int i = 0; i < t->nrows; i++)
        n += t->rows[i].status != TABLE_OK;
    if (!n)
        return;
    fputs("## Infeasible and failed points\n\n", f);
    md_table_head(f, t, "| point |", " status | reason |", "|---:|", ":---|:---|");
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        if (r->status == TABLE_OK)
            continue;
        fprintf(f, "| %d |", r->point);
        for (int k = 0; k < t->nkeys; k++)
            fputc(' ', f), md_cell(f, r->values[k]), fputs(" |", f);
        fprintf(f, " %s | ", table_status_name(r->status));
        md_cell(f, r->reason);
        fputs(" |\n", f);
    }
    fputs("\n", f);
}

static void md_files(FILE *f, const struct table *t)
{
    fputs("## Plots\n\n", f);
    for (int k = 0; k < t->nkeys; k++) {
        char *p = plot_file_name(t->keys[k]);
        fprintf(f, "![time against %s](%s)\n\n", table_short_key(t, k), p);
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

int report_md_write(const struct table *t, const char *path)
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
