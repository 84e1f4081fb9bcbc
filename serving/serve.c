/* serving/serve.c -- the engine loop (its state between steps, struct serve_eng,
 * for serving/serve_fleet.c's replicas): arrivals, the FCFS continuous-batching
 * scheduler with chunked prefill and recompute preemption, the KV cache in
 * pages, each step priced by the caller; per-request times and the ITLs. */
#include "serving/serve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/interrupt.h"
#include "base/xalloc.h"
#include "serving/serve_traffic.h"

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* A request's tokens left to compute: its prompt's not cached, its outputs to come. */
static int64_t left(const struct serve_req *q)
{
    return (q->in > q->computed ? q->in - q->computed : 0) + q->out - q->generated;
}

/* The ring full: twice the slots, the queue from slot 0. */
static void wait_grow(struct serve_eng *e)
{
    int64_t cap = 2 * e->wcap;
    int64_t *w = xcalloc((size_t)cap, sizeof *w);
    for (int64_t k = 0; k < e->nwait; k++)
        w[k] = e->wait[(e->w0 + k) % e->wcap];
    free(e->wait);
    e->wait = w, e->w0 = 0, e->wcap = cap;
}

static void wait_push_back(struct serve_eng *e, int64_t i)
{
    if (e->nwait == e->wcap)
        wait_grow(e);
    e->wait[(e->w0 + e->nwait++) % e->wcap] = i;
}

static void wait_push_front(struct serve_eng *e, int64_t i)
{
    if (e->nwait == e->wcap)
        wait_grow(e);
    e->w0 = (e->w0 + e->wcap - 1) % e->wcap;
    e->wait[e->w0] = i;
    e->nwait++;
}

static int64_t wait_pop(struct serve_eng *e)
{
    int64_t i = e->wait[e->w0];
    e->w0 = (e->w0 + 1) % e->wcap, e->nwait--;
    return i;
}

void serve_eng_push(struct serve_eng *e, int64_t i)
{
    wait_push_back(e, i);
    e->outstanding += left(&e->r->req[i]);
}

bool serve_eng_busy(const struct serve_eng *e)
{
    return e->nrun > 0 || e->nwait > 0;
}

/* Requests that have arrived by 'now' join the waiting queue. */
static void arrive(struct serve_eng *e)
{
    while (e->issued < e->r->count && e->r->req[e->issued].arrival_s <= e->now)
        serve_eng_push(e, e->issued++);
    if (e->nwait > e->r->max_waiting)
        e->r->max_waiting = e->nwait;
}

/* The latest-admitted running request gives its pages back and waits again,
 * to be recomputed from its first token (vLLM's recompute preemption). */
static void preempt_last(struct serve_eng *e)
{
    int64_t i = e->run[--e->nrun];
    struct serve_req *q = &e->r->req[i];
    e->free_pages += q->pages;
    e->outstanding += q->computed < q->in ? q->computed : q->in;
    q->pages = q->computed = 0;
    q->preemptions++;
    struct serve_result *r = e->r;
    if ((r->preemptions & (r->preemptions - 1)) == 0) /* 0, 1, 2, 4, ...: double */
        r->preempt = xrealloc(r->preempt, sizeof *r->preempt *
                                              (size_t)(r->preemptions ? 2 * r->preemptions : 1));
    r->preempt[r->preemptions] = (struct serve_preempt){i, e->now, -1};
    q->preempt_open = r->preemptions++;
    wait_push_front(e, i);
}

/* splitmix64's finalizer: a well-mixed 64-bit hash of 'x'. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A uniform draw in [0, 1) for draft token 'j' of the step of request 'req'
 * at 'generated' tokens. */
static double draw_u01(uint64_t seed, int64_t req, int64_t generated, int64_t j)
{
    uint64_t h = mix64(seed ^ mix64((uint64_t)req ^ mix64((uint64_t)generated * 64 +
                                                           (uint64_t)j)));
    return (double)(h >> 11) * 0x1.0p-53;
}

int64_t serve_spec_accepted(const struct serve_cfg *c, int64_t req, int64_t generated,
                            int64_t drafts)
{
    int64_t a = 0;
    while (a < drafts && draw_u01(c->seed, req, generated, a) < c->spec_acceptance)
        a++;
    return a;
}

/* 'n' tokens of request 'i', of which 'draft' are draft tokens to verify. */
static void add_to_batch(struct serve_eng *e, int64_t i, int64_t n, int64_t draft)
{
    struct serve_req *q = &e->r->req[i];
    int64_t need = cdiv(q->computed + n, e->c->page_size) - q->pages;
    e->free_pages -= need;
    q->pages += need;
    e->b.q[e->b.n] = n;
    e->b.kv[e->b.n] = q->computed + n;
    e->b.draft[e->b.n] = draft;
    e->sched[e->b.n++] = i;
    e->b.tokens += n;
}

/* Speculative decoding: the draft tokens a decode of request 'q' verifies
 * within a 'budget' of tokens: num_speculative_tokens, fewer when its output
 * ends sooner (the step's own token comes on top of them). */
static int64_t drafts(const struct serve_cfg *c, const struct serve_req *q, int64_t budget)
{
    if (!c->spec_tokens || q->computed < q->in || q->in + q->generated - q->computed != 1)
        return 0; /* no drafts, or not a decode (a prefill chunk, a recompute) */
    int64_t d = q->out - q->generated - 1;
    d = d < c->spec_tokens ? d : c->spec_tokens;
    return d < budget - 1 ? d : budget - 1;
}

/* The running requests' tokens: a decode each, or their prompt's next chunk.
 * Returns true if one was preempted. */
static bool schedule_running(struct serve_eng *e, int64_t *budget)
{
    bool preempted = false;
    for (int64_t k = 0; k < e->nrun && *budget > 0; k++) {
        int64_t i = e->run[k];
        struct serve_req *q = &e->r->req[i];
        int64_t n = q->in + q->generated - q->computed;
        n = n < *budget ? n : *budget;
        int64_t d = drafts(e->c, q, *budget);
        n += d;
        int64_t need = cdiv(q->computed + n, e->c->page_size) - q->pages;
        while (need > e->free_pages && e->nrun > k) {
            preempt_last(e);
            preempted = true;
        }
        if (e->nrun <= k) /* it preempted itself */
            break;
        add_to_batch(e, i, n, d);
        *budget -= n;
    }
    return preempted;
}

/* The first waiting request joins the running set with a chunk of n tokens:
 * scheduled now, and out of preemption if it was preempted. */
static void admit_waiting(struct serve_eng *e, int64_t n)
{
    int64_t i = wait_pop(e);
    struct serve_req *q = &e->r->req[i];
    if (q->sched_s < 0)
        q->sched_s = e->now;
    if (q->preempt_open >= 0)
        e->r->preempt[q->preempt_open].t1_s = e->now, q->preempt_open = -1;
    e->run[e->nrun++] = i;
    add_to_batch(e, i, n, 0);
}

/* New requests, first come first served, while sequences, budget and pages allow. */
static void schedule_waiting(struct serve_eng *e, int64_t *budget)
{
    const struct serve_cfg *c = e->c;
    while (e->nwait > 0 && e->nrun < c->max_num_seqs && *budget > 0) {
        struct serve_req *q = &e->r->req[e->wait[e->w0]];
        int64_t n = q->in + q->generated - q->computed; /* a transferred KV: the decode */
        /* unchunked: whole, unless a recompute is longer than any budget */
        if (!c->chunked_prefill && n > *budget && n <= c->max_num_batched_tokens)
            break;
        n = n < *budget ? n : *budget;
        if (cdiv(q->computed + n, c->page_size) > e->free_pages)
            break;
        admit_waiting(e, n);
        *budget -= n;
    }
}

static void record_itl(struct serve_result *r, double itl_s)
{
    r->itl_sum += itl_s;
    r->itl_n++;
    int bin = itl_s > 1e-6 ? (int)floor(64.0 * log2(itl_s / 1e-6)) : 0;
    r->itl_bins[bin < 0 ? 0 : bin >= SERVE_ITL_BINS ? SERVE_ITL_BINS - 1 : bin]++;
}

/* A token of request 'i' at 'now'; a finished request frees its pages. A
 * step's further tokens ('burst': accepted drafts) reach the client with its
 * first (one streamed chunk, one inter-token latency, as benchmark clients
 * measure it). */
static void emit_token(struct serve_eng *e, int64_t i, bool burst)
{
    struct serve_req *q = &e->r->req[i];
    q->generated++;
    if (q->generated == 1)
        q->first_s = e->now;
    else if (!burst)
        record_itl(e->r, e->now - q->last_tok_s);
    q->last_tok_s = e->now;
    if (q->generated < q->out)
        return;
    q->finish_s = e->now;
    e->free_pages += q->pages;
    q->pages = 0;
    e->r->completed++;
    if (e->c->concurrency && *e->released < e->r->count) /* closed loop: the next one */
        e->r->req[(*e->released)++].arrival_s = e->now;
}

/* After a step: the batch's tokens are cached; finished requests leave. */
static void apply_step(struct serve_eng *e)
{
    for (int k = 0; k < e->b.n; k++) {
        struct serve_req *q = &e->r->req[e->sched[k]];
        int64_t before = left(q);
        int64_t d = e->b.draft[k], acc = d ? serve_spec_accepted(e->c, e->sched[k],
                                                                  q->generated, d) : 0;
        q->computed += e->b.q[k] - (d - acc); /* the rejected drafts' KV is dropped */
        if (d) {
            int64_t keep = cdiv(q->computed, e->c->page_size);
            e->free_pages += q->pages - keep;
            q->pages = keep;
            e->r->spec_verifies++, e->r->spec_drafts += d, e->r->spec_accepted += acc;
        }
        /* a step's own token, then each accepted draft */
        for (int64_t t = 0; q->computed >= q->in + q->generated && q->finish_s < 0; t++)
            emit_token(e, e->sched[k], t > 0);
        e->outstanding += left(q) - before;
    }
    int64_t m = 0;
    for (int64_t k = 0; k < e->nrun; k++)
        if (e->r->req[e->run[k]].finish_s < 0)
            e->run[m++] = e->run[k];
    e->nrun = m;
}

static void record_step(struct serve_eng *e, double dev_s)
{
    struct serve_result *r = e->r;
    if ((r->steps & (r->steps - 1)) == 0) /* 0, 1, 2, 4, ...: double */
        r->step = xrealloc(r->step, sizeof *r->step * (size_t)(r->steps ? 2 * r->steps : 1));
    struct serve_step *s = &r->step[r->steps];
    *s = (struct serve_step){.start_s = e->now, .device_s = dev_s, .seqs = e->b.n,
                             .tokens = e->b.tokens, .running = (int32_t)e->nrun,
                             .waiting = (int32_t)e->nwait,
                             .kv_pages_used = r->kv_pages - e->free_pages};
    for (int k = 0; k < e->b.n; k++)
        s->decodes += e->b.q[k] == 1 || e->b.draft[k] > 0;
}

/* JetStream's orchestrator (interleaved mode): while a request waits and a
 * slot is free, the generate thread waits for its prefill and insert, so a
 * step is one request's whole prompt alone; else a generate step over the
 * running slots. Its dense cache holds every slot's max_model_len: no
 * preemption (config/cfg.c sized the pages so). */
static void schedule_jetstream(struct serve_eng *e)
{
    int64_t budget = INT64_MAX;
    if (e->nwait > 0 && e->nrun < e->c->max_num_seqs) {
        int64_t i = e->wait[e->w0];
        const struct serve_req *q = &e->r->req[i];
        budget = q->in + q->generated - q->computed; /* this one alone */
        schedule_waiting(e, &budget);
        return;
    }
    schedule_running(e, &budget);
}

/* SGLang's prefill batch (scheduler: sglang; its PrefillAdder): the unfinished
 * chunked prompt's next chunk, then waiting requests first come first served
 * while sequences and pages allow, each taking its page-rounded tokens from the
 * chunk budget (chunked_prefill_size) and the input budget (max_prefill_tokens);
 * one longer than the chunk budget's whole pages left is cut there and chunked
 * (nothing joins after it); without chunking a request joins whole unless the
 * batch has one and its tokens reach the input budget. 'mixed' tokens (the
 * decodes of enable_mixed_chunk) come off both budgets first. Returns true if
 * the batch holds a prefill. */
static bool sglang_prefill(struct serve_eng *e, int64_t mixed)
{
    const struct serve_cfg *c = e->c;
    int64_t pg = c->page_size, chunk = c->chunked_prefill ? c->chunked_prefill_size - mixed
                                                           : INT64_MAX;
    int64_t input = c->max_prefill_tokens - mixed;
    bool cut = false;
    for (int64_t k = 0; k < e->nrun; k++) { /* the chunked prompt */
        struct serve_req *q = &e->r->req[e->run[k]];
        int64_t n = q->in + q->generated - q->computed, left_n = n;
        if (q->computed >= q->in || n <= 0)
            continue;
        n = n < chunk ? n : chunk > 0 ? chunk : pg;
        if (cdiv(q->computed + n, pg) - q->pages > e->free_pages)
            continue;
        add_to_batch(e, e->run[k], n, 0);
        cut = cut || n < left_n;
        chunk -= cdiv(n, pg) * pg, input -= cdiv(n, pg) * pg;
    }
    while (!cut && e->nwait > 0 && e->nrun < c->max_num_seqs && input > 0) {
        struct serve_req *q = &e->r->req[e->wait[e->w0]];
        int64_t n = q->in + q->generated - q->computed, paged = cdiv(n, pg) * pg;
        if (!c->chunked_prefill && paged >= input && e->b.tokens > 0)
            break;
        if (paged > chunk) {
            n = chunk / pg * pg, paged = n, cut = true;
            if (n <= 0)
                break;
        }
        if (cdiv(q->computed + n, pg) > e->free_pages)
            break;
        admit_waiting(e, n);
        chunk -= paged, input -= paged;
    }
    return e->b.n > 0;
}

/* SGLang's scheduler (scheduler: sglang; its get_next_batch_to_run): a prefill
 * batch whenever one can be formed, else a decode step over every running
 * request (retracting the latest when the KV cache is full). With
 * enable_mixed_chunk the running decodes join the prefill batch. */
static void schedule_sglang(struct serve_eng *e)
{
    int64_t mixed = 0;
    for (int64_t k = 0; k < e->nrun && e->c->mixed_chunk; k++)
        mixed += e->r->req[e->run[k]].computed >= e->r->req[e->run[k]].in;
    int64_t nrun = e->nrun; /* the requests running before this batch */
    if (sglang_prefill(e, mixed)) {
        for (int64_t k = 0; k < nrun && mixed; k++) { /* the decodes, while pages allow */
            struct serve_req *q = &e->r->req[e->run[k]];
            if (q->computed >= q->in &&
                cdiv(q->computed + 1, e->c->page_size) - q->pages <= e->free_pages)
                add_to_batch(e, e->run[k], 1, 0);
        }
        return;
    }
    int64_t budget = INT64_MAX;
    schedule_running(e, &budget);
}

/* A step's wall time: the host's step_overhead and then the device's, or with
 * async_scheduling, when the step follows the last one without a pause, the
 * longer of the two: the host prepared it while the device ran the last one. */
static double step_wall_s(const struct serve_eng *e, double dev_s)
{
    double host_s = e->c->step_overhead_s;
    if (e->c->async_scheduling && e->last_end_s >= 0 && e->now <= e->last_end_s)
        return host_s > dev_s ? host_s : dev_s;
    return host_s + dev_s;
}

int serve_eng_begin(struct serve_eng *e, serve_price_fn price, void *ctx)
{
    int64_t budget = e->c->max_num_batched_tokens;
    e->b.n = 0, e->b.tokens = 0;
    bool preempted = false;
    if (e->c->jetstream)
        schedule_jetstream(e);
    else if (e->c->sglang)
        schedule_sglang(e);
    else
        preempted = schedule_running(e, &budget);
    if (!preempted && !e->c->jetstream && !e->c->sglang)
        schedule_waiting(e, &budget);
    if (e->b.n == 0)
        return 1;
    int64_t used = e->r->kv_pages - e->free_pages;
    if (used > e->r->kv_peak_pages)
        e->r->kv_peak_pages = used;
    double dev_s = price(ctx, &e->b);
    if (!(dev_s >= 0))
        return 1;
    record_step(e, dev_s);
    e->now += step_wall_s(e, dev_s);
    e->last_end_s = e->now;
    e->r->device_s += dev_s;
    e->r->steps++;
    e->r->batch_seqs_sum += e->b.n;
    e->r->batch_tokens_sum += (double)e->b.tokens;
    return 0;
}

void serve_eng_end(struct serve_eng *e)
{
    apply_step(e);
}

/* One step: schedule, price, advance the clock, apply. Returns 0 or 1. */
static int step(struct serve_eng *e, serve_price_fn price, void *ctx)
{
    int rc = serve_eng_begin(e, price, ctx);
    if (rc == 0)
        serve_eng_end(e);
    return rc;
}

void serve_init_requests(const struct serve_cfg *c, struct serve_result *r)
{
    struct serve_traffic g;
    serve_traffic_start(&g, c);
    for (int64_t i = 0; i < r->count; i++) {
        struct serve_req *q = &r->req[i];
        *q = (struct serve_req){.first_s = -1, .finish_s = -1, .sched_s = -1,
                                .preempt_open = -1};
        serve_traffic_next(&g, &q->arrival_s, &q->in, &q->out);
    }
}

/* Open loop: overloaded when requests queue ever longer -- the last quarter's
 * mean TTFT above twice the first quarter's, and fewer requests served per
 * second than arrive. */
static bool overloaded(const struct serve_cfg *c, const struct serve_result *r)
{
    if (c->concurrency || r->completed < 8 || r->duration_s <= 0)
        return false;
    int64_t n = r->count / 4;
    double a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        a += r->req[i].first_s - r->req[i].arrival_s;
        b += r->req[r->count - 1 - i].first_s - r->req[r->count - 1 - i].arrival_s;
    }
    return b > 2 * a && (double)r->completed / r->duration_s < 0.9 * c->rate_per_s;
}

void serve_result_close(const struct serve_cfg *c, struct serve_result *r)
{
    double t0 = INFINITY, t1 = 0;
    for (int64_t i = 0; i < r->count; i++) {
        if (r->req[i].arrival_s < t0)
            t0 = r->req[i].arrival_s;
        if (r->req[i].finish_s > t1)
            t1 = r->req[i].finish_s;
    }
    r->duration_s = r->completed ? t1 - t0 : 0;
    r->overloaded = overloaded(c, r);
}

/* Moves the engines' preemption logs into 'r''s, in engine order. */
static void merge_preempts(struct serve_result *r, struct serve_result *parts, int n)
{
    int64_t total = 0, at = 0;
    for (int k = 0; k < n; k++)
        total += parts[k].preemptions;
    free(r->preempt);
    r->preempt = xcalloc((size_t)total + 1, sizeof *r->preempt);
    for (int k = 0; k < n; k++) {
        if (parts[k].preemptions)
            memcpy(r->preempt + at, parts[k].preempt,
                   sizeof *r->preempt * (size_t)parts[k].preemptions);
        at += parts[k].preemptions;
        free(parts[k].preempt);
        parts[k].preempt = NULL;
    }
}

void serve_result_gather(struct serve_result *r, struct serve_result *parts,
                         const int64_t *steps, int n)
{
    r->per_replica = xcalloc((size_t)n, sizeof *r->per_replica);
    for (int k = 0; k < n; k++) {
        const struct serve_result *rk = &parts[k];
        r->preemptions += rk->preemptions;
        r->spec_verifies += rk->spec_verifies, r->spec_drafts += rk->spec_drafts;
        r->spec_accepted += rk->spec_accepted;
        r->batch_seqs_sum += rk->batch_seqs_sum;
        r->batch_tokens_sum += rk->batch_tokens_sum;
        r->device_s += rk->device_s;
        r->itl_sum += rk->itl_sum;
        r->itl_n += rk->itl_n;
        for (int b = 0; b < SERVE_ITL_BINS; b++)
            r->itl_bins[b] += rk->itl_bins[b];
        if (rk->kv_peak_pages > r->kv_peak_pages)
            r->kv_peak_pages = rk->kv_peak_pages;
        r->per_replica[k] = (struct serve_replica){.steps = steps[k],
                                                   .batch_seqs_sum = rk->batch_seqs_sum,
                                                   .kv_peak_pages = rk->kv_peak_pages};
    }
    merge_preempts(r, parts, n);
}

void serve_eng_init(struct serve_eng *e, const struct serve_cfg *c, struct serve_result *r,
                    int64_t *released)
{
    *e = (struct serve_eng){.c = c, .r = r, .free_pages = c->kv_pages, .released = released,
                            .last_end_s = -1};
    size_t ms = (size_t)c->max_num_seqs;
    e->run = xcalloc(ms, sizeof *e->run);
    e->wcap = r->count < 256 ? (r->count > 0 ? r->count : 1) : 256; /* grows as needed */
    e->wait = xcalloc((size_t)e->wcap, sizeof *e->wait);
    e->sched = xcalloc(ms, sizeof *e->sched);
    e->b.q = xcalloc(ms, sizeof *e->b.q);
    e->b.kv = xcalloc(ms, sizeof *e->b.kv);
    e->b.draft = xcalloc(ms, sizeof *e->b.draft);
}

void serve_eng_fini(struct serve_eng *e)
{
    free(e->run);
    free(e->wait);
    free(e->sched);
    free(e->b.q);
    free(e->b.kv);
    free(e->b.draft);
}

int serve_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                   struct serve_result *r)
{
    memset(r, 0, sizeof *r);
    r->count = c->count;
    r->replicas = 1;
    r->kv_pages = c->kv_pages;
    r->req = xcalloc((size_t)c->count, sizeof *r->req);
    int64_t released = c->concurrency < c->count ? c->concurrency : c->count;
    struct serve_eng e;
    serve_eng_init(&e, c, r, &released);
    serve_init_requests(c, r);
    int rc = 0;
    while (rc == 0 && r->completed < r->count) {
        if (interrupt_pending()) {
            rc = 130;
            break;
        }
        arrive(&e);
        if (e.nrun == 0 && e.nwait == 0) { /* idle until the next arrival */
            e.now = r->req[e.issued].arrival_s;
            if (!isfinite(e.now))
                rc = 1;
            continue;
        }
        rc = step(&e, price, ctx);
    }
    serve_result_close(c, r);
    serve_eng_fini(&e);
    return rc;
}

void serve_result_fini(struct serve_result *r)
{
    free(r->req);
    free(r->step);
    free(r->per_replica);
    free(r->preempt);
    memset(r, 0, sizeof *r);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The 'p'th percentile of sorted 'v', as numpy's default (linear between ranks). */
static double pct(const double *v, int64_t n, double p)
{
    double x = p / 100.0 * (double)(n - 1);
    int64_t lo = (int64_t)floor(x);
    int64_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (x - (double)lo) * (v[hi] - v[lo]);
}

void serve_dist_of(double *v, int64_t n, struct serve_dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n < 1)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    d->mean = s / (double)n;
    d->p50 = pct(v, n, 50), d->p90 = pct(v, n, 90), d->p99 = pct(v, n, 99);
}

/* The value at rank 'k' (0-based) of the binned ITLs: its bin's geometric middle. */
static double itl_rank(const struct serve_result *r, int64_t k)
{
    int64_t seen = 0;
    for (int b = 0; b < SERVE_ITL_BINS; b++) {
        seen += r->itl_bins[b];
        if (seen > k)
            return 1e-6 * exp2((b + 0.5) / 64.0);
    }
    return 0;
}

void serve_itl_dist(const struct serve_result *r, struct serve_dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = r->itl_n;
    if (r->itl_n < 1)
        return;
    d->mean = r->itl_sum / (double)r->itl_n;
    double last = (double)(r->itl_n - 1);
    d->p50 = itl_rank(r, (int64_t)llround(0.50 * last));
    d->p90 = itl_rank(r, (int64_t)llround(0.90 * last));
    d->p99 = itl_rank(r, (int64_t)llround(0.99 * last));
}
