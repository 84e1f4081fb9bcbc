/* base/diag.c -- collected "file:line:col: path: message" errors. */
#include "base/diag.h"

#include <stdarg.h>
#include <stdlib.h>

#include "base/xalloc.h"

struct diag {
    char **msgs;
    size_t n, cap;
};

struct diag *diag_new(void)
{
    return xcalloc(1, sizeof(struct diag));
}

void diag_clear(struct diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->msgs[i]);
    d->n = 0;
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
    xgrow(&d->msgs, &d->cap, d->n + 1, sizeof *d->msgs);
    d->msgs[d->n++] = msg;
}

int diag_count(const struct diag *d)
{
    return (int)d->n;
}

const char *diag_message(const struct diag *d, int i)
{
    return d->msgs[i];
}

void diag_print(const struct diag *d, FILE *out)
{
    size_t shown = d->n < 20 ? d->n : 20;
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
