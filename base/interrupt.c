/* base/interrupt.c -- the SIGINT flag (see base/interrupt.h). */
#include "base/interrupt.h"

#include <string.h>

/* The only mutable global of tpusim besides SimGrid's own: what a signal
 * handler may set (tools/check_globals.sh allows this one). */
static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    got_sigint = 1;
}

void interrupt_catch(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old);
}

void interrupt_restore(const struct sigaction *old)
{
    sigaction(SIGINT, old, NULL);
}

bool interrupt_pending(void)
{
    return got_sigint != 0;
}
