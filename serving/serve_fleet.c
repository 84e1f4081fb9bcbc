/* serving/serve_fleet.c -- replicas behind a router, simulated together in
 * time order (serving/serve_fleet.h). */
#include "serving/serve_fleet.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/interrupt.h"
#include "base/xalloc.h"

int serve_route(enum serve_router policy, const int64_t *outstanding, int n, int64_t *next)
{
    if (policy == SERVE_ROUTER_ROUND_ROBIN) {
        int k = (int)(*next % n);
        *next = (k + 1) % n;
        return k;
    }
    int best = 0;
    for (int k = 1; k < n; k++)
        if (outstanding[k] < outstanding[best])
            best = k;
    return best;
}

/* The replicas and the run between events. */
struct fleet {
    const struct serve_cfg *c;
    struct serve_result *r;  /* the run's: requests, steps of all, totals */
    struct serve_result *rr; /* [n] each replica's counts and steps (r's requests) */
    struct serve_eng *e;     /* [n] */
    bool *inflight;          /* [n] a step begun, not ended */
    int64_t *out;            /* [n] the router's view: tokens left on each */
    int n;
    int64_t issued, released, next, completed, step_cap;
};

/* Events at one time run in this order: a step's end frees what it finished
 * (and releases a closed loop's next request), arrivals are routed, then
 * steps begin (as one engine: arrivals join before its next step). */
enum ev { EV_END, EV_ARRIVE, EV_BEGIN, EV_NONE };

static void consider(enum ev kind, double t, int k, enum ev *bk, double *bt, int *bkk)
{
    if (t < *bt || (t == *bt && kind < *bk))
        *bk = kind, *bt = t, *bkk = k;
}

/* The next event: its kind, time and replica (-1 for an arrival). */
static enum ev next_event(const struct fleet *f, double *t, int *k)
{
    enum ev kind = EV_NONE;
    *t = INFINITY, *k = -1;
    for (int j = 0; j < f->n; j++)
        if (f->inflight[j])
            consider(EV_END, f->e[j].now, j, &kind, t, k);
        else if (serve_eng_busy(&f->e[j]))
            consider(EV_BEGIN, f->e[j].now, j, &kind, t, k);
    if (f->issued < f->r->count && isfinite(f->r->req[f->issued].arrival_s))
        consider(EV_ARRIVE, f->r->req[f->issued].arrival_s, -1, &kind, t, k);
    return kind;
}

/* The next request arrives at 't': the router sends it to a replica. */
static void route(struct fleet *f, double t)
{
    for (int j = 0; j < f->n; j++)
        f->out[j] = f->e[j].outstanding;
    int k = serve_route(f->c->router, f->out, f->n, &f->next);
    int64_t i = f->issued++;
    f->r->req[i].replica = k;
    struct serve_eng *e = &f->e[k];
    if (!f->inflight[k] && !serve_eng_busy(e)) /* idle since its last step: starts now */
        e->now = t;
    serve_eng_push(e, i);
    int64_t waiting = 0;
    for (int j = 0; j < f->n; j++)
        waiting += f->e[j].nwait;
    if (waiting > f->r->max_waiting)
        f->r->max_waiting = waiting;
}

/* Replica k's step begins: the run's step list gets it, in time order. */
static int begin(struct fleet *f, int k, serve_price_fn price, void *ctx)
{
    struct serve_result *rk = &f->rr[k], *r = f->r;
    int rc = serve_eng_begin(&f->e[k], price, ctx);
    if (rc)
        return rc;
    f->inflight[k] = true;
    if (r->steps == f->step_cap) {
        f->step_cap = f->step_cap ? 2 * f->step_cap : 64;
        r->step = xrealloc(r->step, sizeof *r->step * (size_t)f->step_cap);
    }
    r->step[r->steps] = rk->step[rk->steps - 1];
    r->step[r->steps++].replica = k;
    return 0;
}

static void end(struct fleet *f, int k)
{
    int64_t before = f->rr[k].completed;
    serve_eng_end(&f->e[k]);
    f->inflight[k] = false;
    f->completed += f->rr[k].completed - before;
}

/* The run's totals and each replica's share, from the replicas' results. */
static void gather(struct fleet *f)
{
    struct serve_result *r = f->r;
    r->per_replica = xcalloc((size_t)f->n, sizeof *r->per_replica);
    for (int k = 0; k < f->n; k++) {
        const struct serve_result *rk = &f->rr[k];
        r->completed += rk->completed;
        r->preemptions += rk->preemptions;
        r->batch_seqs_sum += rk->batch_seqs_sum;
        r->batch_tokens_sum += rk->batch_tokens_sum;
        r->device_s += rk->device_s;
        r->itl_sum += rk->itl_sum;
        r->itl_n += rk->itl_n;
        for (int b = 0; b < SERVE_ITL_BINS; b++)
            r->itl_bins[b] += rk->itl_bins[b];
        if (rk->kv_peak_pages > r->kv_peak_pages)
            r->kv_peak_pages = rk->kv_peak_pages;
        r->per_replica[k] = (struct serve_replica){.steps = rk->steps,
                                                   .batch_seqs_sum = rk->batch_seqs_sum,
                                                   .kv_peak_pages = rk->kv_peak_pages};
    }
    for (int64_t i = 0; i < r->count; i++)
        if (r->req[i].replica >= 0 && r->req[i].replica < f->n)
            r->per_replica[r->req[i].replica].requests++;
}

static int run(struct fleet *f, serve_price_fn price, void *ctx)
{
    while (f->completed < f->r->count) {
        if (interrupt_pending())
            return 130;
        double t;
        int k;
        switch (next_event(f, &t, &k)) {
        case EV_END:
            end(f, k);
            break;
        case EV_ARRIVE:
            route(f, t);
            break;
        case EV_BEGIN:
            if (begin(f, k, price, ctx) != 0)
                return 1;
            break;
        case EV_NONE: /* nothing runs and nothing will arrive */
            return 1;
        }
    }
    return 0;
}

int serve_fleet_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                         struct serve_result *r)
{
    memset(r, 0, sizeof *r);
    int n = c->replicas > 1 ? c->replicas : 1;
    r->count = c->count;
    r->replicas = n;
    r->kv_pages = c->kv_pages;
    r->req = xcalloc((size_t)c->count, sizeof *r->req);
    serve_init_requests(c, r);
    struct fleet f = {.c = c, .r = r, .n = n};
    f.released = c->concurrency < c->count ? c->concurrency : c->count;
    f.rr = xcalloc((size_t)n, sizeof *f.rr);
    f.e = xcalloc((size_t)n, sizeof *f.e);
    f.inflight = xcalloc((size_t)n, sizeof *f.inflight);
    f.out = xcalloc((size_t)n, sizeof *f.out);
    for (int k = 0; k < n; k++) {
        f.rr[k] = (struct serve_result){.req = r->req, .count = r->count, .kv_pages = c->kv_pages};
        serve_eng_init(&f.e[k], c, &f.rr[k], &f.released);
    }
    int rc = run(&f, price, ctx);
    gather(&f);
    serve_result_close(c, r);
    for (int k = 0; k < n; k++) {
        serve_eng_fini(&f.e[k]);
        free(f.rr[k].step);
    }
    free(f.rr);
    free(f.e);
    free(f.inflight);
    free(f.out);
    return rc;
}
