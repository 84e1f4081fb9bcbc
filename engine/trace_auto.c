/* engine/trace_auto.c -- the default trace level from the estimated events
 * (see engine/trace_auto.h). */
#include "engine/trace_auto.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/validate.h"

static const char *mb(char *buf, size_t n, double bytes)
{
    if (bytes < 1e6)
        snprintf(buf, n, "%.0f kB", bytes / 1e3);
    else
        snprintf(buf, n, bytes >= 10e6 ? "%.0f MB" : "%.1f MB", bytes / 1e6);
    return buf;
}

double trace_auto_max_bytes(void)
{
    const char *e = getenv("TPUSIM_TRACE_AUTO_MAX_BYTES");
    char *end;
    double v = e ? strtod(e, &end) : 0;
    return e && end != e && !*end && v > 0 ? v : TRACE_AUTO_MAX_BYTES;
}

void trace_auto_pick(const struct cfg_scenario *sc, bool chips_given, double max_bytes,
                     struct trace_auto *a)
{
    double ev[4];
    validate_trace_events(sc, ev);
    int chips = cfg_engine_chips(sc), slices = cfg_sim_slices(sc);
    double one = (double)slices / chips; /* chip 0 of each slice, of every chip */
    struct {
        enum trace_level level;
        bool chip0;
        double bytes;
    } ladder[] = {{TRACE_UNITS, false, ev[TRACE_UNITS] * TRACE_UNITS_EVENT_BYTES},
                  {TRACE_OPS, false, ev[TRACE_OPS] * TRACE_OPS_EVENT_BYTES},
                  {TRACE_UNITS, true, ev[TRACE_UNITS] * one * TRACE_UNITS_EVENT_BYTES},
                  {TRACE_OPS, true, ev[TRACE_OPS] * one * TRACE_OPS_EVENT_BYTES}};
    int n = chips_given || one >= 1 ? 2 : 4, k = 0;
    while (k < n - 1 && ladder[k].bytes > max_bytes)
        k++;
    *a = (struct trace_auto){.level = ladder[k].level, .chip0 = ladder[k].chip0,
                             .bytes = ladder[k].bytes, .units_bytes = ladder[0].bytes};
    char u[32], o[32], p[32], m[32];
    mb(u, sizeof u, ladder[0].bytes), mb(o, sizeof o, ladder[1].bytes), mb(p, sizeof p, a->bytes);
    mb(m, sizeof m, max_bytes);
    if (k == 0)
        snprintf(a->why, sizeof a->why, "default units: ~%s estimated, within %s", u, m);
    else if (k == 1)
        snprintf(a->why, sizeof a->why, "default units would be ~%s, above %s; ops ~%s%s", u, m,
                 o, a->bytes > max_bytes ? " (narrow it with --trace-window)" : "");
    else
        snprintf(a->why, sizeof a->why,
                 "default units would be ~%s and ops ~%s on all %d simulated chips, above %s; "
                 "%s on chip 0 of each slice ~%s",
                 u, o, chips, m, trace_level_name(a->level), p);
}
