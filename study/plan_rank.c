/* study/plan_rank.c -- `tpusim plan`'s ranking and outputs: plan.csv,
 * plan.json, report.html (the time/cost scatter with its Pareto front, the
 * winner and why it wins) and the console's top ten. */
#include "study/plan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "outputs/svg.h"

static const char *const status_names[] = {"illegal", "pruned_hbm", "simulated"};

/* The rank key of an ok candidate: smaller is better. */
static double key(const struct plan *p, const struct plan_cand *c)
{
    switch (p->sp.rank_by) {
    case PLAN_RANK_MFU:
        return -c->mfu;
    case PLAN_RANK_COST:
        return c->usd_per_mtok;
    case PLAN_RANK_TRAIN:
        return c->time_to_train_s;
    default:
        return c->time_s;
    }
}

struct keyed {
    double key;
    int idx;
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx - y->idx; /* stable: enumeration order */
}

/* The ok candidates' indices, best first; returns how many. */
static int ranked(const struct plan *p, int *idx)
{
    struct keyed *k = xcalloc((size_t)p->n + 1, sizeof *k);
    int n = 0;
    for (int i = 0; i < p->n; i++)
        if (p->c[i].ok)
            k[n++] = (struct keyed){key(p, &p->c[i]), i};
    qsort(k, (size_t)n, sizeof *k, by_key);
    for (int i = 0; i < n; i++)
        idx[i] = k[i].idx;
    free(k);
    return n;
}

/* Time and cost of the front: step time and USD per million tokens. */
static bool dominates(const struct plan_cand *a, const struct plan_cand *b)
{
    return a->time_s <= b->time_s && a->usd_per_mtok <= b->usd_per_mtok &&
           (a->time_s < b->time_s || a->usd_per_mtok < b->usd_per_mtok);
}

void plan_rank(struct plan *p)
{
    int *idx = xcalloc((size_t)p->n + 1, sizeof *idx);
    int n = ranked(p, idx);
    for (int r = 0; r < n; r++)
        p->c[idx[r]].rank = r + 1;
    for (int i = 0; i < n; i++) {
        struct plan_cand *c = &p->c[idx[i]];
        c->pareto = true;
        for (int j = 0; j < n && c->pareto; j++)
            if (j != i && dominates(&p->c[idx[j]], c))
                c->pareto = false;
    }
    free(idx);
}

static void write_csv(const struct plan *p, FILE *f)
{
    fputs("candidate,rank,status,shape,slices,mesh,remat,batch,memory_bytes,capacity_bytes,"
          "time_s,mfu,tokens_per_s,usd_per_million_tokens,time_to_train_s,pareto,bound,"
          "reason\n", f);
    for (int i = 0; i < p->n; i++) {
        const struct plan_cand *c = &p->c[i];
        char *sh = plan_shape_text(c), *m = plan_mesh_text(p, c);
        const char *st = c->status == PLAN_SIM && c->sim_status ? c->sim_status
                                                                 : status_names[c->status];
        fprintf(f, "%d,%d,%s,%s,%d,%s,%s,%lld,%.0f,%.0f,", i, c->rank, st, sh, c->slices, m,
                c->remat >= 0 ? p->sp.remat[c->remat] : p->sp.base.model.remat.name,
                (long long)c->batch, c->mem_bytes, c->capacity_bytes);
        if (c->ok)
            fprintf(f, "%.9e,%.6f,%.9e,%.9e,%s,%d,%s,", c->time_s, c->mfu, c->tokens_per_s,
                    c->usd_per_mtok, c->time_to_train_s > 0 ? JSON_E9(c->time_to_train_s) : "",
                    c->pareto, c->bound);
        else
            fputs(",,,,,0,,", f);
        fputc('"', f);
        for (const char *r = c->reason ? c->reason : ""; *r; r++)
            fputs(*r == '"' ? "\"\"" : *r == '\n' ? " " : (char[2]){*r, 0}, f);
        fputs("\"\n", f);
        free(sh);
        free(m);
    }
}

static void write_json(const struct plan *p, FILE *f, int winner)
{
    fputs("{\n  \"plan\": ", f);
    json_write_string(f, p->sp.name);
    fprintf(f, ",\n  \"chip\": ");
    json_write_string(f, p->sp.base.chip.name);
    fprintf(f, ",\n  \"rank_by\": \"%s\", \"candidates\": %d, \"illegal\": %d, "
            "\"pruned_hbm\": %d, \"simulated\": %d, \"winner\": %d,\n  \"points\": [",
            plan_rank_name(p->sp.rank_by), p->n, p->count[PLAN_ILLEGAL], p->count[PLAN_PRUNED],
            p->count[PLAN_SIM], winner);
    bool first = true;
    for (int i = 0; i < p->n; i++) {
        const struct plan_cand *c = &p->c[i];
        if (c->status == PLAN_ILLEGAL)
            continue;
        char *sh = plan_shape_text(c), *m = plan_mesh_text(p, c);
        fprintf(f, "%s\n    {\"candidate\": %d, \"rank\": %d, \"status\": \"%s\", \"shape\": \"%s\", "
                "\"slices\": %d, \"mesh\": \"%s\", \"remat\": \"%s\", \"batch\": %lld, "
                "\"memory_bytes\": %.0f",
                first ? "" : ",", i, c->rank,
                c->status == PLAN_SIM && c->sim_status ? c->sim_status : status_names[c->status],
                sh, c->slices, m,
                c->remat >= 0 ? p->sp.remat[c->remat] : p->sp.base.model.remat.name,
                (long long)c->batch, c->mem_bytes);
        if (c->ok)
            fprintf(f, ", \"time_s\": %s, \"mfu\": %s, \"usd_per_million_tokens\": %s, "
                    "\"time_to_train_s\": %s, \"pareto\": %s, \"bound\": \"%s\", \"dir\": \"sweep/%s\"",
                    JSON_E9(c->time_s), JSON_F6(c->mfu), JSON_E9(c->usd_per_mtok),
                    c->time_to_train_s > 0 ? JSON_E9(c->time_to_train_s) : "null", c->pareto ? "true" : "false", c->bound,
                    c->dir);
        fputs("}", f);
        free(sh);
        free(m);
        first = false;
    }
    fputs("\n  ]\n}\n", f);
}

/* Why the winner wins: its bound and top op, and the category of time
 * (summary.json time_by_category_s) where it saves most against the runner-up. */
static char *why_text(const struct plan *p, const char *dir, int w, int r)
{
    const struct plan_cand *a = &p->c[w];
    char *m = plan_mesh_text(p, a), *sh = plan_shape_text(a);
    char *t = xasprintf("the winner runs %s x %d slice(s) as %s, remat %s, batch %lld: "
                        "%.4g s a step, MFU %.1f %%, bound by %s (longest op %s)",
                        sh, a->slices, m,
                        a->remat >= 0 ? p->sp.remat[a->remat] : p->sp.base.model.remat.name,
                        (long long)a->batch, a->time_s, 100 * a->mfu, a->bound, a->op);
    free(m);
    free(sh);
    if (r < 0)
        return t;
    const struct plan_cand *b = &p->c[r];
    char err[256];
    char *pa = xasprintf("%s/sweep/%s/summary.json", dir, a->dir);
    char *pb = xasprintf("%s/sweep/%s/summary.json", dir, b->dir);
    struct json *ja = json_read_file(pa, JSON_MAX_BYTES, err, sizeof err);
    struct json *jb = json_read_file(pb, JSON_MAX_BYTES, err, sizeof err);
    const struct json *ca = json_get(ja, "time_by_category_s");
    const struct json *cb = json_get(jb, "time_by_category_s");
    const char *best = NULL;
    double save = 0;
    for (int i = 0; ca && cb && ca->type == JSON_OBJ && i < ca->n; i++) {
        double d = json_num(cb, ca->keys[i], 0) - json_num(ca, ca->keys[i], 0);
        if (d > save) {
            save = d;
            best = ca->keys[i];
        }
    }
    char *mb = plan_mesh_text(p, b), *sb = plan_shape_text(b);
    char *u = xasprintf("%s; the runner-up (%s x %d, %s, remat %s, batch %lld) takes %.4g s",
                        t, sb, b->slices, mb,
                        b->remat >= 0 ? p->sp.remat[b->remat] : p->sp.base.model.remat.name,
                        (long long)b->batch, b->time_s);
    free(t);
    if (best) {
        t = xasprintf("%s and spends %.4g s more in %s", u, save, best);
        free(u);
        u = t;
    }
    free(mb);
    free(sb);
    json_free(ja);
    json_free(jb);
    free(pa);
    free(pb);
    return u;
}

/* The scatter: step time (x) against USD per million tokens (y), the front joined. */
static void write_scatter(const struct plan *p, FILE *f, const int *idx, int n)
{
    double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0;
    for (int i = 0; i < n; i++) {
        const struct plan_cand *c = &p->c[idx[i]];
        x0 = fmin(x0, c->time_s);
        x1 = fmax(x1, c->time_s);
        y0 = fmin(y0, c->usd_per_mtok);
        y1 = fmax(y1, c->usd_per_mtok);
    }
    if (x1 <= x0)
        x1 = x0 * 1.1 + 1e-12;
    if (y1 <= y0)
        y1 = y0 * 1.1 + 1e-12;
    const double W = 640, H = 400, L = 70, R = 20, T = 30, B = 50;
    fprintf(f, "<svg id=\"pareto\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" "
            "height=\"%g\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H);
    fprintf(f, "<text x=\"%g\" y=\"18\" font-size=\"13\">step time vs cost: the Pareto front "
            "joined, the winner ringed</text>\n", L);
    fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
            "stroke=\"#888\"/>\n", L, T, W - L - R, H - T - B);
    fprintf(f, "<text x=\"%g\" y=\"%g\">step time (s): %.4g .. %.4g</text>\n", L, H - 12, x0, x1);
    fprintf(f, "<text x=\"12\" y=\"%g\" transform=\"rotate(-90 12 %g)\">USD per million tokens:"
            " %.4g .. %.4g</text>\n", H - B, H - B, y0, y1);
#define PX(v) (L + ((v) - x0) / (x1 - x0) * (W - L - R - 10) + 5)
#define PY(v) (H - B - ((v) - y0) / (y1 - y0) * (H - T - B - 10) - 5)
    fputs("<polyline fill=\"none\" stroke=\"#c33\" points=\"", f);
    int *front = xcalloc((size_t)n + 1, sizeof *front), nf = 0;
    for (int i = 0; i < n; i++)
        if (p->c[idx[i]].pareto)
            front[nf++] = idx[i];
    for (int i = 0; i < nf; i++) /* by time */
        for (int j = i; j > 0 && p->c[front[j]].time_s < p->c[front[j - 1]].time_s; j--) {
            int t = front[j];
            front[j] = front[j - 1];
            front[j - 1] = t;
        }
    for (int i = 0; i < nf; i++)
        fprintf(f, "%.1f,%.1f ", PX(p->c[front[i]].time_s), PY(p->c[front[i]].usd_per_mtok));
    fputs("\"/>\n", f);
    free(front);
    for (int i = 0; i < n; i++) {
        const struct plan_cand *c = &p->c[idx[i]];
        char *m = plan_mesh_text(p, c), *sh = plan_shape_text(c);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"%s><title>#%d %s x%d ",
                PX(c->time_s), PY(c->usd_per_mtok), i == 0 ? 6 : 4,
                c->pareto ? "#c33" : "#69c", i == 0 ? " stroke=\"#000\" stroke-width=\"2\"" : "",
                c->rank, sh, c->slices);
        svg_escape(f, m);
        fprintf(f, " %.4g s, %.4g USD/Mtok</title></circle>\n", c->time_s, c->usd_per_mtok);
        free(m);
        free(sh);
    }
#undef PX
#undef PY
    fputs("</svg>\n", f);
}

static void write_row(const struct plan *p, FILE *f, const struct plan_cand *c, bool html)
{
    char *m = plan_mesh_text(p, c), *sh = plan_shape_text(c);
    const char *rm = c->remat >= 0 ? p->sp.remat[c->remat] : p->sp.base.model.remat.name;
    if (html)
        fprintf(f, "<tr><td>%d</td><td>%s x%d</td><td>%s</td><td>%s</td><td>%lld</td>"
                "<td>%.4g</td><td>%.1f</td><td>%.4g</td><td>%.4g</td><td>%s</td><td>%s</td>"
                "</tr>\n", c->rank, sh, c->slices, m, rm, (long long)c->batch, c->time_s,
                100 * c->mfu, c->usd_per_mtok, c->mem_bytes / (1 << 30), c->bound,
                c->pareto ? "yes" : "");
    else
        printf("%4d  %-9s x%-2d %-28s %-22s %6lld  %9.4g  %5.1f  %9.4g%s\n", c->rank, sh,
               c->slices, m, rm, (long long)c->batch, c->time_s, 100 * c->mfu, c->usd_per_mtok,
               c->pareto ? "  pareto" : "");
    free(m);
    free(sh);
}

static void write_html(const struct plan *p, FILE *f, const char *cmd, const char *why,
                       const int *idx, int n)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tpusim plan ", f);
    svg_escape(f, p->sp.name);
    fputs("</title><style>body{font-family:sans-serif;margin:1em}td,th{padding:2px 8px;"
          "text-align:right}</style></head><body>\n<h1>Plan ", f);
    svg_escape(f, p->sp.name);
    fputs("</h1>\n<pre id=\"command\">", f);
    svg_escape(f, cmd);
    fprintf(f, "</pre>\n<p id=\"counts\">%d candidates on %s: %d illegal (layout or sharding), "
            "%d do not fit in HBM (pruned without simulating), %d simulated, %d ok; ranked by "
            "%s.</p>\n", p->n, p->sp.base.chip.name, p->count[PLAN_ILLEGAL],
            p->count[PLAN_PRUNED], p->count[PLAN_SIM], n, plan_rank_name(p->sp.rank_by));
    if (why) {
        fputs("<p id=\"why\">", f);
        svg_escape(f, why);
        fputs("</p>\n", f);
    }
    if (n)
        write_scatter(p, f, idx, n);
    fputs("<table id=\"ranking\"><tr><th>rank</th><th>slice</th><th>mesh</th><th>remat</th>"
          "<th>batch</th><th>step s</th><th>MFU %</th><th>USD/Mtok</th><th>HBM GiB</th>"
          "<th>bound</th><th>Pareto</th></tr>\n", f);
    for (int i = 0; i < n; i++)
        write_row(p, f, &p->c[idx[i]], true);
    fputs("</table>\n<h2>Pruned: do not fit in HBM</h2>\n<ul id=\"pruned\">\n", f);
    for (int i = 0; i < p->n; i++) {
        const struct plan_cand *c = &p->c[i];
        if (c->status != PLAN_PRUNED)
            continue;
        char *m = plan_mesh_text(p, c), *sh = plan_shape_text(c);
        fprintf(f, "<li>%s x%d %s, %s, batch %lld: %.4g GiB of %.4g</li>\n", sh, c->slices, m,
                c->remat >= 0 ? p->sp.remat[c->remat] : p->sp.base.model.remat.name,
                (long long)c->batch, c->mem_bytes / (1 << 30), c->capacity_bytes / (1 << 30));
        free(m);
        free(sh);
    }
    fputs("</ul>\n</body></html>\n", f);
}

static FILE *open_out(const char *dir, const char *name, char **path)
{
    *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(*path, "w");
    if (!f)
        fprintf(stderr, "tpusim plan: cannot write %s\n", *path);
    return f;
}

int plan_write(struct plan *p, const char *dir, const char *command)
{
    int *idx = xcalloc((size_t)p->n + 1, sizeof *idx);
    int n = ranked(p, idx);
    char *why = n ? why_text(p, dir, idx[0], n > 1 ? idx[1] : -1) : NULL;
    int rc = 0;
    const char *names[] = {"plan.csv", "plan.json", "report.html"};
    for (int k = 0; k < 3; k++) {
        char *path;
        FILE *f = open_out(dir, names[k], &path);
        if (!f) {
            rc = -1;
        } else {
            if (k == 0)
                write_csv(p, f);
            else if (k == 1)
                write_json(p, f, n ? idx[0] : -1);
            else
                write_html(p, f, command, why, idx, n);
            if (fclose(f) != 0)
                rc = -1;
        }
        free(path);
    }
    if (n) {
        printf("rank  slice        mesh                         remat                   batch  "
               "step (s)   MFU%%  USD/Mtok\n");
        for (int i = 0; i < n && i < 10; i++)
            write_row(p, stdout, &p->c[idx[i]], false);
        printf("winner (by %s): %s\n", plan_rank_name(p->sp.rank_by), why);
    }
    if (rc == 0)
        printf("wrote %s/report.html, plan.csv and plan.json\n", dir);
    free(why);
    free(idx);
    return rc;
}
