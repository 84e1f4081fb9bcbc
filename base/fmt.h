/* base/fmt.h -- numbers and strings formatted into a caller's buffer without
 * printf, whose cost showed on the hot paths (trace events, wait notes,
 * actor and mailbox names: glibc takes its slow positional path there).
 * Each appends at 'p' and returns the end, with no terminator; the caller
 * sizes the buffer (a number takes at most 24 bytes, fmt_fixed 48). */
#ifndef BASE_FMT_H
#define BASE_FMT_H

char *fmt_u64(char *p, unsigned long long v);
char *fmt_i64(char *p, long long v);
/* 's' whole. */
char *fmt_lit(char *p, const char *s);
/* 's', cut at 'end' (nothing at or past it; not const: gcc at -O0 takes a const
 * pointer into a buffer being filled for a read of it). */
char *fmt_str(char *p, const char *s, char *end);
/* Seconds 't_s' as microseconds with 3 decimals (to the nanosecond,
 * rounded half away from zero): the trace's timestamps. */
char *fmt_us(char *p, double t_s);
/* 'x' with 'decimals' (0 to 6) decimals, exactly as printf's "%.*f"
 * writes it (integer formatting, or printf itself for negative, huge or
 * non-finite values and near a tie of the last digit, where printf rounds
 * the exact binary value). */
char *fmt_fixed(char *p, double x, int decimals);

/* 'w' as one word of a POSIX shell command line: as is when it holds only
 * letters, digits and _-./:=,+@%, else in single quotes (a quote inside as
 * '\''). New string. */
char *fmt_shell_word(const char *w);

#endif
