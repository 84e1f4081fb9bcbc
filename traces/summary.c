/* traces/summary.c -- summary.json and the terminal table.
 * May use: libc, base/ (fsutil, json, xalloc) and traces/summary.h only. */
#include "traces/summary.h"

#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

const char *summary_cat_name(enum summary_cat c)
{
    static const char *const names[CAT_COUNT] = {
        "matmul",           "attention",          "fusion",          "compute_other",
        "collective_exposed", "collective_hidden", "copy_exposed",    "copy_hidden",
        "idle"};
    return c < CAT_COUNT ? names[c] : "?";
}

const char *bound_name(enum bound b)
{
    static const char *const names[BOUND_COUNT] = {"mxu", "vpu", "hbm", "ici", "overhead",
                                                   "latency", "pcie", "dcn"};
    return b < BOUND_COUNT ? names[b] : "?";
}

void summary_op_scale(struct summary_op *o, int mult)
{
    double m = mult;
    o->flops *= m, o->vpu_flops *= m, o->transcendentals *= m;
    o->hbm_bytes *= m, o->ici_bytes *= m, o->pcie_bytes *= m, o->pcie_s *= m;
    o->dcn_bytes *= m;
    o->grid_steps *= mult, o->compute_steps *= mult, o->dmas *= mult, o->coalesced_runs *= mult;
    o->mxu_s *= m, o->vpu_s *= m, o->overhead_s *= m, o->hbm_s *= m, o->ici_s *= m;
    o->latency_s *= m, o->dcn_s *= m;
    o->cores *= mult;
}

void summary_pick_bound(struct summary_op *op)
{
    double t[BOUND_COUNT] = {op->mxu_s,      op->vpu_s,     op->hbm_s,  op->ici_s,
                             op->overhead_s, op->latency_s, op->pcie_s, op->dcn_s};
    int best = 0;
    for (int i = 1; i < BOUND_COUNT; i++)
        if (t[i] > t[best])
            best = i;
    op->bound = (enum bound)best;
}

static void write_auto(FILE *f, const struct summary_auto *a)
{
    fputs(",\n     \"auto_blocks\": {", f);
    for (int i = 0; i < a->n; i++)
        fprintf(f, "%s\"%s\": %lld", i ? ", " : "", a->names[i], (long long)a->values[i]);
    fprintf(f, "}, \"auto_candidates\": %d, \"auto_feasible\": %d, \"auto_bound\": \"%s\", "
               "\"auto_lower_bound_s\": %.9e,\n     \"auto_search_time_s\": %.9e, "
               "\"auto_default_time_s\": ",
            a->candidates, a->feasible, a->bound, a->lower_bound_s, a->time_s);
    if (a->default_s >= 0)
        fprintf(f, "%.9e", a->default_s);
    else
        fputs("null", f);
    fprintf(f, ", \"auto_cached\": %s", a->cached ? "true" : "false");
}

static void write_op(FILE *f, const struct summary_op *o, bool dcn)
{
    fprintf(f, "    {\"name\": ");
    json_write_string(f, o->name);
    fprintf(f, ", \"kind\": \"%s\", \"start_s\": %.9e, \"end_s\": %.9e, \"time_s\": %.9e,\n",
            o->kind, o->start_s, o->end_s, o->time_s);
    fprintf(f, "     \"flops\": %.17g, \"hbm_bytes\": %.17g, \"ici_bytes\": %.17g, "
               "\"vmem_peak_bytes\": %llu, \"grid_steps\": %lld, \"bound\": \"%s\",\n",
            o->flops, o->hbm_bytes, o->ici_bytes, (unsigned long long)o->vmem_peak_bytes,
            (long long)o->grid_steps, bound_name(o->bound));
    if (dcn)
        fprintf(f, "     \"dcn_bytes\": %.17g,\n", o->dcn_bytes);
    fprintf(f, "     \"compute_steps\": %lld, \"category\": \"%s\", \"instances\": %lld,\n",
            (long long)o->compute_steps, o->category ? o->category : "", (long long)o->instances);
    fprintf(f, "     \"peak_fraction\": %.6f, \"cores\": %d, \"dmas\": %lld, "
               "\"coalesced_runs\": %lld, \"vpu_flops\": %.17g, \"transcendentals\": %.17g,\n",
            o->peak_frac, o->cores, (long long)o->dmas, (long long)o->coalesced_runs, o->vpu_flops,
            o->transcendentals);
    fprintf(f, "     \"busy_s\": {\"mxu\": %.9e, \"vpu\": %.9e, \"hbm\": %.9e, \"ici\": %.9e, "
               "\"overhead\": %.9e, \"latency\": %.9e",
            o->mxu_s, o->vpu_s, o->hbm_s, o->ici_s, o->overhead_s, o->latency_s);
    if (o->pcie_bytes > 0) /* host_copy only: other ops' rows keep their keys */
        fprintf(f, ", \"pcie\": %.9e", o->pcie_s);
    if (dcn)
        fprintf(f, ", \"dcn\": %.9e", o->dcn_s);
    fputc('}', f);
    if (o->pcie_bytes > 0)
        fprintf(f, ",\n     \"pcie_bytes\": %.17g", o->pcie_bytes);
    if (o->tuned)
        write_auto(f, o->tuned);
    fputc('}', f);
}

static void write_model(FILE *f, const struct summary_model *m)
{
    fprintf(f, ",\n  \"model\": {\"mode\": \"%s\", \"tokens\": %.17g, \"tokens_per_s\": %.9e, "
               "\"tokens_per_s_per_chip\": %.9e, \"flops_per_device\": %.9e, \"mfu\": %.6f,\n",
            m->mode, m->tokens, m->tokens_per_s, m->tokens_per_s_per_chip, m->flops_per_device,
            m->mfu);
    fprintf(f, "    \"memory_bytes\": {\"params\": %.17g, \"grads\": %.17g, \"optimizer\": %.17g, "
               "\"activations\": %.17g, \"weights_gathered\": %.17g, \"logits\": %.17g, "
               "\"kv_cache\": %.17g, \"total\": %.17g, \"capacity\": %.17g}}",
            m->mem_params, m->mem_grads, m->mem_optimizer, m->mem_activations,
            m->mem_weights_gathered, m->mem_logits, m->mem_kv_cache, m->mem_total,
            m->mem_capacity);
}

static void write_timeline(FILE *f, const struct summary *s)
{
    fprintf(f, ",\n  \"time_by_category_s\": {");
    for (int c = 0; c < CAT_COUNT; c++)
        fprintf(f, "%s\"%s\": %.9e", c ? ", " : "", summary_cat_name((enum summary_cat)c),
                s->cat_s[c]);
    fprintf(f, "},\n  \"critical_path\": [");
    for (int i = 0; i < s->npath; i++) {
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_write_string(f, s->path[i].name);
        fprintf(f, ", \"instances\": %lld, \"time_s\": %.9e}", (long long)s->path[i].instances,
                s->path[i].time_s);
    }
    fprintf(f, "%s],\n  \"blocks\": [", s->npath ? "\n  " : "");
    for (int i = 0; i < s->nblocks; i++) {
        const struct summary_block *b = &s->blocks[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_write_string(f, b->name);
        fprintf(f, ", \"count\": %lld, \"iterations_s\": [", (long long)b->count);
        for (int64_t k = 0; k < b->niter; k++)
            fprintf(f, "%s[%.9e, %.9e]", k ? ", " : "", b->start_s[k], b->end_s[k]);
        fputs("]}", f);
    }
    fprintf(f, "%s]", s->nblocks ? "\n  " : "");
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
    fputc(']', f);
    if (s->slices > 1)
        fprintf(f, ", \"slices\": %d", s->slices);
    fprintf(f, ",\n  \"simulated_chips\": %d, \"simulated_shape\": [", s->sim_chips);
    for (int i = 0; i < s->ndims; i++)
        fprintf(f, "%s%d", i ? ", " : "", s->sim_shape[i]);
    fprintf(f, "],\n  \"total_time_s\": %.9e,\n  \"ops\": [\n", s->total_time_s);
    for (int i = 0; i < s->nops; i++) {
        write_op(f, &s->ops[i], s->slices > 1);
        fputs(i + 1 < s->nops ? ",\n" : "\n", f);
    }
    fprintf(f, "  ]");
    if (s->timeline)
        write_timeline(f, s);
    if (s->model.present)
        write_model(f, &s->model);
    fprintf(f, "\n}\n");
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

/* Where chip 0's time went, and the ops that set the end time. */
static void print_timeline(const struct summary *s, FILE *out)
{
    fputs("time by category (chip 0):", out);
    for (int c = 0; c < CAT_COUNT; c++) {
        if (s->cat_s[c] <= 0)
            continue;
        char t[32];
        fmt_time(t, sizeof t, s->cat_s[c]);
        fprintf(out, " %s %s (%.1f%%)", summary_cat_name((enum summary_cat)c), t,
                s->total_time_s > 0 ? 100.0 * s->cat_s[c] / s->total_time_s : 0.0);
    }
    fputs("\ncritical path:", out);
    for (int i = 0; i < s->npath && i < 12; i++) {
        char t[32];
        fmt_time(t, sizeof t, s->path[i].time_s);
        if (s->path[i].instances > 1)
            fprintf(out, "%s %s x%lld (%s)", i ? " ->" : "", s->path[i].name,
                    (long long)s->path[i].instances, t);
        else
            fprintf(out, "%s %s (%s)", i ? " ->" : "", s->path[i].name, t);
    }
    if (s->npath > 12)
        fprintf(out, " -> ... (%d ops in all)", s->npath);
    fputc('\n', out);
}

void summary_print_auto(const char *name, const struct summary_auto *a, FILE *out)
{
    char tm[32], lb[32], df[48];
    fmt_time(tm, sizeof tm, a->time_s);
    fmt_time(lb, sizeof lb, a->lower_bound_s);
    if (a->default_s >= 0)
        fmt_time(df, sizeof df, a->default_s);
    else
        snprintf(df, sizeof df, "not timed (bound above the best)");
    fprintf(out, "auto %s:", name);
    for (int i = 0; i < a->n; i++)
        fprintf(out, " %s=%lld", a->names[i], (long long)a->values[i]);
    fprintf(out, " (fastest of %d timed, %d feasible: %s, %s-bound; lower bound %s; default "
                 "blocks %s)%s\n",
            a->candidates, a->feasible, tm, a->bound, lb, df, a->cached ? " [cached]" : "");
}

/* The model step's throughput, MFU and memory per chip. */
static void print_model(const struct summary *s, FILE *out)
{
    const struct summary_model *m = &s->model;
    double g = 1073741824.0;
    fprintf(out, "model %s step: %.3f s, %.0f tokens/s (%.1f per chip), MFU %.1f%% (%.1f TFLOP "
                 "per device)\n",
            m->mode, s->total_time_s, m->tokens_per_s, m->tokens_per_s_per_chip, 100.0 * m->mfu,
            m->flops_per_device / 1e12);
    fprintf(out, "memory per chip: %.2f of %.2f GiB (params %.2f, grads %.2f, optimizer %.2f, "
                 "activations %.2f, gathered weights %.2f, logits %.2f, KV cache %.2f)\n",
            m->mem_total / g, m->mem_capacity / g, m->mem_params / g, m->mem_grads / g,
            m->mem_optimizer / g, m->mem_activations / g, m->mem_weights_gathered / g,
            m->mem_logits / g, m->mem_kv_cache / g);
}

void summary_print_table(const struct summary *s, FILE *out)
{
    fprintf(out, "scenario %s on %s ", s->scenario, s->chip);
    if (s->slices > 1)
        fprintf(out, "%d slices of ", s->slices);
    fputc('[', out);
    for (int i = 0; i < s->ndims; i++)
        fprintf(out, "%s%d", i ? "x" : "", s->shape[i]);
    int chips = s->slices > 1 ? s->slices : 1;
    for (int i = 0; i < s->ndims; i++)
        chips *= s->shape[i];
    if (s->sim_chips && s->sim_chips < chips) {
        fprintf(out, "], simulating %d of %d chips (SPMD fold [", s->sim_chips, chips);
        for (int i = 0; i < s->ndims; i++)
            fprintf(out, "%s%d", i ? "x" : "", s->sim_shape[i]);
        fputs("])\n", out);
    } else {
        fputs("]\n", out);
    }
    fprintf(out, "%-20s %-22s %12s %12s %8s %-9s %10s\n", "op", "kind", "start", "time",
            "% peak", "bound", "steps");
    for (int i = 0; i < s->nops; i++) {
        const struct summary_op *o = &s->ops[i];
        char st[32], tm[32];
        fmt_time(st, sizeof st, o->start_s);
        fmt_time(tm, sizeof tm, o->time_s);
        fprintf(out, "%-20.20s %-22s %12s %12s %7.1f%% %-9s %10lld\n", o->name, o->kind, st, tm,
                100.0 * o->peak_frac, bound_name(o->bound), (long long)o->grid_steps);
    }
    char tt[32];
    fmt_time(tt, sizeof tt, s->total_time_s);
    fprintf(out, "total %s\n", tt);
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].tuned)
            summary_print_auto(s->ops[i].name, s->ops[i].tuned, out);
    if (s->timeline)
        print_timeline(s, out);
    if (s->model.present)
        print_model(s, out);
}

void summary_fini(struct summary *s)
{
    for (int i = 0; i < s->nops; i++) {
        free(s->ops[i].name);
        free(s->ops[i].tuned);
    }
    free(s->ops);
    for (int i = 0; i < s->npath; i++)
        free(s->path[i].name);
    free(s->path);
    for (int i = 0; i < s->nblocks; i++) {
        free(s->blocks[i].name);
        free(s->blocks[i].start_s);
        free(s->blocks[i].end_s);
    }
    free(s->blocks);
    free(s->scenario);
    free(s->chip);
    memset(s, 0, sizeof *s);
}
