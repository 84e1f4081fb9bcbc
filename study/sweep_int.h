/* study/sweep_int.h -- internals of study/sweep*.c, shared with tests/unit/test_sweep.c.
 * A sweep spec (YAML) expands into points; each point is a list of --set
 * overrides "key.path=value" applied to the base scenario. */
#ifndef TPUSIM_STUDY_SWEEP_INT_H
#define TPUSIM_STUDY_SWEEP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/cfg.h"
#include "config/cfg_emit.h"
#include "base/diag.h"

struct sweep_key {
    char *path;       /* owned: the key path, exactly as for --set, or the name of a var */
    int npaths;       /* the key paths it sets: 1, or a var's paths */
    char **paths;     /* owned */
    char *spec_path;  /* owned: where the spec names it, e.g. "sweep.workload.0.bytes" */
    int line, col;    /* and at which position */
    char *base_value; /* owned: the base scenario's own value (canonical text), or NULL
                       * (not set, or a var whose paths differ in the base) */
    char *base_shown; /* owned: the same as shown in tables ("" when not set; a var whose
                       * paths differ: their values joined by " / ") */
};

struct sweep_point {
    char **values; /* owned: per key, the value as YAML text (for --set), or NULL (not set) */
    char **shown;  /* owned: per key, the value as shown in tables ("" when not set anywhere) */
};

struct sweep_spec {
    char *file;                 /* owned: the spec's path */
    char *name;                 /* owned: `name:` or the spec file's base name */
    char *base_path;            /* owned: the scenario file the points load */
    struct cfg_node *base_tree; /* owned: the base scenario document */
    bool base_inline;           /* base: was a mapping (written out as base.yaml) */
    uint64_t base_hash;         /* of the base scenario's text, for --resume */
    int nbase_sets;             /* --set edits of the base (before every point's own) */
    char **base_sets;           /* owned */
    struct cfg_linemap map;     /* for an inline base */
    int nkeys;
    struct sweep_key *keys; /* in order of first appearance: sweep, zip, points */
    int npoints;
    struct sweep_point *points; /* cartesian product of sweep x zip, then the explicit points,
                                 * then the default point when none of those is it */
    int default_point;          /* the point with the base scenario's own values */
    bool default_added;         /* it was added to the sweep's points (the last one) */
};

/* "tpusim sweep SPEC --set ...": the command that reruns the sweep (its
 * spec and --set edits, shell-quoted). New string. */
char *sweep_command(const struct sweep_spec *sp);

/* Loads and expands the sweep spec at 'path': checks its structure, loads the
 * base scenario (a file relative to the spec's directory, or an inline
 * mapping written to a temporary file) with the 'nsets' --set edits 'sets'
 * and checks that every key path applies to it. Adds the default point (no
 * overrides) when no point has the base's own values. Returns 0, or -1 with
 * "file:line:col: key.path: ..." messages in 'd'. Release '*sp' with
 * sweep_spec_fini() either way. */
int sweep_spec_load(const char *path, const char *const *sets, int nsets, struct sweep_spec *sp,
                    struct diag *d);
void sweep_spec_fini(struct sweep_spec *sp);

/* Writes an inline base to 'path' (base.yaml in the output directory) and
 * points sp->base_path at it. Returns 0 or -1 (errno). */
int sweep_spec_write_base(struct sweep_spec *sp, const char *path);

/* The --set overrides of point 'i' ("key.path=value"), NULL-terminated: the
 * base's edits, then the point's values in key order (a var's paths in
 * turn); '*n' gets the count. Returns a new array of new strings; free with
 * sweep_sets_free(). */
char **sweep_point_sets(const struct sweep_spec *sp, int i, int *n);
void sweep_sets_free(char **sets);

/* Rewrites a message about the generated base file into one about the spec
 * (positions mapped back through sp->map). Returns a new string. */
char *sweep_map_message(const struct sweep_spec *sp, const char *msg);
/* The messages of 'd', one a line, mapped as sweep_map_message does; NULL
 * when there are none. New string. */
char *sweep_diag_text(const struct sweep_spec *sp, const struct diag *d);


/* True when shard 'shard' of 'nshards' runs point 'i' (every point when
 * 'nshards' is 0): points are dealt round-robin, i % nshards. */
static inline bool sweep_shard_owns(int shard, int nshards, int i)
{
    return nshards <= 0 || i % nshards == shard;
}

/* FNV-1a of the 'n' bytes 's', continuing from 'h' (start: SWEEP_FNV_BASIS). */
#define SWEEP_FNV_BASIS 14695981039346656037ull
uint64_t sweep_fnv1a(const void *s, size_t n, uint64_t h);

/* A fingerprint of the expanded sweep (its name, keys and every point's
 * --set overrides): shards of one sweep have the same. */
uint64_t sweep_spec_hash(const struct sweep_spec *sp);

/* A sweep whose stderr is not a terminal prints a progress line (points
 * done, running, elapsed, ETA) this often, and one when its last point is
 * done; $TPUSIM_PROGRESS_INTERVAL (seconds, 0.01 to 3600) replaces it. */
#define SWEEP_PROGRESS_INTERVAL_S 5.0
double sweep_progress_interval_s(void);

/* ---------------- serving points (study/sweep_serve.c) ---------------- */

struct cfg_scenario;
struct table_row;

/* A point's process for a serve: scenario: runs it with 'serve_point' into
 * 'pdir' (no runner: an error in 'd', exit 1). Returns the exit status. */
int sweep_serve_child(const struct cfg_scenario *sc, const char *pdir,
                      int (*serve_point)(const struct cfg_scenario *, const char *, int, char **,
                                         struct diag *),
                      int sg_argc, char **sg_argv, struct diag *d);
/* Prints the serving table of the done points (rows[i] for done[i]) and the
 * knee of the latency-throughput curve; nothing when no point is a serving run. */
void sweep_serve_print(const struct sweep_spec *sp, const struct table_row *rows,
                       const bool *done);

/* ---------------- outputs (study/sweep.c) ---------------- */

struct table;
struct table_row;
struct json;

/* Fills the summary fields of 'row' (point row->point) from
 * DIR/points/NNNN/summary.json; an unreadable summary makes it a failed row
 * with the reason. */
void sweep_read_summary(const char *dir, struct table_row *row);
/* Fills 'row''s status and reason from a point.json tree 'pj' and, for an ok
 * point, its summary (sweep_read_summary). Returns 0, or -1 for a bad status. */
int sweep_row_from_point(const char *dir, const struct json *pj, struct table_row *row);

/* Writes DIR/sweep.csv, sweep.json, report.md and the plots of table 't'
 * (linking the best and default points' traces DIR holds) and removes the
 * plots of keys 't' does not have. Returns 0, or -1 after printing why. */
int sweep_write_tables(struct table *t, const char *dir);
/* Counts (and prints) the outputs DIR lacks that table 't' promises: every
 * row's points/NNNN/point.json, every ok row's summary.json and, when
 * 'traces', the best and the default point's trace.json. */
int sweep_missing_outputs(const struct table *t, const char *dir, bool traces);

/* ---------------- the output directory (study/sweep_dir.c) ---------------- */

struct sweep_lock {
    int fd;     /* the lock file, held with flock; -1: not held */
    char *path; /* owned: the directory */
};

enum sweep_reuse {
    SWEEP_REUSE_NONE,   /* the directory must be empty (or new) */
    SWEEP_REUSE_RESUME, /* keep what is there (--resume) */
    SWEEP_REUSE_FORCE,  /* remove an earlier sweep's files first (--force) */
};

/* Takes the lock of directory 'dir' (DIR/.tpusim-lock), which must exist.
 * Returns 0, or -1 after printing that another sweep holds it (or why the
 * file cannot be made). The kernel drops the lock when its holder dies. */
int sweep_dir_lock(const char *dir, struct sweep_lock *lk);
/* Removes the lock file and drops the lock. */
void sweep_dir_unlock(struct sweep_lock *lk);

/* Who wrote a sweep directory: recorded in DIR/.sweep-id.json when a sweep
 * (or a merge) first writes it, so that --resume continues only the same
 * sweep. The same name and keys (and shard) are the same sweep: its values,
 * points and --set edits may change (the points whose edits changed run again). */
struct sweep_ident {
    const char *name;
    int nkeys;
    const char *const *keys;
    int shard, nshards; /* nshards 0: the whole sweep (and a merge of its shards) */
};

#define SWEEP_ID_NAME ".sweep-id.json"

/* Makes 'dir', locks it and checks that it may be written as 'reuse' says:
 * an earlier sweep's files make it refused unless --resume or --force; with
 * --force they are removed (files a sweep does not write are never removed:
 * the directory is refused). --resume is refused when the directory holds
 * files but no record of sweep 'id', or the record of another sweep. 'how'
 * names the way to continue in the message ("use --resume to finish it").
 * Records 'id' in a directory it starts. 'lk' may hold the lock already
 * (sweep_dir_lock; fd -1: not yet). Returns 0 with the lock held, or the
 * exit status (1: cannot create or busy, 2: refused) after printing why. */
int sweep_dir_claim(const char *dir, enum sweep_reuse reuse, const char *how,
                    const struct sweep_ident *id, struct sweep_lock *lk);

/* Removes what a sweep writes in DIR/points/NNNN for every NNNN >= 'npoints'
 * (an earlier, larger sweep's points), and each such directory once empty:
 * other files stay. Returns 0 or -1. */
int sweep_dir_prune(const char *dir, int npoints);
/* True for the names a sweep's point writes in DIR/points/NNNN. */
bool sweep_point_file_name(const char *name);

#endif
