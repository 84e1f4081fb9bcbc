/* tests/unit/test_util.h -- shared test includes and fixtures. */
#ifndef TPUSIM_TESTS_TEST_UTIL_H
#define TPUSIM_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/chip.h"

/* True when the suite runs under valgrind (its preload library is in
 * LD_PRELOAD): tests then skip the repeats of a case on every chip of a
 * large slice (hundreds of threads at valgrind's pace, gigabytes of shadow
 * state); the plain and ASan runs keep them. */
static inline int test_under_valgrind(void)
{
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") != NULL;
}

/* True under valgrind or AddressSanitizer (the build's __SANITIZE_ADDRESS__, as
 * test_guards.c tells its runs apart): tests whose point is not the size run a
 * smaller slice or model there, the same code paths, and skip the repeat of a
 * case on every chip of a large slice; the plain build (make test) keeps the
 * full sizes, so every check still runs at full size there. */
static inline int test_under_checker(void)
{
#ifdef __SANITIZE_ADDRESS__
    return 1;
#else
    return test_under_valgrind();
#endif
}

/* One v5e-like TensorCore with round numbers: 4 MXUs of 128x128 at 1 GHz
 * (131.072 TFLOP/s = 4 x 128 x 128 x 2 FLOP per cycle, every dtype), vregs of
 * 8 x 128 (4 ALU, 3 load, 1 store, 1 EUP, 0.5 XLU per cycle), 128 MiB of VMEM
 * with a 16 MiB scoped limit, 1 MiB of SMEM, 1 TB/s of HBM, no per-step
 * overhead, no DMA latency, one core (no megacore). A test whose figures
 * depend on a field sets that field itself after calling this. */
static inline struct chip_params test_chip(void)
{
    struct chip_params c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.generation = 5, c.cores = 1, c.mxu_count = 4, c.mxu_dim = 128;
    for (int i = 0; i < DT_COUNT; i++)
        c.peak_flops[i] = 131.072e12;
    c.clock_hz = 1e9, c.vpu_sublanes = 8, c.vpu_lanes = 128, c.vpu_packing_below_bits = 16;
    c.rpa_kv_pages_per_block = 128;
    c.vpu_alu_per_cycle = 4, c.vpu_load_per_cycle = 3, c.vpu_store_per_cycle = 1;
    c.eup_per_cycle = 1, c.xlu_per_cycle = 0.5;
    c.vmem_bytes = 128 << 20, c.vmem_limit_bytes = 16 << 20, c.smem_bytes = 1 << 20;
    c.hbm_bw_Bps = 1e12;
    return c;
}

/* Makes a new directory "/tmp/tpusim-test-<what>-XXXXXX" and writes its path
 * into 'dir' ('n' bytes). Returns 0, or -1 as a cmocka setup does. */
static inline int test_tmpdir_make(char *dir, size_t n, const char *what)
{
    snprintf(dir, n, "/tmp/tpusim-test-%s-XXXXXX", what);
    return mkdtemp(dir) ? 0 : -1;
}

/* Removes directory 'dir' and all it holds. Returns 0, or -1 as a cmocka
 * teardown does. */
static inline int test_tmpdir_remove(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%.4096s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
