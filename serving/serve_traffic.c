/* serving/serve_traffic.c -- the requests of a serving run (serving/serve_traffic.h).
 * Arrivals: a closed loop's first 'concurrency' requests at 0 (the rest when
 * one finishes); Poisson gaps -ln(U)/rate; gamma gaps of shape k = 1/cv^2 and
 * mean 1/rate, as vLLM's benchmark draws them with --burstiness k
 * (vllm/benchmarks/serve.py, get_request: np.random.gamma(shape=burstiness,
 * scale=1/(rate*burstiness))): cv 1 is Poisson, above 1 bursts, below 1
 * steadier; a trace's own times. Lengths: fixed, uniform integers in
 * [min, max], or a lognormal of mean 'mean' (mu = ln(mean) - sigma^2/2),
 * rounded and kept in [min, max]. */
#include "serving/serve_traffic.h"

#include <math.h>

double serve_uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0; /* in (0, 1) */
}

/* A standard normal (Box-Muller, one of the pair). */
static double normal(uint64_t *s)
{
    double u1 = serve_uniform(s), u2 = serve_uniform(s);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

double serve_gamma(uint64_t *s, double k)
{
    if (k < 1)
        return serve_gamma(s, k + 1) * pow(serve_uniform(s), 1 / k);
    double d = k - 1.0 / 3.0, c = 1 / sqrt(9 * d);
    for (;;) { /* accepts with probability above 0.95 */
        double x = normal(s), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        if (log(serve_uniform(s)) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

int64_t serve_len_draw(const struct serve_len *l, uint64_t *s)
{
    double v;
    switch (l->kind) {
    case SERVE_LEN_UNIFORM:
        v = (double)l->min + floor(serve_uniform(s) * (double)(l->max - l->min + 1));
        break;
    case SERVE_LEN_LOGNORMAL:
        v = round(exp(log(l->mean) - 0.5 * l->sigma * l->sigma + l->sigma * normal(s)));
        break;
    default:
        return l->min;
    }
    return v < (double)l->min ? l->min : v > (double)l->max ? l->max : (int64_t)v;
}

void serve_traffic_start(struct serve_traffic *g, const struct serve_cfg *c)
{
    *g = (struct serve_traffic){.c = c, .rng_arrival = c->seed,
                                .rng_len = c->seed ^ 0x5deece66dull};
}

void serve_traffic_next(struct serve_traffic *g, double *arrival_s, int64_t *in, int64_t *out)
{
    const struct serve_cfg *c = g->c;
    int64_t i = g->i++;
    if (c->trace.n) {
        *arrival_s = c->trace.arrival_s[i];
        *in = c->trace.in[i];
        *out = c->trace.out[i];
        return;
    }
    /* fixed lengths are input_len and output_len themselves */
    *in = c->in_len.kind == SERVE_LEN_FIXED ? c->input_len : serve_len_draw(&c->in_len, &g->rng_len);
    *out = c->out_len.kind == SERVE_LEN_FIXED ? c->output_len
                                              : serve_len_draw(&c->out_len, &g->rng_len);
    if (c->concurrency) {
        *arrival_s = i < c->concurrency ? 0 : INFINITY;
        return;
    }
    if (i) { /* the first at 0 */
        if (c->arrival_cv > 0) {
            double k = 1 / (c->arrival_cv * c->arrival_cv);
            g->t += serve_gamma(&g->rng_arrival, k) / (k * c->rate_per_s);
        } else {
            g->t += -log(serve_uniform(&g->rng_arrival)) / c->rate_per_s;
        }
    }
    *arrival_s = g->t;
}
