/* outputs/xprof.c -- `tpusim compare --profile TRACE RUN`: the XLA ops of a
 * measured Chrome trace beside a simulated run (outputs/xprof.h).
 *
 * The trace is scanned event by event (each event parsed alone, so memory
 * stays the file plus one event), three times: the process and thread names;
 * the module executions of the chosen device; its op events. Two layouts:
 *  - XProf / TensorBoard's trace viewer (TPU, GPU): a process per device
 *    ("/device:TPU:0"), its XLA ops as complete events on a thread named
 *    "XLA Ops" named by the HLO instruction, its executions on "XLA Modules"
 *    (named "MODULE(id)");
 *  - jax.profiler's trace on the CPU: the thunk executor's events carry
 *    args.hlo_op, args.hlo_module and args.device_ordinal.
 * May use: libc, base/ (json, fsutil, xalloc). */
#include "outputs/xprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

/* ---------------- a name table (open addressing) ---------------- */

struct xp_entry {
    char *name;
    double meas_us; /* measured, summed over the trace */
    long count;
    double sim_s; /* simulated, one execution */
    long sim_instances;
    const char *category; /* borrowed from the summary */
    bool in_sim;
};

struct xp_table {
    struct xp_entry *e;
    size_t n, cap; /* cap a power of two */
};

static uint64_t xp_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static struct xp_entry *xp_find(struct xp_table *t, const char *name, bool add)
{
    if (t->cap == 0) {
        t->cap = 256;
        t->e = xcalloc(t->cap, sizeof *t->e);
    }
    size_t i = xp_hash(name) & (t->cap - 1);
    while (t->e[i].name) {
        if (strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
        i = (i + 1) & (t->cap - 1);
    }
    if (!add || t->n >= XPROF_MAX_NAMES)
        return NULL;
    if (2 * (t->n + 1) > t->cap) { /* grow, then insert */
        struct xp_table g = {.cap = 2 * t->cap};
        g.e = xcalloc(g.cap, sizeof *g.e);
        for (size_t k = 0; k < t->cap; k++)
            if (t->e[k].name) {
                size_t j = xp_hash(t->e[k].name) & (g.cap - 1);
                while (g.e[j].name)
                    j = (j + 1) & (g.cap - 1);
                g.e[j] = t->e[k];
            }
        free(t->e);
        t->e = g.e, t->cap = g.cap;
        return xp_find(t, name, add);
    }
    t->e[i].name = xstrdup(name);
    t->n++;
    return &t->e[i];
}

static void xp_table_free(struct xp_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].name);
    free(t->e);
}

/* ---------------- scanning the events ---------------- */

struct xp_scan {
    const char *p, *end;
};

/* Where the events first failed to parse (NULL: they did not). */
struct xp_bad {
    const char *at;
};

/* The end of the JSON value at 's' (strings with escapes, nested containers
 * counted without recursion); NULL when the text ends first. */
static const char *skip_value(const char *s, const char *end)
{
    long depth = 0;
    do {
        while (s < end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t' || *s == ',' ||
                           *s == ':'))
            s++;
        if (s >= end)
            return NULL;
        if (*s == '"') {
            for (s++; s < end && *s != '"'; s++)
                if (*s == '\\')
                    s++;
            if (s >= end)
                return NULL;
            s++;
        } else if (*s == '{' || *s == '[') {
            depth++, s++;
        } else if (*s == '}' || *s == ']') {
            if (--depth < 0)
                return NULL;
            s++;
        } else {
            const char *b = s;
            while (s < end && !strchr(" \n\r\t,:]}", *s))
                s++;
            if (s == b)
                return NULL;
        }
    } while (depth > 0);
    return s;
}

static const char *skip_ws(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++;
    return s;
}

/* Points 'sc' at the first element of the events array: the top level when
 * it is an array, else the value of its "traceEvents" key. */
static bool find_events(const char *text, size_t len, struct xp_scan *sc)
{
    const char *s = skip_ws(text, text + len), *end = text + len;
    if (s < end && *s == '[') {
        sc->p = s + 1, sc->end = end;
        return true;
    }
    if (s >= end || *s != '{')
        return false;
    s++;
    for (;;) {
        s = skip_ws(s, end);
        if (s < end && *s == ',')
            s = skip_ws(s + 1, end);
        if (s >= end || *s != '"')
            return false;
        const char *k = s + 1, *ke = skip_value(s, end);
        if (!ke)
            return false;
        bool events = ke - k - 1 == 11 && strncmp(k, "traceEvents", 11) == 0;
        s = skip_ws(ke, end);
        if (s >= end || *s != ':')
            return false;
        s = skip_ws(s + 1, end);
        if (events) {
            if (s >= end || *s != '[')
                return false;
            sc->p = s + 1, sc->end = end;
            return true;
        }
        if (!(s = skip_value(s, end)))
            return false;
    }
}

/* The next event object, parsed alone; NULL at the array's end. */
static struct json *next_event(struct xp_scan *sc, struct xp_bad *bad)
{
    for (;;) {
        const char *s = skip_ws(sc->p, sc->end);
        if (s < sc->end && *s == ',')
            s = skip_ws(s + 1, sc->end);
        if (s >= sc->end || *s == ']') {
            sc->p = s;
            return NULL;
        }
        const char *e = skip_value(s, sc->end);
        if (!e) {
            bad->at = s;
            return NULL;
        }
        sc->p = e;
        if (*s != '{')
            continue;
        char why[64];
        struct json *j = json_parse(s, (size_t)(e - s), why, sizeof why);
        if (j)
            return j;
        bad->at = s;
        return NULL;
    }
}

/* ---------------- processes, threads, modules ---------------- */

struct xp_thread {
    double pid, tid;
    char *name;
};

struct xp_meta {
    struct xp_thread *proc, *thr; /* processes (tid unused) and threads */
    size_t nproc, nthr, cproc, cthr;
};

static void meta_add(struct xp_thread **v, size_t *n, size_t *cap, double pid, double tid,
                     const char *name)
{
    if (*n >= XPROF_MAX_THREADS)
        return;
    xgrow(v, cap, *n + 1, sizeof **v);
    (*v)[(*n)++] = (struct xp_thread){pid, tid, xstrdup(name)};
}

static const char *meta_name(const struct xp_thread *v, size_t n, double pid, double tid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].pid == pid && v[i].tid == tid)
            return v[i].name;
    return NULL;
}

static void meta_free(struct xp_meta *m)
{
    for (size_t i = 0; i < m->nproc; i++)
        free(m->proc[i].name);
    for (size_t i = 0; i < m->nthr; i++)
        free(m->thr[i].name);
    free(m->proc);
    free(m->thr);
}

static bool is_x(const struct json *ev)
{
    const char *ph = json_str(ev, "ph", "");
    return strcmp(ph, "X") == 0;
}

static void read_meta(const char *text, size_t len, struct xp_meta *m, struct xp_bad *bad)
{
    struct xp_scan sc;
    find_events(text, len, &sc);
    struct json *ev;
    while ((ev = next_event(&sc, bad))) {
        const char *ph = json_str(ev, "ph", ""), *nm = json_str(ev, "name", "");
        const char *an = json_str(json_get(ev, "args"), "name", NULL);
        if (strcmp(ph, "M") == 0 && an && strcmp(nm, "process_name") == 0)
            meta_add(&m->proc, &m->nproc, &m->cproc, json_num(ev, "pid", -1), 0, an);
        else if (strcmp(ph, "M") == 0 && an && strcmp(nm, "thread_name") == 0)
            meta_add(&m->thr, &m->nthr, &m->cthr, json_num(ev, "pid", -1),
                     json_num(ev, "tid", -1), an);
        json_free(ev);
    }
}

/* The device: in the XProf layout the pid of the process with an "XLA Ops"
 * thread named as asked (its ordinal after the last ':' or its whole name;
 * default the one ending ":0", else the lowest pid); -1 when the trace has
 * no "XLA Ops" thread. */
static double pick_device(const struct xp_meta *m, const char *want, char *label, size_t n)
{
    double best = -1;
    for (size_t i = 0; i < m->nthr; i++) {
        if (strcmp(m->thr[i].name, "XLA Ops") != 0)
            continue;
        double pid = m->thr[i].pid;
        const char *pn = meta_name(m->proc, m->nproc, pid, 0);
        const char *colon = pn ? strrchr(pn, ':') : NULL;
        bool match = want ? pn && (strcmp(pn, want) == 0 || (colon && strcmp(colon + 1, want) == 0))
                          : colon && strcmp(colon + 1, "0") == 0;
        if (match) {
            snprintf(label, n, "%s", pn);
            return pid;
        }
        if (!want && (best < 0 || pid < best)) {
            best = pid;
            snprintf(label, n, "%s", pn ? pn : "pid");
        }
    }
    return best;
}

/* "jit_f(123)" is module jit_f. */
static bool module_is(const char *span, const char *module)
{
    size_t n = strlen(module);
    return strncmp(span, module, n) == 0 && (span[n] == '\0' || span[n] == '(');
}

struct xp_spans {
    double *t0, *t1;
    size_t n, cap;
    double total_us;
    long any; /* module spans of the device, of any module */
};

static void read_modules(const char *text, size_t len, const struct xp_meta *m, double pid,
                         const char *module, struct xp_spans *sp, struct xp_bad *bad)
{
    struct xp_scan sc;
    find_events(text, len, &sc);
    struct json *ev;
    while ((ev = next_event(&sc, bad))) {
        const char *tn = is_x(ev) && json_num(ev, "pid", -2) == pid
                             ? meta_name(m->thr, m->nthr, pid, json_num(ev, "tid", -1))
                             : NULL;
        bool mod_span = tn && strcmp(tn, "XLA Modules") == 0;
        sp->any += mod_span;
        if (mod_span && module && module_is(json_str(ev, "name", ""), module) &&
            sp->n < XPROF_MAX_NAMES) {
            size_t c = sp->cap;
            xgrow(&sp->t0, &c, sp->n + 1, sizeof *sp->t0);
            xgrow(&sp->t1, &sp->cap, sp->n + 1, sizeof *sp->t1);
            double ts = json_num(ev, "ts", 0), dur = json_num(ev, "dur", 0);
            sp->t0[sp->n] = ts, sp->t1[sp->n++] = ts + dur;
            sp->total_us += dur;
        }
        json_free(ev);
    }
}

static int by_start(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts the spans by start (as pairs) for in_spans' binary search. */
static void sort_spans(struct xp_spans *sp)
{
    double *pair = xcalloc(2 * sp->n + 1, sizeof *pair);
    for (size_t i = 0; i < sp->n; i++)
        pair[2 * i] = sp->t0[i], pair[2 * i + 1] = sp->t1[i];
    qsort(pair, sp->n, 2 * sizeof *pair, by_start);
    for (size_t i = 0; i < sp->n; i++)
        sp->t0[i] = pair[2 * i], sp->t1[i] = pair[2 * i + 1];
    free(pair);
}

/* Whether time 'ts' falls in a span: the last span starting at or before it. */
static bool in_spans(const struct xp_spans *sp, double ts)
{
    size_t lo = 0, hi = sp->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->t0[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && ts <= sp->t1[lo - 1];
}

/* ---------------- the ops ---------------- */

struct xp_read {
    double pid;          /* the XProf device, or -1: the args layout */
    const char *device;  /* the args layout's device_ordinal wanted (NULL: "0" if any) */
    const char *module;  /* NULL: every module */
    struct xp_spans spans;
    long events, other_modules;
};

/* The op name of X event 'ev' when it is an XLA op of the device and module, else NULL. */
static const char *op_of(const struct json *ev, const struct xp_meta *m, struct xp_read *r)
{
    if (!is_x(ev))
        return NULL;
    const struct json *args = json_get(ev, "args");
    const char *name = json_str(ev, "name", "");
    const char *mod = json_str(args, "hlo_module", NULL);
    if (r->pid >= 0) {
        if (json_num(ev, "pid", -2) != r->pid)
            return NULL;
        const char *tn = meta_name(m->thr, m->nthr, r->pid, json_num(ev, "tid", -1));
        if (!tn || strcmp(tn, "XLA Ops") != 0)
            return NULL;
        if (r->module && r->spans.any && !mod && !in_spans(&r->spans, json_num(ev, "ts", 0)))
            return (r->other_modules++, NULL);
    } else {
        name = json_str(args, "hlo_op", NULL);
        const char *dev = json_str(args, "device_ordinal", NULL);
        if (!name || (dev && strcmp(dev, r->device ? r->device : "0") != 0))
            return NULL;
    }
    if (r->module && mod && strcmp(mod, r->module) != 0)
        return (r->other_modules++, NULL);
    return name[0] == '%' ? name + 1 : name;
}

static void read_ops(const char *text, size_t len, const struct xp_meta *m, struct xp_read *r,
                     struct xp_table *t, struct xp_bad *bad)
{
    struct xp_scan sc;
    find_events(text, len, &sc);
    struct json *ev;
    while ((ev = next_event(&sc, bad))) {
        const char *name = op_of(ev, m, r);
        double dur = json_num(ev, "dur", -1);
        struct xp_entry *e = name && *name && dur >= 0 && dur < 1e15 ? xp_find(t, name, true)
                                                                     : NULL;
        if (e) {
            e->meas_us += dur;
            e->count++;
            r->events++;
        }
        json_free(ev);
    }
}

/* ---------------- the simulated run ---------------- */

/* The HLO instruction of simulated op 'name': its last '.'-part with ':'
 * back to '.' (while:6.fusion:3 is fusion.3). */
static void hlo_name(const char *name, char *buf, size_t n)
{
    const char *dot = strrchr(name, '.');
    snprintf(buf, n, "%s", dot ? dot + 1 : name);
    for (char *c = buf; *c; c++)
        if (*c == ':')
            *c = '.';
}

static int read_sim(const struct json *sum, struct xp_table *t)
{
    const struct json *ops = json_get(sum, "ops");
    int n = 0;
    for (int i = 0; ops && ops->type == JSON_ARR && i < ops->n; i++) {
        const struct json *o = ops->kids[i];
        char nm[256];
        hlo_name(json_str(o, "name", ""), nm, sizeof nm);
        struct xp_entry *e = nm[0] ? xp_find(t, nm, true) : NULL;
        if (!e)
            continue;
        e->sim_s += json_num(o, "time_s", 0);
        e->sim_instances += (long)json_num(o, "instances", 1);
        e->category = json_str(o, "category", "other");
        e->in_sim = true;
        n++;
    }
    return n;
}

/* Executions in the trace: the module spans, else the most common count of
 * the measured ops the run has once. */
static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

static long count_steps(const struct xp_table *t, const struct xp_read *r)
{
    if (r->spans.n)
        return (long)r->spans.n;
    long *c = xcalloc(t->n + 1, sizeof *c), best = 1, best_n = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        const struct xp_entry *e = &t->e[i];
        if (e->name && e->count && e->in_sim && e->sim_instances == 1)
            c[n++] = e->count;
    }
    qsort(c, n, sizeof *c, cmp_long);
    for (size_t i = 0, j; i < n; i = j) { /* runs of one count: the longest, the smaller first */
        for (j = i; j < n && c[j] == c[i]; j++)
            ;
        if ((long)(j - i) > best_n)
            best = c[i], best_n = (long)(j - i);
    }
    free(c);
    return best;
}

/* ---------------- the report ---------------- */

static int by_time(const void *a, const void *b)
{
    const struct xp_entry *x = *(struct xp_entry *const *)a, *y = *(struct xp_entry *const *)b;
    double tx = x->meas_us > x->sim_s * 1e6 ? x->meas_us : x->sim_s * 1e6;
    double ty = y->meas_us > y->sim_s * 1e6 ? y->meas_us : y->sim_s * 1e6;
    return tx < ty ? 1 : tx > ty ? -1 : strcmp(x->name, y->name);
}

static void err_col(FILE *out, double meas, double sim)
{
    if (meas > 0)
        fprintf(out, " %+9.1f %%\n", 100.0 * (sim - meas) / meas);
    else
        fprintf(out, " %11s\n", "-");
}

static void row(FILE *out, const char *name, const char *cat, double meas, double sim,
                bool has_meas, bool has_sim)
{
    fprintf(out, "%-40.40s %-12.12s ", name, cat);
    if (has_meas)
        fprintf(out, "%14.3f ", meas);
    else
        fprintf(out, "%14s ", "-");
    if (has_sim)
        fprintf(out, "%14.3f", sim);
    else
        fprintf(out, "%14s", "-");
    err_col(out, has_meas && has_sim ? meas : 0, sim);
}

struct xp_cat {
    const char *name;
    double meas, sim;
    bool sim_known;
};

static void print_categories(FILE *out, struct xp_entry **v, size_t n, double steps)
{
    struct xp_cat cat[64];
    int nc = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = v[i]->in_sim ? v[i]->category : "(not simulated)";
        int k = 0;
        while (k < nc && strcmp(cat[k].name, c) != 0)
            k++;
        if (k == nc) {
            if (nc == 64)
                continue;
            cat[nc++] = (struct xp_cat){c, 0, 0, v[i]->in_sim};
        }
        cat[k].meas += v[i]->meas_us / steps;
        cat[k].sim += v[i]->sim_s * 1e6;
    }
    fprintf(out, "\n%-53s %14s %14s %11s\n", "by category", "measured us", "simulated us",
            "error");
    for (int k = 0; k < nc; k++)
        row(out, cat[k].name, "", cat[k].meas, cat[k].sim, true, cat[k].sim_known);
}

static void write_csv(const char *path, struct xp_entry **v, size_t n, double steps, FILE *err)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(err, "tpusim compare: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "op,category,measured_s,simulated_s,measured_count\n");
    for (size_t i = 0; i < n; i++) {
        json_write_string(f, v[i]->name);
        fprintf(f, ",%s,%s,%s,%ld\n", v[i]->in_sim ? v[i]->category : "",
                v[i]->count ? JSON_E9(v[i]->meas_us / steps * 1e-6) : "",
                v[i]->in_sim ? JSON_E9(v[i]->sim_s) : "", v[i]->count);
    }
    fclose(f);
}

static void report(FILE *out, struct xp_table *t, double steps, const struct json *sum,
                   const struct xp_read *r, const struct xprof_opts *o, FILE *err)
{
    struct xp_entry **v = xcalloc(t->n + 1, sizeof *v);
    size_t n = 0;
    double meas_sum = 0, sim_sum = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].name) {
            v[n++] = &t->e[i];
            meas_sum += t->e[i].meas_us / steps;
            sim_sum += t->e[i].sim_s * 1e6;
        }
    qsort(v, n, sizeof *v, by_time);
    int top = o->top > 0 ? o->top : 25;
    fprintf(out, "%-40s %-12s %14s %14s %11s\n", "op (per execution)", "category", "measured us",
            "simulated us", "error");
    double rest_m = 0, rest_s = 0;
    for (size_t i = 0; i < n; i++) {
        if ((int)i < top)
            row(out, v[i]->name, v[i]->in_sim ? v[i]->category : "(not sim.)",
                v[i]->meas_us / steps, v[i]->sim_s * 1e6, v[i]->count > 0, v[i]->in_sim);
        else
            rest_m += v[i]->meas_us / steps, rest_s += v[i]->sim_s * 1e6;
    }
    if ((int)n > top) {
        char what[48];
        snprintf(what, sizeof what, "(%zu more ops)", n - (size_t)top);
        row(out, what, "", rest_m, rest_s, true, true);
    }
    print_categories(out, v, n, steps);
    fprintf(out, "\n");
    row(out, "ops' sum", "", meas_sum, sim_sum, true, true);
    double step_sim = json_num(sum, "total_time_s", 0) * 1e6;
    if (r->spans.n)
        row(out, "step (module span / simulated step)", "", r->spans.total_us / steps, step_sim,
            true, true);
    else
        row(out, "step (simulated; no module spans)", "", 0, step_sim, false, true);
    if (o->csv)
        write_csv(o->csv, v, n, steps, err);
    free(v);
}

/* ---------------- entry points ---------------- */

int xprof_is_trace(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *s = skip_ws(buf, buf + n);
    return (s < buf + n && *s == '[') || strstr(buf, "\"traceEvents\"") != NULL;
}

static struct json *load_run(const char *run, FILE *err)
{
    struct stat st;
    char why[512];
    char *path = stat(run, &st) == 0 && S_ISDIR(st.st_mode) ? xasprintf("%s/summary.json", run)
                                                           : xstrdup(run);
    struct json *j = json_read_file(path, JSON_MAX_BYTES, why, sizeof why);
    if (!j)
        fprintf(err, "tpusim compare: %s\n", why);
    else if (!json_get(j, "ops")) {
        fprintf(err, "tpusim compare: %s: expected a run's summary.json\n", path);
        json_free(j);
        j = NULL;
    }
    free(path);
    return j;
}

static char *load_trace(const char *trace, size_t *len, FILE *err)
{
    char *text = fs_read_all(trace, XPROF_MAX_BYTES, len);
    if (!text) {
        char why[160];
        fs_read_error(errno, XPROF_MAX_BYTES, why, sizeof why);
        fprintf(err, "tpusim compare: %s: %s\n", trace, why);
    }
    return text;
}

static int xp_run(const char *trace, const char *text, size_t len, const struct json *sum,
                  const struct xprof_opts *o, FILE *out, FILE *err)
{
    struct xp_meta m = {0};
    struct xp_table t = {0};
    struct xp_bad bad = {NULL};
    char dev[128] = "";
    read_meta(text, len, &m, &bad);
    struct xp_read r = {.pid = pick_device(&m, o->device, dev, sizeof dev), .device = o->device};
    r.module = o->module ? o->module : json_str(json_get(sum, "program"), "module", NULL);
    if (r.pid >= 0)
        read_modules(text, len, &m, r.pid, r.module, &r.spans, &bad);
    sort_spans(&r.spans);
    read_sim(sum, &t);
    read_ops(text, len, &m, &r, &t, &bad);
    int rc = 0;
    if (bad.at) {
        int line = 1, col = 1;
        for (const char *c = text; c < bad.at; c++)
            line += *c == '\n', col = *c == '\n' ? 1 : col + 1;
        fprintf(err, "%s:%d:%d: traceEvents: expected a complete JSON event (malformed JSON in "
                "the events)\n", trace, line, col);
        rc = 2;
    } else if (r.events == 0) {
        fprintf(err, "tpusim compare: %s: expected XLA op events of device %s%s%s (an \"XLA "
                "Ops\" thread, or events with args.hlo_op), got none%s\n", trace,
                r.pid >= 0 ? dev : o->device ? o->device : "0", r.module ? " in module " : "",
                r.module ? r.module : "",
                r.other_modules ? " (some of other modules: --module names one)" : "");
        rc = 2;
    } else {
        double steps = o->steps > 0 ? (double)o->steps : (double)count_steps(&t, &r);
        if (r.pid < 0)
            snprintf(dev, sizeof dev, "device_ordinal %s", o->device ? o->device : "0");
        fprintf(out, "measured %s (%s, module %s, %.0f execution%s, %ld op events) against "
                "simulated %s\n\n", trace, dev,
                r.module ? r.module : "any", steps, steps == 1 ? "" : "s", r.events,
                json_str(sum, "scenario", "run"));
        report(out, &t, steps, sum, &r, o, err);
    }
    free(r.spans.t0);
    free(r.spans.t1);
    xp_table_free(&t);
    meta_free(&m);
    return rc;
}

int xprof_compare_text(const char *trace, const char *text, size_t len, const struct json *run,
                       const struct xprof_opts *o, FILE *out, FILE *err)
{
    struct xp_scan sc;
    const char *what = len >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b
                           ? "expected a Chrome trace (JSON), got a gzip file: gunzip it first"
                       : !find_events(text, len, &sc)
                           ? "expected a Chrome trace: a JSON array of events or an object "
                             "with \"traceEvents\""
                           : NULL;
    if (what) {
        fprintf(err, "tpusim compare: %s: %s\n", trace, what);
        return 2;
    }
    return xp_run(trace, text, len, run, o, out, err);
}

int xprof_compare(const char *trace, const char *run, const struct xprof_opts *o, FILE *out,
                  FILE *err)
{
    struct json *sum = load_run(run, err);
    if (!sum)
        return 2;
    size_t len;
    char *text = load_trace(trace, &len, err);
    int rc = text ? xprof_compare_text(trace, text, len, sum, o, out, err) : 2;
    free(text);
    json_free(sum);
    return rc;
}
