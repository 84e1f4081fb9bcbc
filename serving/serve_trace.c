/* serving/serve_trace.c -- a serving run's trace.json (serving/serve_trace.h). */
#include "serving/serve_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/interrupt.h"
#include "base/xalloc.h"
#include "engine/trace_auto.h"

#define STEP_TID 0          /* the engine steps' thread in a replica's process */
#define CHECK_EVERY 4096    /* steps between looks at SIGINT */

size_t serve_trace_max_events(const struct serve_trace_opts *o)
{
    if (o->max_events)
        return o->max_events;
    if (o->level_set)
        return TRACE_DEFAULT_MAX_EVENTS;
    double n = trace_auto_max_bytes() / SERVE_TRACE_EVENT_BYTES;
    return n < (double)TRACE_DEFAULT_MAX_EVENTS ? (size_t)n : TRACE_DEFAULT_MAX_EVENTS;
}

/* The run (its replicas, one process each) and where its trace has got to. */
struct writer {
    struct trace *t;
    const struct serve_result *r;
    int nrep;                 /* replicas: process k is replica k */
    int64_t *next_same;       /* step k's replica's next step (r->steps: none) */
    double overhead_s;
    int64_t *poff, *pidx;     /* request i's preemptions: r->preempt[pidx[poff[i] ..
                                 poff[i + 1]]], in time order */
    struct trace_async_ev *ev;
    size_t evcap;
    int32_t *running, *waiting; /* each replica's counters' last samples (-1: none yet) */
    double *kv;
};

static void index_preemptions(struct writer *w)
{
    const struct serve_result *r = w->r;
    w->poff = xcalloc((size_t)r->count + 1, sizeof *w->poff);
    w->pidx = xcalloc((size_t)r->preemptions + 1, sizeof *w->pidx);
    for (int64_t i = 0; i < r->count; i++)
        w->poff[i + 1] = w->poff[i] + r->req[i].preemptions;
    int64_t *at = xcalloc((size_t)r->count + 1, sizeof *at);
    for (int64_t k = 0; k < r->preemptions; k++) {
        int64_t i = r->preempt[k].req;
        w->pidx[w->poff[i] + at[i]++] = k;
    }
    free(at);
}

static void ev_add(struct writer *w, size_t *n, bool begin, const char *name, double t_s,
                   const char *args)
{
    w->ev[(*n)++] = (struct trace_async_ev){begin, name, t_s, args};
}

/* The preempted spans of request 'i' that start in [t0, t1). */
static void add_preempted(struct writer *w, int64_t i, double t0, double t1, size_t *n)
{
    for (int64_t k = w->poff[i]; k < w->poff[i + 1]; k++) {
        const struct serve_preempt *p = &w->r->preempt[w->pidx[k]];
        if (p->t0_s < t0 || p->t0_s >= t1)
            continue;
        ev_add(w, n, true, "preempted", p->t0_s, NULL);
        ev_add(w, n, false, "preempted", p->t1_s > p->t0_s ? p->t1_s : p->t0_s, NULL);
    }
}

/* Request 'i' as an async track: the request, and in it queued (arrival to
 * first scheduled), prefill (to the first token), decode (to the last). */
static void put_request(struct writer *w, int64_t i)
{
    const struct serve_req *q = &w->r->req[i];
    size_t n = 0;
    xgrow(&w->ev, &w->evcap, 8 + 2 * (size_t)q->preemptions, sizeof *w->ev);
    char name[40], args[160];
    snprintf(name, sizeof name, "request %lld", (long long)i);
    snprintf(args, sizeof args, "\"input_len\": %lld, \"output_len\": %lld, \"preemptions\": %d",
             (long long)q->in, (long long)q->out, q->preemptions);
    ev_add(w, &n, true, name, q->arrival_s, args);
    if (q->sched_s > q->arrival_s) {
        ev_add(w, &n, true, "queued", q->arrival_s, NULL);
        ev_add(w, &n, false, "queued", q->sched_s, NULL);
    }
    ev_add(w, &n, true, "prefill", q->sched_s, NULL);
    add_preempted(w, i, q->sched_s, q->first_s, &n);
    ev_add(w, &n, false, "prefill", q->first_s, NULL);
    if (q->finish_s > q->first_s) {
        ev_add(w, &n, true, "decode", q->first_s, NULL);
        add_preempted(w, i, q->first_s, q->finish_s, &n);
        ev_add(w, &n, false, "decode", q->finish_s, NULL);
    }
    ev_add(w, &n, false, name, q->finish_s, NULL);
    trace_async(w->t, q->replica, "request", i, w->ev, n);
}

/* Replica 'p''s counters at 't_s', each sampled when it changes. */
static void put_counters(struct writer *w, int p, double t_s, int32_t running, int32_t waiting,
                         double kv)
{
    if (running != w->running[p])
        trace_counter(w->t, TRACE_OPS, p, "running seqs", t_s, running);
    if (waiting != w->waiting[p])
        trace_counter(w->t, TRACE_OPS, p, "waiting seqs", t_s, waiting);
    if (kv != w->kv[p])
        trace_counter(w->t, TRACE_OPS, p, "kv cache use", t_s, kv);
    w->running[p] = running, w->waiting[p] = waiting, w->kv[p] = kv;
}

/* Step 'k' as a span with its batch, and the counters at its start; when the
 * engine idles after it (the next step starts later), they fall to 0 at its
 * end: nothing runs, waits or holds a page while it idles. */
static void put_step(struct writer *w, int64_t k)
{
    const struct serve_result *r = w->r;
    const struct serve_step *s = &r->step[k];
    double end_s = s->start_s + (w->overhead_s + s->device_s); /* as serve.c adds it */
    char name[40], args[320];
    snprintf(name, sizeof name, "step %lld", (long long)k);
    snprintf(args, sizeof args,
             "\"sequences\": %d, \"decode_seqs\": %d, \"prefill_tokens\": %lld, "
             "\"batch_tokens\": %lld, \"kv_pages_used\": %lld, \"device_s\": %.9g, "
             "\"overhead_s\": %.9g",
             s->seqs, s->decodes, (long long)(s->tokens - s->decodes), (long long)s->tokens,
             (long long)s->kv_pages_used, s->device_s, w->overhead_s);
    int p = s->replica;
    trace_span(w->t, p, STEP_TID, "step", name, s->start_s, end_s, args);
    put_counters(w, p, s->start_s, s->running, s->waiting,
                 r->kv_pages > 0 ? (double)s->kv_pages_used / (double)r->kv_pages : 0);
    int64_t nx = w->next_same[k];
    if (nx == r->steps || r->step[nx].start_s > end_s)
        put_counters(w, p, end_s, 0, 0, 0);
}

/* Each step's replica's next step, and the per-replica counter samples. */
static void index_replicas(struct writer *w)
{
    const struct serve_result *r = w->r;
    int64_t *last = xcalloc((size_t)w->nrep, sizeof *last);
    w->next_same = xcalloc((size_t)r->steps + 1, sizeof *w->next_same);
    for (int p = 0; p < w->nrep; p++)
        last[p] = r->steps;
    for (int64_t k = r->steps - 1; k >= 0; k--) {
        int p = r->step[k].replica;
        w->next_same[k] = last[p];
        last[p] = k;
    }
    free(last);
    w->running = xcalloc((size_t)w->nrep, sizeof *w->running);
    w->waiting = xcalloc((size_t)w->nrep, sizeof *w->waiting);
    w->kv = xcalloc((size_t)w->nrep, sizeof *w->kv);
    for (int p = 0; p < w->nrep; p++) {
        char name[32];
        snprintf(name, sizeof name, "replica %d", p);
        trace_process(w->t, p, name);
        trace_thread(w->t, p, STEP_TID, "engine steps", 0);
        w->running[p] = w->waiting[p] = -1, w->kv[p] = -1;
    }
}

/* The replicas' events in time order: before each step, the requests that
 * arrived by its start. Returns 0 or 130 (interrupted). */
static int put_replicas(struct writer *w)
{
    const struct serve_result *r = w->r;
    index_replicas(w);
    index_preemptions(w);
    int64_t i = 0;
    int rc = 0;
    for (int64_t k = 0; k < r->steps && rc == 0; k++) {
        for (; i < r->count && r->req[i].arrival_s <= r->step[k].start_s; i++)
            put_request(w, i);
        put_step(w, k);
        if (k % CHECK_EVERY == CHECK_EVERY - 1 && interrupt_pending())
            rc = 130;
    }
    for (; i < r->count && rc == 0; i++)
        put_request(w, i);
    free(w->poff);
    free(w->pidx);
    free(w->ev);
    free(w->next_same);
    free(w->running);
    free(w->waiting);
    free(w->kv);
    return rc;
}

/* When the cap dropped events: says so in the trace's metadata. */
static void meta_cap(struct trace *t)
{
    struct trace_stats st;
    trace_stats(t, &st);
    if (!st.dropped)
        return;
    char msg[256];
    snprintf(msg, sizeof msg,
             "incomplete: %zu events dropped past --trace-max-events %zu; every event that "
             "starts before %.9g s is here",
             st.dropped, st.max_events, st.complete_until_s);
    trace_meta(t, "capped", msg);
}

int serve_trace_write(const char *path, const struct cfg_scenario *sc,
                      const struct serve_result *r, const struct serve_trace_opts *o,
                      struct trace_stats *st, struct diag *d)
{
    struct trace_opts to = {.level = o->level, .max_events = serve_trace_max_events(o),
                            .window = o->window, .window_t0_s = o->window_t0_s,
                            .window_t1_s = o->window_t1_s, .prefix = true};
    struct trace *t = trace_new(&to);
    if (trace_open(t, path) != 0) {
        diag_error(d, NULL, NULL, "cannot write %s: %s", path, strerror(errno));
        trace_free(t);
        return 1;
    }
    trace_meta(t, "scenario", sc->name);
    trace_meta(t, "chip", sc->chip.name);
    trace_meta(t, "run", "serving");
    struct writer w = {.t = t, .r = r, .nrep = r->replicas > 1 ? r->replicas : 1,
                       .overhead_s = sc->serve->step_overhead_s};
    int rc = put_replicas(&w);
    if (rc == 0) {
        meta_cap(t);
        if (trace_close(t) != 0) {
            diag_error(d, NULL, NULL, "cannot write %s: %s", path, strerror(errno));
            rc = 1;
        }
    }
    trace_stats(t, st);
    trace_free(t); /* an unclosed (interrupted) trace's temporary goes with it */
    return rc;
}
