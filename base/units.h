/* base/units.h -- the one parser for quantities with units.
 * Spellings follow SimGrid platform files: "128MiB", "16GB", "819GBps",
 * "100Gbps", "1us", "800ns", "197Tf", "1.5GHz". Results are SI: bytes,
 * bytes per second, seconds, FLOP per second, hertz. */
#ifndef TPUSIM_BASE_UNITS_H
#define TPUSIM_BASE_UNITS_H

#include <stddef.h>

enum units_kind {
    UNITS_BYTES,     /* "128MiB", "4KB", or a bare integer */
    UNITS_BANDWIDTH, /* "819GBps", "100Gbps" (bits) */
    UNITS_TIME,      /* "1us", "0.35us", "2ms", "1s" */
    UNITS_FLOPS,     /* "197Tf", "1.2Pf", "100Gflops" */
    UNITS_FREQ,      /* "1.5GHz" */
};

/* Parses 's' as a quantity of 'kind' into '*out' (SI). Returns 0, or -1 when
 * 's' is not such a quantity (unknown unit, missing unit, not a number). */
int units_parse(const char *s, enum units_kind kind, double *out);

/* Returns what a quantity of 'kind' looks like, for error messages:
 * "a size like 128MiB". Static string. */
const char *units_expect(enum units_kind kind);

/* Writes 'v' of 'kind' into 'buf' with a readable prefix ("819 GB/s",
 * "1.000 us", "128 MiB", "197 TFLOP/s"). Returns 'buf'. */
char *units_format(char *buf, size_t n, double v, enum units_kind kind);

#endif
