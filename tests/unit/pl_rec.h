/* tests/unit/pl_rec.h -- run Pallas calls in process, without an engine,
 * through a recording executor: every DMA (operand, direction, bytes, the
 * step that issued it), per-operand fetch and write counts, MXU FLOPs (in
 * total and per exact step), a short text log, and a check that each DMA is
 * waited on exactly once, after it started. Include after test_util.h; the
 * functions are static inline, so a file uses only what it needs. */
#ifndef TPUSIM_TESTS_PL_REC_H
#define TPUSIM_TESTS_PL_REC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "config/op_table.h"

#define REC_MAX_DMAS 4096 /* DMAs recorded one by one; later ones are only counted */
#define REC_STEPS 64      /* steps whose FLOPs are recorded one by one */

struct rec {
    int ndmas;  /* DMAs started; DMA i (0-based) has handle i + 1 */
    int nrec;   /* DMAs recorded one by one: the first min(ndmas, REC_MAX_DMAS) */
    int waited; /* DMA waits */
    int op[REC_MAX_DMAS];
    bool in[REC_MAX_DMAS];
    int64_t at[REC_MAX_DMAS];          /* the step that issued it (steps computed before it) */
    unsigned char state[REC_MAX_DMAS]; /* 1 started, 2 waited */
    int64_t fetches[PL_MAX_OPERANDS], writes[PL_MAX_OPERANDS];
    uint64_t in_bytes;
    int64_t step;           /* steps computed so far */
    int64_t computes, busy; /* steps, and steps with MXU work */
    double flops;
    double step_flops[REC_STEPS]; /* FLOPs of each step run alone (not in a coalesced run) */
    char log[4096]; /* "F<op> " start in, "W<op> " start out, "w<handle> ", "C<step>[+] " */
    size_t nlog;    /* characters in 'log' */
};

/* Appends a token to the log while it has room for any token (later ones are dropped). */
__attribute__((format(printf, 2, 3))) static inline void rec_log(struct rec *r, const char *fmt,
                                                                 ...)
{
    if (r->nlog + 48 > sizeof r->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    r->nlog += (size_t)vsnprintf(r->log + r->nlog, sizeof r->log - r->nlog, fmt, ap);
    va_end(ap);
}

static inline void *rec_dma_start(void *ex, bool in, uint64_t bytes, int op)
{
    struct rec *r = ex;
    rec_log(r, "%s%d ", in ? "F" : "W", op);
    if (r->nrec < REC_MAX_DMAS) {
        int i = r->nrec++;
        r->op[i] = op, r->in[i] = in, r->at[i] = r->step, r->state[i] = 1;
    }
    if (op >= 0)
        (in ? r->fetches : r->writes)[op]++;
    if (in)
        r->in_bytes += bytes;
    return (void *)(intptr_t)++r->ndmas;
}

static inline void rec_dma_wait(void *ex, void *h)
{
    struct rec *r = ex;
    int i = (int)(intptr_t)h;
    rec_log(r, "w%d ", i);
    assert_true(i >= 1 && i <= r->ndmas);
    if (i <= REC_MAX_DMAS) {
        assert_int_equal(r->state[i - 1], 1); /* started, not waited yet */
        r->state[i - 1] = 2;
    }
    r->waited++;
}

static inline void rec_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    struct rec *r = ex;
    rec_log(r, "C%lld%s ", (long long)step, n > 1 ? "+" : "");
    r->computes += n;
    r->busy += w->flops > 0 ? n : 0;
    r->flops += w->flops * (double)n;
    if (step < REC_STEPS && n == 1)
        r->step_flops[step] += w->flops;
    r->step = step + n;
}

static inline void rec_delay(void *ex, double s)
{
    (void)ex, (void)s;
}

static const struct pl_exec_ops rec_ops = {rec_dma_start, rec_dma_wait, rec_compute, rec_delay,
                                           NULL, NULL};

/* Runs every step of 'c' on one core, without coalescing; adds to '*st' (may be NULL). */
static inline void rec_run_call(const struct pl_call *c, const struct chip_params *ch,
                                struct rec *r, struct pl_stats *st)
{
    struct pl_exec ex = {&rec_ops, r, false};
    struct pl_stats mine = {0};
    pl_run(c, ch, 0, pl_num_steps(c), &ex, st ? st : &mine);
}

/* Index of operand 'name' of 'c', or -1. */
static inline int rec_find_op(const struct pl_call *c, const char *name)
{
    for (int i = 0; i < c->noperands; i++)
        if (!strcmp(c->operands[i].name, name))
            return i;
    return -1;
}

/* Index of operand 'name' of 'c'; fails the test when there is none. */
static inline int rec_op_index(const struct pl_call *c, const char *name)
{
    int i = rec_find_op(c, name);
    if (i < 0)
        fail_msg("call %s has no operand %s", c->name, name);
    return i;
}

/* Runs core 'core' of 'ncores' of every call of 'k' (all of each call when
 * ncores == 1) and returns the stats; every DMA started must have been
 * waited on at the end. */
static inline struct pl_stats rec_run_core(const struct kern *k, const struct chip_params *ch,
                                           int core, int ncores, struct rec *r)
{
    struct pl_stats st = {0};
    struct pl_exec ex = {&rec_ops, r, false};
    for (int i = 0; i < k->ncalls; i++) {
        int64_t b, e;
        pl_core_range(&k->calls[i], core, ncores, &b, &e);
        pl_run(&k->calls[i], ch, b, e, &ex, &st);
    }
    assert_int_equal(r->ndmas, r->waited);
    assert_int_equal(st.dmas, r->ndmas);
    return st;
}

/* kern_init that fails the test with the message. */
static inline void rec_init_ok(struct kern *k, const struct op *op, const struct chip_params *ch,
                               bool functional)
{
    char err[512] = "";
    if (kern_init(k, op_row(op->kind)->kern, op, ch, functional, err, sizeof err) != 0)
        fail_msg("kern_init: %s", err);
}

/* Builds 'k' for 'op' with host data from 'seed', runs all of it on one core
 * and returns kern_verify's worst error ('*ok', 'msg' as kern_verify). The
 * caller releases 'k' with kern_fini(). */
static inline double rec_run_functional(struct kern *k, const struct op *op,
                                        const struct chip_params *ch, uint64_t seed, bool *ok,
                                        char *msg, size_t n)
{
    rec_init_ok(k, op, ch, true);
    kern_data(k, seed);
    struct rec r;
    memset(&r, 0, sizeof r);
    rec_run_core(k, ch, 0, 1, &r);
    return kern_verify(k, ok, msg, n);
}

/* rec_run_functional that fails the test, printing kern_verify's message,
 * unless the outputs match; returns the worst error (printed when TEST_VERBOSE
 * is set). The caller releases 'k' with kern_fini(). */
static inline double rec_functional_ok(struct kern *k, const struct op *op,
                                       const struct chip_params *ch, uint64_t seed)
{
    bool ok = false;
    char msg[256];
    double worst = rec_run_functional(k, op, ch, seed, &ok, msg, sizeof msg);
    if (!ok)
        print_error("%s\n", msg);
    if (getenv("TEST_VERBOSE"))
        print_message("worst error %.3g\n", worst);
    assert_true(ok);
    return worst;
}

/* kern_init must fail with exactly the message 'want'. */
static inline void rec_expect_error(const struct op *op, const struct chip_params *ch,
                                    const char *want)
{
    struct kern k;
    char err[512] = "";
    int rc = kern_init(&k, op_row(op->kind)->kern, op, ch, false, err, sizeof err);
    kern_fini(&k);
    if (rc == 0 || strcmp(err, want) != 0)
        print_error("got rc %d '%s', want '%s'\n", rc, err, want);
    assert_int_equal(rc, -1);
    assert_string_equal(err, want);
}

#endif
