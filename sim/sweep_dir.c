/* sim/sweep_dir.c -- a sweep's output directory: one sweep at a time (a lock
 * file held with flock, so a killed sweep never leaves it held), and a fresh
 * sweep only in an empty directory (--force removes an earlier sweep's files,
 * and only those). Shared by `tpusim sweep` and `tpusim sweep merge`. */
#include "sim/sweep_int.h"

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

#define LOCK_NAME ".tpusim-lock"

/* The holder's pid as written in the lock file, or "?". */
static void lock_holder(int fd, char *buf, size_t n)
{
    ssize_t k = pread(fd, buf, n - 1, 0);
    buf[k > 0 ? k : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!buf[0])
        snprintf(buf, n, "?");
}

int sweep_dir_lock(const char *dir, struct sweep_lock *lk)
{
    lk->fd = -1;
    lk->path = xasprintf("%s/" LOCK_NAME, dir);
    for (;;) {
        int fd = open(lk->path, O_RDWR | O_CREAT, 0644);
        if (fd < 0) {
            fprintf(stderr, "tpusim sweep: cannot create %s: %s\n", lk->path, strerror(errno));
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            char pid[32];
            lock_holder(fd, pid, sizeof pid);
            fprintf(stderr,
                    "tpusim sweep: %s is in use by another sweep (pid %s): wait for it to "
                    "finish, or write to another directory with -o\n",
                    dir, pid);
            close(fd);
            break;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lk->path, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            char pid[32];
            int k = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)k, 0) != k)
                (void)0; /* the pid is for the message only */
            lk->fd = fd;
            return 0;
        }
        close(fd); /* its holder removed it while we opened it: take the new one */
    }
    free(lk->path);
    lk->path = NULL;
    return -1;
}

void sweep_dir_unlock(struct sweep_lock *lk)
{
    if (lk->fd >= 0) {
        unlink(lk->path);
        close(lk->fd);
    }
    free(lk->path);
    lk->path = NULL;
    lk->fd = -1;
}

/* True for the names a sweep (or a merge) writes at the top of its directory. */
static bool sweep_output_name(const char *name)
{
    static const char *const names[] = {"sweep.csv", "sweep.json", "report.md", "heatmap.svg",
                                        "base.yaml", "shard.json", "points",    NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    size_t n = strlen(name);
    if (!strncmp(name, "plot_", 5) && n > 9 && !strcmp(name + n - 4, ".svg"))
        return true;
    return strstr(name, ".tmp.") != NULL; /* a killed writer's temporary */
}

/* Removes 'path' and, for a directory, everything under it (symbolic links
 * are removed, never followed). Returns 0 or -1 with errno. */
static int remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    struct dirent *e;
    int rc = d ? 0 : -1;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *p = xasprintf("%s/%s", path, e->d_name);
        if (remove_tree(p) != 0)
            rc = -1;
        free(p);
    }
    if (d)
        closedir(d);
    return rc == 0 ? rmdir(path) : -1;
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
        if (remove_tree(p) != 0) {
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
        rc |= remove_tree(p);
        free(p);
    }
    if (d)
        closedir(d);
    free(pd);
    return rc;
}
