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
    int *heap, *pos;         /* [n] the replicas by their next event; each one's place */
    int64_t *steps;          /* [n] each replica's steps (their records move to r->step) */
    int n;
    int64_t issued, released, next, completed, step_cap, waiting;
};

/* Events at one time run in this order: a step's end frees what it finished
 * (and releases a closed loop's next request), arrivals are routed, then
 * steps begin (as one engine: arrivals join before its next step). */
enum ev { EV_END, EV_ARRIVE, EV_BEGIN, EV_NONE };

/* Replica k's next event: its step's end, its next step's start, or none (idle). */
static enum ev replica_event(const struct fleet *f, int k, double *t)
{
    *t = f->e[k].now;
    if (f->inflight[k])
        return EV_END;
    if (serve_eng_busy(&f->e[k]))
        return EV_BEGIN;
    *t = INFINITY;
    return EV_NONE;
}

/* Whether replica a's next event comes before replica b's (time, kind, index). */
static bool earlier(const struct fleet *f, int a, int b)
{
    double ta, tb;
    enum ev ka = replica_event(f, a, &ta), kb = replica_event(f, b, &tb);
    if (ta != tb)
        return ta < tb;
    return ka != kb ? ka < kb : a < b;
}

static void heap_swap(struct fleet *f, int i, int j)
{
    int a = f->heap[i], b = f->heap[j];
    f->heap[i] = b, f->heap[j] = a;
    f->pos[b] = i, f->pos[a] = j;
}

/* Replica k's next event changed: its place in the heap again. */
static void heap_fix(struct fleet *f, int k)
{
    int i = f->pos[k];
    while (i > 0 && earlier(f, f->heap[i], f->heap[(i - 1) / 2])) {
        heap_swap(f, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < f->n && earlier(f, f->heap[l], f->heap[m]))
            m = l;
        if (l + 1 < f->n && earlier(f, f->heap[l + 1], f->heap[m]))
            m = l + 1;
        if (m == i)
            break;
        heap_swap(f, i, m);
        i = m;
    }
}

/* The next event: its kind, time and replica (-1 for an arrival). */
static enum ev next_event(const struct fleet *f, double *t, int *k)
{
    *k = f->heap[0];
    enum ev kind = replica_event(f, *k, t);
    double a = f->issued < f->r->count ? f->r->req[f->issued].arrival_s : INFINITY;
    if (isfinite(a) && (a < *t || (a == *t && EV_ARRIVE < kind))) {
        *t = a, *k = -1;
        return EV_ARRIVE;
    }
    return kind;
}

/* The next request arrives at 't': the router sends it to a replica. */
static void route(struct fleet *f, double t)
{
    if (f->c->router != SERVE_ROUTER_ROUND_ROBIN) /* round robin looks at no load */
        for (int j = 0; j < f->n; j++)
            f->out[j] = f->e[j].outstanding;
    int k = serve_route(f->c->router, f->out, f->n, &f->next);
    int64_t i = f->issued++;
    f->r->req[i].replica = k;
    struct serve_eng *e = &f->e[k];
    if (!f->inflight[k] && !serve_eng_busy(e)) /* idle since its last step: starts now */
        e->now = t;
    serve_eng_push(e, i);
    heap_fix(f, k);
    if (++f->waiting > f->r->max_waiting)
        f->r->max_waiting = f->waiting;
}

/* Replica k's step begins: the run's step list gets it, in time order. */
static int begin(struct fleet *f, int k, serve_price_fn price, void *ctx)
{
    struct serve_result *rk = &f->rr[k], *r = f->r;
    int64_t waited = f->e[k].nwait;
    int rc = serve_eng_begin(&f->e[k], price, ctx);
    if (rc)
        return rc;
    f->waiting += f->e[k].nwait - waited; /* admitted, or preempted back */
    f->inflight[k] = true;
    heap_fix(f, k);
    if (r->steps == f->step_cap) {
        f->step_cap = f->step_cap ? 2 * f->step_cap : 64;
        r->step = xrealloc(r->step, sizeof *r->step * (size_t)f->step_cap);
    }
    r->step[r->steps] = rk->step[0];
    r->step[r->steps++].replica = k;
    rk->steps = 0; /* its one record moved: the replica keeps none */
    f->steps[k]++;
    return 0;
}

static void end(struct fleet *f, int k)
{
    int64_t before = f->rr[k].completed;
    serve_eng_end(&f->e[k]);
    f->inflight[k] = false;
    heap_fix(f, k);
    f->completed += f->rr[k].completed - before;
}

/* The run's totals and each replica's share, from the replicas' results. */
static void gather(struct fleet *f)
{
    struct serve_result *r = f->r;
    serve_result_gather(r, f->rr, f->steps, f->n);
    for (int k = 0; k < f->n; k++)
        r->completed += f->rr[k].completed;
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
        default:
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
    f.heap = xcalloc((size_t)n, sizeof *f.heap);
    f.pos = xcalloc((size_t)n, sizeof *f.pos);
    f.steps = xcalloc((size_t)n, sizeof *f.steps);
    for (int k = 0; k < n; k++) {
        f.heap[k] = f.pos[k] = k; /* all idle: in index order */
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
    free(f.heap);
    free(f.pos);
    free(f.steps);
    return rc;
}
