/* base/xalloc.c -- allocation that aborts on out-of-memory. */
#include "base/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size)
{
    fprintf(stderr, "tpusim: out of memory allocating %zu bytes\n", size);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        oom(size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        oom((size_t)-1);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        oom(size);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = xmalloc((size_t)(n < 0 ? 0 : n) + 1);
    if (n < 0)
        s[0] = '\0';
    else
        vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void xgrow(void *pp, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    if (n > (size_t)-1 / item)
        oom((size_t)-1);
    *(void **)pp = xrealloc(*(void **)pp, n * item);
    *cap = n;
}

void xappend(char **s, size_t *len, size_t *cap, const char *t)
{
    size_t k = strlen(t);
    xgrow(s, cap, *len + k + 1, 1);
    memcpy(*s + *len, t, k + 1);
    *len += k;
}
