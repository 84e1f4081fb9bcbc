/* base/fsutil.h -- files: atomic writes, whole-file reads, directories.
 * Uses libc and POSIX only (the bottom layer). An atomic write goes to a
 * temporary file created next to its target with mkstemp (a unique name,
 * O_EXCL: it never follows a planted link) and is renamed onto the target
 * only once everything was written, so a reader never sees half a file and
 * two writers never share a temporary. */
#ifndef TPUSIM_BASE_FSUTIL_H
#define TPUSIM_BASE_FSUTIL_H

#include <stddef.h>
#include <stdio.h>

struct fs_sink;

struct fs_atomic {
    FILE *f;              /* write here */
    char *tmp;            /* owned: the temporary file ("<path>.tmp.XXXXXX") */
    char *path;           /* owned: the target */
    struct fs_sink *sink; /* owned: under 'f', keeps the errno of the first failed write */
};

/* Opens a new temporary file for 'path'. Returns 0, or -1 with errno. */
int fs_atomic_open(struct fs_atomic *a, const char *path);
/* Closes the temporary file and renames it onto the target. On a write,
 * close or rename error removes the temporary and returns -1 with errno:
 * that of the first write that failed (ENOSPC on a full disk, EFBIG past a
 * file size limit), never a generic EIO.
 * Either way 'a' is released. */
int fs_atomic_commit(struct fs_atomic *a);
/* Closes and removes the temporary file; releases 'a'. */
void fs_atomic_abort(struct fs_atomic *a);

/* Writes 'len' bytes of 'data' to 'path' atomically. Returns 0 or -1 with errno. */
int fs_write_all(const char *path, const void *data, size_t len);

/* Reads the whole regular file 'path' into a new NUL-terminated buffer
 * (caller frees) and sets '*len'. Returns NULL with errno on failure: EISDIR
 * for a directory, ENODEV for a device (/dev/zero is refused at once), EFBIG
 * when the file holds more than 'max_bytes' (a FIFO is read up to that limit). */
char *fs_read_all(const char *path, size_t max_bytes, size_t *len);
/* The same from the open descriptor 'fd' (left open), e.g. standard input. */
char *fs_read_fd(int fd, size_t max_bytes, size_t *len);
/* A pipe (standard input, or /dev/fd/63 as `<(...)` gives) is read once: its
 * bytes go to a temporary file put in its place at the same descriptor, so a
 * later read of the descriptor or of that path gets the same bytes (a named
 * FIFO elsewhere is read as it comes). A regular file is read whole each time. */

/* Copies the file 'src' to 'dst' atomically (fs_atomic_open), refusing what
 * fs_read_all refuses. Returns 0, or -1 with errno (EFBIG past 'max_bytes'),
 * leaving 'dst' as it was. */
int fs_copy_file(const char *src, const char *dst, size_t max_bytes);
/* Writes what a failed read's 'err' means to 'msg' (size 'n'): "file is
 * larger than the limit of 16 MiB" ('max_bytes'), "expected a file, got a
 * directory", "expected a regular file, got a device", or strerror. */
void fs_read_error(int err, size_t max_bytes, char *msg, size_t n);

/* Makes directory 'dir' and its missing parents. Returns 0 or -1 with errno. */
int fs_mkdirs(const char *dir);

/* The name a run's staging directory starts with (engine/outputs.h). */
#define FS_STAGE_PREFIX ".tpusim-run."

/* Removes the temporaries fs_atomic_open and runs' stages left in directory
 * 'dir' (those of a writer that was killed). Returns how many were removed. */
int fs_remove_temps(const char *dir);

/* Removes 'path' and, for a directory, everything under it (symbolic links
 * are removed, never followed). Returns 0 (also when it does not exist) or -1
 * with errno. */
int fs_remove_tree(const char *path);

/* The name of a directory's lock file (every tpusim writer of a directory takes it). */
#define FS_LOCK_NAME ".tpusim-lock"

/* Takes the lock of directory 'dir', which must exist: DIR/.tpusim-lock held
 * with flock (exclusive, not waiting), opened with O_NOFOLLOW (a planted link
 * is refused, never written through) and holding "PID WHO\n". The kernel
 * drops it when its holder dies. Returns the descriptor (close-on-exec), or
 * -1 with errno: EWOULDBLOCK when another process holds it ('holder' gets
 * "WHO (pid PID)", e.g. "sweep (pid 42)"), else why the file cannot be made. */
int fs_dir_lock(const char *dir, const char *who, char *holder, size_t n);
/* Removes the lock file of 'dir' and drops the lock 'fd' (nothing for -1). */
void fs_dir_unlock(const char *dir, int fd);

/* Removes only the runs' stages (FS_STAGE_PREFIX directories) in 'dir': a
 * run's output directory may be the user's (-o .), whose files stay. */
int fs_remove_stages(const char *dir);

/* True if 'path' exists (any type). */
int fs_exists(const char *path);

#endif
