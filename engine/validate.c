/* engine/validate.c -- op rules and resource guards (see engine/validate.h). */
#include "engine/validate.h"

#include <stdio.h>

#include "base/units.h"
#include "kernels/copy.h"
#include "kernels/kernel.h"
#include "kernels/tune.h"
#include "workload/graph.h"
#include "config/op_table.h"

/* A rule an op breaks, reported where the op is written. */
static void op_error(struct diag *d, const struct cfg_scenario *sc, int i, const char *msg)
{
    diag_error(d, &sc->src[i].loc, sc->src[i].path, "%s: %s", op_kind_name(sc->ops[i].kind), msg);
}

/* Checks one op: a Pallas kind by building its calls, others by their rules. */
static int check_op(const struct cfg_scenario *sc, const struct op *op, char *err, size_t n)
{
    const struct op_row *row = op_row(op->kind);
    if (row->kern) {
        struct kern k;
        int rc = kern_init(&k, row->kern, op, &sc->chip, false, err, n);
        kern_fini(&k);
        return rc;
    }
    return row->check ? row->check(op, &sc->chip, &sc->topo, err, n) : 0;
}

int validate_ops(const struct cfg_scenario *sc, struct diag *d)
{
    int before = diag_count(d);
    for (int i = 0; i < sc->nops; i++) {
        char err[1024] = "";
        if (sc->ops[i].autotune && !(sc->tuned && sc->tuned[i].tuned))
            op_error(d, sc, i, "auto blocks were not searched (study/autotune.h runs first)");
        else if (check_op(sc, &sc->ops[i], err, sizeof err) != 0)
            op_error(d, sc, i, err);
    }
    return diag_count(d) > before ? -1 : 0;
}

/* a + b * c, saturating at INT64_MAX (all non-negative). */
static int64_t sat_madd(int64_t a, int64_t b, int64_t c)
{
    int64_t p, r;
    if (__builtin_mul_overflow(b, c, &p) || __builtin_add_overflow(a, p, &r))
        return INT64_MAX;
    return r;
}

/* Grid steps and pallas_calls of one instance of each op on one chip. */
static void op_cost(const struct cfg_scenario *sc, const struct op *op, int64_t *steps,
                    int *calls)
{
    const struct kern_kind *kind = op_row(op->kind)->kern;
    *steps = 0, *calls = 0;
    if (!kind)
        return;
    char err[512];
    struct kern k;
    if (kern_init(&k, kind, op, &sc->chip, false, err, sizeof err) == 0) {
        int cores = sc->chip.megacore ? 1 : sc->chip.cores;
        *steps = kern_steps(&k) * cores;
        *calls = k.ncalls;
    }
    kern_fini(&k);
}

void validate_estimate(const struct cfg_scenario *sc, struct validate_estimate *e)
{
    e->grid_steps = e->copy_chunks = 0;
    int64_t chips = cfg_engine_chips(sc);
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        int64_t runs = sat_madd(0, sc->graph.node[i].instances, chips);
        if (op->kind == OP_HBM_COPY) { /* every TensorCore copies */
            uint64_t n = copy_chunks(op, &sc->chip);
            int64_t per = n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
            e->copy_chunks = sat_madd(e->copy_chunks, per, sat_madd(0, runs, sc->chip.cores));
            continue;
        }
        int64_t s;
        int calls;
        op_cost(sc, op, &s, &calls);
        e->grid_steps = sat_madd(e->grid_steps, s, runs);
    }
}

int64_t validate_estimate_steps(const struct cfg_scenario *sc)
{
    struct validate_estimate e;
    validate_estimate(sc, &e);
    return sat_madd(e.grid_steps, e.copy_chunks, 1);
}

/* Trace events one instance of 'op' leaves per core: its span, and per
 * grid step (or coalesced run of them, about 40 per kernel in fast mode) its
 * DMA, MXU and VPU spans and flow arrows; per chunk of a copy two DMA spans;
 * per collective a few ICI and DMA spans per phase. */
static double op_events(const struct cfg_scenario *sc, const struct op *op, int64_t steps)
{
    if (op_row(op->kind)->kern)
        return 10.0 + (sc->fidelity == CFG_FIDELITY_EXACT ? 6.0 * (double)steps : 40.0);
    if (op->kind == OP_HBM_COPY)
        return 2.0 + 2.0 * (double)copy_chunks(op, &sc->chip);
    return 40.0;
}

/* Bytes a run holds besides SimGrid's actors: per op its parameters, graph
 * node, summary row and built pallas_calls (twice when functional); per op
 * instance its completion bits and times. Sets '*events' to the trace events. */
static double data_bytes(const struct cfg_scenario *sc, double *events)
{
    double bytes = 0;
    int cores = cfg_engine_chips(sc) * sc->chip.cores;
    *events = 0;
    for (int i = 0; i < sc->nops; i++) {
        int64_t s;
        int calls;
        op_cost(sc, &sc->ops[i], &s, &calls);
        int built = sc->ops[i].functional ? 2 : 1;
        double inst = (double)sc->graph.node[i].instances;
        bytes += (double)(sizeof(struct op) + sizeof(struct graph_node) + 512) +
                 (double)built * calls * (double)sizeof(struct pl_call);
        bytes += inst * (3 * sizeof(double) + cores / 8.0 + 1);
        *events += inst * cores * op_events(sc, &sc->ops[i], s);
    }
    return bytes;
}

double validate_estimate_memory(const struct cfg_scenario *sc)
{
    /* per chip: a compute stream and a DMA engine per core, an async stream,
     * and room for a few async ops (collective parts) in flight; each a
     * 32 KiB stack (engine/sim.c) and SimGrid's context, mailbox and actor */
    double actors = (double)cfg_engine_chips(sc) * (2.0 * sc->chip.cores + 5.0);
    double events;
    double data = data_bytes(sc, &events);
    /* the trace is written as it goes (outputs/trace.h); at level steps the
     * run keeps one HBM rate span (32 bytes) per DMA for the HBM counter,
     * about one for every two events */
    double rates = sc->trace_level >= 3 ? events * 16.0 : 0;
    return 12e6 + actors * 65536.0 + data + rates;
}

/* "2.7 GiB", or "310 MiB" below 1 GiB. */
static const char *gib(char *buf, size_t n, double bytes)
{
    if (bytes >= 1073741824.0)
        snprintf(buf, n, "%.1f GiB", bytes / 1073741824.0);
    else
        snprintf(buf, n, "%.0f MiB", bytes / 1048576.0);
    return buf;
}

int validate_guards(const struct cfg_scenario *sc, const struct validate_limits *lim,
                    struct diag *d)
{
    int64_t max = lim->max_steps ? lim->max_steps : sc->max_steps;
    struct validate_estimate e;
    validate_estimate(sc, &e);
    int64_t est = sat_madd(e.grid_steps, e.copy_chunks, 1);
    if (est > max) {
        diag_error(d, NULL, NULL, "the run would simulate %lld steps (%lld grid steps, %lld copy "
                                  "chunks), above the limit of %lld; raise it with --max-steps N "
                                  "(or options.max_steps)",
                   (long long)est, (long long)e.grid_steps, (long long)e.copy_chunks,
                   (long long)max);
        return -1;
    }
    double mem = validate_estimate_memory(sc);
    double mem_max = lim->max_memory_bytes ? lim->max_memory_bytes : 16.0 * 1073741824.0;
    if (mem > mem_max) {
        char need[32], have[32];
        diag_error(d, NULL, NULL,
                   "the run would need about %s of memory, above the limit of %s; raise it "
                   "with --max-memory SIZE",
                   gib(need, sizeof need, mem), gib(have, sizeof have, mem_max));
        return -1;
    }
    return 0;
}

int validate_scenario(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d)
{
    if (validate_ops(sc, d) != 0)
        return -1;
    return validate_guards(sc, lim, d);
}
