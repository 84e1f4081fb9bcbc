/* serving/serve_traffic.h -- the requests a serving run gets: their arrival
 * times (a closed loop's first ones at 0, Poisson or gamma gaps at a rate, or
 * a trace's) and their input and output lengths (fixed, or drawn from the
 * scenario's distributions), from the run's seed. */
#ifndef TPUSIM_SERVING_SERVE_TRAFFIC_H
#define TPUSIM_SERVING_SERVE_TRAFFIC_H

#include <stdint.h>

#include "config/cfg_serve.h"

/* A uniform number in (0, 1) from the splitmix64 stream '*s'. */
double serve_uniform(uint64_t *s);
/* A gamma variate of shape 'k' and scale 1 (Marsaglia and Tsang, ACM TOMS
 * 26(3), 2000; k < 1 by Gamma(k + 1) U^(1/k)). */
double serve_gamma(uint64_t *s, double k);
/* A length drawn from 'l'. */
int64_t serve_len_draw(const struct serve_len *l, uint64_t *s);
/* The requests of a run, one after the other. */
struct serve_traffic {
    const struct serve_cfg *c;
    uint64_t rng_arrival, rng_len; /* two streams: lengths drawn or not, the same arrivals */
    double t;
    int64_t i;
};

void serve_traffic_start(struct serve_traffic *g, const struct serve_cfg *c);
/* Request g->i's arrival time (INFINITY: a closed loop releases it later) and lengths. */
void serve_traffic_next(struct serve_traffic *g, double *arrival_s, int64_t *in, int64_t *out);

#endif
