/* outputs/compare.c -- `tpusim compare A B`: two summaries (per-op deltas) or
 * two sweeps (per-point deltas) side by side.
 * May use: libc, base/ (json, xalloc), outputs/table.h. */
#include "outputs/compare.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "outputs/compare_model.h"
#include "outputs/table.h"

struct cmp_input {
    char *path;  /* the JSON file read */
    char *label; /* how the output names it */
    struct json *j;
    bool sweep;
};

/* The default label of input 'arg': its directory's name (out/v5e/summary.json
 * and out/v5e are "v5e"). New string. */
static char *default_label(const char *arg)
{
    struct stat st;
    char *p = xstrdup(arg);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    if (!(stat(p, &st) == 0 && S_ISDIR(st.st_mode))) { /* a file: name its directory */
        char *slash = strrchr(p, '/');
        if (slash)
            *slash = '\0';
        else
            strcpy(p, ".");
    }
    const char *base = strrchr(p, '/');
    char *label = xstrdup(base && base[1] ? base + 1 : p);
    free(p);
    return label;
}

static int cmp_load(const char *arg, struct cmp_input *in, FILE *err)
{
    struct stat st;
    char why[512];
    in->path = NULL;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        char *s = xasprintf("%s/sweep.json", arg);
        if (stat(s, &st) != 0) {
            free(s);
            s = xasprintf("%s/summary.json", arg);
        }
        in->path = s;
    } else {
        in->path = xstrdup(arg);
    }
    in->j = json_read_file(in->path, JSON_MAX_BYTES, why, sizeof why);
    if (!in->j) {
        fprintf(err, "tpusim compare: %s\n", why);
        return -1;
    }
    in->sweep = json_get(in->j, "points") != NULL;
    if (!in->sweep && !json_get(in->j, "ops")) {
        fprintf(err, "tpusim compare: %s: expected a summary.json or a sweep.json\n", in->path);
        return -1;
    }
    return 0;
}

/* Width of a time column headed "time LABEL". */
static int col_w(const char *label)
{
    int w = 5 + (int)strlen(label);
    return w < 12 ? 12 : w > 40 ? 40 : w;
}

/* The header of the delta columns, then 'what' with both labels. */
static void delta_head(FILE *out, const char *la, const char *lb, const char *what)
{
    char ha[64], hb[64];
    snprintf(ha, sizeof ha, "time %s", la);
    snprintf(hb, sizeof hb, "time %s", lb);
    fprintf(out, " %*.*s %*.*s %13s %9s  %s %s -> %s\n", col_w(la), col_w(la), ha, col_w(lb),
            col_w(lb), hb, "delta", "delta %", what, la, lb);
}

static void delta_cols(FILE *out, const char *la, const char *lb, double a, double b)
{
    char ta[32], tb[32], td[32], sd[40];
    table_format_time(ta, sizeof ta, a);
    table_format_time(tb, sizeof tb, b);
    table_format_time(td, sizeof td, b - a);
    snprintf(sd, sizeof sd, "%s%s", b > a ? "+" : "", td);
    fprintf(out, " %*s %*s %13s", col_w(la), ta, col_w(lb), tb, sd);
    if (a > 0)
        fprintf(out, " %+8.1f%%", 100.0 * (b - a) / a);
    else
        fprintf(out, " %9s", "-");
}

/* ---------------- indexes: pairing in n log n ---------------- */

/* The ops of a summary sorted by name (then position): pairing two
 * summaries of 50k ops compared every name with every other (minutes). */
struct op_index {
    const struct json *ops;
    int n;
    const char **name; /* per sorted entry */
    int *at;           /* its position in 'ops' */
};

struct named {
    const char *name;
    int at;
};

static int named_cmp(const void *x, const void *y)
{
    const struct named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

static void op_index_init(struct op_index *ix, const struct json *ops)
{
    ix->ops = ops;
    ix->n = ops && ops->type == JSON_ARR ? ops->n : 0;
    struct named *v = xcalloc((size_t)ix->n + 1, sizeof *v);
    for (int i = 0; i < ix->n; i++)
        v[i] = (struct named){json_str(ops->kids[i], "name", ""), i};
    qsort(v, (size_t)ix->n, sizeof *v, named_cmp);
    ix->name = xcalloc((size_t)ix->n + 1, sizeof *ix->name);
    ix->at = xcalloc((size_t)ix->n + 1, sizeof *ix->at);
    for (int i = 0; i < ix->n; i++)
        ix->name[i] = v[i].name, ix->at[i] = v[i].at;
    free(v);
}

static void op_index_fini(struct op_index *ix)
{
    free(ix->name);
    free(ix->at);
}

/* The first sorted entry named 'name' (the first in the file), or -1. */
static int op_index_find(const struct op_index *ix, const char *name)
{
    int lo = 0, hi = ix->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(ix->name[mid], name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n && !strcmp(ix->name[lo], name) ? lo : -1;
}

/* The op named 'name', else op 'i' when it has no name. */
static const struct json *find_op(const struct op_index *ix, const char *name, int i)
{
    int k = op_index_find(ix, name);
    if (k >= 0)
        return ix->ops->kids[ix->at[k]];
    return i < ix->n && !json_get(ix->ops->kids[i], "name") ? ix->ops->kids[i] : NULL;
}

static void cmp_summaries(const struct cmp_input *a, const struct cmp_input *b, FILE *out)
{
    const struct json *oa = json_get(a->j, "ops"), *ob = json_get(b->j, "ops");
    const char *la = a->label, *lb = b->label;
    fprintf(out, "A = %s: %s (%s on %s)\nB = %s: %s (%s on %s)\n", la, a->path,
            json_str(a->j, "scenario", "?"), json_str(a->j, "chip", "?"), lb, b->path,
            json_str(b->j, "scenario", "?"), json_str(b->j, "chip", "?"));
    fprintf(out, "%-24s %-16s", "op", "kind");
    delta_head(out, la, lb, "bound");
    struct op_index ia, ib;
    op_index_init(&ia, oa);
    op_index_init(&ib, ob);
    for (int i = 0; oa && i < oa->n; i++) {
        const struct json *x = oa->kids[i];
        const char *name = json_str(x, "name", "?");
        const struct json *y = ob ? find_op(&ib, name, i) : NULL;
        fprintf(out, "%-24.24s %-16.16s", name, json_str(x, "kind", ""));
        if (y) {
            delta_cols(out, la, lb, json_num(x, "time_s", 0), json_num(y, "time_s", 0));
            fprintf(out, "  %s -> %s\n", json_str(x, "bound", "?"), json_str(y, "bound", "?"));
        } else {
            char ta[32];
            table_format_time(ta, sizeof ta, json_num(x, "time_s", 0));
            fprintf(out, " %*s %*s  (only in %s)\n", col_w(la), ta, col_w(lb), "-", la);
        }
    }
    for (int i = 0; ob && i < ob->n; i++) {
        const char *name = json_str(ob->kids[i], "name", "?");
        if (oa && find_op(&ia, name, i))
            continue;
        char tb[32];
        table_format_time(tb, sizeof tb, json_num(ob->kids[i], "time_s", 0));
        fprintf(out, "%-24.24s %-16.16s %*s %*s  (only in %s)\n", name,
                json_str(ob->kids[i], "kind", ""), col_w(la), "-", col_w(lb), tb, lb);
    }
    op_index_fini(&ia);
    op_index_fini(&ib);
    fprintf(out, "%-24s %-16s", "total", "");
    delta_cols(out, la, lb, json_num(a->j, "total_time_s", 0), json_num(b->j, "total_time_s", 0));
    fputc('\n', out);
    compare_model_summaries(a->j, b->j, la, lb, out);
}

/* The rows of a sweep sorted for pairing: by their values when the two
 * sweeps have the same keys, else by point (then position). Each row gets
 * its key: the values joined by a unit separator, or the point. */
struct keyed_row {
    char *key; /* owned; NULL: by point */
    int point, at;
    const struct table_row *row;
};

struct row_index {
    int n;
    struct keyed_row *r; /* sorted */
};

static bool same_keys(const struct table *ta, const struct table *tb)
{
    bool same = ta->nkeys == tb->nkeys;
    for (int k = 0; same && k < ta->nkeys; k++)
        same = !strcmp(ta->keys[k], tb->keys[k]);
    return same;
}

static struct keyed_row keyed(const struct table *t, const struct table_row *r, int at,
                              bool by_values)
{
    struct keyed_row k = {NULL, r->point, at, r};
    for (int i = 0; by_values && i < t->nkeys; i++) {
        char *n = xasprintf("%s%s%s", k.key ? k.key : "", i ? "\x1f" : "", r->values[i]);
        free(k.key);
        k.key = n;
    }
    if (by_values && !k.key)
        k.key = xstrdup("");
    return k;
}

static int key_cmp(const struct keyed_row *a, const struct keyed_row *b)
{
    return a->key ? strcmp(a->key, b->key) : (a->point > b->point) - (a->point < b->point);
}

static int keyed_cmp(const void *x, const void *y)
{
    const struct keyed_row *a = x, *b = y;
    int c = key_cmp(a, b);
    return c ? c : (a->at > b->at) - (a->at < b->at); /* then the first in the file */
}

static void row_index_init(struct row_index *ix, const struct table *t, bool by_values)
{
    ix->n = t->nrows;
    ix->r = xcalloc((size_t)t->nrows + 1, sizeof *ix->r);
    for (int i = 0; i < t->nrows; i++)
        ix->r[i] = keyed(t, &t->rows[i], i, by_values);
    qsort(ix->r, (size_t)ix->n, sizeof *ix->r, keyed_cmp);
}

static void row_index_fini(struct row_index *ix)
{
    for (int i = 0; i < ix->n; i++)
        free(ix->r[i].key);
    free(ix->r);
}

/* The first row of the index that pairs with row 'r' of table 't', or NULL. */
static const struct table_row *match_row(const struct row_index *ix, const struct table *t,
                                         const struct table_row *r, bool by_values)
{
    struct keyed_row want = keyed(t, r, 0, by_values);
    int lo = 0, hi = ix->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (key_cmp(&ix->r[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct table_row *found = lo < ix->n && !key_cmp(&ix->r[lo], &want) ? ix->r[lo].row
                                                                              : NULL;
    free(want.key);
    return found;
}

static void row_label(char *buf, size_t n, const struct table *t, const struct table_row *r)
{
    size_t o = (size_t)snprintf(buf, n, "%d", r->point);
    for (int k = 0; k < t->nkeys && o < n; k++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s=%s", k ? ", " : " ", table_short_key(t, k),
                              r->values[k]);
}

static void cmp_sweeps(const struct cmp_input *a, const struct cmp_input *b, FILE *out)
{
    struct table ta, tb;
    char err[256], label[512];
    table_from_json(&ta, a->j, err, sizeof err);
    table_from_json(&tb, b->j, err, sizeof err);
    int w = 5;
    for (int i = 0; i < ta.nrows; i++) {
        row_label(label, sizeof label, &ta, &ta.rows[i]);
        w = (int)strlen(label) > w ? (int)strlen(label) : w;
    }
    w = w > 80 ? 80 : w;
    const char *la = a->label, *lb = b->label;
    fprintf(out, "A = %s: %s (sweep %s, %d points)\nB = %s: %s (sweep %s, %d points)\n", la,
            a->path, ta.name, ta.nrows, lb, b->path, tb.name, tb.nrows);
    fprintf(out, "%-*s", w, "point");
    delta_head(out, la, lb, "status");
    struct row_index ia, ib;
    bool by_values = same_keys(&ta, &tb);
    row_index_init(&ia, &ta, by_values);
    row_index_init(&ib, &tb, by_values);
    for (int i = 0; i < ta.nrows; i++) {
        const struct table_row *r = &ta.rows[i], *s = match_row(&ib, &ta, r, by_values);
        row_label(label, sizeof label, &ta, r);
        fprintf(out, "%-*.*s", w, w, label);
        if (s && r->status == TABLE_OK && s->status == TABLE_OK)
            delta_cols(out, la, lb, r->time_s, s->time_s);
        else
            fprintf(out, " %*s %*s %13s %9s", col_w(la), "-", col_w(lb), "-", "-", "-");
        fprintf(out, "  %s -> %s\n", table_status_name(r->status),
                s ? table_status_name(s->status) : "(missing)");
    }
    for (int i = 0; i < tb.nrows; i++) {
        if (match_row(&ia, &tb, &tb.rows[i], by_values))
            continue;
        row_label(label, sizeof label, &tb, &tb.rows[i]);
        fprintf(out, "%-*.*s  (only in %s: %s)\n", w, w, label, lb,
                table_status_name(tb.rows[i].status));
    }
    int ba = table_best_row(&ta), bb = table_best_row(&tb);
    if (ba >= 0 && bb >= 0) {
        fprintf(out, "%-*s", w, "best");
        delta_cols(out, la, lb, ta.rows[ba].time_s, tb.rows[bb].time_s);
        fprintf(out, "  point %d -> point %d\n", ta.rows[ba].point, tb.rows[bb].point);
    }
    if (table_has_model(&ta) && table_has_model(&tb)) {
        fprintf(out, "model metrics, %s -> %s:\n", la, lb);
        for (int i = 0; i < ta.nrows; i++) {
            row_label(label, sizeof label, &ta, &ta.rows[i]);
            compare_model_point(label, w, &ta.rows[i], match_row(&ib, &ta, &ta.rows[i], by_values),
                                out);
        }
    }
    row_index_fini(&ia);
    row_index_fini(&ib);
    table_fini(&ta);
    table_fini(&tb);
}

/* Ops are paired by name (names are unique in a scenario, issue 18.17): a
 * summary with a name twice (edited by hand, or older) is refused, naming
 * the first op whose name an earlier op has, and that earlier op. */
static int unique_op_names(const struct cmp_input *in, FILE *err)
{
    struct op_index ix;
    op_index_init(&ix, json_get(in->j, "ops"));
    int first = -1, earlier = -1, start = 0; /* sorted by name then position */
    for (int s = 1; s < ix.n; s++) {
        if (strcmp(ix.name[s], ix.name[s - 1])) {
            start = s; /* a name's first op */
            continue;
        }
        if (json_get(ix.ops->kids[ix.at[s]], "name") && (first < 0 || ix.at[s] < first)) {
            first = ix.at[s];
            earlier = ix.at[start];
        }
    }
    if (first >= 0)
        fprintf(err,
                "tpusim compare: %s: op name '%s' appears twice (ops %d and %d); ops are "
                "paired by name\n",
                in->path, json_str(ix.ops->kids[first], "name", ""), earlier, first);
    op_index_fini(&ix);
    return first >= 0 ? -1 : 0;
}

int compare_outputs(const char *a, const char *b, const char *const labels[2], FILE *out,
                    FILE *err)
{
    struct cmp_input in[2] = {{0}, {0}};
    int rc = 0;
    for (int i = 0; i < 2; i++)
        in[i].label = labels && labels[i] ? xstrdup(labels[i]) : default_label(i ? b : a);
    if (!strcmp(in[0].label, in[1].label)) { /* the same name twice tells nothing */
        for (int i = 0; i < 2; i++) {
            free(in[i].label);
            in[i].label = xstrdup(i ? "B" : "A");
        }
    }
    if (cmp_load(a, &in[0], err) != 0 || cmp_load(b, &in[1], err) != 0) {
        rc = 2;
    } else if (in[0].sweep != in[1].sweep) {
        fprintf(err, "tpusim compare: %s is a %s and %s a %s; compare like with like\n", in[0].path,
                in[0].sweep ? "sweep" : "summary", in[1].path, in[1].sweep ? "sweep" : "summary");
        rc = 2;
    } else {
        struct table t;
        char why[256];
        for (int i = 0; i < 2 && in[0].sweep; i++) {
            if (table_from_json(&t, in[i].j, why, sizeof why) != 0) {
                fprintf(err, "tpusim compare: %s: %s\n", in[i].path, why);
                rc = 2;
            }
            table_fini(&t);
        }
        for (int i = 0; i < 2 && !in[0].sweep; i++)
            if (unique_op_names(&in[i], err) != 0)
                rc = 2;
        if (rc == 0 && in[0].sweep)
            cmp_sweeps(&in[0], &in[1], out);
        else if (rc == 0)
            cmp_summaries(&in[0], &in[1], out);
    }
    for (int i = 0; i < 2; i++) {
        free(in[i].path);
        free(in[i].label);
        json_free(in[i].j);
    }
    return rc;
}
