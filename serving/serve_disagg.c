/* serving/serve_disagg.c -- prefill engines, KV transfers and decode engines,
 * simulated together in time order (serving/serve_disagg.h). */
#include "serving/serve_disagg.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/interrupt.h"
#include "base/xalloc.h"
#include "serving/serve_fleet.h"

double serve_kv_transfer_s(const struct serve_cfg *c, int64_t in)
{
    return c->kv_transfer_lat_s + c->kv_bytes_per_token * (double)in / c->kv_transfer_Bps;
}

struct disagg {
    const struct serve_cfg *c;
    struct serve_cfg pc;     /* the prefill engines': no closed loop of their own */
    struct serve_result *r;  /* the run's: requests (the decode side's), steps of all */
    struct serve_req *preq;  /* [count] the prefill engines' copies: one output token */
    struct serve_result *rr; /* [n] each engine's counts; prefill ones over preq */
    struct serve_eng *e;     /* [n] prefill engines [0, np), decode engines [np, n) */
    bool *inflight;          /* [n] a step begun, not ended */
    int64_t *out;            /* [n] the router's view: tokens left (in flight to it too) */
    int64_t *coming;         /* [n] decode engines: tokens of KV caches on their way */
    int64_t *steps;          /* [n] each engine's steps */
    double *link_free_s;     /* [np] each prefill engine's link busy until */
    int64_t *xfer;           /* min-heap of requests whose KV is on its way, by arrival */
    int64_t nxfer;
    int np, n;
    int64_t issued, released, next_p, next_d, completed, step_cap;
};

/* Events at one time: steps end, KV caches arrive, requests arrive, steps begin. */
enum ev { EV_END, EV_KV, EV_ARRIVE, EV_BEGIN, EV_NONE };

static enum ev engine_event(const struct disagg *g, int k, double *t)
{
    *t = g->e[k].now;
    if (g->inflight[k])
        return EV_END;
    if (serve_eng_busy(&g->e[k]))
        return EV_BEGIN;
    *t = INFINITY;
    return EV_NONE;
}

/* KV arrival times order the transfer heap (ties: the lower request). */
static bool xfer_before(const struct disagg *g, int64_t a, int64_t b)
{
    double ta = g->r->req[a].first_s, tb = g->r->req[b].first_s;
    return ta != tb ? ta < tb : a < b;
}

static void xfer_push(struct disagg *g, int64_t i)
{
    int64_t k = g->nxfer++;
    g->xfer[k] = i;
    while (k > 0 && xfer_before(g, g->xfer[k], g->xfer[(k - 1) / 2])) {
        int64_t p = (k - 1) / 2, x = g->xfer[p];
        g->xfer[p] = g->xfer[k], g->xfer[k] = x, k = p;
    }
}

static int64_t xfer_pop(struct disagg *g)
{
    int64_t top = g->xfer[0], k = 0;
    g->xfer[0] = g->xfer[--g->nxfer];
    for (;;) {
        int64_t l = 2 * k + 1, m = k;
        if (l < g->nxfer && xfer_before(g, g->xfer[l], g->xfer[m]))
            m = l;
        if (l + 1 < g->nxfer && xfer_before(g, g->xfer[l + 1], g->xfer[m]))
            m = l + 1;
        if (m == k)
            break;
        int64_t x = g->xfer[m];
        g->xfer[m] = g->xfer[k], g->xfer[k] = x, k = m;
    }
    return top;
}

/* The next event: its kind, time and engine (-1 for arrivals and KV caches). */
static enum ev next_event(const struct disagg *g, double *t, int *k)
{
    enum ev kind = EV_NONE;
    *t = INFINITY, *k = -1;
    for (int j = 0; j < g->n; j++) {
        double tj;
        enum ev kj = engine_event(g, j, &tj);
        if (tj < *t || (tj == *t && kj < kind))
            *t = tj, kind = kj, *k = j;
    }
    double x = g->nxfer ? g->r->req[g->xfer[0]].first_s : INFINITY;
    if (isfinite(x) && (x < *t || (x == *t && EV_KV < kind)))
        *t = x, kind = EV_KV, *k = -1;
    double a = g->issued < g->r->count ? g->r->req[g->issued].arrival_s : INFINITY;
    if (isfinite(a) && (a < *t || (a == *t && EV_ARRIVE < kind)))
        *t = a, kind = EV_ARRIVE, *k = -1;
    return kind;
}

/* Request 'i' joins engine k at 't' (an idle engine starts then). */
static void join(struct disagg *g, int k, int64_t i, double t)
{
    struct serve_eng *e = &g->e[k];
    if (!g->inflight[k] && !serve_eng_busy(e))
        e->now = t;
    serve_eng_push(e, i);
    int64_t waiting = 0;
    for (int j = 0; j < g->n; j++)
        waiting += g->e[j].nwait;
    if (waiting > g->r->max_waiting)
        g->r->max_waiting = waiting;
}

/* Engine among [lo, lo + n) by the router's policy. */
static int route_among(struct disagg *g, int lo, int n, int64_t *next)
{
    for (int j = 0; j < n; j++)
        g->out[j] = g->e[lo + j].outstanding + g->coming[lo + j];
    return lo + serve_route(g->c->router, g->out, n, next);
}

/* The next request arrives at 't': a prefill engine gets its copy. */
static void arrive(struct disagg *g, double t)
{
    int64_t i = g->issued++;
    const struct serve_req *q = &g->r->req[i];
    g->preq[i] = (struct serve_req){.arrival_s = q->arrival_s, .first_s = -1, .finish_s = -1,
                                    .sched_s = -1, .preempt_open = -1, .in = q->in, .out = 1};
    int k = route_among(g, 0, g->np, &g->next_p);
    g->preq[i].replica = k;
    join(g, k, i, t);
}

static void complete(struct disagg *g, int64_t i, double t)
{
    struct serve_req *q = &g->r->req[i];
    q->generated = q->out, q->first_s = q->finish_s = q->last_tok_s = t;
    g->completed++;
    if (g->c->concurrency && g->released < g->r->count) /* closed loop: the next one */
        g->r->req[g->released++].arrival_s = t;
}

/* Request i's prefill ended at 't' on prefill engine k: its KV cache leaves
 * for a decode engine when k's link is free (one output token: done). */
static void hand_off(struct disagg *g, int k, int64_t i, double t)
{
    struct serve_req *q = &g->r->req[i];
    q->preemptions = g->preq[i].preemptions;
    q->sched_s = g->preq[i].sched_s; /* its track's prefill starts on the prefill engine */
    if (q->out <= 1) {
        q->replica = k;
        complete(g, i, t);
        return;
    }
    double start = t > g->link_free_s[k] ? t : g->link_free_s[k];
    double done = start + serve_kv_transfer_s(g->c, q->in);
    g->link_free_s[k] = done;
    q->kv_transfer_s = done - t;
    q->computed = q->in, q->generated = 1;
    q->first_s = q->last_tok_s = done; /* the first token reaches the client with its KV */
    int d = route_among(g, g->np, g->n - g->np, &g->next_d);
    q->replica = d;
    g->coming[d] += q->out - 1;
    xfer_push(g, i);
}

static void kv_arrives(struct disagg *g)
{
    int64_t i = xfer_pop(g);
    struct serve_req *q = &g->r->req[i];
    g->coming[q->replica] -= q->out - 1;
    join(g, q->replica, i, q->first_s);
}

static int begin(struct disagg *g, int k, serve_price_fn price, void *ctx)
{
    struct serve_result *rk = &g->rr[k], *r = g->r;
    if (serve_eng_begin(&g->e[k], price, ctx) != 0)
        return 1;
    g->inflight[k] = true;
    if (r->steps == g->step_cap) {
        g->step_cap = g->step_cap ? 2 * g->step_cap : 64;
        r->step = xrealloc(r->step, sizeof *r->step * (size_t)g->step_cap);
    }
    r->step[r->steps] = rk->step[0];
    r->step[r->steps++].replica = k;
    rk->steps = 0; /* its one record moved */
    g->steps[k]++;
    return 0;
}

static void end(struct disagg *g, int k)
{
    struct serve_eng *e = &g->e[k];
    int64_t before = g->rr[k].completed;
    serve_eng_end(e);
    g->inflight[k] = false;
    if (k >= g->np) {
        g->completed += g->rr[k].completed - before;
        return;
    }
    for (int j = 0; j < e->b.n; j++) { /* prefills done: their first token */
        int64_t i = e->sched[j];
        if (g->preq[i].finish_s >= 0 && g->r->req[i].generated == 0)
            hand_off(g, k, i, e->now);
    }
}

static void gather(struct disagg *g)
{
    struct serve_result *r = g->r;
    serve_result_gather(r, g->rr, g->steps, g->n);
    r->completed = g->completed;
    for (int64_t i = 0; i < g->issued; i++) { /* each request on its two engines */
        if (g->preq[i].replica >= 0 && g->preq[i].replica < g->np)
            r->per_replica[g->preq[i].replica].requests++;
        if (r->req[i].replica >= g->np && r->req[i].replica < g->n)
            r->per_replica[r->req[i].replica].requests++;
    }
}

static int run(struct disagg *g, serve_price_fn price, void *ctx)
{
    while (g->completed < g->r->count) {
        if (interrupt_pending())
            return 130;
        double t;
        int k;
        switch (next_event(g, &t, &k)) {
        case EV_END:
            end(g, k);
            break;
        case EV_KV:
            kv_arrives(g);
            break;
        case EV_ARRIVE:
            arrive(g, t);
            break;
        case EV_BEGIN:
            if (begin(g, k, price, ctx) != 0)
                return 1;
            break;
        case EV_NONE:
        default:
            return 1;
        }
    }
    return 0;
}

int serve_disagg_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                          struct serve_result *r)
{
    memset(r, 0, sizeof *r);
    int np = c->prefill_engines, n = np + c->decode_engines;
    r->count = c->count;
    r->replicas = n, r->prefill_engines = np;
    r->kv_pages = c->kv_pages;
    r->req = xcalloc((size_t)c->count, sizeof *r->req);
    serve_init_requests(c, r);
    struct disagg g = {.c = c, .pc = *c, .r = r, .np = np, .n = n};
    g.pc.concurrency = 0;
    g.released = c->concurrency < c->count ? c->concurrency : c->count;
    g.preq = xcalloc((size_t)c->count, sizeof *g.preq);
    g.xfer = xcalloc((size_t)c->count, sizeof *g.xfer);
    g.rr = xcalloc((size_t)n, sizeof *g.rr);
    g.e = xcalloc((size_t)n, sizeof *g.e);
    g.inflight = xcalloc((size_t)n, sizeof *g.inflight);
    g.out = xcalloc((size_t)n, sizeof *g.out);
    g.coming = xcalloc((size_t)n, sizeof *g.coming);
    g.steps = xcalloc((size_t)n, sizeof *g.steps);
    g.link_free_s = xcalloc((size_t)np, sizeof *g.link_free_s);
    for (int k = 0; k < n; k++) {
        g.rr[k] = (struct serve_result){.req = k < np ? g.preq : r->req, .count = r->count,
                                        .kv_pages = c->kv_pages};
        serve_eng_init(&g.e[k], k < np ? &g.pc : c, &g.rr[k], &g.released);
    }
    int rc = run(&g, price, ctx);
    gather(&g);
    serve_result_close(c, r);
    for (int k = 0; k < n; k++) {
        serve_eng_fini(&g.e[k]);
        free(g.rr[k].step);
    }
    free(g.preq);
    free(g.xfer);
    free(g.rr);
    free(g.e);
    free(g.inflight);
    free(g.out);
    free(g.coming);
    free(g.steps);
    free(g.link_free_s);
    return rc;
}
