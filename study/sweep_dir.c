/* study/sweep_dir.c -- a sweep's output directory: one sweep at a time (a lock
 * file held with flock, so a killed sweep never leaves it held), and a fresh
 * sweep only in an empty directory (--force removes an earlier sweep's files,
 * and only those). Shared by `tpusim sweep` and `tpusim sweep merge`. */
#include "study/sweep_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"

#define LOCK_NAME FS_LOCK_NAME

int sweep_dir_lock(const char *dir, struct sweep_lock *lk)
{
    char holder[96];
    lk->path = xstrdup(dir);
    lk->fd = fs_dir_lock(dir, "sweep", holder, sizeof holder);
    if (lk->fd >= 0)
        return 0;
    if (errno == EWOULDBLOCK)
        fprintf(stderr,
                "tpusim sweep: %s is in use by another %s: wait for it to finish, or write to "
                "another directory with -o\n",
                dir, holder);
    else
        fprintf(stderr, "tpusim sweep: cannot create %s/" LOCK_NAME ": %s\n", dir,
                strerror(errno));
    free(lk->path);
    lk->path = NULL;
    return -1;
}

void sweep_dir_unlock(struct sweep_lock *lk)
{
    if (lk->path)
        fs_dir_unlock(lk->path, lk->fd);
    free(lk->path);
    lk->path = NULL;
    lk->fd = -1;
}

/* True for the names a sweep (or a merge) writes at the top of its directory. */
static bool sweep_output_name(const char *name)
{
    static const char *const names[] = {"sweep.csv", "sweep.json", "report.md", "report.html",
                                        "heatmap.svg", "latency_throughput.svg", "base.yaml", "shard.json", "points",
                                        ".standins", SWEEP_ID_NAME, NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    size_t n = strlen(name);
    if (!strncmp(name, "plot_", 5) && n > 9 && !strcmp(name + n - 4, ".svg"))
        return true;
    return strstr(name, ".tmp.") != NULL; /* a killed writer's temporary */
}

bool sweep_point_file_name(const char *name)
{
    static const char *const names[] = {"point.json",  "summary.json", "trace.json", "platform.xml",
                                        "report.html", "log.txt",      "trace.log",  LOCK_NAME,
                                        "requests.csv", "steps.csv", /* a serving point's */
                                        NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    /* a killed writer's temporary, a killed run's stage */
    return strstr(name, ".tmp.") != NULL ||
           !strncmp(name, FS_STAGE_PREFIX, strlen(FS_STAGE_PREFIX));
}

/* True for "NNNN" (digits only): a point's directory. */
static bool point_dir_name(const char *name)
{
    size_t n = strspn(name, "0123456789");
    return n > 0 && !name[n];
}

/* True when 'path' is a directory itself, not a link to one (a planted
 * points/NNNN link is never followed into, nor removed). */
static bool real_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The first entry of 'dir' other than the lock, as a new string, or NULL. */
static char *first_entry(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *found = NULL;
    while (d && !found && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, LOCK_NAME))
            found = xstrdup(n);
    }
    if (d)
        closedir(d);
    return found;
}

/* The first entry of 'dir' (relative to 'top', e.g. "points/0003/") that
 * 'known' does not accept, as "TOP/NAME" (new string), or NULL. */
static char *first_unknown(const char *dir, const char *top, bool (*known)(const char *))
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *found = NULL;
    while (d && !found && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, LOCK_NAME) && !known(n))
            found = xasprintf("%s%s", top, n);
    }
    if (d)
        closedir(d);
    return found;
}

/* The first file of 'dir' a sweep does not write (at the top, or in
 * points/NNNN), e.g. "notes.txt" or "points/0003/notes.txt"; NULL if none. */
static char *first_foreign(const char *dir)
{
    char *found = first_unknown(dir, "", sweep_output_name);
    char *pd = xasprintf("%s/points", dir);
    if (!found && fs_exists(pd) && !real_dir(pd))
        found = xstrdup("points"); /* a link: not followed */
    if (!found)
        found = first_unknown(pd, "points/", point_dir_name);
    DIR *d = found ? NULL : opendir(pd);
    struct dirent *e;
    while (d && !found && (e = readdir(d)) != NULL) {
        if (!point_dir_name(e->d_name))
            continue;
        char *p = xasprintf("%s/%s", pd, e->d_name), *top = xasprintf("points/%s/", e->d_name);
        found = real_dir(p) ? first_unknown(p, top, sweep_point_file_name)
                            : xasprintf("points/%s", e->d_name);
        free(top);
        free(p);
    }
    if (d)
        closedir(d);
    free(pd);
    return found;
}

/* Removes what a sweep writes in the point directory 'pdir', then 'pdir'
 * if that left it empty. Returns 0, or -1 when a file could not be removed. */
static int remove_point_dir(const char *pdir)
{
    DIR *d = opendir(pdir);
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !sweep_point_file_name(e->d_name))
            continue;
        char *p = xasprintf("%s/%s", pdir, e->d_name);
        rc |= fs_remove_tree(p);
        free(p);
    }
    if (d)
        closedir(d);
    if (rmdir(pdir) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
        rc = -1;
    return rc;
}

/* Removes the point directories NNNN >= 'from' of DIR/points (what a sweep
 * wrote in them), then DIR/points if that left it empty. */
static int remove_points(const char *dir, int from, bool and_top)
{
    char *pd = xasprintf("%s/points", dir);
    DIR *d = real_dir(pd) ? opendir(pd) : NULL;
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (!point_dir_name(e->d_name) || strtol(e->d_name, NULL, 10) < from)
            continue;
        char *p = xasprintf("%s/%s", pd, e->d_name);
        if (real_dir(p))
            rc |= remove_point_dir(p);
        free(p);
    }
    if (d)
        closedir(d);
    if (and_top && rmdir(pd) != 0 && errno != ENOENT)
        rc = -1;
    free(pd);
    return rc;
}

/* Removes what an earlier sweep wrote in 'dir' (first_foreign found nothing
 * else). Returns 0 or -1 (printed). */
static int remove_outputs(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (!sweep_output_name(e->d_name))
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        int r = strcmp(e->d_name, "points") ? fs_remove_tree(p) : remove_points(dir, 0, true);
        if (r != 0) {
            fprintf(stderr, "tpusim sweep: cannot remove %s: %s\n", p, strerror(errno));
            rc = -1;
        }
        free(p);
    }
    if (d)
        closedir(d);
    return rc;
}

/* ---------------- the sweep's record ---------------- */

static uint64_t ident_hash(const struct sweep_ident *id)
{
    uint64_t h = sweep_fnv1a(id->name, strlen(id->name) + 1, SWEEP_FNV_BASIS);
    for (int k = 0; k < id->nkeys; k++)
        h = sweep_fnv1a(id->keys[k], strlen(id->keys[k]) + 1, h);
    int sh[2] = {id->nshards ? id->shard : 0, id->nshards};
    return sweep_fnv1a(sh, sizeof sh, h);
}

/* "sweep 'NAME' shard I/N (keys a, b)": how a message names a sweep. New string. */
static char *ident_text(const char *name, int shard, int nshards, const char *const *keys,
                        int nkeys)
{
    char *s = nshards ? xasprintf("sweep '%s' shard %d/%d (keys", name, shard, nshards)
                      : xasprintf("sweep '%s' (keys", name);
    for (int k = 0; k < nkeys; k++) {
        char *n = xasprintf("%s%s %s", s, k ? "," : "", keys[k]);
        free(s);
        s = n;
    }
    char *n = xasprintf("%s)", s);
    free(s);
    return n;
}

/* Writes DIR/.sweep-id.json. Returns 0 or 1 (printed). */
static int write_ident(const char *dir, const struct sweep_ident *id)
{
    char *path = xasprintf("%s/" SWEEP_ID_NAME, dir);
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    if (rc == 0) {
        fputs("{\"sweep\": ", a.f);
        json_write_string(a.f, id->name);
        fputs(", \"keys\": [", a.f);
        for (int k = 0; k < id->nkeys; k++) {
            fputs(k ? ", " : "", a.f);
            json_write_string(a.f, id->keys[k]);
        }
        fprintf(a.f, "], \"shard\": %d, \"shards\": %d, \"id\": \"%016llx\"}\n",
                id->nshards ? id->shard : 0, id->nshards,
                (unsigned long long)ident_hash(id));
        rc = fs_atomic_commit(&a);
    }
    if (rc != 0)
        fprintf(stderr, "tpusim sweep: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    return rc != 0;
}

/* --resume into a directory that holds files: they must be sweep 'id''s.
 * Returns 0, or 2 after printing why not. */
static int check_ident(const char *dir, const struct sweep_ident *id)
{
    char *path = xasprintf("%s/" SWEEP_ID_NAME, dir), err[600];
    struct json *j = fs_exists(path) ? json_read_file(path, JSON_MAX_BYTES, err, sizeof err) : NULL;
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)ident_hash(id));
    int rc = 0;
    char *mine = ident_text(id->name, id->shard, id->nshards, id->keys, id->nkeys);
    if (!j) {
        fprintf(stderr,
                "tpusim sweep: %s holds no record of the sweep that wrote it (" SWEEP_ID_NAME
                "): not resuming %s into it; write to another directory with -o\n",
                dir, mine);
        rc = 2;
    } else if (strcmp(json_str(j, "id", ""), want) != 0) {
        const struct json *ks = json_get(j, "keys");
        int nk = ks && ks->type == JSON_ARR ? ks->n : 0;
        const char **keys = xcalloc((size_t)nk + 1, sizeof *keys);
        for (int k = 0; k < nk; k++)
            keys[k] = ks->kids[k]->type == JSON_STR ? ks->kids[k]->str : "?";
        char *theirs = ident_text(json_str(j, "sweep", "?"), (int)json_num(j, "shard", 0),
                                  (int)json_num(j, "shards", 0), keys, nk);
        fprintf(stderr,
                "tpusim sweep: %s holds %s, not %s: --resume continues only the sweep that "
                "wrote it; write to another directory with -o\n",
                dir, theirs, mine);
        free(theirs);
        free(keys);
        rc = 2;
    }
    free(mine);
    json_free(j);
    free(path);
    return rc;
}

int sweep_dir_claim(const char *dir, enum sweep_reuse reuse, const char *how,
                    const struct sweep_ident *id, struct sweep_lock *lk)
{
    if (fs_mkdirs(dir) != 0) {
        fprintf(stderr, "tpusim sweep: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (lk->fd < 0 && sweep_dir_lock(dir, lk) != 0) /* held already: taken before any work */
        return 1;
    char *first = first_entry(dir);
    int rc = 0;
    if (first && reuse == SWEEP_REUSE_NONE) {
        fprintf(stderr,
                "tpusim sweep: %s is not empty (it holds '%s'): %s, --force to replace "
                "an earlier sweep's files, or write to another directory with -o\n",
                dir, first, how);
        rc = 2;
    } else if (first && reuse == SWEEP_REUSE_RESUME) {
        rc = check_ident(dir, id);
    } else if (first && reuse == SWEEP_REUSE_FORCE) {
        char *other = first_foreign(dir);
        if (other)
            fprintf(stderr,
                    "tpusim sweep: %s holds '%s', which a sweep does not write: not "
                    "replacing it; write to another directory with -o\n",
                    dir, other);
        rc = other ? 2 : remove_outputs(dir) == 0 ? 0 : 1;
        free(other);
    }
    if (rc == 0 && !(first && reuse == SWEEP_REUSE_RESUME))
        rc = write_ident(dir, id);
    free(first);
    if (rc != 0)
        sweep_dir_unlock(lk);
    return rc;
}

int sweep_dir_prune(const char *dir, int npoints)
{
    return remove_points(dir, npoints, false);
}
