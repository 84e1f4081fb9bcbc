/* base/check.h -- internal invariants, kept in release builds.
 * TPU_ASSERT(cond, fmt, ...) prints "file:line: assertion 'cond' failed: msg"
 * and aborts: a broken invariant is a bug in tpusim, not bad input. */
#ifndef TPUSIM_BASE_CHECK_H
#define TPUSIM_BASE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define TPU_ASSERT(cond, ...)                                                                  \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: assertion '%s' failed: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#endif
