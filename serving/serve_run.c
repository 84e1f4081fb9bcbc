/* serving/serve_run.c -- a serving run and its outputs (serving/serve_run.h). */
#include "serving/serve_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/interrupt.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "config/cfg_serve.h"
#include "serving/serve.h"
#include "serving/serve_disagg.h"
#include "serving/serve_fleet.h"
#include "serving/serve_price.h"
#include "serving/serve_spec.h"
#include "workload/model.h"
#include "serving/serve_trace.h"

/* The distributions a serving run reports, in seconds. */
struct serve_dists {
    struct serve_dist ttft, tpot, itl, e2e;
    int64_t good;            /* completed requests within the SLO */
    int64_t in_tokens, out_tokens;
};

static void dists_of(const struct serve_cfg *c, const struct serve_result *r,
                     struct serve_dists *ds)
{
    memset(ds, 0, sizeof *ds);
    double *ttft = xcalloc((size_t)r->count, sizeof *ttft);
    double *tpot = xcalloc((size_t)r->count, sizeof *tpot);
    double *e2e = xcalloc((size_t)r->count, sizeof *e2e);
    int64_t n = 0, nt = 0;
    for (int64_t i = 0; i < r->count; i++) {
        const struct serve_req *q = &r->req[i];
        if (q->finish_s < 0)
            continue;
        ttft[n] = q->first_s - q->arrival_s;
        e2e[n++] = q->finish_s - q->arrival_s;
        double tp = q->out > 1 ? (q->finish_s - q->first_s) / (double)(q->out - 1) : 0;
        if (q->out > 1)
            tpot[nt++] = tp;
        ds->in_tokens += q->in, ds->out_tokens += q->out;
        if ((!c->slo_ttft_s || ttft[n - 1] <= c->slo_ttft_s) && (!c->slo_tpot_s || tp <= c->slo_tpot_s))
            ds->good++;
    }
    serve_dist_of(ttft, n, &ds->ttft);
    serve_dist_of(tpot, nt, &ds->tpot);
    serve_dist_of(e2e, n, &ds->e2e);
    serve_itl_dist(r, &ds->itl);
    free(ttft);
    free(tpot);
    free(e2e);
}

static double per_s(double x, double s)
{
    return s > 0 ? x / s : 0;
}

static void put_dist(FILE *f, const char *key, const struct serve_dist *d, bool last)
{
    fprintf(f, "    \"%s\": {\"mean\": %.9g, \"p50\": %.9g, \"p90\": %.9g, \"p99\": %.9g}%s\n", key,
            d->mean, d->p50, d->p90, d->p99, last ? "" : ",");
}

/* The run's cost (docs/reference.md, "Cost, energy and time to train"): every chip
 * for the run's duration at the price in use, per million output tokens; the
 * energy at idle power plus (TDP - idle) x the device's busy fraction. */
static void write_cost(FILE *f, const struct cfg_scenario *sc, const struct serve_result *r,
                       const struct serve_dists *ds)
{
    int chips = cfg_total_chips(sc);
    double price = sc->cost.price_usd_per_chip_hour;
    if (price > 0) {
        double usd = chips * price * r->duration_s / 3600.0;
        fprintf(f, ",\n  \"cost\": {\"commitment\": \"%s\", \"usd_per_chip_hour\": %.9g, "
                   "\"chips\": %d, \"usd\": %.9e, \"usd_per_million_output_tokens\": ",
                sc->cost.price_given ? "given" : cfg_commitment_name(sc->cost.commitment), price,
                chips, usd);
        if (ds->out_tokens > 0)
            fprintf(f, "%.9e}", usd / ((double)ds->out_tokens / 1e6));
        else
            fputs("null}", f);
    }
    const struct chip_params *ch = &sc->chip;
    if (ch->tdp_w > 0) {
        double u = per_s(r->device_s, r->duration_s * r->replicas); /* of every replica */
        double w = ch->idle_w + (ch->tdp_w - ch->idle_w) * (u > 1 ? 1 : u);
        double j = chips * w * r->duration_s;
        fprintf(f, ",\n  \"energy\": {\"tdp_w\": %.9g, \"idle_w\": %.9g, "
                   "\"utilization\": %.6f, \"avg_power_w_per_chip\": %.9e, \"joules\": %.9e, "
                   "\"joules_per_million_output_tokens\": ",
                ch->tdp_w, ch->idle_w, u > 1 ? 1 : u, w, j);
        if (ds->out_tokens > 0)
            fprintf(f, "%.9e}", j / ((double)ds->out_tokens / 1e6));
        else
            fputs("null}", f);
    }
}

/* Replicas behind a router: how many, the policy, each one's share. */
static void write_replicas(FILE *f, const struct serve_cfg *c, const struct serve_result *r)
{
    fprintf(f, ",\n    \"replicas\": %d,\n    \"router\": {\"policy\": \"%s\"},\n"
               "    \"per_replica\": [",
            r->replicas, serve_router_names[c->router]);
    for (int k = 0; k < r->replicas; k++) {
        const struct serve_replica *p = &r->per_replica[k];
        fprintf(f, "%s\n      {\"requests\": %lld, \"steps\": %lld, \"mean_batch\": %.6g, "
                   "\"kv_peak_fraction\": %.6g}",
                k ? "," : "", (long long)p->requests, (long long)p->steps,
                per_s(p->batch_seqs_sum, (double)p->steps),
                per_s((double)p->kv_peak_pages, (double)r->kv_pages));
    }
    fputs("\n    ]", f);
}

/* The summary's trace object: the keys of a model run's (outputs/summary.c). */
static void write_trace(FILE *f, const struct trace_stats *st, const struct serve_trace_opts *o)
{
    fprintf(f, ",\n  \"trace\": {\"level\": \"%s\", \"path\": %s, \"events\": %zu, "
               "\"dropped\": %zu, \"filtered\": %zu, \"max_events\": %zu, \"bytes\": %llu, "
               "\"window_s\": ",
            trace_level_name(st->level), st->level == TRACE_NONE ? "null" : "\"trace.json\"",
            st->events, st->dropped, st->filtered, st->max_events, (unsigned long long)st->bytes);
    if (o->window)
        fprintf(f, "[%.9g, %.9g]", o->window_t0_s, o->window_t1_s);
    else
        fputs("null", f);
    fprintf(f, ", \"complete\": %s, \"complete_until_s\": ", st->dropped ? "false" : "true");
    if (st->dropped)
        fprintf(f, "%.9g}", st->complete_until_s);
    else
        fputs("null}", f);
}

/* Prefill/decode disaggregation: the engines of each kind, the KV transfers
 * (each the prompt's cache on every chip of an engine). */
static void write_disagg(FILE *f, const struct cfg_scenario *sc, const struct serve_result *r)
{
    const struct serve_cfg *c = sc->serve;
    double *x = xcalloc((size_t)r->count + 1, sizeof *x);
    double bytes = 0;
    int64_t n = 0;
    int engine_chips = cfg_total_chips(sc) / r->replicas;
    for (int64_t i = 0; i < r->count; i++)
        if (r->req[i].finish_s >= 0 && r->req[i].out > 1) {
            x[n++] = r->req[i].kv_transfer_s;
            bytes += c->kv_bytes_per_token * engine_chips * (double)r->req[i].in;
        }
    struct serve_dist d;
    serve_dist_of(x, n, &d);
    fprintf(f, ",\n    \"disaggregation\": {\"prefill_engines\": %d, \"decode_engines\": %d, "
               "\"kv_transfer\": \"%s\", \"kv_transfers\": %lld, \"kv_transfer_bytes_mean\": %.9g, "
               "\"kv_transfer_s_mean\": %.9g, \"kv_transfer_s_p99\": %.9g}",
            r->prefill_engines, r->replicas - r->prefill_engines,
            serve_kv_transfer_names[c->kv_transfer], (long long)n, per_s(bytes, (double)n),
            d.mean, d.p99);
    free(x);
}

/* Speculative decoding: vLLM's spec_decode metrics (drafts, draft and accepted
 * tokens, the mean acceptance length: tokens a verifying step emits) and the
 * draft model's share of the device time. */
static void write_spec(FILE *f, const struct serve_cfg *c, const struct serve_result *r)
{
    fprintf(f, ",\n    \"speculative\": {\"num_speculative_tokens\": %d, \"acceptance_rate\": "
               "%.9g, \"num_drafts\": %lld, \"num_draft_tokens\": %lld, "
               "\"num_accepted_tokens\": %lld, \"draft_acceptance_rate\": %.9g, "
               "\"mean_acceptance_length\": %.9g, \"draft_device_s\": %.9g, "
               "\"draft_device_fraction\": %.6g}",
            c->spec_tokens, c->spec_acceptance, (long long)r->spec_verifies,
            (long long)r->spec_drafts, (long long)r->spec_accepted,
            per_s((double)r->spec_accepted, (double)r->spec_drafts),
            1 + per_s((double)r->spec_accepted, (double)r->spec_verifies), r->spec_draft_s,
            per_s(r->spec_draft_s, r->device_s));
}

static void write_summary(FILE *f, const struct cfg_scenario *sc, const struct serve_result *r,
                          const struct serve_dists *ds, const struct serve_price_stats *ps,
                          const struct trace_stats *ts, const struct serve_trace_opts *to)
{
    const struct serve_cfg *c = sc->serve;
    fprintf(f, "{\n  \"scenario\": ");
    json_write_string(f, sc->name);
    fprintf(f, ",\n  \"chip\": ");
    json_write_string(f, sc->chip.name);
    fprintf(f, ",\n  \"chips\": %d,\n  \"total_time_s\": %.9g,\n", cfg_total_chips(sc),
            r->duration_s);
    fprintf(f, "  \"serving\": {\n    \"requests\": %lld,\n    \"completed\": %lld,\n",
            (long long)r->count, (long long)r->completed);
    fprintf(f, "    \"duration_s\": %.9g,\n    \"request_throughput\": %.9g,\n", r->duration_s,
            per_s((double)r->completed, r->duration_s));
    fprintf(f, "    \"input_tokens_per_s\": %.9g,\n    \"output_tokens_per_s\": %.9g,\n",
            per_s((double)ds->in_tokens, r->duration_s),
            per_s((double)ds->out_tokens, r->duration_s));
    put_dist(f, "ttft_s", &ds->ttft, false);
    put_dist(f, "tpot_s", &ds->tpot, false);
    put_dist(f, "itl_s", &ds->itl, false);
    put_dist(f, "e2e_s", &ds->e2e, false);
    fprintf(f, "    \"goodput\": {\"requests\": %lld, \"requests_per_s\": %.9g, \"slo_ttft_s\": "
               "%.9g, \"slo_tpot_s\": %.9g},\n",
            (long long)ds->good, per_s((double)ds->good, r->duration_s), c->slo_ttft_s,
            c->slo_tpot_s);
    fprintf(f, "    \"kv_cache\": {\"pages\": %lld, \"page_size\": %lld, \"peak_pages\": %lld, "
               "\"peak_fraction\": %.6g},\n",
            (long long)r->kv_pages, (long long)c->page_size, (long long)r->kv_peak_pages,
            per_s((double)r->kv_peak_pages, (double)r->kv_pages));
    fprintf(f, "    \"preemptions\": %lld,\n    \"steps\": %lld,\n", (long long)r->preemptions,
            (long long)r->steps);
    fprintf(f, "    \"mean_batch\": {\"sequences\": %.6g, \"tokens\": %.6g},\n",
            per_s(r->batch_seqs_sum, (double)r->steps),
            per_s(r->batch_tokens_sum, (double)r->steps));
    fprintf(f, "    \"device_busy_fraction\": %.6g,\n    \"step_overhead_s\": %.9g,\n",
            per_s(r->device_s, r->duration_s * r->replicas), c->step_overhead_s);
    fprintf(f, "    \"overloaded\": %s,\n    \"max_waiting\": %lld,\n",
            r->overloaded ? "true" : "false", (long long)r->max_waiting);
    fprintf(f, "    \"step_memo\": {\"buckets_per_octave\": %d, \"lookups\": %lld, "
               "\"signatures\": %lld, \"engine_runs\": %lld, \"wall_s\": %.6g",
            c->buckets_per_octave, (long long)ps->lookups, (long long)ps->signatures,
            (long long)ps->runs, ps->wall_s);
    if (c->memo_verify_every)
        fprintf(f, ", \"verified\": %lld, \"error_mean\": %.6g, \"error_max\": %.6g",
                (long long)ps->verified, per_s(ps->error_sum, (double)ps->verified),
                ps->error_max);
    fputs("}", f);
    if (r->replicas > 1)
        write_replicas(f, c, r);
    if (r->prefill_engines)
        write_disagg(f, sc, r);
    if (c->spec_tokens)
        write_spec(f, c, r);
    fputs("\n  }", f);
    write_cost(f, sc, r, ds);
    write_trace(f, ts, to);
    fputs("\n}\n", f);
}

static void write_requests(FILE *f, const struct serve_result *r)
{
    fprintf(f, "request,arrival_s,first_token_s,finish_s,input_len,output_len,ttft_s,tpot_s,"
               "e2e_s,preemptions%s%s\n", r->replicas > 1 ? ",replica" : "",
            r->prefill_engines ? ",kv_transfer_s" : "");
    for (int64_t i = 0; i < r->count; i++) {
        const struct serve_req *q = &r->req[i];
        double tpot = q->out > 1 ? (q->finish_s - q->first_s) / (double)(q->out - 1) : 0;
        fprintf(f, "%lld,%.9g,%.9g,%.9g,%lld,%lld,%.9g,%.9g,%.9g,%d", (long long)i,
                q->arrival_s, q->first_s, q->finish_s, (long long)q->in, (long long)q->out,
                q->first_s - q->arrival_s, tpot, q->finish_s - q->arrival_s, q->preemptions);
        if (r->replicas > 1) /* one engine's file stays as it was */
            fprintf(f, ",%d", q->replica);
        if (r->prefill_engines)
            fprintf(f, ",%.9g", q->kv_transfer_s);
        fputc('\n', f);
    }
}

static void write_steps(FILE *f, const struct serve_result *r, double overhead_s)
{
    fprintf(f, "step,start_s,device_s,overhead_s,sequences,decodes,tokens%s\n",
            r->replicas > 1 ? ",replica" : "");
    for (int64_t i = 0; i < r->steps; i++) {
        const struct serve_step *s = &r->step[i];
        fprintf(f, "%lld,%.9g,%.9g,%.9g,%d,%d,%lld", (long long)i, s->start_s, s->device_s,
                overhead_s, s->seqs, s->decodes, (long long)s->tokens);
        if (r->replicas > 1)
            fprintf(f, ",%d", s->replica);
        fputc('\n', f);
    }
}

/* Writes 'name' in the out dir with 'fn'. Returns 0 or 1. */
static int write_file(const char *dir, const char *name, void (*fn)(FILE *, const void *),
                      const void *arg, struct diag *d)
{
    char *path = xasprintf("%s/%s", dir, name);
    struct fs_atomic a;
    int rc = 0;
    if (fs_atomic_open(&a, path) != 0) {
        rc = 1;
    } else {
        fn(a.f, arg);
        rc = fs_atomic_commit(&a) != 0;
    }
    if (rc)
        diag_error(d, NULL, NULL, "cannot write %s: %s", path, strerror(errno));
    free(path);
    return rc;
}

struct summary_args {
    const struct cfg_scenario *sc;
    const struct serve_result *r;
    const struct serve_dists *ds;
    const struct serve_price_stats *ps;
    const struct trace_stats *ts;
    const struct serve_trace_opts *to;
};

static void summary_fn(FILE *f, const void *arg)
{
    const struct summary_args *a = arg;
    write_summary(f, a->sc, a->r, a->ds, a->ps, a->ts, a->to);
}

static void requests_fn(FILE *f, const void *arg)
{
    write_requests(f, arg);
}

static void steps_fn(FILE *f, const void *arg)
{
    const struct summary_args *a = arg;
    write_steps(f, a->r, a->sc->serve->step_overhead_s);
}

/* The files written; with a trace, its events and size. */
static void print_wrote(const char *dir, const struct trace_stats *ts)
{
    printf("wrote %s/summary.json, %s/requests.csv, %s/steps.csv", dir, dir, dir);
    if (ts->level == TRACE_NONE) {
        printf(" (no trace: --trace none)\n");
        return;
    }
    if (ts->bytes >= 1000000)
        printf(", %s/trace.json (%zu events, %.1f MB", dir, ts->events, (double)ts->bytes / 1e6);
    else
        printf(", %s/trace.json (%zu events, %.1f kB", dir, ts->events, (double)ts->bytes / 1e3);
    printf("; open in https://ui.perfetto.dev)\n");
}

/* A capped trace: what it lacks and how to get it (said even with --quiet). */
static void print_capped(const struct trace_stats *ts, FILE *out)
{
    if (ts->dropped)
        fprintf(out, "warning: trace.json is incomplete: %zu events dropped past "
                     "--trace-max-events %zu (every event that starts before %.6g s is in it); "
                     "--trace-max-events %zu keeps them all, --trace-window START:END a part\n",
                ts->dropped, ts->max_events, ts->complete_until_s, ts->events + ts->dropped);
}

static void print_headline(const struct cfg_scenario *sc, const struct serve_result *r,
                           const struct serve_dists *ds, const struct serve_price_stats *ps,
                           double wall_s, const char *dir, const struct trace_stats *ts)
{
    const struct serve_cfg *c = sc->serve;
    char lens[96];
    if (c->trace.n || c->in_len.kind != SERVE_LEN_FIXED || c->out_len.kind != SERVE_LEN_FIXED) {
        double in = 0, out = 0; /* drawn or traced: their means */
        for (int64_t i = 0; i < r->count; i++)
            in += (double)r->req[i].in, out += (double)r->req[i].out;
        snprintf(lens, sizeof lens, "mean %.1f in, %.1f out tokens", in / (double)r->count,
                 out / (double)r->count);
    } else {
        snprintf(lens, sizeof lens, "%lld in, %lld out tokens", (long long)c->input_len,
                 (long long)c->output_len);
    }
    printf("serving %lld requests (%s) on %d %s chips: %.3f s, %.3f req/s, "
           "%.1f output tokens/s\n",
           (long long)r->count, lens, cfg_total_chips(sc), sc->chip.name, r->duration_s,
           per_s((double)r->completed, r->duration_s),
           per_s((double)ds->out_tokens, r->duration_s));
    printf("  TTFT mean %.2f ms, p50 %.2f, p99 %.2f; TPOT mean %.2f ms, p99 %.2f; ITL p50 %.2f ms\n",
           1e3 * ds->ttft.mean, 1e3 * ds->ttft.p50, 1e3 * ds->ttft.p99, 1e3 * ds->tpot.mean,
           1e3 * ds->tpot.p99, 1e3 * ds->itl.p50);
    printf("  %lld steps, mean batch %.1f sequences / %.0f tokens, KV cache peak %.1f%% of %lld "
           "pages, %lld preemptions",
           (long long)r->steps, per_s(r->batch_seqs_sum, (double)r->steps),
           per_s(r->batch_tokens_sum, (double)r->steps),
           100 * per_s((double)r->kv_peak_pages, (double)r->kv_pages), (long long)r->kv_pages,
           (long long)r->preemptions);
    if (c->slo_ttft_s || c->slo_tpot_s)
        printf(", goodput %.3f req/s (%lld within the SLO)",
               per_s((double)ds->good, r->duration_s), (long long)ds->good);
    printf("\n");
    if (r->replicas > 1) {
        printf("  %d replicas behind a %s router; requests each:", r->replicas,
               serve_router_names[c->router]);
        int64_t lo = r->count, hi = 0;
        for (int k = 0; k < r->replicas; k++) {
            int64_t n = r->per_replica[k].requests;
            lo = n < lo ? n : lo, hi = n > hi ? n : hi;
            if (r->replicas <= 8)
                printf(" %lld", (long long)n);
        }
        if (r->replicas > 8)
            printf(" %lld to %lld", (long long)lo, (long long)hi);
        printf("\n");
    }
    if (r->prefill_engines) {
        double x = 0;
        int64_t n = 0;
        for (int64_t i = 0; i < r->count; i++)
            if (r->req[i].out > 1)
                x += r->req[i].kv_transfer_s, n++;
        printf("  disaggregated: %d prefill and %d decode engines, KV over %s: %.3f ms per "
               "transfer\n", r->prefill_engines, r->replicas - r->prefill_engines,
               serve_kv_transfer_names[c->kv_transfer], 1e3 * per_s(x, (double)n));
    }
    if (c->spec_tokens)
        printf("  speculative decoding: %d draft tokens a step, %.0f%% accepted, mean acceptance "
               "length %.2f; the draft's passes %.1f%% of the device time\n",
               c->spec_tokens, 100 * per_s((double)r->spec_accepted, (double)r->spec_drafts),
               1 + per_s((double)r->spec_accepted, (double)r->spec_verifies),
               100 * per_s(r->spec_draft_s, r->device_s));
    if (r->overloaded)
        printf("  overloaded: %g requests/s arrive, %.3f/s are served; TTFT grows without bound\n",
               c->rate_per_s, per_s((double)r->completed, r->duration_s));
    printf("  %lld step lookups, %lld signatures, %lld engine runs, %.2f s simulated in %.2f s\n",
           (long long)ps->lookups, (long long)ps->signatures, (long long)ps->runs, r->duration_s,
           wall_s);
    if (c->memo_verify_every)
        printf("  step memo against %lld steps priced exactly: error mean %.3f%%, max %.3f%%\n",
               (long long)ps->verified, 100 * per_s(ps->error_sum, (double)ps->verified),
               100 * ps->error_max);
    print_wrote(dir, ts);
    print_capped(ts, stdout);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Writes the trace into a new stage in 'dir' ('*stage' gets its path). Returns
 * 0, 1 or 130 (interrupted: the stage is gone). */
static int stage_trace(const struct cfg_scenario *sc, const struct serve_result *r,
                       const struct serve_run_opts *o, char **stage, struct trace_stats *ts,
                       struct diag *d)
{
    *stage = xasprintf("%s/" FS_STAGE_PREFIX "XXXXXX", o->out_dir);
    if (!mkdtemp(*stage)) {
        diag_error(d, NULL, NULL, "cannot create a staging directory in %s: %s", o->out_dir,
                   strerror(errno));
        free(*stage);
        *stage = NULL;
        return 1;
    }
    char *path = xasprintf("%s/trace.json", *stage);
    int rc = serve_trace_write(path, sc, r, &o->trace, ts, d);
    free(path);
    if (rc != 0) {
        fs_remove_tree(*stage);
        free(*stage);
        *stage = NULL;
    }
    return rc;
}

/* Moves the staged trace beside the others, or (no stage: no trace) removes
 * an earlier run's. Returns 0 or 1. */
static int commit_trace(const char *dir, const char *stage, struct diag *d)
{
    char *to = xasprintf("%s/trace.json", dir);
    int rc = 0;
    if (stage) {
        char *from = xasprintf("%s/trace.json", stage);
        if (rename(from, to) != 0)
            rc = 1, diag_error(d, NULL, NULL, "cannot write %s: %s", to, strerror(errno));
        free(from);
    } else if (unlink(to) != 0 && errno != ENOENT) {
        rc = 1, diag_error(d, NULL, NULL, "cannot remove %s: %s", to, strerror(errno));
    }
    free(to);
    return rc;
}

/* The outputs of a finished run: the trace (staged), then summary.json,
 * requests.csv and steps.csv, then the trace moved in. */
static int write_outputs(const struct cfg_scenario *sc, const struct serve_result *r,
                         const struct serve_price_stats *ps, const struct serve_run_opts *o,
                         double t0, struct diag *d)
{
    struct trace_stats ts = {0};
    char *stage = NULL;
    int rc = o->trace.level != TRACE_NONE ? stage_trace(sc, r, o, &stage, &ts, d) : 0;
    if (rc == 130)
        diag_error(d, NULL, NULL, "interrupted: summary.json, requests.csv, steps.csv and "
                   "trace.json not written");
    struct serve_dists ds;
    dists_of(sc->serve, r, &ds);
    struct summary_args a = {sc, r, &ds, ps, &ts, &o->trace};
    if (rc == 0)
        rc = write_file(o->out_dir, "summary.json", summary_fn, &a, d);
    if (rc == 0)
        rc = write_file(o->out_dir, "requests.csv", requests_fn, r, d);
    if (rc == 0)
        rc = write_file(o->out_dir, "steps.csv", steps_fn, &a, d);
    if (rc == 0)
        rc = commit_trace(o->out_dir, stage, d);
    if (stage)
        fs_remove_tree(stage);
    free(stage);
    if (rc == 0 && !o->quiet)
        print_headline(sc, r, &ds, ps, wall_now() - t0, o->out_dir, &ts);
    else if (rc == 0)
        print_capped(&ts, stderr);
    return rc;
}

int serve_run(const struct cfg_scenario *sc, const struct serve_run_opts *o, struct diag *d)
{
    double t0 = wall_now();
    struct sigaction old_sigint;
    interrupt_catch(&old_sigint);
    struct serve_pricer *p = serve_pricer_new(sc, o->sg_argc, o->sg_argv, d);
    /* speculative decoding: the draft's steps priced as the target's, its model in
     * a copy of the scenario (the pricer reads the model from there) */
    struct model_step draft_ms = {0};
    struct cfg_scenario draft_sc = *sc;
    struct serve_pricer *pd = NULL;
    struct serve_spec_pricer sp = {0};
    serve_price_fn fn = serve_price;
    void *ctx = p;
    if (sc->serve->spec_tokens) {
        draft_ms.m = *sc->serve->draft;
        draft_sc.model = &draft_ms;
        pd = serve_pricer_new(&draft_sc, o->sg_argc, o->sg_argv, d);
        serve_spec_pricer_init(&sp, serve_price, p, serve_price, pd, sc->serve->max_num_seqs);
        fn = serve_spec_price, ctx = &sp;
    }
    struct serve_result r;
    int rc = sc->serve->prefill_engines ? serve_disagg_simulate(sc->serve, fn, ctx, &r)
             : sc->serve->replicas > 1 && !sc->serve->jetstream
                 ? serve_fleet_simulate(sc->serve, fn, ctx, &r)
                 : serve_simulate(sc->serve, fn, ctx, &r);
    r.spec_draft_s = sp.draft_s;
    if (rc == 1 && serve_pricer_rc(p))
        rc = serve_pricer_rc(p);
    else if (rc == 1 && pd && serve_pricer_rc(pd))
        rc = serve_pricer_rc(pd);
    else if (rc == 1)
        diag_error(d, NULL, "serve", "the scheduler could not form a step");
    struct serve_price_stats ps;
    serve_pricer_stats(p, &ps);
    if (rc == 130 || interrupt_pending()) {
        rc = 130;
        diag_error(d, NULL, NULL, "interrupted: summary.json, requests.csv, steps.csv and "
                   "trace.json not written");
    }
    if (rc == 0)
        rc = write_outputs(sc, &r, &ps, o, t0, d);
    serve_result_fini(&r);
    serve_pricer_free(p);
    serve_pricer_free(pd);
    if (pd)
        serve_spec_pricer_fini(&sp);
    interrupt_restore(&old_sigint);
    return rc;
}
