/* config/cfg_serve_trace.c -- serve.requests.trace: a request per row of a CSV,
 * as traffic logs and benchmark tools keep them (arrival time in seconds from
 * the start, prompt tokens, output tokens):
 *     arrival_s,input_len,output_len
 *     0.000,812,128
 *     0.231,97,503
 * The header names the three columns in any order (nothing else); rows are
 * sorted by arrival; a blank line or a line starting with '#' is skipped; a
 * '\r' before the newline is allowed. Every bad field is reported as
 * file:line:col, the first 20 of them. One pass over the text: linear in its
 * size, at most SERVE_MAX_REQUESTS rows (config/cfg_serve.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/xalloc.h"
#include "config/cfg_serve.h"

enum { COL_ARRIVAL, COL_IN, COL_OUT, NCOLS };
static const char *const col_names[NCOLS] = {"arrival_s", "input_len", "output_len"};

struct rd {
    const char *text, *end, *file;
    int line;
    struct diag *d;
    int errors;
};

static void bad(struct rd *r, const char *at, const char *line0, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void bad(struct rd *r, const char *at, const char *line0, const char *fmt, ...)
{
    r->errors++;
    struct diag_loc loc = {r->file, r->line, (int)(at - line0) + 1};
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    diag_error(r->d, &loc, "serve.requests.trace", "%s", msg);
    free(msg);
}

/* The field [f, e) as a number: a finite real in [lo, hi] (integer when 'whole'). */
static bool field_num(const char *f, const char *e, bool whole, double lo, double hi, double *v)
{
    char buf[64];
    size_t n = (size_t)(e - f);
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, f, n);
    buf[n] = '\0';
    char *end = NULL;
    *v = strtod(buf, &end);
    if (end == buf || *end || !isfinite(*v) || *v < lo || *v > hi)
        return false;
    return !whole || *v == floor(*v);
}

/* The header: each column's index. */
static bool read_header(struct rd *r, const char *l, const char *e, int *idx)
{
    int n = 0, seen[NCOLS] = {0};
    for (const char *f = l;; n++) {
        const char *c = memchr(f, ',', (size_t)(e - f));
        const char *fe = c ? c : e;
        int k = -1;
        for (int i = 0; i < NCOLS; i++)
            if ((size_t)(fe - f) == strlen(col_names[i]) && !memcmp(f, col_names[i], (size_t)(fe - f)))
                k = i;
        if (k < 0 || seen[k] || n >= NCOLS) {
            bad(r, f, l, "expected a header naming arrival_s, input_len and output_len once "
                         "each, got '%.*s'", (int)(fe - f > 40 ? 40 : fe - f), f);
            return false;
        }
        seen[k] = 1;
        idx[n] = k;
        if (!c)
            break;
        f = c + 1;
    }
    if (n + 1 != NCOLS) {
        bad(r, l, l, "expected a header naming arrival_s, input_len and output_len, got '%.*s'",
            (int)(e - l > 40 ? 40 : e - l), l);
        return false;
    }
    return true;
}

/* One row into request 'i'; false after a message. */
static bool read_row(struct rd *r, const char *l, const char *e, const int *idx,
                     const struct serve_cfg *c, struct serve_trace *t, int64_t i)
{
    static const char *const want[NCOLS] = {"arrival_s, a time in seconds from 0 to 1e9",
                                            "input_len, an integer from 1 to 16777216",
                                            "output_len, an integer from 1 to 16777216"};
    const char *f = l;
    double v[NCOLS];
    const char *at[NCOLS];
    for (int n = 0; n < NCOLS; n++) {
        const char *comma = memchr(f, ',', (size_t)(e - f));
        const char *fe = comma && n < NCOLS - 1 ? comma : e;
        int k = idx[n];
        at[k] = f;
        if ((n < NCOLS - 1 && !comma) ||
            !field_num(f, fe, k != COL_ARRIVAL, k == COL_ARRIVAL ? 0 : 1,
                       k == COL_ARRIVAL ? 1e9 : 16777216.0, &v[k])) {
            if (n < NCOLS - 1 && !comma)
                bad(r, f, l, "expected 3 fields: arrival_s, input_len, output_len, got '%.*s'",
                    (int)(e - l > 40 ? 40 : e - l), l);
            else
                bad(r, f, l, "expected %s, got '%.*s'", want[k], (int)(fe - f > 40 ? 40 : fe - f),
                    f);
            return false;
        }
        f = fe + 1;
    }
    if (i > 0 && v[COL_ARRIVAL] < t->arrival_s[i - 1]) {
        char prev[64];
        snprintf(prev, sizeof prev, "%.17g", t->arrival_s[i - 1]);
        bad(r, at[COL_ARRIVAL], l, "expected rows sorted by arrival_s (at least the row above's "
                                   "%s), got %.17g", prev, v[COL_ARRIVAL]);
        return false;
    }
    if (v[COL_IN] + v[COL_OUT] > (double)c->max_model_len) {
        bad(r, at[COL_OUT], l, "expected input_len + output_len at most engine.max_model_len = "
                               "%lld, got %.0f", (long long)c->max_model_len,
            v[COL_IN] + v[COL_OUT]);
        return false;
    }
    t->arrival_s[i] = v[COL_ARRIVAL];
    t->in[i] = (int64_t)v[COL_IN];
    t->out[i] = (int64_t)v[COL_OUT];
    return true;
}

static void trace_grow(struct serve_trace *t, size_t *cap, int64_t need)
{
    if ((size_t)need <= *cap)
        return;
    size_t c = *cap;
    xgrow(&t->arrival_s, &c, (size_t)need, sizeof *t->arrival_s);
    c = *cap;
    xgrow(&t->in, &c, (size_t)need, sizeof *t->in);
    xgrow(&t->out, cap, (size_t)need, sizeof *t->out);
}

int cfg_serve_trace_parse(const char *text, size_t len, const char *file, struct serve_cfg *c,
                          struct diag *d)
{
    struct rd r = {text, text + len, file, 0, d, 0};
    struct serve_trace *t = &c->trace;
    *t = (struct serve_trace){0};
    size_t cap = 0;
    int idx[NCOLS];
    bool header = false;
    for (const char *l = text; l < r.end && r.errors < 20;) {
        const char *nl = memchr(l, '\n', (size_t)(r.end - l));
        const char *e = nl ? nl : r.end;
        r.line++;
        if (e > l && e[-1] == '\r')
            e--;
        if (memchr(l, '\0', (size_t)(e - l))) {
            bad(&r, l, l, "expected text, got a NUL byte");
        } else if (e == l || *l == '#') {
            /* blank or a comment */
        } else if (!header) {
            header = read_header(&r, l, e, idx);
            if (!header)
                break;
        } else if (t->n >= SERVE_MAX_REQUESTS) {
            bad(&r, l, l, "expected at most %d requests (the resource guard), got more",
                SERVE_MAX_REQUESTS);
            break;
        } else {
            trace_grow(t, &cap, t->n + 1);
            if (read_row(&r, l, e, idx, c, t, t->n))
                t->n++;
        }
        l = nl ? nl + 1 : r.end;
    }
    if (!r.errors && !header)
        bad(&r, text, text, "expected a header naming arrival_s, input_len and output_len, "
                            "got none");
    else if (!r.errors && t->n == 0)
        bad(&r, text, text, "expected at least one request row, got none");
    if (r.errors) {
        cfg_serve_fini(c);
        return -1;
    }
    return 0;
}

void cfg_serve_fini(struct serve_cfg *c)
{
    free(c->trace.arrival_s);
    free(c->trace.in);
    free(c->trace.out);
    c->trace = (struct serve_trace){0};
    free(c->draft);
    c->draft = NULL;
}
