/* kernels/splash.c -- placeholder until the kernel lands: refuses the op. */
#include "kernels/kernel.h"

static int stub_init(struct kern *k, char *err, size_t n)
{
    snprintf(err, n, "%s is not implemented yet", op_kind_name(k->op->kind));
    return -1;
}

const struct kern_kind kern_splash_kind = {OP_SPLASH, stub_init, NULL, NULL, NULL};
