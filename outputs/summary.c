/* outputs/summary.c -- summary.json and the terminal table.
 * May use: libc, base/ (fsutil, json, xalloc) and outputs/summary.h only. */
#include "outputs/summary.h"

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
    o->hbm_bytes *= m, o->ici_bytes *= m, o->useful_bytes *= m, o->pcie_bytes *= m;
    o->pcie_s *= m, o->dcn_bytes *= m;
    o->grid_steps *= mult, o->compute_steps *= mult, o->dmas *= mult, o->coalesced_runs *= mult;
    o->mxu_s *= m, o->vpu_s *= m, o->overhead_s *= m, o->hbm_s *= m, o->ici_s *= m;
    o->latency_s *= m, o->dcn_s *= m;
    o->cores *= mult;
}

void summary_rank_units(const double *t, enum bound *first, enum bound *second)
{
    int best = 0, next = -1;
    for (int i = 1; i < BOUND_COUNT; i++)
        if (t[i] > t[best])
            best = i;
    for (int i = 0; i < BOUND_COUNT; i++)
        if (i != best && (next < 0 || t[i] > t[next]))
            next = i;
    *first = (enum bound)best;
    *second = (enum bound)next;
}

void summary_pick_bound(struct summary_op *op)
{
    double t[BOUND_COUNT] = {op->mxu_s,      op->vpu_s,     op->hbm_s,  op->ici_s,
                             op->overhead_s, op->latency_s, op->pcie_s, op->dcn_s};
    summary_rank_units(t, &op->bound, &op->runner_up);
}

static void write_auto(FILE *f, const struct summary_auto *a)
{
    fputs(",\n     \"auto_blocks\": {", f);
    for (int i = 0; i < a->n; i++) { /* 0: a block left unset (None upstream), null as in YAML */
        fprintf(f, "%s\"%s\": ", i ? ", " : "", a->names[i]);
        if (a->values[i])
            fprintf(f, "%lld", (long long)a->values[i]);
        else
            fputs("null", f);
    }
    fprintf(f, "}, \"auto_candidates\": %d, \"auto_feasible\": %d, \"auto_bound\": \"%s\", "
               "\"auto_lower_bound_s\": %s,\n     \"auto_search_time_s\": %s, "
               "\"auto_default_time_s\": ",
            a->candidates, a->feasible, a->bound, JSON_E9(a->lower_bound_s), JSON_E9(a->time_s));
    if (a->default_s >= 0)
        fprintf(f, "%s", JSON_E9(a->default_s));
    else
        fputs("null", f);
    fprintf(f, ", \"auto_cached\": %s", a->cached ? "true" : "false");
}

static void write_work(FILE *f, const struct summary_core_work *w, int core)
{
    fprintf(f, "{\"core\": %d, \"time_s\": %s, \"busy_s\": {\"mxu\": %s, \"vpu\": %s, "
               "\"overhead\": %s}, \"hbm_bytes\": %s}",
            core, JSON_E9(w->time_s), JSON_E9(w->mxu_s), JSON_E9(w->vpu_s), JSON_E9(w->overhead_s),
            JSON_G17(w->hbm_bytes));
}

/* The explanation keys of an op (docs/reference.md, "Outputs"). */
static void write_explain(FILE *f, const struct summary_op *o)
{
    fprintf(f, ",\n     \"useful_hbm_bytes\": %s, \"padded_hbm_bytes\": %s",
            JSON_G17(o->useful_bytes), JSON_G17(o->hbm_bytes - o->useful_bytes));
    fprintf(f, ",\n     \"runner_up\": \"%s\", \"bound_fraction\": %s, "
               "\"runner_up_fraction\": %s",
            o->runner_up_frac > 0 ? bound_name(o->runner_up) : "none", JSON_F6(o->bound_frac),
            JSON_F6(o->runner_up_frac));
    if (o->ncore) {
        fputs(",\n     \"per_core\": [", f);
        for (int c = 0; c < o->ncore; c++) {
            fputs(c ? ", " : "", f);
            write_work(f, &o->core[c], c);
        }
        fputc(']', f);
    }
    if (o->nsub) {
        fputs(",\n     \"subkernels\": [", f);
        for (int i = 0; i < o->nsub; i++) {
            const struct summary_sub *s = &o->sub[i];
            fprintf(f, "%s\n       {\"name\": ", i ? "," : "");
            json_write_string(f, s->name);
            fprintf(f, ", \"phase\": \"%s\", \"per_core\": [", s->phase);
            for (int c = 0; c < o->ncore; c++) {
                fputs(c ? ", " : "", f);
                write_work(f, &s->core[c], c);
            }
            fputs("]}", f);
        }
        fputc(']', f);
    }
    if (o->coll.present)
        fprintf(f, ",\n     \"collective\": {\"devices\": %d, \"data_bytes\": %s, "
                   "\"algbw_Bps\": %s, \"busbw_Bps\": %s, \"link_peak_Bps\": %s, "
                   "\"link_share\": %s}",
                o->coll.n, JSON_G17(o->coll.data_bytes), JSON_E9(o->coll.algbw_Bps),
                JSON_E9(o->coll.busbw_Bps), JSON_E9(o->coll.link_peak_Bps),
                JSON_F6(o->coll.link_share));
}

static void write_op(FILE *f, const struct summary_op *o, bool dcn)
{
    fprintf(f, "    {\"name\": ");
    json_write_string(f, o->name);
    if (o->op_name) {
        fprintf(f, ", \"op_name\": ");
        json_write_string(f, o->op_name);
    }
    fprintf(f, ", \"kind\": \"%s\", \"start_s\": %s, \"end_s\": %s, \"time_s\": %s,\n",
            o->kind, JSON_E9(o->start_s), JSON_E9(o->end_s), JSON_E9(o->time_s));
    fprintf(f, "     \"flops\": %s, \"hbm_bytes\": %s, \"ici_bytes\": %s, "
               "\"vmem_peak_bytes\": %llu, \"grid_steps\": %lld, \"bound\": \"%s\",\n",
            JSON_G17(o->flops), JSON_G17(o->hbm_bytes), JSON_G17(o->ici_bytes),
            (unsigned long long)o->vmem_peak_bytes,
            (long long)o->grid_steps, bound_name(o->bound));
    if (dcn)
        fprintf(f, "     \"dcn_bytes\": %s,\n", JSON_G17(o->dcn_bytes));
    fprintf(f, "     \"compute_steps\": %lld, \"category\": \"%s\", \"instances\": %lld,\n",
            (long long)o->compute_steps, o->category ? o->category : "", (long long)o->instances);
    fprintf(f, "     \"peak_fraction\": %s, \"cores\": %d, \"dmas\": %lld, "
               "\"coalesced_runs\": %lld, \"vpu_flops\": %s, \"transcendentals\": %s,\n",
            JSON_F6(o->peak_frac), o->cores, (long long)o->dmas, (long long)o->coalesced_runs,
            JSON_G17(o->vpu_flops), JSON_G17(o->transcendentals));
    fprintf(f, "     \"busy_s\": {\"mxu\": %s, \"vpu\": %s, \"hbm\": %s, \"ici\": %s, "
               "\"overhead\": %s, \"latency\": %s",
            JSON_E9(o->mxu_s), JSON_E9(o->vpu_s), JSON_E9(o->hbm_s), JSON_E9(o->ici_s),
            JSON_E9(o->overhead_s), JSON_E9(o->latency_s));
    if (o->pcie_bytes > 0) /* host_copy only: other ops' rows keep their keys */
        fprintf(f, ", \"pcie\": %s", JSON_E9(o->pcie_s));
    if (dcn)
        fprintf(f, ", \"dcn\": %s", JSON_E9(o->dcn_s));
    fputc('}', f);
    if (o->pcie_bytes > 0)
        fprintf(f, ",\n     \"pcie_bytes\": %s", JSON_G17(o->pcie_bytes));
    if (o->tuned)
        write_auto(f, o->tuned);
    write_explain(f, o);
    if (o->unc_family)
        fprintf(f, ",\n     \"uncertainty_family\": \"%s\", \"uncertainty_relative\": %s",
                o->unc_family, JSON_F6(o->unc_relative));
    fputc('}', f);
}

/* The step time's error bar (engine/uncertainty.h). */
static void write_unc(FILE *f, const struct summary_unc *u)
{
    static const char *const fam[SUMMARY_UNC_FAMILIES] = {"pallas_kernel", "collective",
                                                          "xla_op", "model_step"};
    fprintf(f, ",\n  \"uncertainty\": {\"sigma_s\": %s, \"relative\": %s, \"low_s\": %s, "
               "\"high_s\": %s,\n    \"method\": \"critical-path ops x their family's 68th "
               "percentile |fidelity residual|; linear within a family, quadrature across "
               "families%s\",\n    \"ops_sigma_s\": %s, \"floor_s\": %s, \"floored\": %s, "
               "\"by_family_s\": {",
            JSON_E9(u->sigma_s), JSON_F6(u->relative), JSON_E9(u->low_s), JSON_E9(u->high_s),
            u->floor_s > 0 ? "; floored at the model-step family's band" : "",
            JSON_E9(u->ops_sigma_s), JSON_E9(u->floor_s), u->floored ? "true" : "false");
    for (int i = 0; i < SUMMARY_UNC_FAMILIES - 1; i++)
        fprintf(f, "%s\"%s\": %s", i ? ", " : "", fam[i], JSON_E9(u->family_s[i]));
    fputs("}}", f);
}

/* A model step's pipeline and experts (only when it has them). */
static void write_model_parallel(FILE *f, const struct summary_model *m)
{
    if (m->pipeline_stages > 1)
        fprintf(f, ",\n    \"pipeline\": {\"stages\": %d, \"schedule\": \"%s\", "
                   "\"num_pipeline_microbatches\": %lld, \"num_pipeline_repeats\": %lld, "
                   "\"iterations\": %lld, \"bubble\": %s}",
                m->pipeline_stages, m->pipeline_schedule, (long long)m->pipeline_microbatches,
                (long long)m->pipeline_repeats, (long long)m->pipeline_iterations,
                JSON_F6(m->pipeline_bubble));
    if (m->moe)
        fprintf(f, ",\n    \"moe\": {\"sparse_matmul\": %s, \"capacity_factor\": %s, "
                   "\"expert_load_imbalance\": %s, \"dropped_share\": %s}",
                m->moe_sparse_matmul ? "true" : "false", JSON_G17(m->moe_capacity_factor),
                JSON_G17(m->moe_load_imbalance), JSON_F6(m->moe_dropped_share));
}

static void write_model(FILE *f, const struct summary_model *m)
{
    fprintf(f, ",\n  \"model\": {\"mode\": \"%s\", \"tokens\": %s, \"tokens_per_s\": %s, "
               "\"tokens_per_s_per_chip\": %s, \"flops_per_device\": %s, \"mfu\": %s, "
               "\"mfu_peak_dtype\": \"%s\",\n",
            m->mode, JSON_G17(m->tokens), JSON_E9(m->tokens_per_s),
            JSON_E9(m->tokens_per_s_per_chip), JSON_E9(m->flops_per_device), JSON_F6(m->mfu),
            m->peak_dtype);
    fprintf(f, "    \"memory_bytes\": {\"params\": %s, \"grads\": %s, \"optimizer\": %s, "
               "\"activations\": %s, \"weights_gathered\": %s, \"logits\": %s, "
               "\"kv_cache\": %s, \"total\": %s, \"capacity\": %s}",
            JSON_G17(m->mem_params), JSON_G17(m->mem_grads), JSON_G17(m->mem_optimizer),
            JSON_G17(m->mem_activations), JSON_G17(m->mem_weights_gathered),
            JSON_G17(m->mem_logits), JSON_G17(m->mem_kv_cache), JSON_G17(m->mem_total),
            JSON_G17(m->mem_capacity));
    write_model_parallel(f, m);
    if (m->mbu_bytes_per_chip > 0)
        fprintf(f, ", \"mbu\": %s, \"mbu_bytes_per_chip\": %s", JSON_F6(m->mbu),
                JSON_G17(m->mbu_bytes_per_chip));
    else
        fputs(", \"mbu\": null, \"mbu_bytes_per_chip\": null", f);
    fputc('}', f);
}

static void write_timeline(FILE *f, const struct summary *s)
{
    fprintf(f, ",\n  \"time_by_category_s\": {");
    for (int c = 0; c < CAT_COUNT; c++)
        fprintf(f, "%s\"%s\": %s", c ? ", " : "", summary_cat_name((enum summary_cat)c),
                JSON_E9(s->cat_s[c]));
    fprintf(f, "},\n  \"critical_path\": [");
    for (int i = 0; i < s->npath; i++) {
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_write_string(f, s->path[i].name);
        fprintf(f, ", \"instances\": %lld, \"time_s\": %s}", (long long)s->path[i].instances,
                JSON_E9(s->path[i].time_s));
    }
    fprintf(f, "%s],\n  \"blocks\": [", s->npath ? "\n  " : "");
    for (int i = 0; i < s->nblocks; i++) {
        const struct summary_block *b = &s->blocks[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_write_string(f, b->name);
        fprintf(f, ", \"count\": %lld, \"iterations_s\": [", (long long)b->count);
        for (int64_t k = 0; k < b->niter; k++)
            fprintf(f, "%s[%s, %s]", k ? ", " : "", JSON_E9(b->start_s[k]), JSON_E9(b->end_s[k]));
        fputs("]}", f);
    }
    fprintf(f, "%s]", s->nblocks ? "\n  " : "");
}

/* Formats a --trace-window bound of 'ns' nanoseconds exactly: "0", "640ns",
 * "102.4us", "10.625ms", "1.000000512s". */
static void fmt_window(char *buf, size_t n, int64_t ns)
{
    static const char *const unit[] = {"ns", "us", "ms", "s"};
    int u = 0;
    int64_t scale = 1;
    while (u < 3 && ns >= scale * 1000)
        u++, scale *= 1000;
    if (ns == 0) {
        snprintf(buf, n, "0");
        return;
    }
    int64_t whole = ns / scale, frac = ns % scale;
    int digits = u * 3;
    while (frac && frac % 10 == 0)
        frac /= 10, digits--;
    if (frac)
        snprintf(buf, n, "%lld.%0*lld%s", (long long)whole, digits, (long long)frac, unit[u]);
    else
        snprintf(buf, n, "%lld%s", (long long)whole, unit[u]);
}

/* Window i of the trace's proposed windows as a --trace-window argument. */
static void fmt_window_arg(char *buf, size_t n, const struct trace_stats *st, int i)
{
    char a[32], b[32] = "";
    fmt_window(a, sizeof a, st->window_start_ns[i]);
    if (i + 1 < st->nwindows)
        fmt_window(b, sizeof b, st->window_start_ns[i + 1]);
    snprintf(buf, n, "%s:%s", a, b);
}

void summary_trace_hint(const struct summary *s, char *buf, size_t n)
{
    const struct summary_trace *tr = &s->trace;
    const struct trace_stats *st = &tr->st;
    buf[0] = 0;
    if (st->level == TRACE_NONE) {
        snprintf(buf, n, "no trace: --trace ops, units or steps writes one");
    } else if (st->dropped) {
        /* the windows each hold at most the cap (outputs/trace.c counts the
         * events of every window): the first three, and where the rest are */
        size_t all = st->events + st->dropped, want = (all + 99999) / 100000 * 100000;
        size_t k = (size_t)snprintf(buf, n,
                                    "the run has %zu events at this level; for all of them: "
                                    "--trace-max-events %zu",
                                    all, want);
        if (st->nwindows > 0 && k < n)
            k += (size_t)snprintf(buf + k, n - k, ", or %d runs with", st->nwindows);
        for (int i = 0; i < st->nwindows && i < 3 && k < n; i++) {
            char w[72];
            fmt_window_arg(w, sizeof w, st, i);
            k += (size_t)snprintf(buf + k, n - k, "%s --trace-window %s", i ? "," : "", w);
        }
        if (st->nwindows > 3 && k < n)
            k += (size_t)snprintf(buf + k, n - k, ", ... (all %d in summary.json's "
                                                  "trace.windows)", st->nwindows);
        if (st->level > TRACE_OPS && k < n)
            snprintf(buf + k, n - k, ", or --trace %s",
                     st->level == TRACE_STEPS ? "units" : "ops");
    } else if (st->filtered) {
        snprintf(buf, n, "%zu events of other chips or outside the window were left out: widen "
                         "--trace-chips or --trace-window for them", st->filtered);
    } else if (st->level < TRACE_STEPS) {
        snprintf(buf, n, "--trace steps adds every grid step, DMA and ICI hop%s",
                 st->level == TRACE_OPS ? " (--trace units: one span per op and unit)" : "");
    }
}

static void write_trace(FILE *f, const struct summary *s)
{
    const struct summary_trace *tr = &s->trace;
    const struct trace_stats *st = &tr->st;
    fprintf(f, ",\n  \"trace\": {\"level\": \"%s\", \"path\": %s, \"events\": %zu, "
               "\"dropped\": %zu, \"filtered\": %zu, \"max_events\": %zu, \"bytes\": %llu,\n",
            trace_level_name(st->level), st->level == TRACE_NONE ? "null" : "\"trace.json\"",
            st->events, st->dropped, st->filtered, st->max_events,
            (unsigned long long)st->bytes);
    fputs("    \"chips\": ", f);
    if (tr->chips)
        json_write_string(f, tr->chips);
    else
        fputs("null", f);
    if (tr->window)
        fprintf(f, ", \"window_s\": [%s, %s]", JSON_E9(tr->window_t0_s), JSON_E9(tr->window_t1_s));
    else
        fputs(", \"window_s\": null", f);
    fprintf(f, ", \"complete\": %s, \"complete_until_s\": ", st->dropped ? "false" : "true");
    if (st->dropped)
        fprintf(f, "%s", JSON_E9(st->complete_until_s));
    else
        fputs("null", f);
    char hint[512];
    summary_trace_hint(s, hint, sizeof hint);
    fputs(", \"hint\": ", f);
    json_write_string(f, hint);
    fputs(", \"windows\": [", f); /* the --trace-window arguments that give the rest */
    for (int i = 0; i < st->nwindows; i++) {
        char w[72];
        fmt_window_arg(w, sizeof w, st, i);
        fprintf(f, "%s\"%s\"", i ? ", " : "", w);
    }
    fputs("], \"chosen\": ", f); /* why this level (no --trace), else null */
    if (st->chosen[0])
        json_write_string(f, st->chosen);
    else
        fputs("null", f);
    fputs("}", f);
}

void summary_print_trace(const struct summary *s, const char *dir, FILE *out)
{
    const struct trace_stats *st = &s->trace.st;
    char hint[512];
    summary_trace_hint(s, hint, sizeof hint);
    if (st->level == TRACE_NONE) {
        fprintf(out, "wrote %s/summary.json (no trace: --trace none)\n", dir);
        return;
    }
    char size[32];
    if (st->bytes >= 1000000)
        snprintf(size, sizeof size, "%.1f MB", (double)st->bytes / 1e6);
    else
        snprintf(size, sizeof size, "%.1f kB", (double)st->bytes / 1e3);
    fprintf(out, "wrote %s/trace.json (--trace %s: %zu events, %s; open in "
                 "https://ui.perfetto.dev), %s/summary.json\n",
            dir, trace_level_name(st->level), st->events, size, dir);
    if (st->chosen[0] && (st->level != TRACE_UNITS || st->chosen_chips[0]))
        fprintf(out, "note: trace level %s%s%s chosen: %s; --trace units asks for the default\n",
                trace_level_name(st->level), st->chosen_chips[0] ? " on chip " : "",
                st->chosen_chips, st->chosen);
    if (st->dropped)
        fprintf(out, "warning: trace.json is incomplete: %zu events dropped past --trace-max-events "
                     "%zu; %s\n", st->dropped, st->max_events, hint);
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
    fputc(']', f);
    if (s->memo_measured)
        fprintf(f, ",\n  \"kernel_memo\": {\"replays\": %lld, \"measured\": %lld}",
                (long long)s->memo_replays, (long long)s->memo_measured);
    fprintf(f, ",\n  \"total_time_s\": %s,\n  \"ops\": [\n", JSON_E9(s->total_time_s));
    for (int i = 0; i < s->nops; i++) {
        write_op(f, &s->ops[i], s->slices > 1);
        fputs(i + 1 < s->nops ? ",\n" : "\n", f);
    }
    fprintf(f, "  ]");
    if (s->timeline)
        write_timeline(f, s);
    if (s->model.present)
        write_model(f, &s->model);
    if (s->program_json)
        fprintf(f, ",\n  \"program\": %s", s->program_json);
    if (s->trace.present)
        write_trace(f, s);
    summary_write_cost(f, s);
    if (s->unc.present)
        write_unc(f, &s->unc);
    if (s->ntc) {
        fputs(",\n  \"tensorcores\": [", f);
        for (int c = 0; c < s->ntc; c++) {
            const struct summary_tc *tc = &s->tc[c];
            fprintf(f, "%s\n    {\"chip\": 0, \"core\": %d, \"compute_s\": %s, \"idle_s\": %s, "
                       "\"busy_s\": {\"mxu\": %s, \"vpu\": %s, \"hbm\": %s, "
                       "\"overhead\": %s}, \"bound\": \"%s\", \"runner_up\": \"%s\"}",
                    c ? "," : "", c, JSON_E9(tc->compute_s), JSON_E9(tc->idle_s),
                    JSON_E9(tc->mxu_s), JSON_E9(tc->vpu_s), JSON_E9(tc->hbm_s),
                    JSON_E9(tc->overhead_s), bound_name(tc->bound), bound_name(tc->runner_up));
        }
        fputs("\n  ]", f);
    }
    if (s->faults_json)
        fputs(s->faults_json, f);
    fprintf(f, "\n}\n");
    return fs_atomic_commit(&a);
}

/* An HLO program's line: what the module held and its peak memory. */
static void print_program(const char *js, FILE *out)
{
    char err[64];
    struct json *p = json_parse(js, strlen(js), err, sizeof err);
    const struct json *low = p ? json_get(p, "lowered") : NULL;
    if (!p)
        return;
    fprintf(out, "program: HLO module %s: %.0f instructions (%.0f fusions, %.0f collectives, %.0f "
                 "while loops), lowered to", json_str(p, "module", "?"),
            json_num(p, "instructions", 0), json_num(p, "fusions", 0),
            json_num(p, "collectives", 0), json_num(p, "while_loops", 0));
    for (int i = 0; low && low->type == JSON_OBJ && i < low->n; i++)
        fprintf(out, "%s %.0f %s", i ? "," : "", low->kids[i]->num, low->keys[i]);
    fprintf(out, "; peak memory %.3f MiB per device at %s\n",
            json_num(p, "peak_memory_bytes", 0) / 1048576.0, json_str(p, "peak_at", "?"));
    json_free(p);
}

void summary_format_time(char *buf, size_t n, double s)
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
        summary_format_time(t, sizeof t, s->cat_s[c]);
        fprintf(out, " %s %s (%.1f%%)", summary_cat_name((enum summary_cat)c), t,
                s->total_time_s > 0 ? 100.0 * s->cat_s[c] / s->total_time_s : 0.0);
    }
    fputs("\ncritical path:", out);
    for (int i = 0; i < s->npath && i < 12; i++) {
        char t[32];
        summary_format_time(t, sizeof t, s->path[i].time_s);
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
    summary_format_time(tm, sizeof tm, a->time_s);
    summary_format_time(lb, sizeof lb, a->lower_bound_s);
    if (a->default_s >= 0)
        summary_format_time(df, sizeof df, a->default_s);
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
    bool bf16 = strcmp(m->peak_dtype, "bf16") == 0; /* else say whose peak it is */
    fprintf(out, "model %s step: %.3f s, %.0f tokens/s (%.1f per chip), MFU %.1f%%%s%s%s (%.1f "
                 "TFLOP per device)\n",
            m->mode, s->total_time_s, m->tokens_per_s, m->tokens_per_s_per_chip, 100.0 * m->mfu,
            bf16 ? "" : " of the ", bf16 ? "" : m->peak_dtype, bf16 ? "" : " peak",
            m->flops_per_device / 1e12);
    if (m->mbu_bytes_per_chip > 0)
        fprintf(out, "MBU %.1f%%: %.2f GiB read per chip and step (weights and KV cache) over the "
                     "step time at the peak HBM bandwidth\n",
                100.0 * m->mbu, m->mbu_bytes_per_chip / g);
    fprintf(out, "memory per chip: %.2f of %.2f GiB (params %.2f, grads %.2f, optimizer %.2f, "
                 "activations %.2f, gathered weights %.2f, logits %.2f, KV cache %.2f)\n",
            m->mem_total / g, m->mem_capacity / g, m->mem_params / g, m->mem_grads / g,
            m->mem_optimizer / g, m->mem_activations / g, m->mem_weights_gathered / g,
            m->mem_logits / g, m->mem_kv_cache / g);
    if (m->pipeline_stages > 1)
        fprintf(out, "pipeline: %d stages, %lld microbatches (%s, %lld repeats): %lld iterations "
                     "a pass, bubble %.1f%% of the step\n",
                m->pipeline_stages, (long long)m->pipeline_microbatches, m->pipeline_schedule,
                (long long)m->pipeline_repeats, (long long)m->pipeline_iterations,
                100.0 * m->pipeline_bubble);
    char cf[32] = "none (dropless)";
    if (m->moe_capacity_factor > 0)
        snprintf(cf, sizeof cf, "%.3g", m->moe_capacity_factor);
    if (m->moe)
        fprintf(out, "experts: %s, capacity factor %s, load imbalance %.3g: %.2f%% of routed "
                     "tokens dropped\n",
                m->moe_sparse_matmul ? "grouped matmul (sparse_matmul)" : "dense einsum dispatch",
                cf, m->moe_load_imbalance, 100.0 * m->moe_dropped_share);
}

/* Why each op took its time: its bound and runner-up (share of its time),
 * its sub-kernels' times, a collective's bandwidths; chip 0's cores. */
static void print_why(const struct summary *s, FILE *out)
{
    fputs("why:\n", out);
    for (int i = 0; i < s->nops; i++) {
        const struct summary_op *o = &s->ops[i];
        fprintf(out, "  %s: %s %.0f%% of its time", o->name, bound_name(o->bound),
                100.0 * o->bound_frac);
        if (o->runner_up_frac > 0)
            fprintf(out, ", then %s %.0f%%", bound_name(o->runner_up), 100.0 * o->runner_up_frac);
        for (int k = 0; k < o->nsub; k++) {
            char t[32];
            summary_format_time(t, sizeof t, o->sub[k].core[0].time_s);
            fprintf(out, "%s %s %s", k ? "," : ";", o->sub[k].phase[0] ? o->sub[k].phase
                                                                          : o->sub[k].name, t);
            if (o->ncore > 1) {
                summary_format_time(t, sizeof t, o->sub[k].core[1].time_s);
                fprintf(out, " (TC1 %s)", t);
            }
        }
        if (o->hbm_bytes > 0 && o->useful_bytes < 0.9 * o->hbm_bytes)
            fprintf(out, "; HBM moved %.4g MB for %.4g MB of data (%.0f%% tile padding and "
                         "discarded fetches)",
                    o->hbm_bytes / 1e6, o->useful_bytes / 1e6,
                    100.0 * (o->hbm_bytes - o->useful_bytes) / o->hbm_bytes);
        if (o->coll.present)
            fprintf(out, "; algbw %.1f GB/s, busbw %.1f GB/s over %d devices, %.1f%% of the "
                         "links' %.1f GB/s",
                    o->coll.algbw_Bps / 1e9, o->coll.busbw_Bps / 1e9, o->coll.n,
                    100.0 * o->coll.link_share, o->coll.link_peak_Bps / 1e9);
        fputc('\n', out);
    }
    for (int c = 0; c < s->ntc; c++) {
        const struct summary_tc *tc = &s->tc[c];
        char a[32], b[32];
        summary_format_time(a, sizeof a, tc->compute_s);
        summary_format_time(b, sizeof b, tc->idle_s);
        fprintf(out, "%s TC%d %s busy, %s idle (mxu %.0f%%, vpu %.0f%%, hbm %.0f%%)%s",
                c ? ";" : "  chip 0:", c, a, b, s->total_time_s > 0 ? 100 * tc->mxu_s / s->total_time_s : 0,
                s->total_time_s > 0 ? 100 * tc->vpu_s / s->total_time_s : 0,
                s->total_time_s > 0 ? 100 * tc->hbm_s / s->total_time_s : 0,
                c + 1 == s->ntc ? "\n" : "");
    }
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
        summary_format_time(st, sizeof st, o->start_s);
        summary_format_time(tm, sizeof tm, o->time_s);
        fprintf(out, "%-20.20s %-22s %12s %12s %7.1f%% %-9s %10lld\n", o->name, o->kind, st, tm,
                100.0 * o->peak_frac, bound_name(o->bound), (long long)o->grid_steps);
    }
    char tt[32];
    summary_format_time(tt, sizeof tt, s->total_time_s);
    fprintf(out, "total %s", tt);
    if (s->unc.present) {
        char sg[32];
        summary_format_time(sg, sizeof sg, s->unc.sigma_s);
        fprintf(out, " \u00b1 %s (%.1f%%, 68%% band%s; docs/reference.md, \"Error bars\")",
                sg, 100.0 * s->unc.relative, s->unc.floored ? ", the model-step floor" : "");
    }
    fputc('\n', out);
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].tuned)
            summary_print_auto(s->ops[i].name, s->ops[i].tuned, out);
    if (s->timeline)
        print_timeline(s, out);
    if (s->model.present)
        print_model(s, out);
    if (s->program_json)
        print_program(s->program_json, out);
    summary_print_cost(s, out);
    print_why(s, out);
    if (s->faults_text)
        fputs(s->faults_text, out);
}

void summary_fini(struct summary *s)
{
    for (int i = 0; i < s->nops; i++) {
        free(s->ops[i].name);
        free(s->ops[i].op_name);
        free(s->ops[i].tuned);
    }
    for (int i = 0; i < s->nops; i++)
        free(s->ops[i].sub);
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
    free(s->program_json);
    free(s->chip);
    free(s->trace.chips);
    free(s->faults_json);
    free(s->faults_text);
    memset(s, 0, sizeof *s);
}
