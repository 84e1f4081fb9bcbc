/* study/sweep_serve.c -- sweeps of a serve: scenario (a latency-throughput
 * curve over serve.requests.arrival.rate or .concurrency): each point runs
 * the serving engine (through the runner cli/ passes in, as serving/ sits
 * above study/), and the sweep prints the points' throughput and latencies
 * and names the knee (outputs/table_serve.h). */
#include <stdio.h>
#include <stdlib.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "outputs/plot_serve.h"
#include "outputs/table.h"
#include "study/sweep_int.h"

int sweep_serve_child(const struct cfg_scenario *sc, const char *pdir,
                      int (*serve_point)(const struct cfg_scenario *, const char *, int, char **,
                                         struct diag *),
                      int sg_argc, char **sg_argv, struct diag *d)
{
    if (!serve_point) {
        diag_error(d, NULL, "serve", "this command cannot run a serving point");
        return 1;
    }
    return serve_point(sc, pdir, sg_argc, sg_argv, d);
}

static void print_row(const struct sweep_spec *sp, const struct table_row *r)
{
    printf("%5d", r->point);
    for (int k = 0; k < sp->nkeys; k++)
        printf("  %10s", r->values[k]);
    if (r->status != TABLE_OK || !r->has_serving) {
        printf("  %s\n", table_status_name(r->status));
        return;
    }
    const struct table_serving *v = &r->sv;
    printf("  %8.3f  %9.1f  %8.1f  %8.1f  %8.1f  %8.2f  %8.2f  %8.3f%s\n", v->request_throughput,
           v->output_tokens_per_s, 1e3 * v->ttft_s[0], 1e3 * v->ttft_s[1], 1e3 * v->ttft_s[2],
           1e3 * v->tpot_s[2], 1e3 * v->itl_s[2], v->goodput_rps, v->overloaded ? "  overloaded" : "");
}

void sweep_serve_print(const struct sweep_spec *sp, const struct table_row *rows, const bool *done)
{
    struct table t = {.name = sp->name, .nkeys = sp->nkeys, .default_point = -1};
    t.keys = xcalloc((size_t)sp->nkeys + 1, sizeof *t.keys);
    for (int k = 0; k < sp->nkeys; k++)
        t.keys[k] = sp->keys[k].path;
    t.rows = xcalloc((size_t)sp->npoints + 1, sizeof *t.rows);
    for (int i = 0; i < sp->npoints; i++)
        if (done[i])
            t.rows[t.nrows++] = rows[i]; /* borrowed */
    if (table_has_serving(&t)) {
        printf("point");
        for (int k = 0; k < sp->nkeys; k++) {
            const char *p = sp->keys[k].path, *dot = p;
            for (const char *c = p; *c; c++)
                if (*c == '.')
                    dot = c + 1;
            printf("  %10s", dot);
        }
        printf("     req/s  out tok/s  TTFT p50  TTFT p90  TTFT p99  TPOT p99   ITL p99  goodput"
               "\n%5s", "");
        for (int k = 0; k < sp->nkeys; k++)
            printf("  %10s", "");
        printf("                        ms        ms        ms        ms        ms    req/s\n");
        for (int i = 0; i < t.nrows; i++)
            print_row(sp, &t.rows[i]);
        char *note = plot_serve_note(&t);
        for (const char *c = note; *c; c++) /* a group's knee a line */
            if (c[0] == ';' && c[1] == ' ')
                putchar('\n'), c++;
            else
                putchar(*c);
        putchar('\n');
        free(note);
    }
    free(t.rows);
    free(t.keys);
}
