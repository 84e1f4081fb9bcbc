/* base/fsutil.c -- atomic writes, whole-file reads, mkdir -p. */
#define _GNU_SOURCE /* fopencookie: a stream that keeps the errno of a failed write */
#include "base/fsutil.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"

/* The mode a plain fopen(path, "w") would give: 0666 less the umask. */
static mode_t file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

/* Under an atomic write's stream: write() in full, and the errno of the
 * first one that failed (a stream's error flag keeps none). */
struct fs_sink {
    int fd;
    int err;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    struct fs_sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(s->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!s->err)
                s->err = k < 0 ? errno : ENOSPC;
            break; /* a short count sets the stream's error flag */
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

static int sink_close(void *cookie)
{
    struct fs_sink *s = cookie;
    if (close(s->fd) != 0 && !s->err)
        s->err = errno;
    s->fd = -1;
    return s->err ? -1 : 0;
}

int fs_atomic_open(struct fs_atomic *a, const char *path)
{
    memset(a, 0, sizeof *a);
    char *tmp = xasprintf("%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        errno = e;
        return -1;
    }
    fchmod(fd, file_mode());
    struct fs_sink *sink = xcalloc(1, sizeof *sink);
    sink->fd = fd;
    cookie_io_functions_t io = {.write = sink_write, .close = sink_close};
    a->f = fopencookie(sink, "w", io);
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        free(sink);
        errno = e;
        return -1;
    }
    setvbuf(a->f, NULL, _IOFBF, (size_t)1 << 16);
    a->sink = sink;
    a->tmp = tmp;
    a->path = xstrdup(path);
    return 0;
}

static void release(struct fs_atomic *a)
{
    free(a->tmp);
    free(a->path);
    free(a->sink);
    memset(a, 0, sizeof *a);
}

int fs_atomic_commit(struct fs_atomic *a)
{
    int bad = ferror(a->f) != 0;
    if (fclose(a->f) != 0)
        bad = 1;
    int e = a->sink->err ? a->sink->err : bad ? EIO : 0;
    if (!e && rename(a->tmp, a->path) != 0)
        e = errno;
    if (e)
        unlink(a->tmp);
    release(a);
    errno = e;
    return e ? -1 : 0;
}

void fs_atomic_abort(struct fs_atomic *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    release(a);
}

int fs_write_all(const char *path, const void *data, size_t len)
{
    struct fs_atomic a;
    if (fs_atomic_open(&a, path) != 0)
        return -1;
    if (len)
        fwrite(data, 1, len, a.f);
    return fs_atomic_commit(&a);
}

/* Reads 'f' to its end, at most 'max_bytes'; NULL with errno (EFBIG past the cap). */
static char *read_stream(FILE *f, size_t max_bytes, size_t *len)
{
    size_t cap = 4096, n = 0, got;
    char *buf = xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n > max_bytes)
            break;
        if (n == cap - 1)
            buf = xrealloc(buf, cap *= 2);
    }
    int e = ferror(f) ? (errno ? errno : EIO) : n > max_bytes ? EFBIG : 0;
    if (e) {
        free(buf);
        errno = e;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Opens 'path' for reading and fills '*st'; NULL with errno, EISDIR for a
 * directory, ENODEV for a device (/dev/zero, a disk, a terminal: never an
 * input file). Every file tpusim reads is opened here. */
static FILE *open_input(const char *path, struct stat *st)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    int e = 0;
    if (fstat(fileno(f), st) != 0)
        e = errno;
    else if (S_ISDIR(st->st_mode))
        e = EISDIR;
    else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
        e = ENODEV;
    if (e) {
        fclose(f);
        errno = e;
        return NULL;
    }
    return f;
}

/* ---- inputs read once: pipes, sockets, standard input ---- */

/* The descriptor 'path' names ("/dev/stdin": 0, "/dev/fd/N", "/proc/self/fd/N":
 * N, as `<(...)` gives), or -1. */
static int path_fd(const char *path)
{
    if (!strcmp(path, "/dev/stdin"))
        return 0;
    const char *n = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                           : NULL;
    char *end;
    long fd = n && *n >= '0' && *n <= '9' ? strtol(n, &end, 10) : -1;
    return fd >= 0 && fd < 1 << 20 && !*end ? (int)fd : -1;
}

/* Puts the 'len' bytes read from the pipe under descriptor 'fd' into a
 * temporary file that takes the pipe's place at 'fd': the next read of 'fd'
 * (or of its /dev/fd path) reads the same bytes again. The state lives in the
 * descriptor table, not in a global. Without a temporary file, nothing. */
static void keep_bytes(int fd, const char *buf, size_t len)
{
    FILE *t = tmpfile();
    if (!t)
        return;
    if (fwrite(buf, 1, len, t) == len && fflush(t) == 0)
        dup2(fileno(t), fd);
    fclose(t);
}

char *fs_read_all(const char *path, size_t max_bytes, size_t *len)
{
    struct stat st;
    FILE *f = open_input(path, &st);
    if (!f)
        return NULL;
    char *buf = read_stream(f, max_bytes, len);
    int e = errno, fd = path_fd(path);
    fclose(f);
    if (buf && !S_ISREG(st.st_mode) && fd >= 0)
        keep_bytes(fd, buf, *len);
    errno = e;
    return buf;
}

char *fs_read_fd(int fd, size_t max_bytes, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return NULL;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return NULL;
    }
    int dup_fd = dup(fd);
    FILE *f = dup_fd >= 0 ? fdopen(dup_fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        errno = e;
        return NULL;
    }
    if (S_ISREG(st.st_mode))
        rewind(f); /* the whole file, however often it is read */
    char *buf = read_stream(f, max_bytes, len);
    int e = errno;
    fclose(f);
    if (buf && !S_ISREG(st.st_mode))
        keep_bytes(fd, buf, *len);
    errno = e;
    return buf;
}

int fs_copy_file(const char *src, const char *dst, size_t max_bytes)
{
    struct stat st;
    FILE *in = open_input(src, &st);
    if (!in)
        return -1;
    struct fs_atomic a;
    if (fs_atomic_open(&a, dst) != 0) {
        int e = errno;
        fclose(in);
        errno = e;
        return -1;
    }
    char buf[1 << 16];
    size_t k, total = 0;
    int e = 0;
    while (!e && (k = fread(buf, 1, sizeof buf, in)) > 0) {
        total += k;
        if (total > max_bytes)
            e = EFBIG;
        else if (fwrite(buf, 1, k, a.f) != k)
            e = errno ? errno : EIO;
    }
    if (!e && ferror(in))
        e = errno ? errno : EIO;
    fclose(in);
    if (e) {
        fs_atomic_abort(&a);
        errno = e;
        return -1;
    }
    return fs_atomic_commit(&a);
}

void fs_read_error(int err, size_t max_bytes, char *msg, size_t n)
{
    if (err == EFBIG && max_bytes >= ((size_t)1 << 30) && max_bytes % ((size_t)1 << 30) == 0)
        snprintf(msg, n, "file is larger than the limit of %zu GiB", max_bytes >> 30);
    else if (err == EFBIG)
        snprintf(msg, n, "file is larger than the limit of %zu MiB", max_bytes >> 20);
    else if (err == EISDIR)
        snprintf(msg, n, "expected a file, got a directory");
    else if (err == ENODEV)
        snprintf(msg, n, "expected a regular file, got a device");
    else
        snprintf(msg, n, "%s", strerror(err));
}

int fs_mkdirs(const char *dir)
{
    if (!dir[0]) {
        errno = ENOENT;
        return -1;
    }
    char *p = xstrdup(dir);
    int rc = 0;
    for (char *s = p + 1; *s && rc == 0; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = -1;
        *s = '/';
    }
    if (rc == 0 && mkdir(p, 0777) != 0 && errno != EEXIST)
        rc = -1;
    int e = errno;
    free(p);
    errno = e;
    return rc;
}

int fs_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* "<name>.tmp.XXXXXX": the names fs_atomic_open makes. */
static int is_temp_name(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    return t && t != name && strlen(t + 5) == 6;
}

static int remove_temps(const char *dir, bool files)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        bool stage = !strncmp(e->d_name, FS_STAGE_PREFIX, strlen(FS_STAGE_PREFIX));
        if (!stage && !(files && is_temp_name(e->d_name)))
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        n += (stage ? fs_remove_tree(p) : unlink(p)) == 0;
        free(p);
    }
    if (d)
        closedir(d);
    return n;
}

int fs_remove_temps(const char *dir)
{
    return remove_temps(dir, true);
}

int fs_remove_stages(const char *dir)
{
    return remove_temps(dir, false);
}

int fs_remove_tree(const char *path)
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
        if (fs_remove_tree(p) != 0)
            rc = -1;
        free(p);
    }
    if (d)
        closedir(d);
    return rc == 0 ? rmdir(path) : -1;
}

/* "WHO (pid PID)" from the lock file's "PID WHO" line, or "tpusim (pid ?)".
 * The holder writes its line just after taking the lock, so a taker refused
 * in that instant polls for it, for at most two seconds (polls of 5 ms). */
static void lock_holder(int fd, char *out, size_t n)
{
    char buf[64];
    for (int tries = 0;; tries++) {
        ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
        buf[k > 0 ? k : 0] = '\0';
        if (strchr(buf, '\n') || tries == 400)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    buf[strcspn(buf, "\n")] = '\0';
    char *sp = strchr(buf, ' ');
    if (sp)
        *sp++ = '\0';
    snprintf(out, n, "%s (pid %s)", sp && *sp ? sp : "tpusim", buf[0] ? buf : "?");
}

int fs_dir_lock(const char *dir, const char *who, char *holder, size_t n)
{
    char *path = xasprintf("%s/" FS_LOCK_NAME, dir);
    int e = 0;
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            e = errno;
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            e = errno == EINTR ? EWOULDBLOCK : errno;
            if (e == EWOULDBLOCK)
                lock_holder(fd, holder, n);
            close(fd);
            break;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            char line[96];
            int k = snprintf(line, sizeof line, "%d %s\n", (int)getpid(), who);
            if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)k, 0) != k)
                (void)0; /* the line is for the messages only */
            free(path);
            return fd;
        }
        close(fd); /* its holder removed it while we opened it: take the new one */
    }
    free(path);
    errno = e;
    return -1;
}

void fs_dir_unlock(const char *dir, int fd)
{
    if (fd < 0)
        return;
    char *path = xasprintf("%s/" FS_LOCK_NAME, dir);
    unlink(path);
    close(fd);
    free(path);
}

