/* traces/trace.c -- in-memory events, Chrome Trace Event JSON writer.
 * Events are sorted by (pid, tid, start) at write time so the file is the
 * same whatever order actors recorded them in.
 * May use: libc, base/ (fsutil, json, xalloc) and traces/trace.h only. */
#include "traces/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

enum ev_kind { EV_SPAN, EV_COUNTER, EV_FLOW_OUT, EV_FLOW_IN, EV_PROC, EV_THREAD };

struct event {
    enum ev_kind kind;
    int pid, tid, sort;
    double t0, t1, v;
    char *cat, *name, *args;
    uint64_t seq;
};

struct trace {
    struct event *ev;
    size_t n, cap, max, dropped;
    uint64_t seq, flows;
    char **meta;
    size_t nmeta, capmeta;
};

struct trace *trace_new(size_t max_events)
{
    struct trace *t = xcalloc(1, sizeof *t);
    t->max = max_events;
    return t;
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->ev[i].cat);
        free(t->ev[i].name);
        free(t->ev[i].args);
    }
    for (size_t i = 0; i < t->nmeta; i++)
        free(t->meta[i]);
    free(t->meta);
    free(t->ev);
    free(t);
}

static struct event *push(struct trace *t, enum ev_kind k, bool always)
{
    if (!always && t->n >= t->max) {
        t->dropped++;
        return NULL;
    }
    xgrow(&t->ev, &t->cap, t->n + 1, sizeof *t->ev);
    struct event *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->seq = t->seq++;
    return e;
}

void trace_process(struct trace *t, int pid, const char *name)
{
    struct event *e = push(t, EV_PROC, true);
    e->pid = pid;
    e->name = xstrdup(name);
}

void trace_thread(struct trace *t, int pid, int tid, const char *name, int sort)
{
    struct event *e = push(t, EV_THREAD, true);
    e->pid = pid;
    e->tid = tid;
    e->sort = sort;
    e->name = xstrdup(name);
}

void trace_span(struct trace *t, int pid, int tid, const char *cat, const char *name, double t0_s,
                double t1_s, const char *args)
{
    struct event *e = push(t, EV_SPAN, false);
    if (!e)
        return;
    e->pid = pid;
    e->tid = tid;
    e->t0 = t0_s;
    e->t1 = t1_s > t0_s ? t1_s : t0_s;
    e->cat = xstrdup(cat);
    e->name = xstrdup(name);
    e->args = args ? xstrdup(args) : NULL;
}

void trace_counter(struct trace *t, int pid, const char *name, double t_s, double v)
{
    struct event *e = push(t, EV_COUNTER, false);
    if (!e)
        return;
    e->pid = pid;
    e->t0 = t_s;
    e->v = v;
    e->name = xstrdup(name);
}

void trace_flow(struct trace *t, int pid0, int tid0, double t0_s, int pid1, int tid1, double t1_s)
{
    if (t->n + 2 > t->max) {
        t->dropped += 2;
        return;
    }
    uint64_t id = ++t->flows;
    struct event *a = push(t, EV_FLOW_OUT, false);
    a->pid = pid0, a->tid = tid0, a->t0 = t0_s, a->v = (double)id;
    struct event *b = push(t, EV_FLOW_IN, false);
    b->pid = pid1, b->tid = tid1, b->t0 = t1_s, b->v = (double)id;
}

void trace_meta(struct trace *t, const char *key, const char *value)
{
    xgrow(&t->meta, &t->capmeta, t->nmeta + 2, sizeof *t->meta);
    t->meta[t->nmeta++] = xstrdup(key);
    t->meta[t->nmeta++] = xstrdup(value);
}

size_t trace_count(const struct trace *t)
{
    return t->n;
}

size_t trace_dropped(const struct trace *t)
{
    return t->dropped;
}

static int cmp_seq(const struct event *x, const struct event *y)
{
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_event(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    int mx = x->kind >= EV_PROC, my = y->kind >= EV_PROC;
    if (mx != my)
        return my - mx; /* metadata first */
    if (mx)
        return cmp_seq(x, y);
    if (x->pid != y->pid)
        return x->pid - y->pid;
    if (x->tid != y->tid)
        return x->tid - y->tid;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return cmp_seq(x, y);
}

/* Writes seconds 't' as microseconds with 3 decimals (1 ns), by integer
 * formatting: printf's %f is the writer's bottleneck on large traces. */
static void put_us(FILE *f, double t)
{
    long long ns = llround(t * 1e9);
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    fprintf(f, "%lld.%03lld", ns / 1000, ns % 1000);
}

static void write_event(FILE *f, const struct event *e)
{
    switch (e->kind) {
    case EV_PROC:
        fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", e->pid);
        json_write_string(f, e->name);
        fprintf(f, "}}");
        return;
    case EV_THREAD:
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
                e->pid, e->tid);
        json_write_string(f, e->name);
        fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"sort_index\":%d}}", e->pid, e->tid, e->sort);
        return;
    case EV_SPAN:
        fprintf(f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", e->pid, e->tid);
        put_us(f, e->t0);
        fputs(",\"dur\":", f);
        put_us(f, e->t1 - e->t0);
        fputs(",\"cat\":", f);
        json_write_string(f, e->cat);
        fprintf(f, ",\"name\":");
        json_write_string(f, e->name);
        if (e->args)
            fprintf(f, ",\"args\":{%s}", e->args);
        fputc('}', f);
        return;
    case EV_COUNTER:
        fprintf(f, "{\"ph\":\"C\",\"pid\":%d,\"ts\":", e->pid);
        put_us(f, e->t0);
        fputs(",\"name\":", f);
        json_write_string(f, e->name);
        fprintf(f, ",\"args\":{\"value\":%.6g}}", e->v);
        return;
    case EV_FLOW_OUT:
    case EV_FLOW_IN:
        fprintf(f, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", e->kind == EV_FLOW_OUT ? "s" : "f",
                e->pid, e->tid);
        put_us(f, e->t0);
        fprintf(f, ",\"id\":%lld,\"cat\":\"dma\",\"name\":\"dma->compute\"%s}", (long long)e->v,
                e->kind == EV_FLOW_IN ? ",\"bp\":\"e\"" : "");
        return;
    }
}

int trace_write(const struct trace *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    struct event *ev = xmalloc(sizeof *ev * (t->n ? t->n : 1));
    memcpy(ev, t->ev, sizeof *ev * t->n);
    qsort(ev, t->n, sizeof *ev, cmp_event);
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{");
    for (size_t i = 0; i + 1 < t->nmeta; i += 2) {
        fprintf(f, "%s", i ? "," : "");
        json_write_string(f, t->meta[i]);
        fputc(':', f);
        json_write_string(f, t->meta[i + 1]);
    }
    fprintf(f, "%s\"dropped_events\":\"%zu\"},\n\"traceEvents\":[\n", t->nmeta ? "," : "",
            t->dropped);
    for (size_t i = 0; i < t->n; i++) {
        write_event(f, &ev[i]);
        fputs(i + 1 < t->n ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    free(ev);
    return fs_atomic_commit(&a);
}
