/* engine/validate.c -- op rules and resource guards (see engine/validate.h). */
#include "engine/validate.h"

#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "kernels/collective.h"
#include "kernels/copy.h"
#include "kernels/maskinfo.h"
#include "kernels/kernel.h"
#include "kernels/tune.h"
#include "workload/graph.h"
#include "config/op_table.h"
#include "outputs/trace.h"

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
        if (sc->ops[i].autotune && !(sc->plan.tuned && sc->plan.tuned[i].tuned))
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

/* A non-negative double as a saturated count. */
static int64_t sat(double x)
{
    return x >= 9.2e18 ? INT64_MAX : x > 0 ? (int64_t)x : 0;
}

/* ---- the work estimate (engine/validate.h): steps of simulated work, one
 * per SimGrid activity or walked grid step, as the engine will run them
 * (0.2 to 3 us of this machine's CPU each: an hbm_copy of 1M chunks, 2M DMAs,
 * runs in 6.5 s; model steps with memos 0.2-1.3 us, see W_STEP_S) ---- */

#define W_TASK 4          /* an op instance on a core: its actor, launch sleep, barrier */
#define W_EXACT_STEP 6    /* a grid step of exact fidelity: its DMAs, compute, delay (18 us) */
#define W_MEMO_HIT 6      /* a memo replayed: a sleep and its semaphores (20 us) */
#define W_RING_STEP 4     /* a collective's ring step: its DMAs, semaphores, handshake */
#define W_REDUCE_ELEMS (512.0 * 1024.0) /* exact: a reduction's step, a (512, 1024) block */
#define W_COPY_CHUNK 2    /* an hbm_copy chunk: its two DMAs */
#define W_FN_FLOPS 400.0  /* functional mode: host FLOPs (kernel and reference) per step
                             (a 2048^3 matmul: 3.4e10 of them in 250 s) */
#define W_MASK_CELLS 32.0 /* MaskInfo blocks classified per step (95 ns each) */
#define W_MASK_EVALS 300.0 /* mask elements evaluated per step (non-computable masks) */
/* Real runs of one script when collectives run beside it: a memo per
 * overlap (the collectives running and how far along), at most 17 (the quiet
 * one and MEMO_OVERLAPS_MAX, engine/eng_memo.c). A layer's kernels meet the
 * same overlap in every layer but the first and last: the shipped models and
 * 70B steps on 512-1024 v5p chips measure 1.1-1.4 memos per script, so 3. */
#define W_MEMOS_TYPICAL 3

/* What a step of work takes on this machine (CPU seconds over the estimate)
 * and a run's fixed start (the loader, SimGrid's platform). Kernels with
 * memos, measured on the shipped models and scenarios and on 70B steps:
 * 0.2-1.3 us, median 0.6; a collective's ring step 7.4 us on 4096 chips
 * (a 1 GiB all-reduce, every chip simulated), less on the tens of chips of
 * a folded step: 3; copy chunks and MaskInfo blocks 3 (a 1M-chunk copy in
 * 1.55 s). Good to a factor 2 or 3: it says minutes from seconds. */
#define W_KERNEL_S 0.6e-6
#define W_COLL_S 3e-6
#define W_OTHER_S 3e-6
#define W_START_S 0.05

/* Does a run of 'sc' take kernel memos (engine/eng_memo.c's conditions)? */
static bool memos_on(const struct cfg_scenario *sc)
{
    return sc->kernel_memo && sc->fidelity == CFG_FIDELITY_FAST && sc->trace_level < TRACE_STEPS;
}

static bool has_async_collectives(const struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        if (op_row(sc->ops[i].kind)->async && op_row(sc->ops[i].kind)->reach)
            return true;
    return false;
}

/* What one instance of a built kernel costs on one chip: 'steps' grid
 * steps over its cores (each core's range: megacore halves, separate cores
 * all), walked once to record its scripts; 'replay' what a fast replay of
 * its scripts issues (their length: counted by walking them, or the steps
 * themselves past W_WALK_MAX), 'slots' its scripts; 'always' what its calls
 * that cannot be scripted (manual DMAs) cost on every run (a walk and its
 * activities, never a memo). */
struct kcost {
    int64_t steps, replay, slots, always;
    double fn_flops, fn_bytes;
};

/* Steps of scripts one estimate counts by walking them (about a second);
 * past it a script's length is taken as its steps. */
#define W_WALK_MAX ((int64_t)1 << 23)

/* Functional mode: chip 0's host arrays (with the reference's) and host FLOPs. */
static void kern_fn_cost(const struct cfg_scenario *sc, const struct kern *k, struct kcost *c)
{
    const struct op *op = k->op;
    if (!op->functional)
        return;
    if (op->kind == OP_FLASH) /* its reference's p and ds: Sq x Skv doubles */
        c->fn_bytes += 16.0 * (double)op->u.flash.q_seq_len * (double)op->u.flash.kv_seq_len;
    for (int i = 0; i < k->ncalls; i++) {
        const struct pl_call *call = &k->calls[i];
        double elems = 0;
        for (int j = 0; j < call->noperands; j++) {
            double n = 1;
            for (int d = 0; d < call->operands[j].rank; d++)
                n *= (double)call->operands[j].shape[d];
            elems += n;
        }
        c->fn_bytes += elems * 6.0; /* f32 arrays, half again for the reference (measured:
                                       85 MB at the peak of a 2048^3 matmul, 12M elements) */
        if (!call->manual) {
            struct pl_work w = {0};
            pl_step_work(call, &sc->chip, 0, &w);
            c->fn_flops += 2.0 * (w.flops + w.vpu_flops) * (double)pl_num_steps(call);
        }
    }
}

/* 'walk': the steps this estimate may still walk to count scripts (0: none). */
static void kern_cost(const struct cfg_scenario *sc, const struct kern *k, struct kcost *c,
                      int64_t *walk)
{
    int cores = sc->chip.cores, mc = sc->chip.megacore ? cores : 1;
    bool fast = sc->fidelity == CFG_FIDELITY_FAST;
    for (int i = 0; i < k->ncalls; i++) {
        const struct pl_call *call = &k->calls[i];
        for (int core = 0; core < cores; core++) {
            int64_t b, e;
            pl_core_range(call, sc->chip.megacore ? core : 0, mc, &b, &e);
            int64_t len = e - b;
            if (fast && e - b <= *walk) {
                len = pl_script_length(call, &sc->chip, b, e, true);
                *walk -= e - b;
            }
            c->steps = sat_madd(c->steps, e - b, 1);
            if (pl_scriptable(call)) {
                c->replay = sat_madd(c->replay, 1 + len, 1);
                c->slots++;
            } else {
                c->always = sat_madd(c->always, 1 + len + (e - b), 1);
            }
        }
    }
    kern_fn_cost(sc, k, c);
}

/* A Pallas kernel op: its scripts recorded once (the steps walked), then
 * each instance on each chip's cores replayed (fast), memo-replayed after
 * its first runs (fast with memos: once per overlap, on one chip when the
 * others can follow it), or run step by step (exact); functional mode adds
 * chip 0's host arithmetic. 'async': the program has async collectives. */
static void kernel_work(const struct cfg_scenario *sc, int i, const struct kcost *c,
                        bool async, struct validate_estimate *e)
{
    int64_t inst = sc->graph.node[i].instances, chips = cfg_engine_chips(sc);
    int64_t runs = sat_madd(0, inst, chips), w;
    if (sc->fidelity == CFG_FIDELITY_EXACT) {
        w = sat_madd(0, sat_madd(0, runs, c->steps), W_EXACT_STEP);
    } else if (!memos_on(sc)) {
        w = sat_madd(sat_madd(c->steps, runs, c->replay), runs, c->always);
    } else {
        int64_t real = inst < (async ? W_MEMOS_TYPICAL : 1) ? inst : (async ? W_MEMOS_TYPICAL : 1);
        int64_t real_chips = async || (sc->chip.cores > 1 && !sc->chip.megacore) ? chips : 1;
        int64_t real_runs = sat_madd(0, real, real_chips);
        int64_t hits = runs > real_runs ? runs - real_runs : 0;
        w = sat_madd(sat_madd(c->steps, real_runs, c->replay), hits, W_MEMO_HIT * c->slots);
        w = sat_madd(w, runs, c->always);
    }
    w = sat_madd(w, runs, W_TASK * sc->chip.cores);
    if (sc->ops[i].functional)
        w = sat_madd(w, sat(c->fn_flops / W_FN_FLOPS), inst);
    e->kernel = sat_madd(e->kernel, w, 1);
    e->grid_steps = sat_madd(e->grid_steps, c->steps, runs);
    e->functional_bytes += c->fn_bytes;
}

/* One collective's ring steps and reduction steps on one chip: fast
 * fidelity coalesces a ring pass into one step (collective.c's rule: a
 * wrapped axis longer than 2, or a line that runs alone and does not
 * reduce-scatter, an ICI one only with no link fault; a reducing pass only while nothing else runs on the chip,
 * counted as its X - 1 steps when the program has other ops), exact runs its
 * X - 1 steps; a reduction is a streamed replay per step (fast; one for a
 * coalesced pass's when the parts are alike) or a step per (512, 1024) block
 * (exact). */
static int64_t coll_steps(const struct cfg_scenario *sc, const struct op *op)
{
    struct topo group;
    const struct topo *t = coll_topo(op, &sc->topo, 0, &group);
    struct coll_plan plan;
    coll_plan_slices(op, t, sc->dcn.slices, &plan);
    double w = 0;
    bool alike = coll_parts_alike(&plan, t, sc->dcn.slices);
    for (int p = 0; p < plan.nparts; p++)
        for (int q = 0; q < plan.parts[p].nphases; q++) {
            const struct coll_phase *ph = &plan.parts[p].phases[q];
            bool dcn = ph->axis == COLL_AXIS_DCN;
            int X = dcn ? sc->dcn.slices : t->shape[ph->axis];
            bool wrap = !dcn && t->wrap[ph->axis];
            bool reduce = ph->kind == COLL_RS || ph->kind == COLL_PSUM;
            bool one = sc->fidelity == CFG_FIDELITY_FAST && X > 2 && !op->u.coll.nreplica &&
                       (dcn || !cfg_faults_links(&sc->faults)) &&
                       (wrap || (plan.nparts == 1 && ph->kind != COLL_RS)) &&
                       !(ph->kind == COLL_RS && sc->nops > 1);
            w += (one || X < 2 ? 1.0 : X - 1.0) * W_RING_STEP;
            if (reduce && sc->fidelity == CFG_FIDELITY_FAST)
                w += (ph->kind == COLL_PSUM ? X : X < 2 || (one && alike) ? 1.0 : X - 1.0) *
                     W_RING_STEP; /* a streamed replay a step, or one a pass */
            else if (reduce) /* each (512, 1024) block a step */
                w += (double)ph->bytes / (W_REDUCE_ELEMS * dtype_bytes(op->u.coll.dt)) *
                     W_EXACT_STEP;
        }
    return sat(w);
}

/* collective_matmul: its ring steps and, per chunk, the chunk matmul walked
 * step by step (no script) on the cores that run it; with kernel memos (fast) the
 * chunk matmul is walked once per op and core ('*once', of each form) and every chunk
 * is a memo hit. */
static int64_t coll_matmul_steps(const struct cfg_scenario *sc, const struct op *op,
                                 int64_t *once)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    int X = coll_matmul_ring(op, &sc->topo);
    int64_t chunks = p->overlap ? X : 1, rows = p->overlap ? p->m : p->m * X;
    struct op mm;
    coll_matmul_op(op, rows, &mm);
    struct kern k;
    char err[512];
    struct kcost c = {0};
    int64_t walk = W_WALK_MAX; /* (the chunk matmul's own) */
    if (kern_init(&k, op_row(OP_MATMUL)->kern, &mm, &sc->chip, false, err, sizeof err) == 0)
        kern_cost(sc, &k, &c, &walk);
    kern_fini(&k);
    int64_t per = sc->fidelity == CFG_FIDELITY_EXACT ? sat_madd(0, c.steps, W_EXACT_STEP)
                                                     : sat_madd(c.steps, c.replay, 1);
    *once = 0;
    if (memos_on(sc)) {
        *once = per;
        per = W_MEMO_HIT;
    }
    return sat_madd((int64_t)X * W_RING_STEP, chunks, per);
}

/* The work of one op of any other kind, per instance and chip. */
static void other_work(const struct cfg_scenario *sc, int i, struct validate_estimate *e)
{
    const struct op *op = &sc->ops[i];
    int64_t runs = sat_madd(0, sc->graph.node[i].instances, cfg_engine_chips(sc));
    int64_t base = W_TASK * sc->chip.cores;
    if (op->kind == OP_HBM_COPY) { /* every TensorCore copies */
        uint64_t n = copy_chunks(op, &sc->chip);
        int64_t per = n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
        int64_t copies = sat_madd(0, runs, sc->chip.cores);
        e->copy_chunks = sat_madd(e->copy_chunks, per, copies);
        e->copy = sat_madd(e->copy, sat_madd(base, per, W_COPY_CHUNK * sc->chip.cores), runs);
    } else if (op->kind == OP_COLLECTIVE_MATMUL) {
        int cores = sc->chip.megacore ? sc->chip.cores : 1;
        int64_t once;
        int64_t per = coll_matmul_steps(sc, op, &once);
        e->collective = sat_madd(e->collective, sat_madd(base, per, cores), runs);
        e->collective = sat_madd(e->collective, once, cores);
    } else if (op_row(op->kind)->reach == op_row(OP_ALL_GATHER)->reach) {
        e->collective = sat_madd(e->collective, sat_madd(base, coll_steps(sc, op), 1), runs);
    } else { /* ppermute, remote_copy, host_copy: a transfer or two */
        e->other = sat_madd(e->other, base + W_RING_STEP, runs);
    }
}

/* splash_attention's MaskInfos, built once per op before anything runs:
 * every (row, q, kv) block of each direction built is classified and, for
 * masks that are not computable in closed form (and, or), every element of
 * the mask evaluated per direction. Zero for other kinds. */
struct build {
    double cells, evals;
};

static int64_t build_work_of(const struct op *op, struct build *bl)
{
    *bl = (struct build){0, 0};
    if (op->kind != OP_SPLASH)
        return 0;
    const struct op_splash *p = &op->u.splash;
    const struct splash_block_sizes *b = &p->bs;
    /* fwd always; dq and dkv when their blocks are given (splash.c build_infos) */
    int64_t bq[3] = {b->block_q, b->block_q_dq, b->block_q_dkv};
    int64_t bk[3] = {b->block_kv, b->block_kv_dq, b->block_kv_dkv};
    double rows = p->nmasks > 1 ? (double)p->q_heads : 1.0, dirs = 0;
    for (int d = 0; d < 3; d++) {
        if (bq[d] <= 0 || bk[d] <= 0 || (d == 1 && b->use_fused_bwd_kernel))
            continue;
        dirs++;
        bl->cells += rows * (double)(p->q_seq_len / bq[d]) * (double)(p->kv_seq_len / bk[d]);
    }
    for (int m = 0; m < p->nmasks; m++)
        if (p->masks[m]->kind == MASK_AND || p->masks[m]->kind == MASK_OR)
            bl->evals += dirs * (double)p->q_seq_len * (double)p->kv_seq_len;
    return sat(bl->cells / W_MASK_CELLS + bl->evals / W_MASK_EVALS);
}

static int64_t build_work(const struct op *op)
{
    struct build bl;
    return build_work_of(op, &bl);
}

double validate_build_bytes(const struct op *op)
{
    if (op->kind != OP_SPLASH)
        return 0;
    /* per block of every direction: block_mask, data_next, mask_next (int32)
     * and the builder's class, partial id and shrinking scratch */
    struct build bl;
    build_work_of(op, &bl);
    return bl.cells * 32.0;
}

/* validate_estimate, walking scripts to count their length up to 'walk' steps. */
static void estimate(const struct cfg_scenario *sc, struct validate_estimate *e, int64_t walk)
{
    memset(e, 0, sizeof *e);
    bool async = has_async_collectives(sc); /* once: a scan of every op */
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        e->build = sat_madd(e->build, build_work(op), 1);
        const struct kern_kind *kind = op_row(op->kind)->kern;
        if (!kind) {
            other_work(sc, i, e);
            continue;
        }
        char err[512];
        struct kern k;
        struct kcost c = {0};
        if (kern_init(&k, kind, op, &sc->chip, false, err, sizeof err) == 0)
            kern_cost(sc, &k, &c, &walk);
        kern_fini(&k);
        kernel_work(sc, i, &c, async, e);
    }
    e->work = sat_madd(sat_madd(sat_madd(e->kernel, e->collective, 1), e->copy, 1), e->other, 1);
    e->work = sat_madd(e->work, e->build, 1);
    e->wall_s = W_START_S + (double)e->kernel * W_KERNEL_S + (double)e->collective * W_COLL_S +
                (double)(e->copy + e->other + e->build) * W_OTHER_S;
    e->memory_bytes = validate_estimate_memory(sc);
}

void validate_estimate(const struct cfg_scenario *sc, struct validate_estimate *e)
{
    estimate(sc, e, W_WALK_MAX);
}

int64_t validate_estimate_steps(const struct cfg_scenario *sc)
{
    struct validate_estimate e;
    estimate(sc, &e, 0); /* (grid steps and chunks need no script) */
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

/* Grid steps (per instance and chip), pallas_calls and functional cost
 * (into '*c') of 'op' once built. */
static void op_built(const struct cfg_scenario *sc, const struct op *op, int64_t *steps,
                     int *calls, struct kcost *c)
{
    const struct kern_kind *kind = op_row(op->kind)->kern;
    *steps = 0, *calls = 0;
    if (!kind)
        return;
    char err[512];
    struct kern k;
    if (kern_init(&k, kind, op, &sc->chip, false, err, sizeof err) == 0) {
        int cores = sc->chip.megacore ? 1 : sc->chip.cores;
        *steps = sat_madd(0, kern_steps(&k), cores);
        *calls = k.ncalls;
        kern_fn_cost(sc, &k, c);
    }
    kern_fini(&k);
}

/* Bytes a run holds besides SimGrid's actors: per op its parameters, graph
 * node, summary row, built pallas_calls (twice when functional) and
 * MaskInfos; per op instance its completion bits and times. Sets '*events'
 * to the trace events. */
static double data_bytes(const struct cfg_scenario *sc, double *events)
{
    double bytes = 0;
    int cores = cfg_engine_chips(sc) * sc->chip.cores;
    *events = 0;
    for (int i = 0; i < sc->nops; i++) {
        int64_t s;
        int calls;
        struct kcost fn = {0};
        op_built(sc, &sc->ops[i], &s, &calls, &fn);
        int built = sc->ops[i].functional ? 2 : 1;
        bytes += fn.fn_bytes; /* chip 0's host arrays and references */
        double inst = (double)sc->graph.node[i].instances;
        bytes += (double)(sizeof(struct op) + sizeof(struct graph_node) + 512) +
                 (double)built * calls * (double)sizeof(struct pl_call) +
                 validate_build_bytes(&sc->ops[i]);
        bytes += inst * (3 * sizeof(double) + cores / 8.0 + 1);
        *events += inst * cores * op_events(sc, &sc->ops[i], s);
    }
    return bytes;
}

/* Trace events per engine chip at levels ops and units (see
 * outputs/trace.h), counted the way the engine records them: per chip its
 * track names (a process name, two metadata events per track: per core its
 * compute, async, MXU, VPU and DMA tracks, two ICI directions per axis, the
 * DCN); per op instance and core its span, and the span of each of its
 * pallas_calls when it has several; on chip 0 two events per after:
 * arrow. Units adds per kernel instance and core two unit spans (its VPU
 * and DMA; the MXU too when it multiplies, about half of a model step's
 * kernels, which the estimate leaves out) and two VMEM counter samples per
 * pallas_call, per collective a DMA span and up to four ICI link spans
 * (a collective_matmul also the VPU and MXU spans and the VMEM samples of
 * its matmuls: one per chip of its axis when overlapped), per other op one
 * span. */
static void trace_level_events(const struct cfg_scenario *sc, double *ops, double *units)
{
    int cores = sc->chip.cores, chips = cfg_engine_chips(sc);
    double tracks = 5.0 * cores + 2.0 * sc->topo.ndims + (sc->dcn.slices > 1);
    *ops = chips * (1.0 + 2.0 * tracks);
    *units = 0;
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        const struct graph_node *g = &sc->graph.node[i];
        int64_t steps;
        int calls;
        struct kcost fn = {0};
        op_built(sc, op, &steps, &calls, &fn);
        double inst = (double)g->instances, per = inst * chips * cores;
        *ops += per * (1.0 + (calls > 1 ? calls : 0));
        if (g->has_after)
            *ops += 2.0 * inst * g->ndeps;
        if (op_row(op->kind)->kern)
            *units += per * (2.0 + 2.0 * calls);
        else if (op->kind == OP_COLLECTIVE_MATMUL) /* its span and one per unit (MXU, VPU, DMA,
                                                     ICI) over its chunks: 4.1 per instance and
                                                     chip measured on a 70B step */
            *units += inst * chips * 5.0;
        else if (strcmp(op_row(op->kind)->category, "collective") == 0)
            *units += per * 5.0;
        else
            *units += per;
    }
    *units += *ops;
}

void validate_trace_events(const struct cfg_scenario *sc, double ev[4])
{
    double steps;
    data_bytes(sc, &steps);
    ev[TRACE_NONE] = 0;
    trace_level_events(sc, &ev[TRACE_OPS], &ev[TRACE_UNITS]);
    ev[TRACE_STEPS] = steps > ev[TRACE_UNITS] ? steps : ev[TRACE_UNITS];
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

static int64_t steps_limit(const struct cfg_scenario *sc, const struct validate_limits *lim)
{
    return lim->max_steps ? lim->max_steps : sc->max_steps;
}

static double memory_limit(const struct validate_limits *lim)
{
    return lim->max_memory_bytes ? lim->max_memory_bytes : 16.0 * 1073741824.0;
}

/* ", 12 in kernels" when 'n' is not 0. */
static void part(char *buf, size_t cap, int64_t n, const char *what)
{
    size_t o = strlen(buf);
    if (n)
        snprintf(buf + o, cap - o, "%s%lld %s", o ? ", " : "", (long long)n, what);
}

int validate_guards(const struct cfg_scenario *sc, const struct validate_limits *lim,
                    struct diag *d)
{
    int64_t max = steps_limit(sc, lim);
    struct validate_estimate e;
    validate_estimate(sc, &e);
    if (e.work > max) {
        char parts[256] = "";
        part(parts, sizeof parts, e.kernel, "in kernels");
        part(parts, sizeof parts, e.collective, "in collectives");
        part(parts, sizeof parts, e.copy, "in copies");
        part(parts, sizeof parts, e.other, "in other transfers");
        part(parts, sizeof parts, e.build, "building MaskInfos");
        diag_error(d, NULL, NULL,
                   "the run would simulate an estimated %lld steps of work (%s; %lld grid steps, "
                   "%lld copy chunks), above the limit of %lld; raise it with --max-steps N (or "
                   "options.max_steps)",
                   (long long)e.work, parts, (long long)e.grid_steps, (long long)e.copy_chunks,
                   (long long)max);
        return -1;
    }
    double mem = e.memory_bytes;
    double mem_max = memory_limit(lim);
    if (mem > mem_max) {
        char need[32], have[32];
        diag_error(d, NULL, NULL,
                   "the run would need about %s of memory, above the limit of %s; raise it "
                   "with --max-memory SIZE",
                   gib(need, sizeof need, mem), gib(have, sizeof have, mem_max));
        return -1;
    }
    if (lim->estimate)
        *lim->estimate = e;
    return 0;
}

const char *validate_estimate_text(const struct validate_estimate *e, char *buf, size_t n)
{
    char mem[32], t[32];
    double s = e->wall_s;
    if (s < 10)
        snprintf(t, sizeof t, "%.1f s", s);
    else if (s < 120)
        snprintf(t, sizeof t, "%.0f s", s);
    else if (s < 7200)
        snprintf(t, sizeof t, "%.0f min", s / 60);
    else
        snprintf(t, sizeof t, "%.1f h", s / 3600);
    snprintf(buf, n, "about %s and %s", t, gib(mem, sizeof mem, e->memory_bytes));
    return buf;
}

int validate_prebuild(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d)
{
    int before = diag_count(d);
    int64_t max = steps_limit(sc, lim);
    double mem_max = memory_limit(lim);
    for (int i = 0; i < sc->nops; i++) {
        struct build bl;
        int64_t w = build_work_of(&sc->ops[i], &bl);
        double bytes = validate_build_bytes(&sc->ops[i]);
        char msg[512], need[32], have[32];
        if (w > max)
            snprintf(msg, sizeof msg,
                     "building its MaskInfos would take an estimated %lld steps of work (%.0f "
                     "blocks classified, %.0f mask elements evaluated), above the limit of %lld; "
                     "use larger blocks or a mask computable in closed form, or raise the limit "
                     "with --max-steps N (or options.max_steps)",
                     (long long)w, bl.cells, bl.evals, (long long)max);
        else if (bytes > mem_max)
            snprintf(msg, sizeof msg,
                     "building its MaskInfos would need about %s of memory, above the limit of "
                     "%s; use larger blocks, or raise the limit with --max-memory SIZE",
                     gib(need, sizeof need, bytes), gib(have, sizeof have, mem_max));
        else
            continue;
        op_error(d, sc, i, msg);
    }
    return diag_count(d) > before ? -1 : 0;
}

int validate_scenario(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d)
{
    if (validate_prebuild(sc, lim, d) != 0 || validate_ops(sc, d) != 0)
        return -1;
    return validate_guards(sc, lim, d);
}
