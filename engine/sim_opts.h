/* engine/sim_opts.h -- how a run is asked to run: where its files go, what
 * its trace holds, the SimGrid flags and the limits. Read by the run
 * (engine/sim.h) and by the files it writes (engine/outputs.h). */
#ifndef TPUSIM_ENGINE_SIM_OPTS_H
#define TPUSIM_ENGINE_SIM_OPTS_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "outputs/trace.h"

struct sim_opts {
    const char *out_dir;     /* where trace.json, summary.json, platform.xml go; NULL: none */
    bool out_locked;         /* the caller holds out_dir's lock (outputs_dir_lock, taken
                                before loading: a second run is refused from the start) */
    int sg_argc;             /* extra SimGrid flags, e.g. --cfg=contexts/factory:thread */
    char **sg_argv;
    size_t max_trace_events; /* 0: TRACE_DEFAULT_MAX_EVENTS */
    bool trace_set;          /* false: TRACE_DEFAULT_LEVEL with an out_dir, else none */
    enum trace_level trace;  /* what trace.json holds (outputs/trace.h) */
    const char *trace_chips; /* "0,17" (slice chip numbers) or "distinct"; NULL: every simulated chip */
    bool trace_window;       /* keep only events overlapping [trace_t0_s, trace_t1_s] */
    double trace_t0_s, trace_t1_s;
    const char *command;     /* the command line that reruns it (report.html), or NULL */
    bool no_summary;         /* write trace.json and platform.xml, not summary.json (a sweep's
                                re-run of a point for its trace keeps the point's summary) */
    int64_t max_steps;       /* 0: the scenario's options.max_steps */
    double max_memory_bytes; /* 0: 16 GiB */
    FILE *estimate_to;       /* where a run estimated at announce_s or more says what it will
                                take before it starts (validate_estimate_text); NULL: not */
    double announce_s;       /* (tpusim run: SIM_ANNOUNCE_S) */
    const char *standin_dir; /* a directory where the lone runs of stand-ins (engine/spmd.h) are
                                kept and found again, by runs of one binary (a sweep's points);
                                NULL: none (engine/eng_standin.c) */
    bool standin_trust;      /* run the folded run with stand-ins without first running it in
                                a child to see that nothing runs beside them (the probe,
                                engine/sim.c); if something did, sim_run returns
                                SIM_STANDIN_RETRY, its figures not the scenario's: the caller
                                runs it again in a new process without this (a sweep's point) */
};

/* sim_run's code when a trusted stand-in (sim_opts.standin_trust) was not alone. */
#define SIM_STANDIN_RETRY 75

#define SIM_ANNOUNCE_S 10.0

#endif
