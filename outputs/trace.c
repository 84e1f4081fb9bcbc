/* outputs/trace.c -- the streaming Chrome Trace Event writer (outputs/trace.h).
 * Events go to the file as they come; at level units the activity of an op
 * on a unit's track is held in one pending span per track until the op ends.
 * May use: libc, base/ (fsutil, json, xalloc) and outputs/trace.h only. */
#include "outputs/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fmt.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

#define TRACK_TIDS 128 /* tids per pid that level units can merge on */
#define TIME_BINS 16384 /* the event histogram's bins (trace_stats' windows) */
#define SLOTS 4        /* ops merged at once on one track (async beside compute) */

/* The activity of one op on one track, at level units. */
struct pending {
    char *op, *cat; /* owned; op NULL: none pending */
    double t0, t1, active, bytes;
    int64_t spans;
};

struct trace {
    struct trace_opts o;
    bool *chips;
    struct fs_atomic file;
    bool open, any; /* any: an event was written (the next needs a comma) */
    uint64_t bytes;
    size_t events, dropped, filtered;
    double drop_t0, last;
    uint64_t flows;
    char **meta;
    size_t nmeta, capmeta;
    struct pending **pend; /* per pid, TRACK_TIDS tracks: NULL, or SLOTS of them (made at
                              first use: a chip uses a few tracks of the 128) */
    int npend_pids;
    /* the events of the kept chips, in or out of the window, by the bin of
     * their start and of their end (bins of bin_ns, a power of 2, doubled
     * when an event lands past the last): the windows that hold them all */
    size_t *bin_start, *bin_end;
    int64_t bin_ns;
    size_t meta_events;
};

static const char *const level_names[] = {"none", "ops", "units", "steps"};

const char *trace_level_name(enum trace_level l)
{
    return (unsigned)l <= TRACE_STEPS ? level_names[l] : "?";
}

int trace_level_parse(const char *s, enum trace_level *l)
{
    for (int i = 0; i <= TRACE_STEPS; i++)
        if (strcmp(s, level_names[i]) == 0) {
            *l = (enum trace_level)i;
            return 0;
        }
    return -1;
}

struct trace *trace_new(const struct trace_opts *o)
{
    struct trace *t = xcalloc(1, sizeof *t);
    t->o = *o;
    if (!t->o.max_events)
        t->o.max_events = TRACE_DEFAULT_MAX_EVENTS;
    if (o->chips) {
        t->chips = xcalloc((size_t)o->nchips + 1, sizeof *t->chips);
        memcpy(t->chips, o->chips, sizeof *t->chips * (size_t)o->nchips);
        t->o.chips = t->chips;
    }
    t->drop_t0 = INFINITY;
    if (t->o.level != TRACE_NONE) {
        t->bin_start = xcalloc(TIME_BINS, sizeof *t->bin_start);
        t->bin_end = xcalloc(TIME_BINS, sizeof *t->bin_end);
        t->bin_ns = 1;
    }
    return t;
}

/* The bin of time 's' (>= 0), the bins widened until it has one. */
static size_t time_bin(struct trace *t, double s)
{
    double ns = s > 0 ? s * 1e9 : 0;
    while (ns / (double)t->bin_ns >= TIME_BINS) {
        for (size_t i = 0; i < TIME_BINS / 2; i++) {
            t->bin_start[i] = t->bin_start[2 * i] + t->bin_start[2 * i + 1];
            t->bin_end[i] = t->bin_end[2 * i] + t->bin_end[2 * i + 1];
        }
        memset(t->bin_start + TIME_BINS / 2, 0, TIME_BINS / 2 * sizeof *t->bin_start);
        memset(t->bin_end + TIME_BINS / 2, 0, TIME_BINS / 2 * sizeof *t->bin_end);
        t->bin_ns *= 2;
    }
    return (size_t)(ns / (double)t->bin_ns);
}

/* Counts 'n' events spanning [t0, t1] (either order) in the histogram. */
static void count_times(struct trace *t, double t0, double t1, size_t n)
{
    if (!t->bin_start)
        return;
    double lo = t0 < t1 ? t0 : t1, hi = t0 < t1 ? t1 : t0;
    size_t b1 = time_bin(t, hi); /* first: it may widen the bins */
    t->bin_start[time_bin(t, lo)] += n;
    t->bin_end[b1] += n;
}

int trace_open(struct trace *t, const char *path)
{
    if (fs_atomic_open(&t->file, path) != 0)
        return -1;
    t->open = true;
    setvbuf(t->file.f, NULL, _IOFBF, 1 << 20);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", t->file.f);
    return 0;
}

enum trace_level trace_level(const struct trace *t)
{
    return t->o.level;
}

bool trace_wants(const struct trace *t, enum trace_level l)
{
    return l <= t->o.level && t->o.level != TRACE_NONE;
}

static bool chip_kept(const struct trace *t, int pid)
{
    return !t->o.chips || (pid >= 0 && pid < t->o.nchips && t->o.chips[pid]);
}

static bool in_window(const struct trace *t, double t0, double t1)
{
    return !t->o.window || (t1 >= t->o.window_t0_s && t0 <= t->o.window_t1_s);
}

/* Whether 'n' events from 't0' to 't1' on 'pid' go to the file; counts them. */
static bool admit(struct trace *t, int pid, double t0, double t1, size_t n)
{
    if (t1 > t->last)
        t->last = t1;
    if (chip_kept(t, pid))
        count_times(t, t0, t1, n);
    if (!chip_kept(t, pid) || !in_window(t, t0, t1)) {
        t->filtered += n;
        return false;
    }
    if (t->events + n > t->o.max_events || (t->o.prefix && t->dropped)) {
        t->dropped += n;
        if (t0 < t->drop_t0)
            t->drop_t0 = t0;
        return false;
    }
    t->events += n;
    return true;
}

static FILE *out(struct trace *t)
{
    if (!t->open)
        return NULL;
    if (t->any)
        fputs(",\n", t->file.f);
    t->any = true;
    return t->file.f;
}

/* Events are formatted by hand into a buffer (base/fmt.h) and written at
 * once: printf was the writer's bottleneck on large traces. */
static void put_done(FILE *f, const char *buf, const char *end)
{
    fwrite(buf, 1, (size_t)(end - buf), f);
}

void trace_process(struct trace *t, int pid, const char *name)
{
    if (t->o.level == TRACE_NONE || !chip_kept(t, pid))
        return;
    t->events++;
    t->meta_events++;
    FILE *f = out(t);
    if (!f)
        return;
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", pid);
    json_write_string(f, name);
    fputs("}}", f);
}

void trace_thread(struct trace *t, int pid, int tid, const char *name, int sort)
{
    if (t->o.level == TRACE_NONE || !chip_kept(t, pid))
        return;
    t->events += 2;
    t->meta_events += 2;
    FILE *f = out(t);
    if (!f)
        return;
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            pid, tid);
    json_write_string(f, name);
    fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"sort_index\":%d}}", pid, tid, sort);
}

static void write_span(struct trace *t, int pid, int tid, const char *cat, const char *name,
                       double t0, double t1, const char *args)
{
    if (t1 < t0)
        t1 = t0;
    if (!admit(t, pid, t0, t1, 1))
        return;
    FILE *f = out(t);
    if (!f)
        return;
    char buf[160], *p = fmt_lit(buf, "{\"ph\":\"X\",\"pid\":");
    p = fmt_i64(p, pid);
    p = fmt_i64(fmt_lit(p, ",\"tid\":"), tid);
    p = fmt_us(fmt_lit(p, ",\"ts\":"), t0);
    p = fmt_us(fmt_lit(p, ",\"dur\":"), t1 - t0);
    put_done(f, buf, fmt_lit(p, ",\"cat\":"));
    json_write_string(f, cat);
    fputs(",\"name\":", f);
    json_write_string(f, name);
    if (args) {
        fputs(",\"args\":{", f);
        fputs(args, f);
        fputc('}', f);
    }
    fputc('}', f);
}

/* The SLOTS pending spans of track (pid, tid), or NULL for a tid out of range. */
static struct pending **track(struct trace *t, int pid, int tid)
{
    return &t->pend[(size_t)pid * TRACK_TIDS + (size_t)tid];
}

static struct pending *pending_at(struct trace *t, int pid, int tid)
{
    if (pid < 0 || tid < 0 || tid >= TRACK_TIDS)
        return NULL;
    if (pid >= t->npend_pids) {
        int n = pid + 1;
        t->pend = xrealloc(t->pend, sizeof *t->pend * (size_t)n * TRACK_TIDS);
        memset(t->pend + (size_t)t->npend_pids * TRACK_TIDS, 0,
               sizeof *t->pend * (size_t)(n - t->npend_pids) * TRACK_TIDS);
        t->npend_pids = n;
    }
    struct pending **p = track(t, pid, tid);
    if (!*p)
        *p = xcalloc(SLOTS, sizeof **p);
    return *p;
}

static void flush_pending(struct trace *t, int pid, int tid, struct pending *p)
{
    if (!p->op)
        return;
    char args[160], *a = fmt_fixed(fmt_lit(args, "\"active_us\": "), p->active * 1e6, 3);
    a = fmt_i64(fmt_lit(a, ", \"spans\": "), (long long)p->spans);
    if (p->bytes > 0)
        a = fmt_fixed(fmt_lit(a, ", \"bytes\": "), p->bytes, 0);
    *a = '\0';
    write_span(t, pid, tid, p->cat, p->op, p->t0, p->t1, args);
    free(p->op);
    free(p->cat);
    memset(p, 0, sizeof *p);
}

void trace_span(struct trace *t, int pid, int tid, const char *cat, const char *name, double t0_s,
                double t1_s, const char *args)
{
    if (!trace_wants(t, TRACE_OPS))
        return;
    if (t->o.level == TRACE_UNITS && pid >= 0 && pid < t->npend_pids)
        for (int ptid = 0; ptid < TRACK_TIDS; ptid++) {
            struct pending *slots = *track(t, pid, ptid);
            for (int k = 0; slots && k < SLOTS; k++) {
                struct pending *p = &slots[k];
                if (p->op && (ptid >= 90 || ptid / 10 == tid / 10) && strcmp(p->op, name) == 0)
                    flush_pending(t, pid, ptid, p);
            }
        }
    write_span(t, pid, tid, cat, name, t0_s, t1_s, args);
}

/* Adds [t0, t1] to the pending span of 'op' on (pid, tid), or starts one. */
static void merge_unit(struct trace *t, int pid, int tid, const char *cat, const char *op,
                       double t0, double t1, double bytes)
{
    struct pending *slot = pending_at(t, pid, tid), *p = NULL;
    if (!slot) {
        write_span(t, pid, tid, cat, op, t0, t1, NULL);
        return;
    }
    for (int i = 0; i < SLOTS && !p; i++) /* this op's, else a free one, else the oldest */
        if (slot[i].op && strcmp(slot[i].op, op) == 0 && strcmp(slot[i].cat, cat) == 0)
            p = &slot[i];
    for (int i = 0; i < SLOTS && !p; i++)
        if (!slot[i].op)
            p = &slot[i];
    if (!p) {
        p = &slot[0];
        for (int i = 1; i < SLOTS; i++)
            if (slot[i].t0 < p->t0)
                p = &slot[i];
        flush_pending(t, pid, tid, p);
    }
    if (!p->op) {
        *p = (struct pending){.op = xstrdup(op), .cat = xstrdup(cat), .t0 = t0, .t1 = t1,
                              .active = t1 - t0, .bytes = bytes, .spans = 1};
        return;
    }
    /* the union of the spans, as they come: one that starts inside the
     * pending span adds only what sticks out of it */
    p->active += t1 > p->t1 ? t1 - (t0 > p->t1 ? t0 : p->t1) : 0;
    if (t0 < p->t0)
        p->t0 = t0;
    if (t1 > p->t1)
        p->t1 = t1;
    p->bytes += bytes;
    p->spans++;
}

void trace_unit(struct trace *t, int pid, int tid, const char *cat, const char *name,
                const char *op, double t0_s, double t1_s, double bytes, const char *args)
{
    if (t1_s < t0_s)
        t1_s = t0_s;
    if (t->o.level == TRACE_UNITS)
        merge_unit(t, pid, tid, cat, op, t0_s, t1_s, bytes);
    else if (t->o.level == TRACE_STEPS)
        write_span(t, pid, tid, cat, name, t0_s, t1_s, args);
}

void trace_counter(struct trace *t, enum trace_level l, int pid, const char *name, double t_s,
                   double v)
{
    if (!trace_wants(t, l) || !admit(t, pid, t_s, t_s, 1))
        return;
    FILE *f = out(t);
    if (!f)
        return;
    char buf[96], *p = fmt_i64(fmt_lit(buf, "{\"ph\":\"C\",\"pid\":"), pid);
    put_done(f, buf, fmt_lit(fmt_us(fmt_lit(p, ",\"ts\":"), t_s), ",\"name\":"));
    json_write_string(f, name);
    char num[40];
    fprintf(f, ",\"args\":{\"value\":%s}}", json_fmt_num(num, sizeof num, v, 'g', 6));
}

static void write_flow_end(FILE *f, const char *name, bool in, int pid, int tid, double t,
                           uint64_t id)
{
    char buf[160], *p = fmt_lit(buf, in ? "{\"ph\":\"f\",\"pid\":" : "{\"ph\":\"s\",\"pid\":");
    p = fmt_i64(p, pid);
    p = fmt_i64(fmt_lit(p, ",\"tid\":"), tid);
    p = fmt_us(fmt_lit(p, ",\"ts\":"), t);
    p = fmt_lit(p, ",\"id\":");
    if (id > (uint64_t)INT64_MAX) /* (ids count flows: never this many) */
        p += snprintf(p, 24, "%llu", (unsigned long long)id);
    else
        p = fmt_i64(p, (long long)id);
    put_done(f, buf, fmt_lit(p, ",\"cat\":\"dma\",\"name\":"));
    json_write_string(f, name);
    fputs(in ? ",\"bp\":\"e\"}" : "}", f);
}

void trace_flow(struct trace *t, enum trace_level l, const char *name, int pid0, int tid0,
                double t0_s, int pid1, int tid1, double t1_s)
{
    if (!trace_wants(t, l))
        return;
    if (!chip_kept(t, pid1)) {
        t->filtered += 2;
        return;
    }
    if (!admit(t, pid0, t0_s, t1_s, 2))
        return;
    uint64_t id = ++t->flows;
    FILE *f = out(t);
    if (!f)
        return;
    write_flow_end(f, name, false, pid0, tid0, t0_s, id);
    fputs(",\n", f);
    write_flow_end(f, name, true, pid1, tid1, t1_s, id);
}

void trace_async(struct trace *t, int pid, const char *cat, int64_t id,
                 const struct trace_async_ev *ev, size_t n)
{
    if (!trace_wants(t, TRACE_OPS) || n == 0)
        return;
    double t0 = ev[0].t_s, t1 = ev[0].t_s;
    for (size_t i = 1; i < n; i++) {
        t0 = ev[i].t_s < t0 ? ev[i].t_s : t0;
        t1 = ev[i].t_s > t1 ? ev[i].t_s : t1;
    }
    if (!admit(t, pid, t0, t1, n))
        return;
    for (size_t i = 0; i < n; i++) {
        FILE *f = out(t);
        if (!f)
            return;
        char buf[160], *p = fmt_lit(buf, ev[i].begin ? "{\"ph\":\"b\",\"pid\":"
                                                     : "{\"ph\":\"e\",\"pid\":");
        p = fmt_i64(p, pid);
        p = fmt_us(fmt_lit(p, ",\"tid\":0,\"ts\":"), ev[i].t_s);
        p = fmt_i64(fmt_lit(p, ",\"id\":"), (long long)id);
        put_done(f, buf, fmt_lit(p, ",\"cat\":"));
        json_write_string(f, cat);
        fputs(",\"name\":", f);
        json_write_string(f, ev[i].name);
        if (ev[i].args) {
            fputs(",\"args\":{", f);
            fputs(ev[i].args, f);
            fputc('}', f);
        }
        fputc('}', f);
    }
}

void trace_meta(struct trace *t, const char *key, const char *value)
{
    xgrow(&t->meta, &t->capmeta, t->nmeta + 2, sizeof *t->meta);
    t->meta[t->nmeta++] = xstrdup(key);
    t->meta[t->nmeta++] = xstrdup(value);
}

static void flush_all(struct trace *t)
{
    for (int pid = 0; pid < t->npend_pids; pid++)
        for (int tid = 0; tid < TRACK_TIDS; tid++) {
            struct pending *slots = *track(t, pid, tid);
            for (int k = 0; slots && k < SLOTS; k++)
                flush_pending(t, pid, tid, &slots[k]);
        }
}

int trace_close(struct trace *t)
{
    flush_all(t);
    if (!t->open)
        return 0;
    FILE *f = t->file.f;
    fputs("\n],\"otherData\":{", f);
    for (size_t i = 0; i + 1 < t->nmeta; i += 2) {
        json_write_string(f, t->meta[i]);
        fputc(':', f);
        json_write_string(f, t->meta[i + 1]);
        fputc(',', f);
    }
    fprintf(f, "\"trace_level\":\"%s\",\"dropped_events\":\"%zu\",\"filtered_events\":\"%zu\"}}\n",
            trace_level_name(t->o.level), t->dropped, t->filtered);
    t->open = false;
    char *path = xstrdup(t->file.path);
    int rc = fs_atomic_commit(&t->file);
    struct stat sb;
    if (rc == 0 && stat(path, &sb) == 0)
        t->bytes = (uint64_t)sb.st_size;
    free(path);
    return rc;
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    if (t->open)
        fs_atomic_abort(&t->file);
    for (size_t i = 0; i < (size_t)t->npend_pids * TRACK_TIDS; i++) {
        for (int k = 0; t->pend[i] && k < SLOTS; k++) {
            free(t->pend[i][k].op);
            free(t->pend[i][k].cat);
        }
        free(t->pend[i]);
    }
    free(t->pend);
    for (size_t i = 0; i < t->nmeta; i++)
        free(t->meta[i]);
    free(t->meta);
    free(t->chips);
    free(t->bin_start);
    free(t->bin_end);
    free(t);
}

/* The windows (bounds in ns into 'at', the last one open) that each hold at
 * most 'budget' events, greedily from 0 over bins [0, nb); 0 if one bin holds
 * more. A window [i w, (j + 1) w] keeps the events that start by its end and
 * end at or after its start (trace.h); counted by bins, with a bin to spare on
 * each side for the events on its bounds: those starting in bins <= j + 1
 * less those ending in bins <= i - 2. */
static int windows(const struct trace *t, size_t nb, size_t budget, int64_t *at, int max)
{
    size_t *cs = xmalloc(nb * sizeof *cs), *ce = xmalloc(nb * sizeof *ce);
    for (size_t k = 0; k < nb; k++) {
        cs[k] = (k ? cs[k - 1] : 0) + t->bin_start[k];
        ce[k] = (k ? ce[k - 1] : 0) + t->bin_end[k];
    }
#define HELD(i, j) (cs[(j) + 1 < nb ? (j) + 1 : nb - 1] - ((i) >= 2 ? ce[(i) - 2] : 0))
    int n = 0;
    for (size_t i = 0; i < nb; n++) {
        if (n == max || HELD(i, i) > budget) {
            n = 0;
            break;
        }
        size_t j = i;
        while (j + 1 < nb && HELD(i, j + 1) <= budget)
            j++;
        at[n] = (int64_t)i * t->bin_ns;
        i = j + 1;
    }
#undef HELD
    free(cs);
    free(ce);
    return n;
}

void trace_stats(const struct trace *t, struct trace_stats *st)
{
    *st = (struct trace_stats){.level = t->o.level, .events = t->events, .dropped = t->dropped,
                               .filtered = t->filtered, .max_events = t->o.max_events,
                               .complete_until_s = t->dropped ? t->drop_t0 : -1,
                               .last_s = t->last, .bytes = t->bytes};
    memcpy(st->chosen, t->o.chosen, sizeof st->chosen);
    memcpy(st->chosen_chips, t->o.chosen_chips, sizeof st->chosen_chips);
    if (!t->dropped || !t->bin_start || t->meta_events >= t->o.max_events)
        return;
    size_t nb = (size_t)(t->last * 1e9 / (double)t->bin_ns) + 1;
    nb = nb < TIME_BINS ? nb : TIME_BINS;
    st->nwindows = windows(t, nb, t->o.max_events - t->meta_events, st->window_start_ns,
                           TRACE_MAX_WINDOWS);
}
