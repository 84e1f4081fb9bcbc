/* outputs/trace.h -- timeline events and the streaming Chrome Trace Event
 * writer. Events are written to the file as they are recorded (no buffer of
 * the run): a process per chip, a thread (track) per TensorCore and per
 * unit, timestamps in us. The file is not sorted: the JSON importers sort
 * (Perfetto's trace processor sorts every event of a JSON trace before it
 * parses them, src/trace_processor/sorter/trace_sorter.h; chrome://tracing
 * sorts too). The file is written to a temporary and renamed when closed
 * (base/fsutil.h), so a failed or interrupted run leaves none.
 *
 * Levels: what a trace holds.
 *   ops    one span per op instance and core (compute and async tracks),
 *          the dependency arrows;
 *   units  ops, plus per op instance one span per unit it used (MXU, VPU,
 *          DMA, each ICI link direction) from its first to its last
 *          activity, with the active time and bytes as arguments, and the
 *          VMEM counters;
 *   steps  every grid step (or coalesced run of steps) on every unit, every
 *          DMA, every ICI hop, the DMA->compute arrows and the HBM counter.
 * Filters: chips (the trace's pids), a time window (events that overlap it)
 * and a cap on the events written; what the cap leaves out is counted
 * (trace_stats: dropped, and from when the trace is incomplete). */
#ifndef TPUSIM_OUTPUTS_TRACE_H
#define TPUSIM_OUTPUTS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum trace_level { TRACE_NONE, TRACE_OPS, TRACE_UNITS, TRACE_STEPS };

#define TRACE_DEFAULT_LEVEL TRACE_UNITS
#define TRACE_DEFAULT_MAX_EVENTS 2000000
#define TRACE_MAX_WINDOWS 1000 /* the windows trace_stats proposes, at most */
#define TRACE_CHOSEN_MAX 256

/* "none", "ops", "units", "steps". Static. */
const char *trace_level_name(enum trace_level l);
/* Parses a level name. Returns 0, or -1 if 's' is none of them. */
int trace_level_parse(const char *s, enum trace_level *l);

struct trace_opts {
    enum trace_level level;  /* TRACE_NONE writes nothing */
    size_t max_events;       /* 0: TRACE_DEFAULT_MAX_EVENTS */
    bool window;             /* keep only events that overlap [t0_s, t1_s] */
    double window_t0_s, window_t1_s;
    bool prefix;             /* past the cap, drop every later event too: a trace written
                                in time order keeps its beginning whole */
    const bool *chips;       /* trace pid p only when p < nchips and chips[p]; NULL: all */
    int nchips;
    /* when the level (and chips) were picked for the user (engine/trace_auto.h):
     * why, and the --trace-chips picked ("" : as given); copied to trace_stats */
    char chosen[TRACE_CHOSEN_MAX];
    char chosen_chips[16];
};

/* What a trace held and left out. */
struct trace_stats {
    enum trace_level level;
    size_t events;           /* written, metadata included */
    size_t dropped;          /* left out by the cap */
    size_t filtered;         /* left out by the chip filter or the window */
    size_t max_events;
    double complete_until_s; /* every event starting before this is in the file (-1: all) */
    double last_s;           /* the latest end of any event recorded */
    uint64_t bytes;          /* the file's size (after trace_close) */
    /* when events were dropped: consecutive --trace-window windows, window i
     * from window_start_ns[i] to the next one's start (the last to the end),
     * each of which holds at most max_events events; 0 windows if more than
     * TRACE_MAX_WINDOWS would be needed or one instant holds too many */
    int nwindows;
    int64_t window_start_ns[TRACE_MAX_WINDOWS];
    char chosen[TRACE_CHOSEN_MAX]; /* trace_opts.chosen ("": the level was asked for) */
    char chosen_chips[16];
};

struct trace;

/* A new trace (caller frees with trace_free()); 'o' is copied (chips too).
 * Until trace_open() it only counts. */
struct trace *trace_new(const struct trace_opts *o);
/* Starts writing to 'path' (a temporary until trace_close). Returns 0 or -1 (errno). */
int trace_open(struct trace *t, const char *path);
/* Writes what is pending, the metadata ("otherData", with the counts) and
 * renames the file onto its path. Returns 0 or -1 (errno). */
int trace_close(struct trace *t);
/* Frees 't'; a file still open is removed. */
void trace_free(struct trace *t);

enum trace_level trace_level(const struct trace *t);
/* True when events at 'l' are recorded (l <= the trace's level). */
bool trace_wants(const struct trace *t, enum trace_level l);

/* Names process 'pid' and thread 'tid' (metadata events, not capped). 'sort' orders tracks. */
void trace_process(struct trace *t, int pid, const char *name);
void trace_thread(struct trace *t, int pid, int tid, const char *name, int sort);

/* An op's span [t0_s, t1_s] named 'name' in category 'cat' on (pid, tid)
 * (level ops). 'args' is a JSON object body without braces
 * ("\"bytes\": 4096") or NULL. At level units it ends the unit spans of op
 * 'name' pending on that chip's tracks of the same core (tid / 10) and its
 * ICI tracks (tid >= 100). */
void trace_span(struct trace *t, int pid, int tid, const char *cat, const char *name, double t0_s,
                double t1_s, const char *args);
/* A unit's activity (level steps): span 'name' of op 'op' moving 'bytes' (0:
 * none). At level units the activity of one op on one track merges into one
 * span named 'op' with "active_us", "spans" and "bytes" arguments. */
void trace_unit(struct trace *t, int pid, int tid, const char *cat, const char *name,
                const char *op, double t0_s, double t1_s, double bytes, const char *args);
/* A counter sample: value 'v' of series 'name' on 'pid' at 't_s', recorded
 * from level 'l' up. */
void trace_counter(struct trace *t, enum trace_level l, int pid, const char *name, double t_s,
                   double v);
/* A flow arrow (two events, kept or dropped together) from (pid0, tid0) at
 * 't0_s' to the span enclosing 't1_s' on (pid1, tid1), named 'name',
 * recorded from level 'l' up. */
void trace_flow(struct trace *t, enum trace_level l, const char *name, int pid0, int tid0,
                double t0_s, int pid1, int tid1, double t1_s);
/* One event of an async track: a nested span's begin ("b") or end ("e"). */
struct trace_async_ev {
    bool begin;
    const char *name;
    double t_s;
    const char *args; /* as trace_span's, or NULL */
};
/* The 'n' events of async track 'id' in category 'cat' on 'pid' (level ops),
 * written all or none: the cap or the window (over the events' first to
 * last time) keeps or leaves out the track whole, so no begin loses its end. */
void trace_async(struct trace *t, int pid, const char *cat, int64_t id,
                 const struct trace_async_ev *ev, size_t n);
/* Adds a key/value to the trace's metadata ("scenario", "chip"...). */
void trace_meta(struct trace *t, const char *key, const char *value);

void trace_stats(const struct trace *t, struct trace_stats *st);

#endif
