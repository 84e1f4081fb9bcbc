/* traces/summary.c -- summary.json and the terminal table.
 * May use: libc, base/ (fsutil, json, xalloc) and traces/summary.h only. */
#include "traces/summary.h"

#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

const char *bound_name(enum bound b)
{
    static const char *const names[BOUND_COUNT] = {"mxu", "vpu", "hbm", "ici", "overhead",
                                                   "latency"};
    return b < BOUND_COUNT ? names[b] : "?";
}

void summary_pick_bound(struct summary_op *op)
{
    double t[BOUND_COUNT] = {op->mxu_s, op->vpu_s, op->hbm_s, op->ici_s, op->overhead_s,
                             op->latency_s};
    int best = 0;
    for (int i = 1; i < BOUND_COUNT; i++)
        if (t[i] > t[best])
            best = i;
    op->bound = (enum bound)best;
}

static void write_op(FILE *f, const struct summary_op *o)
{
    fprintf(f, "    {\"name\": ");
    json_write_string(f, o->name);
    fprintf(f, ", \"kind\": \"%s\", \"start_s\": %.9e, \"end_s\": %.9e, \"time_s\": %.9e,\n",
            o->kind, o->start_s, o->end_s, o->end_s - o->start_s);
    fprintf(f, "     \"flops\": %.17g, \"hbm_bytes\": %.17g, \"ici_bytes\": %.17g, "
               "\"vmem_peak_bytes\": %llu, \"grid_steps\": %lld, \"bound\": \"%s\",\n",
            o->flops, o->hbm_bytes, o->ici_bytes, (unsigned long long)o->vmem_peak_bytes,
            (long long)o->grid_steps, bound_name(o->bound));
    fprintf(f, "     \"compute_steps\": %lld,\n", (long long)o->compute_steps);
    fprintf(f, "     \"peak_fraction\": %.6f, \"cores\": %d, \"dmas\": %lld, "
               "\"coalesced_runs\": %lld, \"vpu_flops\": %.17g, \"transcendentals\": %.17g,\n",
            o->peak_frac, o->cores, (long long)o->dmas, (long long)o->coalesced_runs, o->vpu_flops,
            o->transcendentals);
    fprintf(f, "     \"busy_s\": {\"mxu\": %.9e, \"vpu\": %.9e, \"hbm\": %.9e, \"ici\": %.9e, "
               "\"overhead\": %.9e, \"latency\": %.9e}}",
            o->mxu_s, o->vpu_s, o->hbm_s, o->ici_s, o->overhead_s, o->latency_s);
}

int summary_write_json(const struct summary *s, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    fprintf(f, "{\n  \"scenario\": ");
    json_write_string(f, s->scenario);
    fprintf(f, ",\n  \"chip\": ");
    json_write_string(f, s->chip);
    fprintf(f, ",\n  \"topology\": [");
    for (int i = 0; i < s->ndims; i++)
        fprintf(f, "%s%d", i ? ", " : "", s->shape[i]);
    fprintf(f, "],\n  \"total_time_s\": %.9e,\n  \"ops\": [\n", s->total_time_s);
    for (int i = 0; i < s->nops; i++) {
        write_op(f, &s->ops[i]);
        fputs(i + 1 < s->nops ? ",\n" : "\n", f);
    }
    fprintf(f, "  ]\n}\n");
    return fs_atomic_commit(&a);
}

static void fmt_time(char *buf, size_t n, double s)
{
    if (s >= 1)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
}

void summary_print_table(const struct summary *s, FILE *out)
{
    fprintf(out, "scenario %s on %s [", s->scenario, s->chip);
    for (int i = 0; i < s->ndims; i++)
        fprintf(out, "%s%d", i ? "x" : "", s->shape[i]);
    fprintf(out, "]\n%-20s %-22s %12s %12s %8s %-9s %10s\n", "op", "kind", "start", "time",
            "% peak", "bound", "steps");
    for (int i = 0; i < s->nops; i++) {
        const struct summary_op *o = &s->ops[i];
        char st[32], tm[32];
        fmt_time(st, sizeof st, o->start_s);
        fmt_time(tm, sizeof tm, o->end_s - o->start_s);
        fprintf(out, "%-20.20s %-22s %12s %12s %7.1f%% %-9s %10lld\n", o->name, o->kind, st, tm,
                100.0 * o->peak_frac, bound_name(o->bound), (long long)o->grid_steps);
    }
    char tt[32];
    fmt_time(tt, sizeof tt, s->total_time_s);
    fprintf(out, "total %s\n", tt);
}

void summary_fini(struct summary *s)
{
    for (int i = 0; i < s->nops; i++)
        free(s->ops[i].name);
    free(s->ops);
    free(s->scenario);
    free(s->chip);
    memset(s, 0, sizeof *s);
}
