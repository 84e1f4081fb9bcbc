/* base/xalloc.h -- allocation that never returns NULL.
 * On failure these print "tpusim: out of memory allocating N bytes" and abort(),
 * so no caller checks for NULL (house style rule 10). */
#ifndef TPUSIM_BASE_XALLOC_H
#define TPUSIM_BASE_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size); /* checks n*size for overflow */
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
/* Returns a new string formatted like printf; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with a va_list (which it consumes). */
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Grow '*pp' (an array of '*cap' items of 'item' bytes) so it holds at least 'need' items. */
void xgrow(void *pp, size_t *cap, size_t need, size_t item);

/* Appends the string 't' to the string '*s' of length '*len' in a buffer of
 * '*cap' bytes (grown as needed; '*s' may start NULL with *cap 0). */
void xappend(char **s, size_t *len, size_t *cap, const char *t);

#endif
