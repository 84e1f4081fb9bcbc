/* outputs/report_html.c -- report.html of a run and of a sweep (see
 * outputs/report_html.h). No script: tables, inline SVG and CSS only.
 * May use: libc, base/ (fsutil, xalloc), traces/ (summary, table, plots). */
#include "outputs/report_html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "outputs/plots.h"
#include "outputs/plot_serve.h"
#include "outputs/summary.h"
#include "outputs/svg.h"
#include "outputs/table.h"

static const char css[] =
    "body{font-family:system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d8dce4}"
    "pre{background:#f4f6f9;padding:10px;overflow-x:auto;font-size:12px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #d8dce4;padding:3px 8px;text-align:right;white-space:nowrap}"
    "th{background:#eef1f6}td.l,th.l{text-align:left;white-space:normal}"
    ".mxu{fill:#3b7dd8}.vpu{fill:#8e5cc9}.hbm{fill:#d8843b}.ici{fill:#3ba37a}"
    ".overhead{fill:#9aa3b2}.latency{fill:#c9534f}.pcie{fill:#b0a040}"
    "svg text{font-size:11px;fill:#1d2330}";

static void esc(FILE *f, const char *s)
{
    svg_escape(f, s); /* one escaping rule for the page and its plots */
}

/* The text of a <pre> block: the console's and report.md's lines kept. */
static void esc_lines(FILE *f, const char *s)
{
    svg_escape_lines(f, s);
}


static void head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f);
    esc(f, title);
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>", css);
    esc(f, title);
    fputs("</h1>\n", f);
}

static void command(FILE *f, const char *cmd, const char *note)
{
    fputs("<h2>Reproduce</h2>\n<pre id=\"command\">", f);
    esc(f, cmd && *cmd ? cmd : "(not recorded)");
    fprintf(f, "</pre>\n<p>%s</p>\n", note);
}

/* ---------------- a run ---------------- */

/* One bar per op on chip 0's timeline, coloured by its bound. */
static void timeline_svg(FILE *f, const struct summary *s)
{
    int w = 960, row = 22, left = 170, h = row * s->nops + 40;
    double t = s->total_time_s > 0 ? s->total_time_s : 1, scale = (w - left - 20) / t;
    fprintf(f, "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            w, h, w, h);
    for (int i = 0; i < s->nops; i++) {
        const struct summary_op *o = &s->ops[i];
        double x = left + o->start_s * scale, bw = (o->end_s - o->start_s) * scale;
        fprintf(f, "<text x=\"4\" y=\"%d\">", 20 + i * row);
        esc(f, o->name);
        fprintf(f, "</text><rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\">"
                   "<title>",
                bound_name(o->bound), x, 8 + i * row, bw > 1 ? bw : 1, row - 6);
        esc(f, o->name);
        fprintf(f, ": %s-bound</title></rect>\n", bound_name(o->bound));
    }
    char a[32];
    summary_format_time(a, sizeof a, t);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1d2330\"/>"
               "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s"
               "</text>\n</svg>\n",
            left, h - 24, w - 20, h - 24, left, h - 8, w - 20, h - 8, a);
}

static void op_table(FILE *f, const struct summary *s)
{
    fputs("<table id=\"ops\"><tr><th class=\"l\">op</th><th class=\"l\">kind</th><th>start</th>"
          "<th>time</th><th>% peak</th><th class=\"l\">bound</th><th class=\"l\">runner-up</th>"
          "<th>HBM bytes</th><th>useful</th><th class=\"l\">per core (chip 0)</th>"
          "<th class=\"l\">sub-kernels</th><th class=\"l\">collective</th></tr>\n",
          f);
    for (int i = 0; i < s->nops; i++) {
        const struct summary_op *o = &s->ops[i];
        char st[32], tm[32];
        summary_format_time(st, sizeof st, o->start_s);
        summary_format_time(tm, sizeof tm, o->time_s);
        fputs("<tr><td class=\"l\">", f);
        esc(f, o->name);
        fprintf(f, "</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%.1f%%</td>"
                   "<td class=\"l\">%s %.0f%%</td><td class=\"l\">%s %.0f%%</td><td>%.4g</td>"
                   "<td>%.0f%%</td><td class=\"l\">",
                o->kind, st, tm, 100 * o->peak_frac, bound_name(o->bound), 100 * o->bound_frac,
                o->runner_up_frac > 0 ? bound_name(o->runner_up) : "none",
                100 * o->runner_up_frac, o->hbm_bytes,
                o->hbm_bytes > 0 ? 100 * o->useful_bytes / o->hbm_bytes : 100.0);
        for (int c = 0; c < o->ncore; c++) {
            summary_format_time(tm, sizeof tm, o->core[c].time_s);
            fprintf(f, "%sTC%d %s", c ? "<br>" : "", c, tm);
        }
        fputs("</td><td class=\"l\">", f);
        for (int k = 0; k < o->nsub; k++) {
            summary_format_time(tm, sizeof tm, o->sub[k].core[0].time_s);
            fputs(k ? "<br>" : "", f);
            esc(f, o->sub[k].phase[0] ? o->sub[k].phase : o->sub[k].name);
            fprintf(f, " %s", tm);
        }
        fputs("</td><td class=\"l\">", f);
        if (o->coll.present)
            fprintf(f, "algbw %.1f GB/s<br>busbw %.1f GB/s<br>%.1f%% of %.1f GB/s",
                    o->coll.algbw_Bps / 1e9, o->coll.busbw_Bps / 1e9, 100 * o->coll.link_share,
                    o->coll.link_peak_Bps / 1e9);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void core_table(FILE *f, const struct summary *s)
{
    fputs("<table id=\"cores\"><tr><th class=\"l\">TensorCore</th><th>busy</th><th>idle</th>"
          "<th>mxu</th><th>vpu</th><th>hbm</th><th>overhead</th><th class=\"l\">bound</th>"
          "<th class=\"l\">runner-up</th></tr>\n",
          f);
    for (int c = 0; c < s->ntc; c++) {
        const struct summary_tc *tc = &s->tc[c];
        char a[32], b[32], m[32], v[32], h[32], o[32];
        summary_format_time(a, sizeof a, tc->compute_s);
        summary_format_time(b, sizeof b, tc->idle_s);
        summary_format_time(m, sizeof m, tc->mxu_s);
        summary_format_time(v, sizeof v, tc->vpu_s);
        summary_format_time(h, sizeof h, tc->hbm_s);
        summary_format_time(o, sizeof o, tc->overhead_s);
        fprintf(f, "<tr><td class=\"l\">chip 0 TC%d</td><td>%s</td><td>%s</td><td>%s</td>"
                   "<td>%s</td><td>%s</td><td>%s</td><td class=\"l\">%s</td>"
                   "<td class=\"l\">%s</td></tr>\n",
                c, a, b, m, v, h, o, bound_name(tc->bound), bound_name(tc->runner_up));
    }
    fputs("</table>\n", f);
}

/* A row of the cost table: what, and its figure to 'digits' significant digits. */
static void cost_row(FILE *f, const char *what, int digits, double v)
{
    fprintf(f, "<tr><td class=\"l\">%s</td><td>%.*g</td></tr>\n", what, digits, v);
}

/* Cost, energy and time to train (engine/cost.h), when the run has them. */
static void cost_table(FILE *f, const struct summary *s)
{
    if (!s->cost.present && !s->energy.present && !s->train.present)
        return;
    fputs("<h2>Cost, energy and time to train</h2>\n<table id=\"cost\">"
          "<tr><th class=\"l\">figure</th><th>value</th></tr>\n", f);
    const struct summary_cost *c = &s->cost;
    if (c->present) {
        cost_row(f, "USD per chip-hour", 4, c->usd_per_chip_hour);
        cost_row(f, "USD per step", 4, c->usd_per_step);
        if (c->usd_per_million_tokens >= 0)
            cost_row(f, "USD per million tokens", 4, c->usd_per_million_tokens);
    }
    if (s->energy.present) {
        cost_row(f, "kJ per step (all chips)", 4, s->energy.joules_per_step / 1e3);
        cost_row(f, "average power per chip (W)", 4, s->energy.avg_power_w);
    }
    const struct summary_train *t = &s->train;
    if (t->present) {
        cost_row(f, "training steps", 15, (double)t->steps);
        if (t->evals)
            cost_row(f, "evaluation block (s)", 6, t->eval_block_s);
        cost_row(f, "time to train (h)", 6, t->time_to_train_s / 3600);
        if (t->usd_to_train >= 0)
            cost_row(f, "USD to train", 6, t->usd_to_train);
        if (t->joules_to_train >= 0)
            cost_row(f, "MWh to train", 4, t->joules_to_train / 3.6e9);
    }
    fputs("</table>\n", f);
}

static void critical_path(FILE *f, const struct summary *s)
{
    if (!s->npath) {
        fputs("<p>No critical path: the run has one op.</p>\n", f);
        return;
    }
    fputs("<ol id=\"critical-path\">\n", f);
    for (int i = 0; i < s->npath; i++) {
        char t[32];
        summary_format_time(t, sizeof t, s->path[i].time_s);
        fputs("<li>", f);
        esc(f, s->path[i].name);
        if (s->path[i].instances > 1)
            fprintf(f, " &times;%lld", (long long)s->path[i].instances);
        fprintf(f, " (%s)</li>\n", t);
    }
    fputs("</ol>\n", f);
}

int report_html_run(const struct summary *s, const char *cmd, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    char title[256];
    snprintf(title, sizeof title, "tpusim: %s on %s", s->scenario, s->chip);
    head(f, title);
    command(f, cmd, "Run from the directory the run was started in.");
    fputs("<h2>Console</h2>\n<pre id=\"console\">", f);
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (m) {
        summary_print_table(s, m);
        fclose(m);
        esc_lines(f, text);
        free(text);
    }
    fputs("</pre>\n<h2>Timeline of chip 0</h2>\n", f);
    timeline_svg(f, s);
    fputs("<p>Bars from each op's first start to its last end, coloured by bound: "
          "<span style=\"color:#3b7dd8\">mxu</span>, <span style=\"color:#8e5cc9\">vpu</span>, "
          "<span style=\"color:#d8843b\">hbm</span>, <span style=\"color:#3ba37a\">ici</span>, "
          "<span style=\"color:#9aa3b2\">overhead</span>, "
          "<span style=\"color:#c9534f\">latency</span>.</p>\n<h2>Ops</h2>\n",
          f);
    op_table(f, s);
    fputs("<h2>TensorCores</h2>\n", f);
    core_table(f, s);
    fputs("<h2>Critical path</h2>\n", f);
    critical_path(f, s);
    cost_table(f, s);
    if (s->trace.present) {
        char hint[512];
        summary_trace_hint(s, hint, sizeof hint);
        fprintf(f, "<h2>Trace</h2>\n<p>trace.json: level %s, %zu events, %llu bytes, %zu "
                   "dropped. ",
                trace_level_name(s->trace.st.level), s->trace.st.events,
                (unsigned long long)s->trace.st.bytes, s->trace.st.dropped);
        esc(f, hint);
        fputs(" Open it at https://ui.perfetto.dev.</p>\n", f);
    }
    fputs("</body></html>\n", f);
    return fs_atomic_commit(&a);
}

/* ---------------- a sweep ---------------- */

/* A model step point's MFU, tokens/s and memory per chip (as report.md). */
static void model_cells(FILE *f, const struct table_row *r)
{
    if (r->status != TABLE_OK) {
        fputs("<td></td><td></td><td></td>", f);
        return;
    }
    double b = r->memory_bytes;
    char mem[32];
    if (b >= 1073741824.0) /* as report.md writes it */
        snprintf(mem, sizeof mem, "%.3g GiB", b / 1073741824.0);
    else
        snprintf(mem, sizeof mem, "%.3g MiB", b / 1048576.0);
    fprintf(f, "<td>%.1f%%</td><td>%.4g</td><td>%s</td>", 100.0 * r->mfu, r->tokens_per_s, mem);
}

static void ranked(FILE *f, const struct table *t)
{
    int n = t->nrows, *order = xcalloc((size_t)n + 1, sizeof *order), k = 0;
    for (int i = 0; i < n; i++)
        if (t->rows[i].status == TABLE_OK)
            order[k++] = i;
    for (int i = 1; i < k; i++) /* by time, then point: insertion sort */
        for (int j = i; j > 0 && t->rows[order[j]].time_s < t->rows[order[j - 1]].time_s; j--) {
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    for (int i = 0; i < n; i++)
        if (t->rows[i].status != TABLE_OK)
            order[k++] = i;
    int d = t->default_point >= 0 ? table_find_row(t, t->default_point) : -1;
    double dt = d >= 0 && t->rows[d].status == TABLE_OK ? t->rows[d].time_s : 0;
    fputs("<table id=\"points\"><tr><th>point</th>", f);
    for (int c = 0; c < t->nkeys; c++) {
        fputs("<th>", f);
        esc(f, table_short_key(t, c));
        fputs("</th>", f);
    }
    bool model = table_has_model(t); /* a model step: report.md's headline figures too */
    fputs("<th>time</th><th>speedup</th>", f);
    if (model)
        fputs("<th>MFU</th><th>tokens/s</th><th>memory/chip</th>", f);
    fputs("<th class=\"l\">bound</th><th class=\"l\">status</th></tr>\n", f);
    for (int i = 0; i < k; i++) {
        const struct table_row *r = &t->rows[order[i]];
        fprintf(f, "<tr><td>%d%s</td>", r->point, r->point == t->default_point ? " (default)" : "");
        for (int c = 0; c < t->nkeys; c++) {
            fputs("<td>", f);
            esc(f, r->values[c]);
            fputs("</td>", f);
        }
        char tm[32] = "";
        if (r->status == TABLE_OK)
            summary_format_time(tm, sizeof tm, r->time_s);
        fprintf(f, "<td>%s</td>", tm);
        if (r->status == TABLE_OK && dt > 0 && r->time_s > 0)
            fprintf(f, "<td>%.2fx</td>", dt / r->time_s);
        else
            fputs("<td></td>", f);
        if (model)
            model_cells(f, r);
        fputs("<td class=\"l\">", f);
        esc(f, r->status == TABLE_OK ? r->bound : "");
        fprintf(f, "</td><td class=\"l\">%s", table_status_name(r->status));
        if (r->reason && *r->reason) {
            fputs(": ", f);
            esc(f, r->reason);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    free(order);
}

/* Copies the SVG file dir/name into the page (from its <svg element on). */
static void inline_svg(FILE *f, const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    size_t n;
    char *svg = fs_read_all(p, (size_t)1 << 24, &n);
    free(p);
    const char *start = svg ? strstr(svg, "<svg") : NULL;
    if (start) {
        fprintf(f, "<h3>%s</h3>\n<div class=\"plot\">", name);
        fputs(start, f);
        fputs("</div>\n", f);
    }
    free(svg);
}

int report_html_sweep(const struct table *t, const char *cmd, const char *dir)
{
    char *path = xasprintf("%s/report.html", dir);
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    free(path);
    if (rc != 0)
        return -1;
    FILE *f = a.f;
    char title[256];
    snprintf(title, sizeof title, "tpusim sweep: %s", t->name);
    head(f, title);
    command(f, cmd, "Run from the directory the sweep was started in (add -o DIR for another "
                    "output directory); points/NNNN/ holds each point's summary.json.");
    fputs("<h2>Points, fastest first</h2>\n", f);
    ranked(f, t);
    fputs("<h2>Plots</h2>\n", f);
    if (t->nkeys == 2)
        inline_svg(f, dir, "heatmap.svg");
    if (table_has_serving(t)) {
        char *knee = plot_serve_note(t);
        fputs("<p id=\"serving-knee\">", f);
        esc(f, knee);
        fputs("</p>\n", f);
        free(knee);
        inline_svg(f, dir, "latency_throughput.svg");
    }
    for (int k = 0; k < t->nkeys; k++) {
        char *name = plot_file_name(t->keys[k]);
        inline_svg(f, dir, name);
        free(name);
    }
    char *md = xasprintf("%s/report.md", dir);
    size_t n;
    char *text = fs_read_all(md, (size_t)1 << 24, &n);
    free(md);
    if (text) {
        fputs("<h2>report.md</h2>\n<pre id=\"report-md\">", f);
        esc_lines(f, text);
        fputs("</pre>\n", f);
        free(text);
    }
    fputs("</body></html>\n", f);
    return fs_atomic_commit(&a);
}
