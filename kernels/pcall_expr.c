/* kernels/pcall_expr.c -- the affine index-map expressions of a pallas_call
 * written in YAML (kernels/pcall.h). A recursive-descent parser over
 *   expr   := term (('+' | '-') term)*
 *   term   := factor ('*' factor)*          (at most one side not constant)
 *   factor := INTEGER | NAME | '(' expr ')' | '-' factor
 *   cond   := expr ('==' | '!=' | '<' | '<=' | '>' | '>=') expr
 * Guards: at most PC_EXPR_MAX_CHARS characters, nesting at most 16, every
 * coefficient and partial result within +-PC_EXPR_MAX (2^40). Names are the
 * grid indices only: index maps that read scalar-prefetch data are code
 * tpusim cannot run from YAML. */
#include "kernels/pcall.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

#define MAX_DEPTH 16

struct parser {
    const char *s, *p;
    const char *const *names;
    int n;
    int depth;
    char *why;
    size_t wn;
    bool failed;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
    if (!ps->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->why, ps->wn, fmt, ap);
        va_end(ap);
    }
    ps->failed = true;
    return -1;
}

static void skip(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

static bool in_range(int64_t v)
{
    return v >= -PC_EXPR_MAX && v <= PC_EXPR_MAX;
}

static bool is_const(const struct pc_affine *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a->coef[i])
            return false;
    return true;
}

/* r = a + sign * b, every part checked. */
static int add(struct parser *ps, struct pc_affine *a, const struct pc_affine *b, int sign)
{
    a->c += sign * b->c;
    bool ok = in_range(a->c);
    for (int i = 0; i < ps->n; i++) {
        a->coef[i] += sign * b->coef[i];
        ok &= in_range(a->coef[i]);
    }
    return ok ? 0 : fail(ps, "a value beyond 2^40 in '%s' (overflow guard)", ps->s);
}

/* a *= k (k constant). */
static int scale(struct parser *ps, struct pc_affine *a, int64_t k)
{
    bool ok = true;
    ok &= !__builtin_mul_overflow(a->c, k, &a->c) && in_range(a->c);
    for (int i = 0; i < ps->n; i++)
        ok &= !__builtin_mul_overflow(a->coef[i], k, &a->coef[i]) && in_range(a->coef[i]);
    return ok ? 0 : fail(ps, "a value beyond 2^40 in '%s' (overflow guard)", ps->s);
}

static int expr(struct parser *ps, struct pc_affine *out);

static int number(struct parser *ps, struct pc_affine *out)
{
    int64_t v = 0;
    while (isdigit((unsigned char)*ps->p)) {
        v = v * 10 + (*ps->p++ - '0');
        if (!in_range(v))
            return fail(ps, "a value beyond 2^40 in '%s' (overflow guard)", ps->s);
    }
    out->c = v;
    return 0;
}

static int name(struct parser *ps, struct pc_affine *out)
{
    char w[PC_NAME_MAX + 1];
    int len = 0;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_') {
        if (len < PC_NAME_MAX)
            w[len++] = *ps->p;
        ps->p++;
    }
    w[len] = '\0';
    for (int i = 0; i < ps->n; i++) {
        if (strcmp(w, ps->names[i]) == 0) {
            out->coef[i] = 1;
            return 0;
        }
    }
    char list[PL_MAX_GRID * (PC_NAME_MAX + 2) + 8] = "";
    for (int i = 0; i < ps->n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 ps->names[i]);
    return fail(ps, "'%s' is not a grid index (%s)", w, ps->n ? list : "no grid");
}

static int factor(struct parser *ps, struct pc_affine *out)
{
    memset(out, 0, sizeof *out);
    skip(ps);
    char ch = *ps->p;
    if (ch == '-') {
        ps->p++;
        if (++ps->depth > MAX_DEPTH)
            return fail(ps, "'%s' nests too deeply", ps->s);
        int rc = factor(ps, out);
        ps->depth--;
        return rc ? rc : scale(ps, out, -1);
    }
    if (ch == '(') {
        ps->p++;
        if (++ps->depth > MAX_DEPTH)
            return fail(ps, "'%s' nests too deeply", ps->s);
        if (expr(ps, out))
            return -1;
        ps->depth--;
        skip(ps);
        if (*ps->p != ')')
            return fail(ps, "a ')' missing in '%s'", ps->s);
        ps->p++;
        return 0;
    }
    if (isdigit((unsigned char)ch))
        return number(ps, out);
    if (isalpha((unsigned char)ch) || ch == '_')
        return name(ps, out);
    if (ch == '/' || ch == '%')
        return fail(ps, "division is not affine ('%s'): write the index map with * + -", ps->s);
    if (!ch)
        return fail(ps, "'%s' ends where a number or a grid index is expected", ps->s);
    return fail(ps, "'%s' has a character an affine expression cannot hold", ps->s);
}

static int term(struct parser *ps, struct pc_affine *out)
{
    if (factor(ps, out))
        return -1;
    for (;;) {
        skip(ps);
        if (*ps->p == '/' || *ps->p == '%')
            return fail(ps, "division is not affine ('%s'): write the index map with * + -",
                        ps->s);
        if (*ps->p != '*')
            return 0;
        ps->p++;
        struct pc_affine r;
        if (factor(ps, &r))
            return -1;
        if (is_const(&r, ps->n)) {
            if (scale(ps, out, r.c))
                return -1;
        } else if (is_const(out, ps->n)) {
            int64_t k = out->c;
            *out = r;
            if (scale(ps, out, k))
                return -1;
        } else {
            return fail(ps, "'%s' multiplies two grid indices: not affine", ps->s);
        }
    }
}

static int expr(struct parser *ps, struct pc_affine *out)
{
    if (term(ps, out))
        return -1;
    for (;;) {
        skip(ps);
        char ch = *ps->p;
        if (ch != '+' && ch != '-')
            return 0;
        ps->p++;
        struct pc_affine r;
        if (term(ps, &r) || add(ps, out, &r, ch == '+' ? 1 : -1))
            return -1;
    }
}

static void start(struct parser *ps, const char *s, const char *const *names, int n, char *why,
                  size_t wn)
{
    *ps = (struct parser){.s = s, .p = s, .names = names, .n = n, .why = why, .wn = wn};
}

static int finish(struct parser *ps)
{
    skip(ps);
    if (*ps->p)
        return fail(ps, "'%s' has text after its end (an affine expression: integers, grid "
                        "indices, + - *, parentheses)", ps->s);
    return 0;
}

static int too_long(const char *s, char *why, size_t wn)
{
    if (strlen(s) <= PC_EXPR_MAX_CHARS)
        return 0;
    snprintf(why, wn, "an expression of at most %d characters", PC_EXPR_MAX_CHARS);
    return -1;
}

int pc_parse_affine(const char *s, const char *const *names, int n, struct pc_affine *out,
                    char *why, size_t wn)
{
    if (too_long(s, why, wn))
        return -1;
    struct parser ps;
    start(&ps, s, names, n, why, wn);
    memset(out, 0, sizeof *out);
    if (expr(&ps, out) || finish(&ps))
        return -1;
    return 0;
}

static int cmp_op(struct parser *ps, enum pc_cmp *c)
{
    static const struct {
        const char *t;
        enum pc_cmp c;
    } ops[] = {{"==", PC_EQ}, {"!=", PC_NE}, {"<=", PC_LE}, {">=", PC_GE}, {"<", PC_LT},
               {">", PC_GT}};
    skip(ps);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t len = strlen(ops[i].t);
        if (strncmp(ps->p, ops[i].t, len) == 0) {
            ps->p += len;
            *c = ops[i].c;
            return 0;
        }
    }
    return fail(ps, "'%s' is not a comparison (A == B, !=, <, <=, >, >=)", ps->s);
}

int pc_parse_cond(const char *s, const char *const *names, int n, struct pc_cond *out, char *why,
                  size_t wn)
{
    if (too_long(s, why, wn))
        return -1;
    struct parser ps;
    start(&ps, s, names, n, why, wn);
    struct pc_affine r;
    memset(out, 0, sizeof *out);
    if (expr(&ps, &out->e) || cmp_op(&ps, &out->cmp) || expr(&ps, &r) || finish(&ps) ||
        add(&ps, &out->e, &r, -1))
        return -1;
    return 0;
}

/* Saturating: a condition over a large grid may pass 2^63 (index maps
 * cannot: pc_check keeps their blocks within the arrays). */
int64_t pc_eval(const struct pc_affine *a, const int64_t *g)
{
    int64_t v = a->c, t;
    for (int i = 0; i < PL_MAX_GRID; i++) {
        if (!a->coef[i])
            continue;
        bool neg = (a->coef[i] < 0) != (g[i] < 0);
        if (__builtin_mul_overflow(a->coef[i], g[i], &t) || __builtin_add_overflow(v, t, &v))
            return neg ? INT64_MIN : INT64_MAX;
    }
    return v;
}

bool pc_cond_true(const struct pc_cond *c, const int64_t *g)
{
    int64_t v = pc_eval(&c->e, g);
    switch (c->cmp) {
    case PC_EQ:
        return v == 0;
    case PC_NE:
        return v != 0;
    case PC_LT:
        return v < 0;
    case PC_LE:
        return v <= 0;
    case PC_GT:
        return v > 0;
    default:
        return v >= 0;
    }
}

/* Grid indices are below 2^30 and coefficients within 2^40, so each product
 * is within 2^70: computed in double for the range, exact enough to compare
 * with array dims below 2^40. */
void pc_range(const struct pc_affine *a, const int64_t *grid, int n, int64_t *lo, int64_t *hi)
{
    double l = (double)a->c, h = (double)a->c;
    for (int i = 0; i < n; i++) {
        double top = (double)a->coef[i] * (double)(grid[i] - 1);
        if (top > 0)
            h += top;
        else
            l += top;
    }
    *lo = l < -9e18 ? INT64_MIN : (int64_t)l;
    *hi = h > 9e18 ? INT64_MAX : (int64_t)h;
}
