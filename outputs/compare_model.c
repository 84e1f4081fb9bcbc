/* outputs/compare_model.c -- model metrics in `tpusim compare` (see
 * outputs/compare_model.h).
 * May use: libc, base/ (json), outputs/table.h. */
#include "outputs/compare_model.h"

#include <stdbool.h>

enum metric_unit { M_TIME, M_PERCENT, M_RATE, M_GIB };

static void fmt(char *buf, size_t n, enum metric_unit u, double v)
{
    if (u == M_TIME)
        table_format_time(buf, n, v);
    else if (u == M_PERCENT)
        snprintf(buf, n, "%.1f%%", 100.0 * v);
    else if (u == M_RATE)
        snprintf(buf, n, "%.4g", v);
    else
        snprintf(buf, n, "%.2f GiB", v / 1073741824.0);
}

/* "57.6% -> 60.1% (+4.3%)": the change relative to A. */
static void arrow(char *buf, size_t n, enum metric_unit u, double a, double b)
{
    char sa[32], sb[32];
    fmt(sa, sizeof sa, u, a);
    fmt(sb, sizeof sb, u, b);
    if (a > 0)
        snprintf(buf, n, "%s -> %s (%+.1f%%)", sa, sb, 100.0 * (b - a) / a);
    else
        snprintf(buf, n, "%s -> %s", sa, sb);
}

static void metric(FILE *out, const char *name, enum metric_unit u, double a, double b)
{
    char line[128];
    arrow(line, sizeof line, u, a, b);
    fprintf(out, "  %-14s %s\n", name, line);
}

void compare_model_summaries(const struct json *a, const struct json *b, const char *la,
                             const char *lb, FILE *out)
{
    const struct json *ma = json_get(a, "model"), *mb = json_get(b, "model");
    if (!ma || !mb || ma->type != JSON_OBJ || mb->type != JSON_OBJ)
        return;
    fprintf(out, "model (%s step -> %s step), %s -> %s:\n", json_str(ma, "mode", "?"),
            json_str(mb, "mode", "?"), la, lb);
    metric(out, "step time", M_TIME, json_num(a, "total_time_s", 0),
           json_num(b, "total_time_s", 0));
    metric(out, "MFU", M_PERCENT, json_num(ma, "mfu", 0), json_num(mb, "mfu", 0));
    metric(out, "tokens/s", M_RATE, json_num(ma, "tokens_per_s", 0),
           json_num(mb, "tokens_per_s", 0));
    metric(out, "tokens/s/chip", M_RATE, json_num(ma, "tokens_per_s_per_chip", 0),
           json_num(mb, "tokens_per_s_per_chip", 0));
    const struct json *ya = json_get(ma, "memory_bytes"), *yb = json_get(mb, "memory_bytes");
    metric(out, "memory/chip", M_GIB, json_num(ya, "total", 0), json_num(yb, "total", 0));
    const struct json *ua = json_get(ma, "mbu"), *ub = json_get(mb, "mbu");
    if (ua && ub && ua->type == JSON_NUM && ub->type == JSON_NUM)
        metric(out, "MBU", M_PERCENT, json_num(ma, "mbu", 0), json_num(mb, "mbu", 0));
}

void compare_model_point(const char *label, int w, const struct table_row *r,
                         const struct table_row *s, FILE *out)
{
    fprintf(out, "%-*.*s", w, w, label);
    if (!s || r->status != TABLE_OK || s->status != TABLE_OK) {
        fputs("  -\n", out);
        return;
    }
    char mfu[96], tok[96], mem[96];
    arrow(mfu, sizeof mfu, M_PERCENT, r->mfu, s->mfu);
    arrow(tok, sizeof tok, M_RATE, r->tokens_per_s, s->tokens_per_s);
    arrow(mem, sizeof mem, M_GIB, r->memory_bytes, s->memory_bytes);
    fprintf(out, "  MFU %s, tokens/s %s, memory/chip %s\n", mfu, tok, mem);
}
