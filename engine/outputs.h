/* engine/outputs.h -- what a run writes: platform.xml (the SimGrid platform of
 * the scenario), trace.json and summary.json, each atomically (base/fsutil.h).
 * Uses topology/ (the platform writer), traces/ and config/cfg.h; no SimGrid. */
#ifndef TPUSIM_ENGINE_OUTPUTS_H
#define TPUSIM_ENGINE_OUTPUTS_H

#include <stdio.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "engine/sim_opts.h"
#include "kernels/tune.h"
#include "outputs/summary.h"
#include "outputs/trace.h"

/* Writes the SimGrid platform XML of 'sc' to 'f'. Returns 0 or -1. */
int outputs_platform(const struct cfg_scenario *sc, FILE *f);
/* Writes it to the file 'path'. Returns 0 or -1 with errno. */
int outputs_platform_file(const struct cfg_scenario *sc, const char *path);
/* A run's output directory while it runs: locked (DIR/.tpusim-lock, the lock
 * sweeps take: one writer at a time, a busy directory is refused) and a
 * staging directory DIR/.tpusim-run.XXXXXX (made with mkdtemp: a unique name
 * that follows no planted link) where platform.xml, trace.json and
 * summary.json are written. Only a run that succeeds moves them into DIR, so
 * after a failure (disk full, SIGINT, an engine error) DIR holds the previous
 * run's files, all of them and only them. Without an output directory the
 * stage is a new directory in $TMPDIR (or /tmp) holding the platform. */
struct outputs_dir {
    char *out;   /* owned: the output directory, or NULL */
    char *stage; /* owned: the staging directory */
    int lock_fd; /* -1: not locked */
};

/* Makes and locks 'out' (may be NULL) and its stage. Stages that killed
 * runs left in 'out' are removed (the lock is ours, so no run owns them).
 * Returns 0, or -1 with a message in 'd' (busy: "DIR: in use by another run
 * (pid N)"). */
int outputs_dir_open(struct outputs_dir *od, const char *out, struct diag *d);
/* The same when the caller holds the lock of 'out' already (outputs_dir_lock):
 * it stays the caller's to drop. */
int outputs_dir_open_locked(struct outputs_dir *od, const char *out, struct diag *d);
/* Makes and locks 'out' before any work (a run into it is refused from the
 * start, not once the scenario is loaded), removing stages killed runs left.
 * Returns the lock's descriptor, or -1 with a message in 'd'. */
int outputs_dir_lock(const char *out, struct diag *d);
/* The path of file 'name' in the stage. New string. */
char *outputs_dir_staged(const struct outputs_dir *od, const char *name);
/* Moves the staged files into the output directory: the previous
 * summary.json is removed first and the new one renamed in last, so a
 * summary.json is always the one of the platform.xml and trace.json beside
 * it. Returns 0, or -1 with a message in 'd'. */
int outputs_dir_commit(struct outputs_dir *od, struct diag *d);
/* Removes the stage (with whatever was not committed) and drops the lock. */
void outputs_dir_close(struct outputs_dir *od);

/* The run's trace as 'o' asks (level, chips, window, cap); NULL with a
 * message in 'd' for a bad --trace-chips. Chip numbers are the slice's; each
 * stands for the simulated chip of its SPMD class; "distinct" keeps one chip
 * per class (the fold's, also under --all-chips). */
struct trace *outputs_trace_new(const struct cfg_scenario *sc, const struct sim_opts *o,
                                struct diag *d);
/* Starts writing it to trace.json in the stage of 'od' when the run has an
 * output directory and the level is not none. Returns 0, or -1 with a
 * message in 'd'. */
int outputs_trace_open(struct trace *t, const struct outputs_dir *od, struct diag *d);
/* Closes the trace (STAGE/trace.json), puts what it holds in 's->trace' and
 * writes STAGE/summary.json (not with o->no_summary). Returns 0 or -1 with a
 * message in 'd'. */
int outputs_run(struct trace *t, struct summary *s, const struct sim_opts *o, const char *stage,
                struct diag *d);

/* What `block: auto` chose for one op, as the summary reports it (summary.json
 * "auto_*" fields). */
void outputs_auto_summary(const struct tune_choice *ch, struct summary_auto *a);

#endif
