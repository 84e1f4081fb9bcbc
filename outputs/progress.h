/* outputs/progress.h -- a run's progress on a terminal: after the first few
 * seconds, one line every few seconds with the share of the estimated steps
 * done (engine/validate.h: grid steps and copy chunks), the time elapsed and an
 * ETA, redrawn in place and erased at the end. Runs shorter than the
 * interval, and output that is not a terminal, print nothing. Uses libc. */
#ifndef TPUSIM_OUTPUTS_PROGRESS_H
#define TPUSIM_OUTPUTS_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress;

/* A meter of 'total' steps drawing on 'out' every 'interval_s' seconds, or
 * NULL (every function takes NULL and does nothing) when 'out' is NULL or
 * 'total' is not positive. Caller frees with progress_free(). */
struct progress *progress_new(int64_t total, FILE *out, double interval_s);
/* 'n' more steps done; draws when the interval has passed. */
void progress_add(struct progress *p, int64_t n);
/* The same at wall-clock time 'now_s' (seconds since progress_new). */
void progress_add_at(struct progress *p, int64_t n, double now_s);
/* Erases the line if one was drawn, and frees 'p'. */
void progress_free(struct progress *p);

/* The wall clock every progress display and timing uses: monotonic seconds. */
double progress_now_s(void);
/* 's' seconds as "m:ss" or "h:mm:ss" into 'buf'. */
void progress_clock_text(char *buf, size_t n, double s);
/* The one progress line every display draws, in place on 'out' (a terminal):
 * "DONE, m:ss elapsed, ETA m:ss" ('eta_s' below 0: "--:--"). A run's meter
 * says its share of the steps; a sweep's bar its points and running ones. */
void progress_draw(FILE *out, const char *done, double elapsed_s, double eta_s);

#endif
