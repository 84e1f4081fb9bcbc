/* outputs/table.c -- the sweep table model, sweep.csv, sweep.json, and rows
 * read back from summary.json and sweep.json.
 * May use: libc, base/ (fsutil, json, xalloc) and outputs/table.h only. */
#include "outputs/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

/* ---------------- rows ---------------- */

const char *table_status_name(enum table_status s)
{
    static const char *const names[] = {"ok", "infeasible", "failed"};
    return s < TABLE_STATUS_COUNT ? names[s] : "?";
}

int table_status_parse(const char *name, enum table_status *s)
{
    for (int i = 0; i < TABLE_STATUS_COUNT; i++)
        if (name && !strcmp(name, table_status_name((enum table_status)i))) {
            *s = (enum table_status)i;
            return 0;
        }
    return -1;
}

int table_row_from_summary(struct table_row *r, const struct json *j, char *err, size_t errn)
{
    const struct json *ops = json_get(j, "ops");
    const struct json *tt = json_get(j, "total_time_s");
    if (table_serve_from_summary(&r->sv, j)) { /* a serving run: no ops */
        r->has_serving = true;
        r->status = TABLE_OK;
        r->time_s = json_num(json_get(j, "serving"), "duration_s", 0);
        r->scenario = xstrdup(json_str(j, "scenario", ""));
        r->chip = xstrdup(json_str(j, "chip", ""));
        r->op = xstrdup("");
        r->bound = xstrdup("");
        return 0;
    }
    if (!ops || ops->type != JSON_ARR || !tt || tt->type != JSON_NUM) {
        snprintf(err, errn, "not a summary.json (no total_time_s and ops)");
        return -1;
    }
    r->status = TABLE_OK;
    r->time_s = tt->num;
    r->scenario = xstrdup(json_str(j, "scenario", ""));
    r->chip = xstrdup(json_str(j, "chip", ""));
    const struct json *top = NULL;
    r->vmem_peak_bytes = 0;
    r->grid_steps = 0;
    for (int i = 0; i < ops->n; i++) {
        const struct json *o = ops->kids[i];
        if (!top || json_num(o, "time_s", 0) > json_num(top, "time_s", 0))
            top = o;
        double v = json_num(o, "vmem_peak_bytes", 0);
        if (v > (double)r->vmem_peak_bytes)
            r->vmem_peak_bytes = (uint64_t)v;
        r->grid_steps += (int64_t)json_num(o, "grid_steps", 0);
    }
    r->op = xstrdup(json_str(top, "name", ""));
    r->bound = xstrdup(json_str(top, "bound", ""));
    r->peak_fraction = json_num(top, "peak_fraction", 0);
    const struct json *m = json_get(j, "model");
    r->has_model = m && m->type == JSON_OBJ;
    if (r->has_model) {
        r->mfu = json_num(m, "mfu", 0);
        r->tokens_per_s = json_num(m, "tokens_per_s", 0);
        r->memory_bytes = json_num(json_get(m, "memory_bytes"), "total", 0);
        r->collective_exposed_s =
            json_num(json_get(j, "time_by_category_s"), "collective_exposed", 0);
    }
    r->time_to_train_s = json_num(json_get(j, "train"), "time_to_train_s", 0);
    r->sigma_s = json_num(json_get(j, "uncertainty"), "sigma_s", 0);
    return 0;
}

bool table_has_serving(const struct table *t)
{
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK && t->rows[i].has_serving)
            return true;
    return false;
}

bool table_has_model(const struct table *t)
{
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK && t->rows[i].has_model)
            return true;
    return false;
}

/* True if some ok row has a time to train: the table then has its column. */
static bool table_has_train(const struct table *t)
{
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK && t->rows[i].time_to_train_s > 0)
            return true;
    return false;
}

void table_row_fini(struct table_row *r, int nkeys)
{
    for (int k = 0; r->values && k < nkeys; k++)
        free(r->values[k]);
    free(r->values);
    free(r->reason);
    free(r->scenario);
    free(r->chip);
    free(r->op);
    free(r->bound);
    memset(r, 0, sizeof *r);
}

bool table_rank_by_train(const struct table_row *rows, int n, const bool *done)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        if ((done && !done[i]) || rows[i].status != TABLE_OK)
            continue;
        if (!(rows[i].time_to_train_s > 0))
            return false;
        ok++;
    }
    return ok > 0;
}

double table_rank_value(const struct table_row *r, bool by_train)
{
    return by_train ? r->time_to_train_s : r->time_s;
}

int table_best_row(const struct table *t)
{
    bool by = table_rank_by_train(t->rows, t->nrows, NULL);
    int best = -1;
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].status == TABLE_OK &&
            (best < 0 || table_rank_value(&t->rows[i], by) < table_rank_value(&t->rows[best], by)))
            best = i;
    return best;
}

int table_find_row(const struct table *t, int point)
{
    for (int i = 0; i < t->nrows; i++)
        if (t->rows[i].point == point)
            return i;
    return -1;
}

void table_format_time(char *buf, size_t n, double s)
{
    static const struct {
        double scale;
        const char *unit;
    } u[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
    int i = 0;
    while (i < 3 && fabs(s) < u[i].scale * 0.9995)
        i++;
    snprintf(buf, n, "%.4g %s", s / u[i].scale, u[i].unit);
}

const char *table_short_key(const struct table *t, int k)
{
    const char *dot = strrchr(t->keys[k], '.');
    const char *s = dot ? dot + 1 : t->keys[k];
    for (int j = 0; j < t->nkeys; j++) {
        const char *d2 = strrchr(t->keys[j], '.');
        if (j != k && !strcmp(d2 ? d2 + 1 : t->keys[j], s))
            return t->keys[k];
    }
    return s;
}

/* True when 's' is a JSON number (so it can be written unquoted). */
static bool is_json_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

/* ---------------- sweep.csv ---------------- */

static void csv_field(FILE *f, const char *s)
{
    s = s ? s : "";
    if (!strpbrk(s, ",\"\r\n") && s[0] != ' ' && (!*s || s[strlen(s) - 1] != ' ')) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int table_write_csv(const struct table *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    fputs("point", f);
    for (int k = 0; k < t->nkeys; k++)
        fputc(',', f), csv_field(f, t->keys[k]);
    fputs(",time_s,peak_fraction,bound,vmem_peak_bytes,grid_steps", f);
    bool model = table_has_model(t);
    if (model)
        fputs(",mfu,tokens_per_s,memory_bytes,collective_exposed_s", f);
    bool train = table_has_train(t);
    if (train)
        fputs(",time_to_train_s", f);
    bool serving = table_has_serving(t);
    if (serving)
        table_serve_csv_head(f);
    fputs(",status,reason,wall_s,peak_rss_bytes\n", f);
    for (int i = 0; i < t->nrows; i++) {
        const struct table_row *r = &t->rows[i];
        fprintf(f, "%d", r->point);
        for (int k = 0; k < t->nkeys; k++)
            fputc(',', f), csv_field(f, r->values[k]);
        if (r->status == TABLE_OK)
            fprintf(f, ",%.9e,%.6f,%s,%llu,%lld", r->time_s, r->peak_fraction, r->bound,
                    (unsigned long long)r->vmem_peak_bytes, (long long)r->grid_steps);
        else
            fputs(",,,,,", f);
        if (model && r->status == TABLE_OK && r->has_model)
            fprintf(f, ",%.6f,%.9e,%.17g,%.9e", r->mfu, r->tokens_per_s, r->memory_bytes,
                    r->collective_exposed_s);
        else if (model)
            fputs(",,,,", f);
        if (train && r->status == TABLE_OK && r->time_to_train_s > 0)
            fprintf(f, ",%.9e", r->time_to_train_s);
        else if (train)
            fputc(',', f);
        if (serving)
            table_serve_csv_row(f, r->status == TABLE_OK && r->has_serving ? &r->sv : NULL);
        fprintf(f, ",%s,", table_status_name(r->status));
        csv_field(f, r->reason);
        if (r->peak_rss_bytes > 0) /* measured: the only fields that differ between runs */
            fprintf(f, ",%.6f,%.0f\n", r->wall_s, r->peak_rss_bytes);
        else
            fputs(",,\n", f);
    }
    return fs_atomic_commit(&a);
}

/* ---------------- sweep.json ---------------- */

static void json_value(FILE *f, const char *v)
{
    if (!v || !*v)
        fputs("null", f);
    else if (is_json_number(v))
        fputs(v, f);
    else
        json_write_string(f, v);
}

static void json_row(FILE *f, const struct table *t, const struct table_row *r)
{
    fprintf(f, "    {\"point\": %d, \"dir\": \"points/%04d\", \"values\": {", r->point, r->point);
    for (int k = 0; k < t->nkeys; k++) {
        fputs(k ? ", " : "", f);
        json_write_string(f, t->keys[k]);
        fputs(": ", f);
        json_value(f, r->values[k]);
    }
    fprintf(f, "},\n     \"status\": \"%s\", \"reason\": ", table_status_name(r->status));
    json_write_string(f, r->reason);
    if (r->status == TABLE_OK) {
        fputs(",\n     \"scenario\": ", f);
        json_write_string(f, r->scenario);
        fputs(", \"chip\": ", f);
        json_write_string(f, r->chip);
        fprintf(f, ", \"time_s\": %s, \"op\": ", JSON_E9(r->time_s));
        json_write_string(f, r->op);
        fputs(", \"bound\": ", f);
        json_write_string(f, r->bound);
        fprintf(f, ", \"peak_fraction\": %s, \"vmem_peak_bytes\": %llu, \"grid_steps\": %lld",
                JSON_F6(r->peak_fraction), (unsigned long long)r->vmem_peak_bytes,
                (long long)r->grid_steps);
        if (r->has_model)
            fprintf(f, ",\n     \"mfu\": %s, \"tokens_per_s\": %s, \"memory_bytes\": %s, "
                       "\"collective_exposed_s\": %s",
                    JSON_F6(r->mfu), JSON_E9(r->tokens_per_s), JSON_G17(r->memory_bytes),
                    JSON_E9(r->collective_exposed_s));
        if (r->time_to_train_s > 0)
            fprintf(f, ", \"time_to_train_s\": %s", JSON_E9(r->time_to_train_s));
        table_serve_json_row(f, r->has_serving ? &r->sv : NULL);
    } else {
        fputs(",\n     \"time_s\": null, \"bound\": null, \"peak_fraction\": null, "
              "\"vmem_peak_bytes\": null, \"grid_steps\": null",
              f);
    }
    if (r->peak_rss_bytes > 0)
        fprintf(f, ", \"wall_s\": %.6f, \"peak_rss_bytes\": %.0f}", r->wall_s, r->peak_rss_bytes);
    else
        fputs(", \"wall_s\": null, \"peak_rss_bytes\": null}", f);
}

int table_write_json(const struct table *t, const char *path)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    FILE *f = a.f;
    int best = table_best_row(t);
    fputs("{\n  \"sweep\": ", f);
    json_write_string(f, t->name);
    fputs(",\n  \"base\": ", f);
    json_write_string(f, t->base);
    fputs(",\n  \"keys\": [", f);
    for (int k = 0; k < t->nkeys; k++) {
        fputs(k ? ", " : "", f);
        json_write_string(f, t->keys[k]);
    }
    fprintf(f, "],\n  \"points_total\": %d, \"points_done\": %d, \"complete\": %s,\n", t->npoints,
            t->nrows, t->nrows == t->npoints ? "true" : "false");
    fprintf(f, "  \"best_point\": ");
    if (best >= 0)
        fprintf(f, "%d", t->rows[best].point);
    else
        fputs("null", f);
    fputs(", \"default_point\": ", f);
    if (t->default_point >= 0)
        fprintf(f, "%d", t->default_point);
    else
        fputs("null", f);
    if (table_rank_by_train(t->rows, t->nrows, NULL))
        fputs(", \"rank_by\": \"time_to_train_s\"", f);
    fprintf(f, ", \"default_is_base\": %s, \"default_added\": %s,\n  \"points\": [\n",
            t->default_is_base ? "true" : "false", t->default_added ? "true" : "false");
    for (int i = 0; i < t->nrows; i++) {
        json_row(f, t, &t->rows[i]);
        fputs(i + 1 < t->nrows ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    return fs_atomic_commit(&a);
}

/* ---------------- reading sweep.json back ---------------- */

static char *value_text(const struct json *v)
{
    if (!v || v->type == JSON_NULL)
        return xstrdup("");
    if (v->type == JSON_STR)
        return xstrdup(v->str);
    if (v->type == JSON_BOOL)
        return xstrdup(v->b ? "true" : "false");
    return v->type == JSON_NUM ? xasprintf("%.15g", v->num) : xstrdup("?");
}

static int row_from_json(struct table *t, struct table_row *r, const struct json *p)
{
    const struct json *vals = json_get(p, "values");
    r->point = (int)json_num(p, "point", -1);
    r->values = xcalloc((size_t)t->nkeys + 1, sizeof *r->values);
    for (int k = 0; k < t->nkeys; k++)
        r->values[k] = value_text(json_get(vals, t->keys[k]));
    r->reason = xstrdup(json_str(p, "reason", ""));
    if (table_status_parse(json_str(p, "status", NULL), &r->status) != 0)
        return -1;
    r->time_s = json_num(p, "time_s", 0);
    r->scenario = xstrdup(json_str(p, "scenario", ""));
    r->chip = xstrdup(json_str(p, "chip", ""));
    r->op = xstrdup(json_str(p, "op", ""));
    r->bound = xstrdup(json_str(p, "bound", ""));
    r->peak_fraction = json_num(p, "peak_fraction", 0);
    r->vmem_peak_bytes = (uint64_t)json_num(p, "vmem_peak_bytes", 0);
    r->grid_steps = (int64_t)json_num(p, "grid_steps", 0);
    const struct json *mfu = json_get(p, "mfu");
    r->has_model = mfu && mfu->type == JSON_NUM;
    r->mfu = json_num(p, "mfu", 0);
    r->tokens_per_s = json_num(p, "tokens_per_s", 0);
    r->memory_bytes = json_num(p, "memory_bytes", 0);
    r->time_to_train_s = json_num(p, "time_to_train_s", 0);
    r->collective_exposed_s = json_num(p, "collective_exposed_s", 0);
    r->has_serving = table_serve_from_json(&r->sv, p);
    r->wall_s = json_num(p, "wall_s", 0);
    r->peak_rss_bytes = json_num(p, "peak_rss_bytes", 0);
    return 0;
}

int table_from_json(struct table *t, const struct json *j, char *err, size_t errn)
{
    memset(t, 0, sizeof *t);
    t->owned = true;
    t->default_point = -1;
    const struct json *keys = json_get(j, "keys");
    const struct json *pts = json_get(j, "points");
    if (!keys || keys->type != JSON_ARR || !pts || pts->type != JSON_ARR) {
        snprintf(err, errn, "not a sweep.json (no keys and points)");
        return -1;
    }
    t->name = xstrdup(json_str(j, "sweep", ""));
    t->base = xstrdup(json_str(j, "base", ""));
    t->keys = xcalloc((size_t)keys->n + 1, sizeof *t->keys);
    for (int k = 0; k < keys->n; k++)
        t->keys[t->nkeys++] = value_text(keys->kids[k]);
    t->npoints = (int)json_num(j, "points_total", pts->n);
    t->default_point = (int)json_num(j, "default_point", -1);
    const struct json *da = json_get(j, "default_added"), *db = json_get(j, "default_is_base");
    t->default_added = da && da->type == JSON_BOOL && da->b;
    t->default_is_base = db && db->type == JSON_BOOL && db->b;
    t->rows = xcalloc((size_t)pts->n + 1, sizeof *t->rows);
    for (int i = 0; i < pts->n; i++) {
        if (row_from_json(t, &t->rows[t->nrows++], pts->kids[i]) != 0) {
            snprintf(err, errn, "point %d: bad status", i);
            return -1;
        }
    }
    return 0;
}

void table_fini(struct table *t)
{
    if (!t->owned)
        return;
    for (int i = 0; i < t->nrows; i++)
        table_row_fini(&t->rows[i], t->nkeys);
    for (int k = 0; k < t->nkeys; k++)
        free(t->keys[k]);
    free(t->keys);
    free(t->rows);
    free(t->name);
    free(t->base);
    free(t->best_trace);
    free(t->default_trace);
    memset(t, 0, sizeof *t);
}
