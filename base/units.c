/* base/units.c -- quantity parser: number followed by a unit suffix.
 * Decimal prefixes (k, M, G, T, P) are powers of 1000; binary ones (Ki, Mi,
 * Gi, Ti) powers of 1024. Bandwidth in bits ("bps") is divided by 8. */
#include "base/units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unit {
    const char *suffix;
    double scale;
};

static const struct unit bytes_units[] = {
    {"", 1},         {"B", 1},         {"kB", 1e3},       {"KB", 1e3},        {"MB", 1e6},
    {"GB", 1e9},     {"TB", 1e12},     {"KiB", 1024.0},   {"MiB", 1048576.0}, {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0}, {NULL, 0}};

static const struct unit bw_units[] = {
    {"Bps", 1},           {"kBps", 1e3},         {"KBps", 1e3},          {"MBps", 1e6},
    {"GBps", 1e9},        {"TBps", 1e12},        {"PBps", 1e15},         {"KiBps", 1024.0},
    {"MiBps", 1048576.0},
    {"GiBps", 1073741824.0}, {"TiBps", 1099511627776.0}, {"bps", 0.125}, {"kbps", 125.0},
    {"Mbps", 1.25e5},     {"Gbps", 1.25e8},      {"Tbps", 1.25e11},      {NULL, 0}};

static const struct unit time_units[] = {{"s", 1},     {"ms", 1e-3}, {"us", 1e-6},
                                         {"ns", 1e-9}, {"ps", 1e-12}, {NULL, 0}};

static const struct unit flops_units[] = {
    {"f", 1},         {"kf", 1e3},       {"Mf", 1e6},      {"Gf", 1e9},      {"Tf", 1e12},
    {"Pf", 1e15},     {"flops", 1},      {"kflops", 1e3},  {"Mflops", 1e6},  {"Gflops", 1e9},
    {"Tflops", 1e12}, {"Pflops", 1e15},  {NULL, 0}};

static const struct unit freq_units[] = {
    {"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}, {NULL, 0}};

static const struct unit *table(enum units_kind kind)
{
    switch (kind) {
    case UNITS_BYTES:
        return bytes_units;
    case UNITS_BANDWIDTH:
        return bw_units;
    case UNITS_TIME:
        return time_units;
    case UNITS_FLOPS:
        return flops_units;
    case UNITS_FREQ:
        return freq_units;
    }
    return bytes_units;
}

int units_parse(const char *s, enum units_kind kind, double *out)
{
    if (!s)
        return -1;
    while (*s == ' ')
        s++;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -1;
    while (*end == ' ')
        end++;
    for (const struct unit *u = table(kind); u->suffix; u++) {
        if (strcmp(end, u->suffix) == 0) {
            *out = v * u->scale;
            return 0;
        }
    }
    return -1;
}

const char *units_expect(enum units_kind kind)
{
    switch (kind) {
    case UNITS_BYTES:
        return "a size like 128MiB";
    case UNITS_BANDWIDTH:
        return "a bandwidth like 819GBps";
    case UNITS_TIME:
        return "a duration like 1us";
    case UNITS_FLOPS:
        return "a FLOP rate like 197Tf";
    case UNITS_FREQ:
        return "a frequency like 1.5GHz";
    }
    return "a quantity";
}

static char *fmt_scaled(char *buf, size_t n, double v, const struct unit *u, int nu,
                        const char *base)
{
    int best = 0;
    for (int i = 0; i < nu; i++)
        if (fabs(v) >= u[i].scale)
            best = i;
    snprintf(buf, n, "%.4g %s%s", v / u[best].scale, u[best].suffix, base);
    return buf;
}

char *units_format(char *buf, size_t n, double v, enum units_kind kind)
{
    static const struct unit dec[] = {{"", 1}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9},
                                      {"T", 1e12}, {"P", 1e15}};
    static const struct unit bin[] = {{"", 1}, {"Ki", 1024.0}, {"Mi", 1048576.0},
                                      {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
    static const struct unit sec[] = {{"p", 1e-12}, {"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"", 1}};
    switch (kind) {
    case UNITS_BYTES:
        return fmt_scaled(buf, n, v, bin, 5, "B");
    case UNITS_BANDWIDTH:
        return fmt_scaled(buf, n, v, dec, 6, "B/s");
    case UNITS_TIME:
        return fmt_scaled(buf, n, v, sec, 5, "s");
    case UNITS_FLOPS:
        return fmt_scaled(buf, n, v, dec, 6, "FLOP/s");
    case UNITS_FREQ:
        return fmt_scaled(buf, n, v, dec, 6, "Hz");
    }
    return buf;
}
