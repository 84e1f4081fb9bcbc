/* engine/sim_child.h -- an engine run in a forked child. SimGrid runs once
 * per process, so whoever runs the engine more than once (block: auto's
 * search, the serving engine's steps) runs each in a child: 'body' fills
 * 'out' there ('size' bytes of plain data) and the bytes come back through a
 * pipe. Uses libc only. */
#ifndef TPUSIM_ENGINE_SIM_CHILD_H
#define TPUSIM_ENGINE_SIM_CHILD_H

#include <stddef.h>

/* Runs body(arg, out) in a forked child and copies 'out' back. Returns 0;
 * or 1 with "cannot fork: ..." in 'err' (which may lie inside 'out'), or,
 * when the child died or sent less, 'out' zeroed and "the WHAT ended
 * abnormally (status N)" in 'err', 1 (130 when a SIGINT ended it). */
int sim_child_run(void (*body)(void *arg, void *out), void *arg, void *out, size_t size,
                  const char *what, char *err, size_t n);

#endif
