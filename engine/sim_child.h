/* engine/sim_child.h -- an engine run in a forked child. SimGrid runs once
 * per process, so whoever runs the engine more than once (block: auto's
 * search, the serving engine's steps) runs each in a child: 'body' fills
 * 'out' there ('size' bytes of plain data) and the bytes come back through a
 * pipe. Uses libc only. */
#ifndef TPUSIM_ENGINE_SIM_CHILD_H
#define TPUSIM_ENGINE_SIM_CHILD_H

#include <stdbool.h>
#include <stddef.h>

enum sim_child_rc {
    SIM_CHILD_OK,       /* 'out' holds what the child's body wrote */
    SIM_CHILD_NO_FORK,  /* no pipe or no fork: 'err' says why */
    SIM_CHILD_ABNORMAL, /* the child died or sent less: 'out' zeroed, 'err' "ended
                           abnormally (status N)", '*interrupted' set for a SIGINT */
};

/* Runs body(arg, out) in a forked child and copies 'out' back. */
enum sim_child_rc sim_child_run(void (*body)(void *arg, void *out), void *arg, void *out,
                                size_t size, char *err, size_t n, bool *interrupted);

#endif
