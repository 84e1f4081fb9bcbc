/* outputs/progress.c -- a run's progress line (see outputs/progress.h). */
#include "outputs/progress.h"

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "base/xalloc.h"

struct progress {
    FILE *out;
    int64_t total, done;
    double t0, interval_s, next_s; /* next_s: when to draw next (relative to t0) */
    unsigned calls;
    bool drawn;
};

double progress_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct progress *progress_new(int64_t total, FILE *out, double interval_s)
{
    if (!out || total <= 0)
        return NULL;
    struct progress *p = xcalloc(1, sizeof *p);
    *p = (struct progress){.out = out, .total = total, .t0 = progress_now_s(), .interval_s = interval_s,
                           .next_s = interval_s};
    return p;
}

void progress_clock_text(char *buf, size_t n, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

void progress_draw(FILE *out, const char *done, double elapsed_s, double eta_s)
{
    char el[32], eta[32] = "--:--";
    progress_clock_text(el, sizeof el, elapsed_s);
    if (eta_s >= 0)
        progress_clock_text(eta, sizeof eta, eta_s);
    fprintf(out, "\r\033[K%s, %s elapsed, ETA %s", done, el, eta);
    fflush(out);
}

static void draw(struct progress *p, double now_s)
{
    int64_t done = p->done < p->total ? p->done : p->total;
    double frac = (double)done / (double)p->total;
    char what[64];
    snprintf(what, sizeof what, "%5.1f%% of %lld steps", 100.0 * frac, (long long)p->total);
    progress_draw(p->out, what, now_s, done > 0 ? now_s / frac - now_s : -1);
    p->drawn = true;
}

void progress_add_at(struct progress *p, int64_t n, double now_s)
{
    if (!p)
        return;
    p->done += n;
    if (now_s >= p->next_s) {
        draw(p, now_s);
        p->next_s = now_s + p->interval_s;
    }
}

void progress_add(struct progress *p, int64_t n)
{
    if (!p)
        return;
    /* the clock is read once per 64 calls: steps come millions a second */
    if (++p->calls % 64 == 0)
        progress_add_at(p, n, progress_now_s() - p->t0);
    else
        p->done += n;
}

void progress_free(struct progress *p)
{
    if (!p)
        return;
    if (p->drawn) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
    free(p);
}
