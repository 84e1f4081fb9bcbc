/* study/sweep_merge.c -- `tpusim sweep merge OUT DIR...`: the shards of one
 * sweep (`tpusim sweep SPEC --shard I/N -o DIR`, on one machine or many) are
 * joined into OUT as if one process had run the whole sweep. Each shard wrote
 * DIR/shard.json (what sweep and which shard) and DIR/points/NNNN for its
 * points, with the traces of its own best point and of the default point
 * when it holds it; the sweep's best point is the best of its shard, so OUT
 * gets the same traces without running anything. The tables are built by the
 * sweep's own writer from the copied points. */
#include "study/sweep.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "study/sweep_int.h"
#include "outputs/plot_serve.h"
#include "outputs/table.h"

struct shard {
    char *dir;             /* as given */
    struct json *j;        /* its shard.json */
    struct sweep_lock lock;
};

struct merge {
    const char *out;
    struct shard *sh; /* as given */
    int n;
    struct shard **owner; /* per shard index: its directory */
    int nshards, npoints, nkeys;
    const struct json *head; /* the first shard.json */
};

static bool json_same(const struct json *a, const struct json *b)
{
    if (!a || !b || a->type != b->type)
        return a == b;
    switch (a->type) {
    case JSON_NULL:
        return true;
    case JSON_BOOL:
        return a->b == b->b;
    case JSON_NUM:
        return a->num == b->num;
    case JSON_STR:
        return !strcmp(a->str, b->str);
    case JSON_ARR:
        for (int i = 0; a->n == b->n && i < a->n; i++)
            if (!json_same(a->kids[i], b->kids[i]))
                return false;
        return a->n == b->n;
    default:
        return false;
    }
}

/* Reads DIR/shard.json of every directory. Returns 0 or the exit status. */
static int load_shards(struct merge *m)
{
    for (int i = 0; i < m->n; i++) {
        struct shard *s = &m->sh[i];
        char *p = xasprintf("%s/shard.json", s->dir), err[600];
        s->j = json_read_file(p, JSON_MAX_BYTES, err, sizeof err);
        free(p);
        if (!s->j) {
            fprintf(stderr,
                    "tpusim sweep merge: %s is not a shard of a sweep (%s): make it with "
                    "`tpusim sweep SPEC --shard I/N -o %s`\n",
                    s->dir, err, s->dir);
            return 2;
        }
    }
    return 0;
}

/* Locks every shard (no shard is resumed while it is read). Returns 0 or 1. */
static int lock_shards(struct merge *m)
{
    for (int i = 0; i < m->n; i++)
        if (sweep_dir_lock(m->sh[i].dir, &m->sh[i].lock) != 0)
            return 1;
    return 0;
}

/* All shards are of one sweep, each index once, each complete. Returns 0 or 2. */
static int check_shards(struct merge *m)
{
    static const char *const same[] = {"sweep",         "base",          "base_hash",
                                        "spec_hash",     "keys",          "points_total",
                                        "default_point", "default_added", "shards",
                                        NULL};
    m->head = m->sh[0].j;
    m->nshards = (int)json_num(m->head, "shards", 0);
    m->npoints = (int)json_num(m->head, "points_total", 0);
    const struct json *keys = json_get(m->head, "keys");
    m->nkeys = keys && keys->type == JSON_ARR ? keys->n : 0;
    if (m->nshards < 1 || m->nshards > 100000 || m->npoints < 1 || !keys) {
        fprintf(stderr, "tpusim sweep merge: %s/shard.json: not a shard.json\n", m->sh[0].dir);
        return 2;
    }
    m->owner = xcalloc((size_t)m->nshards, sizeof *m->owner);
    int rc = 0;
    for (int i = 0; i < m->n; i++) {
        struct shard *s = &m->sh[i];
        for (int f = 0; same[f]; f++)
            if (!json_same(json_get(s->j, same[f]), json_get(m->head, same[f]))) {
                fprintf(stderr,
                        "tpusim sweep merge: %s is a shard of another sweep than %s (%s "
                        "differs)\n",
                        s->dir, m->sh[0].dir, same[f]);
                return 2;
            }
        int k = (int)json_num(s->j, "shard", -1);
        if (k < 0 || k >= m->nshards) {
            fprintf(stderr, "tpusim sweep merge: %s/shard.json: bad shard index\n", s->dir);
            return 2;
        }
        if (m->owner[k]) {
            fprintf(stderr, "tpusim sweep merge: %s and %s both hold shard %d/%d\n",
                    m->owner[k]->dir, s->dir, k, m->nshards);
            rc = 2;
        }
        m->owner[k] = s;
        const struct json *c = json_get(s->j, "complete");
        if (!c || c->type != JSON_BOOL || !c->b) {
            fprintf(stderr,
                    "tpusim sweep merge: %s: shard %d/%d is not complete (%g of %g points): "
                    "finish it with `tpusim sweep SPEC --shard %d/%d -o %s --resume`\n",
                    s->dir, k, m->nshards, json_num(s->j, "points_done", 0),
                    json_num(s->j, "points", 0), k, m->nshards, s->dir);
            rc = 2;
        }
    }
    for (int k = 0; k < m->nshards; k++)
        if (!m->owner[k]) {
            fprintf(stderr, "tpusim sweep merge: shard %d/%d is missing (none of the %d "
                            "directories holds it)\n",
                    k, m->nshards, m->n);
            rc = 2;
        }
    return rc;
}

/* The largest file a merge copies: a trace of the default 2M-event cap is
 * about 300 MB. fs_copy_file refuses devices and directories. */
#define MERGE_MAX_FILE_BYTES ((size_t)4 << 30)

/* Copies 'src' to 'dst'; on failure fills 'why' (size 'n'). Returns 0 or -1. */
static int copy_file(const char *src, const char *dst, char *why, size_t n)
{
    int rc = fs_copy_file(src, dst, MERGE_MAX_FILE_BYTES);
    if (rc != 0)
        fs_read_error(errno, MERGE_MAX_FILE_BYTES, why, n);
    return rc;
}

/* Copies 'name' of point 'i' from its shard into OUT when the shard has it.
 * Returns 0, or 1 after printing why it could not. */
static int copy_point_file(const struct merge *m, int i, const char *name)
{
    const char *dir = m->owner[i % m->nshards]->dir;
    char *src = xasprintf("%s/points/%04d/%s", dir, i, name);
    char *dst = xasprintf("%s/points/%04d/%s", m->out, i, name);
    int rc = 0;
    char why[128];
    if (fs_exists(src) && copy_file(src, dst, why, sizeof why) != 0) {
        fprintf(stderr, "tpusim sweep merge: cannot copy %s to %s: %s\n", src, dst, why);
        rc = 1;
    }
    free(dst);
    free(src);
    return rc;
}

/* Copies every point's result (not the traces) and an inline base into OUT. Returns 0 or 1. */
static int copy_points(const struct merge *m)
{
    int rc = 0;
    for (int i = 0; i < m->npoints && rc == 0; i++) {
        char *pdir = xasprintf("%s/points/%04d", m->out, i);
        if (fs_mkdirs(pdir) != 0) {
            fprintf(stderr, "tpusim sweep merge: cannot create %s: %s\n", pdir, strerror(errno));
            rc = 1;
        }
        free(pdir);
        static const char *const names[] = {"point.json", "summary.json", "log.txt", NULL};
        for (int k = 0; names[k] && rc == 0; k++)
            rc = copy_point_file(m, i, names[k]);
    }
    char *src = xasprintf("%s/base.yaml", m->sh[0].dir), *dst = xasprintf("%s/base.yaml", m->out);
    char why[128];
    if (rc == 0 && fs_exists(src) && copy_file(src, dst, why, sizeof why) != 0) {
        fprintf(stderr, "tpusim sweep merge: cannot copy %s: %s\n", src, why);
        rc = 1;
    }
    free(dst);
    free(src);
    return rc;
}

/* Row 'i' of the table from OUT/points/NNNN. Returns 0, or 1 after printing why not. */
static int read_row(const struct merge *m, int i, struct table_row *row)
{
    char *path = xasprintf("%s/points/%04d/point.json", m->out, i), err[600];
    struct json *pj = json_read_file(path, JSON_MAX_BYTES, err, sizeof err);
    const struct json *vals = json_get(pj, "values");
    row->point = i;
    row->values = xcalloc((size_t)m->nkeys + 1, sizeof *row->values);
    bool ok = pj && vals && vals->type == JSON_ARR && vals->n == m->nkeys;
    for (int k = 0; ok && k < m->nkeys; k++) {
        ok = vals->kids[k]->type == JSON_STR;
        row->values[k] = xstrdup(ok ? vals->kids[k]->str : "");
    }
    for (int k = 0; k < m->nkeys; k++)
        if (!row->values[k])
            row->values[k] = xstrdup("");
    bool said_ok = !strcmp(json_str(pj, "status", ""), "ok");
    if (ok)
        ok = sweep_row_from_point(m->out, pj, row) == 0 && (row->status == TABLE_OK) == said_ok;
    if (!ok)
        fprintf(stderr,
                "tpusim sweep merge: %s: not a finished point of this version's sweep (%s): "
                "run its shard again with --force\n",
                path, pj ? row->reason ? row->reason : "no values" : err);
    json_free(pj);
    free(path);
    return ok ? 0 : 1;
}

static void print_merged(const struct merge *m, const struct table *t)
{
    int count[TABLE_STATUS_COUNT] = {0};
    for (int i = 0; i < t->nrows; i++)
        count[t->rows[i].status]++;
    printf("merged %d shards of sweep %s into %s: %d points (%d ok, %d infeasible, %d failed)\n",
           m->nshards, t->name, m->out, t->nrows, count[TABLE_OK], count[TABLE_INFEASIBLE],
           count[TABLE_FAILED]);
    int best = table_best_row(t), d = table_find_row(t, t->default_point);
    bool by = table_rank_by_train(t->rows, t->nrows, NULL);
    if (best >= 0 && t->rows[best].has_serving) { /* serving: the knees, as the sweep prints */
        char *note = plot_serve_note(t);
        printf("%s\n", note);
        free(note);
    } else if (best >= 0) {
        char tm[32];
        table_format_time(tm, sizeof tm, t->rows[best].time_s);
        printf("best: point %d, %s, bound %s", t->rows[best].point, tm, t->rows[best].bound);
        if (by) {
            table_format_time(tm, sizeof tm, t->rows[best].time_to_train_s);
            printf(", time to train %s (ranked by it)", tm);
        }
        if (d == best)
            printf(" (the default point)");
        else if (d >= 0 && t->rows[d].status == TABLE_OK && t->rows[best].time_s > 0)
            printf("; %.2fx the speed of the default (point %d)",
                   table_rank_value(&t->rows[d], by) / table_rank_value(&t->rows[best], by),
                   t->rows[d].point);
        printf("\n");
    }
    printf("wrote %s/report.html, report.md, sweep.csv, sweep.json and the plots\n", m->out);
}

/* Builds the table from OUT's points, copies the best and default traces and writes it all. */
static int write_merged(struct merge *m)
{
    struct table t;
    memset(&t, 0, sizeof t);
    t.name = (char *)json_str(m->head, "sweep", "");
    t.base = (char *)json_str(m->head, "base", "");
    t.command = json_str(m->head, "command", NULL);
    const struct json *keys = json_get(m->head, "keys");
    t.nkeys = m->nkeys;
    t.keys = xcalloc((size_t)m->nkeys + 1, sizeof *t.keys);
    for (int k = 0; k < m->nkeys; k++)
        t.keys[k] = keys->kids[k]->type == JSON_STR ? keys->kids[k]->str : (char *)"?";
    t.npoints = m->npoints;
    t.rows = xcalloc((size_t)m->npoints, sizeof *t.rows);
    t.default_point = (int)json_num(m->head, "default_point", -1);
    t.default_is_base = true;
    const struct json *da = json_get(m->head, "default_added");
    t.default_added = da && da->type == JSON_BOOL && da->b;
    int rc = 0;
    for (int i = 0; i < m->npoints && rc == 0; i++, t.nrows++)
        rc = read_row(m, i, &t.rows[i]);
    int best = rc == 0 ? table_best_row(&t) : -1;
    int want[2] = {best >= 0 ? t.rows[best].point : -1, t.default_point};
    for (int k = 0; k < 2 && rc == 0; k++)
        for (int f = 0; f < 2 && want[k] >= 0 && want[k] < m->npoints && rc == 0; f++)
            rc = copy_point_file(m, want[k], f ? "platform.xml" : "trace.json");
    if (rc == 0 && sweep_write_tables(&t, m->out) != 0)
        rc = 1;
    if (rc == 0 && sweep_missing_outputs(&t, m->out, true) > 0)
        rc = 1;
    if (rc == 0)
        print_merged(m, &t);
    for (int i = 0; i < t.nrows; i++)
        table_row_fini(&t.rows[i], m->nkeys);
    free(t.rows);
    free(t.keys);
    return rc;
}

/* Claims OUT for the whole sweep, as `tpusim sweep SPEC -o OUT` would (the
 * same record: a merged directory resumes as the sweep's own). Returns 0 or the exit status. */
static int claim_out(const struct merge *m, bool force, struct sweep_lock *lk)
{
    const struct json *keys = json_get(m->head, "keys");
    const char **k = xcalloc((size_t)m->nkeys + 1, sizeof *k);
    for (int i = 0; i < m->nkeys; i++)
        k[i] = keys->kids[i]->type == JSON_STR ? keys->kids[i]->str : "?";
    struct sweep_ident id = {json_str(m->head, "sweep", ""), m->nkeys, k, 0, 0};
    int rc = sweep_dir_claim(m->out, force ? SWEEP_REUSE_FORCE : SWEEP_REUSE_NONE,
                             "merge into an empty directory", &id, lk);
    free(k);
    return rc;
}

/* 1 when OUT is one of the shard directories (a merge must never write there). */
static int out_is_a_shard(const struct merge *m)
{
    char ro[PATH_MAX], rd[PATH_MAX];
    if (!realpath(m->out, ro))
        return 0;
    for (int i = 0; i < m->n; i++)
        if (realpath(m->sh[i].dir, rd) && !strcmp(ro, rd)) {
            fprintf(stderr, "tpusim sweep merge: %s is one of the shards; merge into another "
                            "directory\n",
                    m->out);
            return 1;
        }
    return 0;
}

int sweep_merge(const char *out, char *const *dirs, int ndirs, bool force)
{
    struct merge m = {.out = out, .n = ndirs};
    m.sh = xcalloc((size_t)ndirs, sizeof *m.sh);
    for (int i = 0; i < ndirs; i++)
        m.sh[i] = (struct shard){.dir = dirs[i], .lock = {-1, NULL}};
    struct sweep_lock lk = {-1, NULL};
    int rc = load_shards(&m);
    if (rc == 0)
        rc = check_shards(&m);
    if (rc == 0)
        rc = lock_shards(&m);
    if (rc == 0)
        rc = out_is_a_shard(&m) ? 2 : 0;
    if (rc == 0)
        rc = claim_out(&m, force, &lk);
    if (rc == 0) {
        rc = copy_points(&m);
        if (rc == 0)
            rc = write_merged(&m);
        sweep_dir_unlock(&lk);
    }
    for (int i = 0; i < ndirs; i++) {
        sweep_dir_unlock(&m.sh[i].lock);
        json_free(m.sh[i].j);
    }
    free(m.owner);
    free(m.sh);
    return rc;
}
