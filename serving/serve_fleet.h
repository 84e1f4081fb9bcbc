/* serving/serve_fleet.h -- data-parallel replicas behind a router: serve.mesh
 * {data: N, tensor: T} runs N engines (serving/serve.h, struct serve_eng), each over T
 * chips, simulated together in time order. Each event is the earliest of a
 * replica's step end, the next request's arrival and a replica's next step
 * start (ties in that order, then by replica): a request is routed when it
 * arrives (a closed loop's follow-up when a request finishes), by
 * serve.router.policy. Every replica's step is priced by the one pricer (the
 * replicas are alike: one step memo). Requests keep their global index. */
#ifndef TPUSIM_SERVING_SERVE_FLEET_H
#define TPUSIM_SERVING_SERVE_FLEET_H

#include <stdint.h>

#include "config/cfg_serve.h"
#include "serving/serve.h"

/* The replica a request goes to among 'n' with 'outstanding[k]' tokens left
 * to compute each: round_robin the next after '*next' (which it advances),
 * least_outstanding_tokens the fewest (ties: the lowest index). */
int serve_route(enum serve_router policy, const int64_t *outstanding, int n, int64_t *next);

/* As serve_simulate (serving/serve.h) with c->replicas engines; r->per_replica
 * holds each one's share, r->step the steps of all in time order. */
int serve_fleet_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                         struct serve_result *r);

#endif
