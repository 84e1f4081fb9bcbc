/* base/fmt.c -- formatting without printf (see base/fmt.h). */
#include "base/fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "base/xalloc.h"

char *fmt_u64(char *p, unsigned long long v)
{
    char d[24];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n)
        *p++ = d[--n];
    return p;
}

char *fmt_i64(char *p, long long v)
{
    if (v >= 0)
        return fmt_u64(p, (unsigned long long)v);
    *p++ = '-';
    return fmt_u64(p, 0ULL - (unsigned long long)v);
}

char *fmt_lit(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

char *fmt_str(char *p, const char *s, char *end)
{
    size_t n = strlen(s);
    n = p >= end ? 0 : n < (size_t)(end - p) ? n : (size_t)(end - p);
    memcpy(p, s, n);
    return p + n;
}

/* 'v' / 10^decimals with exactly 'decimals' digits after the point. */
static char *scaled(char *p, unsigned long long v, int decimals)
{
    unsigned long long pow10 = 1;
    for (int i = 0; i < decimals; i++)
        pow10 *= 10;
    p = fmt_u64(p, v / pow10);
    if (decimals == 0)
        return p;
    *p++ = '.';
    unsigned long long frac = v % pow10;
    for (int i = decimals - 1; i >= 0; i--, frac /= 10)
        p[i] = (char)('0' + frac % 10);
    return p + decimals;
}

char *fmt_us(char *p, double t_s)
{
    long long ns = llround(t_s * 1e9);
    if (ns < 0)
        *p++ = '-';
    return scaled(p, ns < 0 ? 0ULL - (unsigned long long)ns : (unsigned long long)ns, 3);
}

char *fmt_fixed(char *p, double x, int decimals)
{
    static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
    decimals = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;
    if (x >= 0 && x < (decimals ? 1e9 : 9e15) && x == floor(x)) /* a whole number: exact */
        return scaled(p, (unsigned long long)x * (unsigned long long)pow10[decimals], decimals);
    /* below 1e9 the product's rounding error (under 1.2e-7) cannot cross
     * a digit unless the value is within 1e-6 of a tie: printf decides those */
    double m = x * pow10[decimals];
    if (x >= 0 && m < 1e9 && fabs(m - floor(m) - 0.5) >= 1e-6)
        return scaled(p, (unsigned long long)llround(m), decimals);
    int n = snprintf(p, 48, "%.*f", decimals, x);
    return p + (n < 0 ? 0 : n < 48 ? n : 47);
}

char *fmt_shell_word(const char *w)
{
    bool plain = *w != 0;
    size_t quotes = 0;
    for (const char *c = w; *c; c++) {
        plain = plain && (strchr("_-./:=,+@%", *c) || (*c >= '0' && *c <= '9') ||
                          (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'));
        quotes += *c == '\'';
    }
    if (plain)
        return xstrdup(w);
    char *q = xmalloc(strlen(w) + 3 * quotes + 3), *o = q;
    *o++ = '\'';
    for (const char *c = w; *c; c++) {
        if (*c == '\'')
            memcpy(o, "'\\''", 4), o += 4;
        else
            *o++ = *c;
    }
    *o++ = '\'';
    *o = '\0';
    return q;
}
