/* serving/serve_eng.h -- one engine's state between steps, for a loop that
 * drives several engines (serving/serve_fleet.c): requests are pushed into
 * its waiting queue, a step is begun (scheduled, priced, recorded; the
 * engine's clock moves to the step's end) and ended (its tokens cached,
 * finished requests leave). serve_simulate (serving/serve.h) is one engine
 * driven by its own arrivals. The requests are shared: an engine's result
 * keeps its own steps and counts. */
#ifndef TPUSIM_SERVING_SERVE_ENG_H
#define TPUSIM_SERVING_SERVE_ENG_H

#include <stdbool.h>
#include <stdint.h>

#include "serving/serve.h"

struct serve_eng {
    const struct serve_cfg *c;
    struct serve_result *r;   /* counts, steps, ITLs; r->req the requests (maybe shared) */
    int64_t *run, nrun;       /* running requests, in admission order */
    int64_t *wait, w0, nwait, wcap; /* waiting requests: a ring of 'wcap' slots */
    int64_t issued;           /* requests that joined the waiting queue (serve_simulate) */
    int64_t *released;        /* closed loop: requests given their arrival time */
    int64_t free_pages;
    int64_t outstanding;      /* tokens left to compute: prompts not cached, outputs to come */
    double now;
    struct serve_batch b;
    int64_t *sched;           /* per batch entry, its request */
};

/* An engine of 'c' over the requests r->req; 'released' is the closed loop's
 * count of requests released (shared by engines that share the requests). */
void serve_eng_init(struct serve_eng *e, const struct serve_cfg *c, struct serve_result *r,
                    int64_t *released);
void serve_eng_fini(struct serve_eng *e);
/* Request 'i' joins the waiting queue. */
void serve_eng_push(struct serve_eng *e, int64_t i);
/* True while a request runs or waits. */
bool serve_eng_busy(const struct serve_eng *e);
/* Schedules and prices a step at e->now, moving e->now to its end. Returns
 * 0, or 1 when no step could be formed or priced. */
int serve_eng_begin(struct serve_eng *e, serve_price_fn price, void *ctx);
/* The step begun ends (at e->now): tokens emitted, finished requests leave. */
void serve_eng_end(struct serve_eng *e);
/* The requests of 'c' with their arrival times (a closed loop's later ones
 * INFINITY until released) and lengths, into r->req[0 .. r->count). */
void serve_init_requests(const struct serve_cfg *c, struct serve_result *r);
/* r->duration_s and r->overloaded from the requests. */
void serve_result_close(const struct serve_cfg *c, struct serve_result *r);

#endif
