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
                                        "heatmap.svg",
                                        "base.yaml", "shard.json", "points",    NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    size_t n = strlen(name);
    if (!strncmp(name, "plot_", 5) && n > 9 && !strcmp(name + n - 4, ".svg"))
        return true;
    return strstr(name, ".tmp.") != NULL; /* a killed writer's temporary */
}

/* The first entry of 'dir' other than the lock (for 'foreign': one a sweep
 * does not write), as a new string, or NULL. */
static char *first_entry(const char *dir, bool foreign)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *found = NULL;
    while (d && !found && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, LOCK_NAME) &&
            !(foreign && sweep_output_name(n)))
            found = xstrdup(n);
    }
    if (d)
        closedir(d);
    return found;
}

/* Removes what an earlier sweep wrote in 'dir'. Returns 0 or -1 (printed). */
static int remove_outputs(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (!sweep_output_name(e->d_name))
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        if (fs_remove_tree(p) != 0) {
            fprintf(stderr, "tpusim sweep: cannot remove %s: %s\n", p, strerror(errno));
            rc = -1;
        }
        free(p);
    }
    if (d)
        closedir(d);
    return rc;
}

int sweep_dir_claim(const char *dir, enum sweep_reuse reuse, const char *how,
                    struct sweep_lock *lk)
{
    if (fs_mkdirs(dir) != 0) {
        fprintf(stderr, "tpusim sweep: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (sweep_dir_lock(dir, lk) != 0)
        return 1;
    char *first = first_entry(dir, false);
    int rc = 0;
    if (first && reuse == SWEEP_REUSE_NONE) {
        fprintf(stderr,
                "tpusim sweep: %s is not empty (it holds '%s'): %s, --force to replace "
                "an earlier sweep's files, or write to another directory with -o\n",
                dir, first, how);
        rc = 2;
    } else if (first && reuse == SWEEP_REUSE_FORCE) {
        char *other = first_entry(dir, true);
        if (other)
            fprintf(stderr,
                    "tpusim sweep: %s holds '%s', which a sweep does not write: not "
                    "replacing it; write to another directory with -o\n",
                    dir, other);
        rc = other ? 2 : remove_outputs(dir) == 0 ? 0 : 1;
        free(other);
    }
    free(first);
    if (rc != 0)
        sweep_dir_unlock(lk);
    return rc;
}

int sweep_dir_prune(const char *dir, int npoints)
{
    char *pd = xasprintf("%s/points", dir);
    DIR *d = opendir(pd);
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)) != NULL) {
        char *end;
        long i = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || i < npoints)
            continue;
        char *p = xasprintf("%s/%s", pd, e->d_name);
        rc |= fs_remove_tree(p);
        free(p);
    }
    if (d)
        closedir(d);
    free(pd);
    return rc;
}
