/* base/diag.c -- collected "file:line:col: path: message" errors. */
#include "base/diag.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>

#include "base/xalloc.h"

/* Messages kept as text: the first DIAG_KEEP. Past them a message is only
 * counted, so an input that repeats one error a million times (a generator's
 * bad length, once per sequence) costs a counter, not a million strings. */
#define DIAG_KEEP 64

struct diag {
    char **msgs;
    size_t n, kept, cap;
};

struct diag *diag_new(void)
{
    return xcalloc(1, sizeof(struct diag));
}

void diag_clear(struct diag *d)
{
    for (size_t i = 0; i < d->kept; i++)
        free(d->msgs[i]);
    d->n = d->kept = 0;
}

void diag_free(struct diag *d)
{
    if (!d)
        return;
    diag_clear(d);
    free(d->msgs);
    free(d);
}

void diag_error(struct diag *d, const struct diag_loc *loc, const char *path, const char *fmt, ...)
{
    if (d->kept == DIAG_KEEP) {
        d->n++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *body = xvasprintf(fmt, ap);
    va_end(ap);

    char *where;
    if (loc && loc->file && loc->line > 0)
        where = xasprintf("%s:%d:%d: ", loc->file, loc->line, loc->col);
    else if (loc && loc->file)
        where = xasprintf("%s: ", loc->file);
    else
        where = xstrdup("");
    char *msg = (path && *path) ? xasprintf("%s%s: %s", where, path, body)
                                : xasprintf("%s%s", where, body);
    free(where);
    free(body);
    xgrow(&d->msgs, &d->cap, d->kept + 1, sizeof *d->msgs);
    d->msgs[d->kept++] = msg;
    d->n++;
}

int diag_count(const struct diag *d)
{
    return d->n > INT_MAX ? INT_MAX : (int)d->n;
}

int diag_kept(const struct diag *d)
{
    return (int)d->kept;
}

const char *diag_message(const struct diag *d, int i)
{
    return i >= 0 && (size_t)i < d->kept ? d->msgs[i] : NULL;
}

void diag_print(const struct diag *d, FILE *out)
{
    size_t shown = d->kept < 20 ? d->kept : 20;
    for (size_t i = 0; i < shown; i++)
        fprintf(out, "%s\n", d->msgs[i]);
    if (d->n > shown)
        fprintf(out, "... and %zu more\n", d->n - shown);
}

int diag_fail(char *err, size_t n, const char *fmt, ...)
              {
              va_list ap;
    va_start(ap, fmt);
    if (err && n > 0)
        vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}
