/* base/interrupt.h -- Ctrl-C during a run. tpusim's one writable global lives
 * in base/interrupt.c: the flag the SIGINT handler sets (a volatile
 * sig_atomic_t, the only thing a handler may touch). Actors poll it once per
 * grid step and stop the run; the run then writes nothing and exits 130.
 * Uses libc only. */
#ifndef TPUSIM_BASE_INTERRUPT_H
#define TPUSIM_BASE_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

/* Installs the handler; saves the previous one in 'old' when not NULL. */
void interrupt_catch(struct sigaction *old);
/* Puts back the handler saved by interrupt_catch. */
void interrupt_restore(const struct sigaction *old);
/* True once SIGINT arrived. */
bool interrupt_pending(void);

#endif
