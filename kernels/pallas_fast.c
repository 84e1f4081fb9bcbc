/* kernels/pallas_fast.c -- fast fidelity for kernels/pallas.c: runs of
 * identical steady steps and repeats of a group of steps executed as one
 * (one DMA per operand, one compute), bandwidth-bound streams run whole, and
 * scripts (a run's executor calls recorded once, replayed on many cores).
 * The grid walk and the exact per-step schedule stay in pallas.c. */
#include "kernels/pallas.h"
#include "kernels/pallas_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/hbm.h"
#include "base/check.h"
#include "base/xalloc.h"

/* ---- runs of identical steady steps ---- */

static bool work_equal(const struct pl_work *a, const struct pl_work *b)
{
    return a->mxu_s == b->mxu_s && a->vpu_s == b->vpu_s && a->flops == b->flops &&
           a->vpu_flops == b->vpu_flops && a->transcendentals == b->transcendentals;
}

/* A steady-state step: it fetches exactly what it waits on, writes nothing. */
static bool steady(const struct plan *p, const struct opstate *os, int noperands)
{
    for (int i = 0; i < noperands; i++)
        if (os[i].single && (p->wait & (1u << i)))
            return false;
    return p->out_start == p->out_wait && p->fetch == p->wait;
}

static bool same_plan(const struct plan *a, const struct plan *b)
{
    return a->fetch == b->fetch && a->wait == b->wait && a->fetch_bytes == b->fetch_bytes &&
           a->out_start == b->out_start && a->out_bytes == b->out_bytes &&
           work_equal(&a->w, &b->w);
}

/* What a run of n steps of plan 'p' takes step by step beyond the one-step
 * version, at the HBM's own rate. Step by step, with two buffers, step s
 * issues the fetch of step s + 1 after its overhead o and computes (c) once
 * the fetch issued a step earlier has landed (DMA latency l, transfer d): the
 * period P obeys P = max(o, o + l + d - P) + c, so P = max(o + c,
 * (o + c + l + d) / 2), and at least d. The run's one DMA pays l once:
 * max(n (o + c), o + l + n d). Latency-bound steps (paged decode's small DMAs,
 * a causal backward's) so come out early; the difference delays the run's
 * DMAs. */
static double lost_latency_s(const struct pl_ctx *c, const struct plan *p, int64_t n)
{
    const struct chip_params *chip = c->chip;
    double work = chip->step_overhead_s + p->w.mxu_s + p->w.vpu_s;
    double d = hbm_busy_s(chip, (double)(p->fetch_bytes + p->out_bytes));
    double lat = chip->dma_issue_s, steps = (double)n;
    double period = fmax(fmax(work, (work + lat + d) / 2), d);
    double one = fmax(steps * work, chip->step_overhead_s + lat + steps * d);
    return fmax(steps * period - one, 0);
}

/* Runs steps [s0, s0+n) of identical plan 'p' as one input DMA, one compute
 * and, when every step writes its output back, one write-back DMA for the
 * first n-1 write-backs; the last one is started as the exact step would, and
 * waited on by the next step. */
static void bulk_steps(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s0,
                       int64_t n, const struct pl_exec *x, struct pl_stats *st)
{
    double o = c->chip->step_overhead_s;
    int noperands = c->call->noperands;
    x->ops->delay(x->ex, o + lost_latency_s(c, p, n));
    /* one DMA per operand, as the steps issue them: SimGrid shares HBM per
     * transfer, so one merged DMA would get one share where the steps' DMAs
     * get one each beside concurrent write-backs */
    void *h[PL_MAX_OPERANDS] = {0}, *hw[PL_MAX_OPERANDS] = {0};
    int64_t started = st->dmas;
    for (int i = 0; i < noperands; i++) {
        if (p->fetch & (1u << i))
            h[i] = pl_start_dma(x, st, true, os[i].bytes * (uint64_t)n, os[i].raw * (uint64_t)n, i);
        if ((p->out_start & (1u << i)) && n > 1)
            hw[i] = pl_start_dma(x, st, false, os[i].bytes * (uint64_t)(n - 1),
                                 os[i].raw * (uint64_t)(n - 1), i);
    }
    started = st->dmas - started;
    int per_step = __builtin_popcount(p->fetch) + __builtin_popcount(p->out_start);
    st->dmas += (int64_t)per_step * n - started - __builtin_popcount(p->out_start);
    pl_wait_inputs(os, noperands, p->wait, x);
    x->ops->compute(x->ex, &p->w, s0, n);
    if (n > 1)
        x->ops->delay(x->ex, o * (double)(n - 1));
    /* as outputs(): the last step starts its write-back, then waits for the
     * one before it (the run's, or the write-back started before the run) */
    void *prev[PL_MAX_OPERANDS] = {0};
    for (int i = 0; i < noperands; i++) {
        if (p->fetch & (1u << i))
            os[i].cur = h[i];
        if ((p->out_wait & (1u << i)) && os[i].pending)
            prev[i] = os[i].pending, os[i].pending = NULL;
        if (p->out_start & (1u << i))
            os[i].pending = pl_start_dma(x, st, false, os[i].bytes, os[i].raw, i);
    }
    for (int i = 0; i < noperands; i++) {
        if (prev[i])
            x->ops->dma_wait(x->ex, prev[i]);
        if (hw[i])
            x->ops->dma_wait(x->ex, hw[i]);
    }
    pl_account(st, &p->w, (double)n, o);
    st->coalesced_runs++;
}

/* The run of identical steady steps being gathered. */
struct stepper {
    struct plan run;
    int64_t run_start, run_len;
};

/* Steps of a run that are bandwidth-bound (compute shorter than a DMA's latency
 * and transfer) and few are executed one by one: such a run sits between
 * compute-bound steps (a causal backward's masked blocks), and how its DMAs
 * share the HBM with their neighbours' is not the one merged DMA's. */
#define PL_SHORT_RUN 16

static void flush_run(struct pl_ctx *c, struct opstate *os, struct stepper *sp)
{
    const struct plan *p = &sp->run;
    const struct chip_params *chip = c->chip;
    double work = chip->step_overhead_s + p->w.mxu_s + p->w.vpu_s;
    double dma = chip->dma_issue_s + hbm_busy_s(chip, (double)(p->fetch_bytes + p->out_bytes));
    if (sp->run_len > PL_SHORT_RUN || work >= dma)
        bulk_steps(c, os, p, sp->run_start, sp->run_len, c->x, c->st);
    else
        for (int64_t k = 0; k < sp->run_len; k++)
            pl_exact_step(c, os, p, sp->run_start + k);
    sp->run_len = 0;
}

/* Executes step 'p' (of index 'p->s'), or adds it to the current run. */
static void feed(struct pl_ctx *c, struct opstate *os, struct stepper *sp, const struct plan *p)
{
    bool ok = p->s > c->begin && steady(p, os, c->call->noperands);
    if (sp->run_len > 0 && !(ok && same_plan(p, &sp->run)))
        flush_run(c, os, sp);
    if (!ok) {
        pl_exact_step(c, os, p, p->s);
    } else if (sp->run_len++ == 0) {
        sp->run = *p;
        sp->run_start = p->s;
    }
}

static void feed_end(struct pl_ctx *c, struct opstate *os, struct stepper *sp)
{
    if (sp->run_len > 0)
        flush_run(c, os, sp);
}

/* A group: the steps from one output write-back to the next. */
struct group {
    struct plan *p;
    size_t n, cap;
};

static bool same_group(const struct group *a, const struct group *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!same_plan(&a->p[i], &b->p[i]) || a->p[i].out_wait != b->p[i].out_wait)
            return false;
    return true;
}

/* Runs 'r' more repeats of group 'g' (just executed) as one input DMA and
 * one write-back DMA per operand and one execution: exact when the repeats
 * are compute-bound or bandwidth-bound throughout, as for runs of steps. */
static void bulk_groups(struct pl_ctx *c, struct opstate *os, const struct group *g, int64_t r)
{
    const struct pl_exec *x = c->x;
    int noperands = c->call->noperands;
    const struct plan *first = &g->p[0], *last = &g->p[g->n - 1];
    uint64_t in[PL_MAX_OPERANDS] = {0}, out[PL_MAX_OPERANDS] = {0};
    uint64_t in_raw[PL_MAX_OPERANDS] = {0}, out_raw[PL_MAX_OPERANDS] = {0};
    int64_t per = 0, busy = 0;
    struct pl_work w = {0};
    for (size_t i = 0; i < g->n; i++) {
        const struct plan *p = &g->p[i];
        for (int k = 0; k < noperands; k++) {
            in[k] += (p->fetch & (1u << k)) ? os[k].bytes : 0;
            out[k] += (p->out_start & (1u << k)) ? os[k].bytes : 0;
            in_raw[k] += (p->fetch & (1u << k)) ? os[k].raw : 0;
            out_raw[k] += (p->out_start & (1u << k)) ? os[k].raw : 0;
        }
        per += __builtin_popcount(p->fetch) + __builtin_popcount(p->out_start);
        busy += p->w.flops > 0;
        w.mxu_s += p->w.mxu_s, w.vpu_s += p->w.vpu_s, w.flops += p->w.flops;
        w.vpu_flops += p->w.vpu_flops, w.transcendentals += p->w.transcendentals;
    }
    double o = c->chip->step_overhead_s;
    int64_t steps = r * (int64_t)g->n;
    x->ops->delay(x->ex, o);
    void *h[PL_MAX_OPERANDS] = {0}, *hw[PL_MAX_OPERANDS] = {0}; /* per operand: see bulk_steps */
    int64_t started = c->st->dmas;
    for (int k = 0; k < noperands; k++) {
        bool lw = last->out_start & (1u << k);
        uint64_t lastw = lw ? os[k].bytes : 0, lastw_raw = lw ? os[k].raw : 0;
        if (in[k])
            h[k] = pl_start_dma(x, c->st, true, in[k] * (uint64_t)r, in_raw[k] * (uint64_t)r, k);
        if (out[k] * (uint64_t)r > lastw)
            hw[k] = pl_start_dma(x, c->st, false, out[k] * (uint64_t)r - lastw,
                                 out_raw[k] * (uint64_t)r - lastw_raw, k);
    }
    started = c->st->dmas - started;
    pl_wait_inputs(os, noperands, first->wait, x);
    x->ops->compute(x->ex, &w, first->s + (int64_t)g->n, r);
    x->ops->delay(x->ex, o * (double)(steps - 1));
    for (int i = 0; i < noperands; i++)
        if ((first->out_wait & (1u << i)) && os[i].pending) {
            x->ops->dma_wait(x->ex, os[i].pending);
            os[i].pending = NULL;
        }
    for (int i = 0; i < noperands; i++) { /* the last write-back, then the one before it */
        if (last->fetch & (1u << i))
            os[i].cur = h[i];
        if (last->out_start & (1u << i))
            os[i].pending = pl_start_dma(x, c->st, false, os[i].bytes, os[i].raw, i);
    }
    for (int i = 0; i < noperands; i++) {
        if (hw[i])
            x->ops->dma_wait(x->ex, hw[i]);
        if (h[i] && !(last->fetch & (1u << i))) /* fetched and used within the group */
            x->ops->dma_wait(x->ex, h[i]);
    }
    struct pl_stats *st = c->st;
    st->dmas += per * r - started - __builtin_popcount(last->out_start);
    pl_account(st, &w, (double)r, o * (double)g->n);
    st->compute_steps += busy * r - (w.flops > 0 ? r : 0);
    st->coalesced_runs++;
}

/* Whether every step of 'g' is on one side: compute at least its DMAs' time
 * at the HBM's rate, or at most. A folded group overlaps all its DMAs with all
 * its compute, which is the steps' time only then: where compute-bound and
 * bandwidth-bound steps alternate, each pays its own larger part. */
static bool one_sided(const struct pl_ctx *c, const struct group *g)
{
    int side = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct plan *p = &g->p[i];
        double dma = hbm_busy_s(c->chip, (double)(p->fetch_bytes + p->out_bytes));
        double work = p->w.mxu_s + p->w.vpu_s;
        int s = work > dma ? 1 : work < dma ? -1 : 0;
        if (s && side && s != side)
            return false;
        side = s ? s : side;
    }
    return true;
}

static void group_push(struct group *g, const struct plan *p)
{
    xgrow(&g->p, &g->cap, g->n + 1, sizeof *g->p);
    g->p[g->n++] = *p;
}

static void feed_group(struct pl_ctx *c, struct opstate *os, struct stepper *sp,
                       const struct group *g)
{
    for (size_t i = 0; i < g->n; i++)
        feed(c, os, sp, &g->p[i]);
    feed_end(c, os, sp);
}

/* Fidelity fast: steps are planned a group at a time; a group identical to
 * the one before is not executed but counted, and a series of them runs as
 * one (bulk_groups). Other groups run step by step, runs coalesced. */
void pl_run_grouped(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    struct group cur = {0}, prev = {0};
    struct stepper sp = {0};
    int64_t repeats = 0;
    struct plan p;
    for (int64_t s = b; s < e; s++) {
        pl_plan_step(c, os, s, b, e, &p);
        p.s = s;
        pl_run_body(c, s, &p.w);
        pl_advance_idx(c, os, s, e);
        c->st->steps++;
        group_push(&cur, &p);
        if (!p.out_start && s + 1 < e)
            continue;
        if (prev.n && same_group(&cur, &prev) && one_sided(c, &prev)) {
            repeats++;
        } else {
            if (repeats)
                bulk_groups(c, os, &prev, repeats);
            repeats = 0;
            feed_group(c, os, &sp, &cur);
            struct group t = prev;
            prev = cur;
            cur = t;
        }
        cur.n = 0;
    }
    if (repeats)
        bulk_groups(c, os, &prev, repeats);
    free(cur.p);
    free(prev.p);
}

/* ---- a bandwidth-bound stream as a whole (fast fidelity) ---- */

/* A stream call whose steps are bandwidth-bound, with every operand
 * double-buffered in VMEM and moving every step. */
static bool streamable(const struct pl_ctx *c, const struct opstate *os, int64_t n,
                       const struct pl_work *w)
{
    const struct pl_call *call = c->call;
    if (!call->stream || call->ngrid != 1 || n < 2 || call->smem_prefetch_bytes)
        return false;
    uint64_t bytes = 0;
    for (int i = 0; i < call->noperands; i++) {
        if (!os[i].piped || os[i].trivial || os[i].single ||
            pl_same_idx(os[i].idx_cur, os[i].idx_next))
            return false;
        bytes += os[i].bytes;
    }
    double work = c->chip->step_overhead_s + w->mxu_s + w->vpu_s;
    return work < hbm_busy_s(c->chip, (double)bytes);
}

/* A one-step stream whose operands all move once (a small reduction): its
 * inputs arrive one after the other, then the step's overhead o and compute c,
 * then the write-back, each DMA l + b_i/B: sum(l + b_i/B) + o + c. Fast
 * fidelity runs it as the overhead, the other DMAs' latencies, the compute
 * and one DMA of all the bytes: the same sum. */
static bool single_stream(const struct pl_ctx *c, const struct opstate *os, int64_t n)
{
    const struct pl_call *call = c->call;
    if (!call->stream || n != 1 || call->smem_prefetch_bytes || call->noperands < 1)
        return false;
    for (int i = 0; i < call->noperands; i++)
        if (!os[i].piped || !os[i].trivial)
            return false;
    return true;
}

/* The call's runs back to back (its 'repeat'), at least one. */
static int64_t repeats(const struct pl_call *call)
{
    return call->repeat > 1 ? call->repeat : 1;
}

/* R runs of a one-step stream of k operands back to back: R (o + k l + c + b/B),
 * as one delay of their overheads and all latencies but the last DMA's, one
 * compute of the R steps and one DMA of all their bytes. */
static void run_single_stream(struct pl_ctx *c, const struct opstate *os, int64_t b,
                              const struct pl_work *w)
{
    const struct pl_exec *x = c->x;
    int n = c->call->noperands;
    int64_t R = repeats(c->call);
    uint64_t bytes = 0, raw = 0;
    for (int i = 0; i < n; i++)
        bytes += os[i].bytes, raw += os[i].raw;
    double l = c->chip->dma_issue_s, o = c->chip->step_overhead_s;
    x->ops->delay(x->ex, (double)R * (o + (n - 1) * l) + (double)(R - 1) * l);
    x->ops->compute(x->ex, w, b, R);
    pl_sync_dma(x, c->st, true, bytes * (uint64_t)R, raw * (uint64_t)R, -1);
    c->st->dmas += R * n - 1;
    pl_account(c->st, w, (double)R, c->chip->step_overhead_s);
    c->st->steps += R;
}

/* Steps [b, b+n) of a bandwidth-bound stream, whole. Step by step, the HBM
 * never idles once the first blocks are in: the pipeline takes the first
 * step's overhead, the DMA latency, the n steps' transfers (d each: every
 * block in and out), then the last block's compute and its write-back's
 * latency: o + l + n d + c + l. Here: o, one DMA per operand for all its
 * blocks (l + n d together, each its share of the HBM as the steps' DMAs
 * are) beside the steps' compute and overheads, then c + l. R runs back to
 * back (the call's repeat: a ring pass's reductions, one per step) are each
 * their own pipeline, R (o + 2 l + c) + R n d: one stream of the R n blocks
 * whose fill takes the R fills (o + l each) and whose drain the R drains
 * (c + l each). */
static void run_stream(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t n,
                       const struct pl_work *w)
{
    const struct pl_exec *x = c->x;
    const struct pl_call *call = c->call;
    int64_t R = repeats(call);
    double o = c->chip->step_overhead_s, l = c->chip->dma_issue_s;
    double pre = o + (double)(R - 1) * (o + l);
    n *= R;
    double mid = o * (double)(n - 1);
    double post = (double)R * (w->mxu_s + w->vpu_s + l);
    if (x->ops->stream) {
        bool in[PL_MAX_OPERANDS];
        uint64_t bytes[PL_MAX_OPERANDS];
        int opi[PL_MAX_OPERANDS];
        for (int i = 0; i < call->noperands; i++) {
            in[i] = call->operands[i].dir == PL_IN, bytes[i] = os[i].bytes * (uint64_t)n;
            opi[i] = i;
            c->st->hbm_bytes += (double)bytes[i];
            c->st->useful_bytes += (double)(os[i].raw * (uint64_t)n);
        }
        x->ops->stream(x->ex, call->noperands, in, bytes, opi, w, b, n, pre, mid, post);
    } else {
        void *h[PL_MAX_OPERANDS];
        x->ops->delay(x->ex, pre);
        for (int i = 0; i < call->noperands; i++)
            h[i] = pl_start_dma(x, c->st, call->operands[i].dir == PL_IN, os[i].bytes * (uint64_t)n,
                                os[i].raw * (uint64_t)n, i);
        c->st->dmas -= call->noperands;
        x->ops->compute(x->ex, w, b, n);
        x->ops->delay(x->ex, mid);
        for (int i = 0; i < call->noperands; i++)
            x->ops->dma_wait(x->ex, h[i]);
        x->ops->delay(x->ex, post);
    }
    c->st->dmas += (int64_t)call->noperands * n;
    pl_account(c->st, w, (double)n, o);
    c->st->steps += n;
    c->st->coalesced_runs += R;
}

bool pl_run_stream(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    struct pl_work w;
    pl_run_body(c, b, &w);
    if (streamable(c, os, e - b, &w)) {
        run_stream(c, os, b, e - b, &w);
        return true;
    }
    if (single_stream(c, os, e - b)) {
        run_single_stream(c, os, b, &w);
        return true;
    }
    return false;
}

/* ---- scripts: record an executor's calls, replay them ---- */

enum rec_kind { REC_DMA_START, REC_DMA_WAIT, REC_COMPUTE, REC_DELAY };

struct rec {
    uint8_t kind;
    bool in;
    int operand;
    int64_t handle;   /* DMA_START: the handle it makes; DMA_WAIT: the one it waits */
    int64_t steps;    /* st->steps before the call (the progress line reads it) */
    uint64_t bytes;
    int64_t step, n;  /* COMPUTE */
    double seconds;   /* DELAY */
    struct pl_work w; /* COMPUTE */
};

struct pl_script {
    struct rec *r;
    size_t n, cap;
    int64_t nhandles;
    struct pl_stats st; /* what the run adds */
};

struct recorder {
    struct pl_script *s;
    const struct pl_stats *st;
};

static struct rec *rec_push(struct recorder *rc, enum rec_kind kind)
{
    struct pl_script *s = rc->s;
    xgrow(&s->r, &s->cap, s->n + 1, sizeof *s->r);
    struct rec *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    r->steps = rc->st->steps;
    return r;
}

static void *rec_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    struct recorder *rc = ex;
    struct rec *r = rec_push(rc, REC_DMA_START);
    r->in = in, r->bytes = bytes, r->operand = operand;
    r->handle = rc->s->nhandles++;
    return (void *)(intptr_t)(r->handle + 1); /* never NULL */
}

static void rec_dma_wait(void *ex, void *h)
{
    rec_push(ex, REC_DMA_WAIT)->handle = (int64_t)(intptr_t)h - 1;
}

static void rec_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    struct rec *r = rec_push(ex, REC_COMPUTE);
    r->w = *w, r->step = step, r->n = n;
}

static void rec_delay(void *ex, double s)
{
    rec_push(ex, REC_DELAY)->seconds = s;
}

/* A recorder that only counts (pl_script_length). */
static void *cnt_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    (void)in, (void)bytes, (void)operand;
    return (void *)(intptr_t)++*(int64_t *)ex; /* never NULL */
}

static void cnt_dma_wait(void *ex, void *h)
{
    (void)h;
    ++*(int64_t *)ex;
}

static void cnt_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    (void)w, (void)step, (void)n;
    ++*(int64_t *)ex;
}

static void cnt_delay(void *ex, double s)
{
    (void)s;
    ++*(int64_t *)ex;
}

int64_t pl_script_length(const struct pl_call *call, const struct chip_params *chip,
                         int64_t begin, int64_t end, bool coalesce)
{
    static const struct pl_exec_ops ops = {.dma_start = cnt_dma_start, .dma_wait = cnt_dma_wait,
                                           .compute = cnt_compute, .delay = cnt_delay};
    int64_t n = 0;
    struct pl_exec x = {&ops, &n, coalesce};
    struct pl_stats st = {0};
    pl_run(call, chip, begin, end, &x, &st);
    return n;
}

bool pl_scriptable(const struct pl_call *call)
{
    return !call->functional && !call->manual;
}

struct pl_script *pl_record(const struct pl_call *call, const struct chip_params *chip,
                            int64_t begin, int64_t end, bool coalesce)
{
    TPU_ASSERT(pl_scriptable(call), "pallas_call '%s': a functional or manual call cannot be "
               "recorded", call->name);
    static const struct pl_exec_ops ops = {.dma_start = rec_dma_start, .dma_wait = rec_dma_wait,
                                           .compute = rec_compute, .delay = rec_delay};
    struct pl_script *s = xcalloc(1, sizeof *s);
    struct recorder rc = {s, &s->st};
    struct pl_exec x = {&ops, &rc, coalesce};
    pl_run(call, chip, begin, end, &x, &s->st);
    return s;
}

static void add_stats(struct pl_stats *to, const struct pl_stats *d)
{
    to->compute_steps += d->compute_steps;
    to->dmas += d->dmas;
    to->coalesced_runs += d->coalesced_runs;
    struct pl_sums saved;
    pl_sums_take(to, &saved);
    to->hbm_bytes = d->hbm_bytes, to->flops = d->flops, to->vpu_flops = d->vpu_flops;
    to->transcendentals = d->transcendentals;
    to->mxu_s = d->mxu_s, to->vpu_s = d->vpu_s, to->overhead_s = d->overhead_s;
    to->useful_bytes = d->useful_bytes;
    pl_sums_add(to, &saved);
}

void pl_replay(const struct pl_script *s, const struct pl_exec *x, struct pl_stats *st)
{
    if (!s->n && !s->st.steps)
        return;
    void **h = xcalloc((size_t)s->nhandles + 1, sizeof *h);
    int64_t steps0 = st->steps;
    st->vmem_bytes = s->st.vmem_bytes;
    for (size_t i = 0; i < s->n; i++) {
        const struct rec *r = &s->r[i];
        st->steps = steps0 + r->steps;
        switch ((enum rec_kind)r->kind) {
        case REC_DMA_START:
            h[r->handle] = x->ops->dma_start(x->ex, r->in, r->bytes, r->operand);
            break;
        case REC_DMA_WAIT:
            x->ops->dma_wait(x->ex, h[r->handle]);
            break;
        case REC_COMPUTE:
            x->ops->compute(x->ex, &r->w, r->step, r->n);
            break;
        case REC_DELAY:
            x->ops->delay(x->ex, r->seconds);
            break;
        }
    }
    st->steps = steps0 + s->st.steps;
    add_stats(st, &s->st);
    free(h);
}

void pl_script_stats(const struct pl_script *s, struct pl_stats *st)
{
    if (!s->n && !s->st.steps)
        return;
    st->vmem_bytes = s->st.vmem_bytes;
    st->steps += s->st.steps;
    add_stats(st, &s->st);
}

void pl_script_free(struct pl_script *s)
{
    if (s) {
        free(s->r);
        free(s);
    }
}
