/* workload/schedule.h -- the waits of a program (workload/program.h),
 * derived from the tensors its ops read and write, with XLA's overlap
 * rules applied once:
 *  - compute and synchronous collectives run in program order (the stream):
 *    an op waits for the producers of what it reads; where that is what the
 *    op before implies, it just waits for the op before (no after: written);
 *  - an async op (PROG_ASYNC, a start/done pair) starts as soon as what it
 *    reads is ready: a reduce-scatter of a gradient waits for its dgrad, not
 *    for the wgrad written before it;
 *  - an async op that writes a loop-carried tensor is a prefetch, issued one
 *    iteration ahead: once the previous iteration's stream is done and its
 *    own previous instance (the FSDP gather of the next layer's weights, the
 *    host-to-device copy of its offloaded tensors);
 *  - an async op after a loop body's last stream op is issued as the
 *    iteration ends (the gradient reductions, the copy to the host);
 *  - any other async op before a loop body's first stream op is issued as
 *    the iteration starts: once the previous iteration's stream is done and,
 *    in the first, the stream before the loop (the layer's FSDP gathers:
 *    XLA's while body holds their start and done, so they cannot run ahead);
 *  - the first stream op of a loop body waits for the previous iteration's
 *    stream and, in the first, for the stream before the loop;
 *  - an op after a loop waits for the loop as a whole, except one flagged
 *    PROG_DATA_WAIT, which names what it reads (the final norm after the
 *    layers, not after the copies they left running);
 *  - the gather of a carried tensor (the incoming gradient) whose first
 *    reader is a matmul is moved beside the recomputation: issued async
 *    behind the recomputation's first gather, the one that feeds its first
 *    matmul (re_qkv); and that matmul (g_down_dgrad) then runs beside the
 *    recomputation's last reduce-scatter when a recomputed matmul follows it.
 * A read of a sync op of a loop that ran before the reader's loop needs no
 * wait (the stream ran it); a read of a tensor a loop carries waits for the
 * previous iteration's writer and the initial value's writer.
 * Uses base/ and workload/program.h. */
#ifndef TPUSIM_WORKLOAD_SCHEDULE_H
#define TPUSIM_WORKLOAD_SCHEDULE_H

#include <stddef.h>

#include "workload/program.h"

/* Applies the rules to 'p' (moving ops, setting each op's wait). Returns 0,
 * or -1 with the reason in 'err': an op reads a tensor written after it in
 * its block (a cycle), or more waits than an op can hold. */
int sched_program(struct program *p, char *err, size_t n);
/* XLA's overlap flags as a what-if (config's xla_flags:): makes every op
 * whose kind is in 'kinds' (NULL-terminated: "all_gather", ...) synchronous
 * (it joins the compute stream: it waits for the op before it and the op
 * after it waits for it, its time exposed) and schedules 'p' again. Returns
 * how many ops changed (0: 'p' untouched), or -1 with the reason in 'err'. */
int sched_sync_kinds(struct program *p, const char *const *kinds, char *err, size_t n);
/* The tensors written and never read (nor marked outputs), as "a, b" in
 * 'buf'; returns how many. */
int sched_unread(const struct program *p, char *buf, size_t n);

#endif
