/* tests/unit/test_fsutil.c -- base/fsutil: capped reads refuse devices and
 * directories, atomic writes never follow a planted link. */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/xalloc.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tpusim-fsutil-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

/* Issue 18.4: /dev/zero as a scenario, chip or mask file grew without limit. */
static void test_fs_read_all_refuses_devices(void **state)
{
    (void)state;
    size_t n;
    errno = 0; /* refused by its type, before a byte is read */
    assert_null(fs_read_all("/dev/zero", (size_t)1 << 30, &n));
    assert_int_equal(errno, ENODEV);
    char msg[128];
    fs_read_error(ENODEV, 0, msg, sizeof msg);
    assert_string_equal(msg, "expected a regular file, got a device");
}

static void test_fs_read_all_refuses_directories_and_caps(void **state)
{
    (void)state;
    size_t n;
    errno = 0;
    assert_null(fs_read_all(dir, 1024, &n));
    assert_int_equal(errno, EISDIR);
    char msg[128];
    fs_read_error(EISDIR, 0, msg, sizeof msg);
    assert_string_equal(msg, "expected a file, got a directory");
    char *p = xasprintf("%s/big", dir);
    FILE *f = fopen(p, "w");
    for (int i = 0; i < 2000; i++)
        fputc('x', f);
    fclose(f);
    errno = 0;
    assert_null(fs_read_all(p, 1000, &n));
    assert_int_equal(errno, EFBIG);
    fs_read_error(EFBIG, (size_t)16 << 20, msg, sizeof msg);
    assert_string_equal(msg, "file is larger than the limit of 16 MiB");
    char *s = fs_read_all(p, 2000, &n);
    assert_non_null(s);
    assert_int_equal(n, 2000);
    free(s);
    free(p);
}

/* Issue 18.15: a link planted at a predictable temporary name made a run
 * overwrite the file it points to. Temporaries are mkstemp names (O_EXCL). */
static void test_fs_write_all_ignores_planted_links(void **state)
{
    (void)state;
    char *victim = xasprintf("%s/victim", dir), *target = xasprintf("%s/summary.json", dir);
    assert_int_equal(fs_write_all(victim, "keep", 4), 0);
    static const char *const names[] = {"summary.json.tmp", "summary.json.tmp.000000",
                                        "summary.json.tmp.XXXXXX"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *l = xasprintf("%s/%s", dir, names[i]);
        assert_int_equal(symlink(victim, l), 0);
        free(l);
    }
    assert_int_equal(fs_write_all(target, "new", 3), 0);
    size_t n;
    char *v = fs_read_all(victim, 100, &n), *t = fs_read_all(target, 100, &n);
    assert_string_equal(v, "keep");
    assert_string_equal(t, "new");
    struct stat st;
    assert_int_equal(lstat(target, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    free(v);
    free(t);
    free(victim);
    free(target);
}

/* Issue 18.3, found by CI: a run refused in the instant between the holder's
 * flock and its writing of "PID WHO" read an empty lock file and said "in use
 * by another tpusim (pid ?)". The refused side waits for the line. */
static void test_fs_dir_lock_holder_late(void **state)
{
    (void)state;
    char *lock = xasprintf("%s/" FS_LOCK_NAME, dir);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
    pid_t child = fork();
    if (child == 0) { /* the holder, late with its line */
        struct timespec ts = {0, 150 * 1000 * 1000};
        nanosleep(&ts, NULL);
        _exit(pwrite(fd, "4242 sweep\n", 11, 0) == 11 ? 0 : 1);
    }
    char holder[96] = "";
    errno = 0;
    assert_int_equal(fs_dir_lock(dir, "run", holder, sizeof holder), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    assert_string_equal(holder, "sweep (pid 4242)");
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(fd);
    unlink(lock);
    free(lock);
}

/* Issue 18.3: two runs (or a run and a sweep) into one directory mixed their
 * files. One lock per directory: a second taker is refused and told who holds
 * it; the lock file is gone after unlock; a link planted at the lock's name
 * is refused, never written through. */
static void test_fs_dir_lock(void **state)
{
    (void)state;
    char holder[96] = "";
    int fd = fs_dir_lock(dir, "run", holder, sizeof holder);
    assert_true(fd >= 0);
    char *lock = xasprintf("%s/" FS_LOCK_NAME, dir);
    size_t n;
    char *text = fs_read_all(lock, 100, &n);
    char *want = xasprintf("%d run\n", (int)getpid());
    assert_string_equal(text, want);
    errno = 0;
    assert_int_equal(fs_dir_lock(dir, "sweep", holder, sizeof holder), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    char *who = xasprintf("run (pid %d)", (int)getpid());
    assert_string_equal(holder, who);
    fs_dir_unlock(dir, fd);
    assert_false(fs_exists(lock));
    fd = fs_dir_lock(dir, "sweep", holder, sizeof holder); /* free again */
    assert_true(fd >= 0);
    fs_dir_unlock(dir, fd);

    char *victim = xasprintf("%s/victim", dir);
    assert_int_equal(fs_write_all(victim, "keep", 4), 0);
    assert_int_equal(symlink(victim, lock), 0);
    errno = 0;
    assert_int_equal(fs_dir_lock(dir, "run", holder, sizeof holder), -1);
    assert_int_equal(errno, ELOOP);
    free(text);
    text = fs_read_all(victim, 100, &n);
    assert_string_equal(text, "keep");
    unlink(lock);
    free(text);
    free(victim);
    free(who);
    free(want);
    free(lock);
}

/* fs_remove_tree removes a tree and the links in it, not what they point to. */
static void test_fs_remove_tree(void **state)
{
    (void)state;
    char *top = xasprintf("%s/tree", dir), *sub = xasprintf("%s/tree/a/b", dir);
    char *keep = xasprintf("%s/keep", dir), *link = xasprintf("%s/tree/a/l", dir);
    assert_int_equal(fs_mkdirs(sub), 0);
    assert_int_equal(fs_write_all(keep, "k", 1), 0);
    assert_int_equal(symlink(dir, link), 0);
    char *f = xasprintf("%s/f", sub);
    assert_int_equal(fs_write_all(f, "x", 1), 0);
    assert_int_equal(fs_remove_tree(top), 0);
    assert_false(fs_exists(top));
    assert_true(fs_exists(keep));
    assert_int_equal(fs_remove_tree(top), 0); /* gone already: fine */
    free(f);
    free(top);
    free(sub);
    free(keep);
    free(link);
}

/* Issue 32.15: `expand -` and `check <(...)` read their input twice (the
 * second read of a pipe found it empty). A pipe, by descriptor or by its
 * /dev/fd path, is read once; later reads get the same bytes. */
static void test_fs_read_pipe_once(void **state)
{
    (void)state;
    for (int by_path = 0; by_path < 2; by_path++) {
        int fd[2];
        assert_int_equal(pipe(fd), 0);
        assert_int_equal(write(fd[1], "chip: v5e\n", 10), 10);
        close(fd[1]);
        char *path = xasprintf("/dev/fd/%d", fd[0]);
        for (int k = 0; k < 2; k++) {
            size_t n = 0;
            char *s = by_path ? fs_read_all(path, 1024, &n) : fs_read_fd(fd[0], 1024, &n);
            assert_non_null(s);
            assert_int_equal(n, 10);
            assert_string_equal(s, "chip: v5e\n");
            free(s);
        }
        free(path);
        close(fd[0]);
    }
}

/* Issue 32.7: every input goes through the one opener that refuses devices
 * and directories: a copy from /dev/zero is refused at once, never copied
 * until the disk is full. */
static void test_fs_copy_file(void **state)
{
    (void)state;
    char *src = xasprintf("%s/copy.src", dir), *dst = xasprintf("%s/copy.dst", dir);
    assert_int_equal(fs_write_all(src, "abc", 3), 0);
    assert_int_equal(fs_copy_file(src, dst, 1024), 0);
    size_t n;
    char *s = fs_read_all(dst, 1024, &n);
    assert_non_null(s);
    assert_string_equal(s, "abc");
    free(s);
    errno = 0;
    assert_int_equal(fs_copy_file("/dev/zero", dst, 1024), -1);
    assert_int_equal(errno, ENODEV);
    assert_int_equal(fs_copy_file(dir, dst, 1024), -1);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(fs_copy_file(src, dst, 2), -1); /* past the limit */
    assert_int_equal(errno, EFBIG);
    s = fs_read_all(dst, 1024, &n); /* a refused copy leaves the target as it was */
    assert_string_equal(s, "abc");
    free(s);
    free(src);
    free(dst);
}

/* Issue 32.20: a write that failed part way (the disk full) was reported as
 * "Input/output error": the stream's error flag kept no errno. The real one
 * is reported. The seam: a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored)
 * makes write() fail with EFBIG in a child, past the stream's buffer. */
static void test_fs_atomic_commit_reports_the_write_errno(void **state)
{
    (void)state;
    char *path = xasprintf("%s/limited", dir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {100000, 100000};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        struct fs_atomic a;
        if (fs_atomic_open(&a, path) != 0)
            _exit(10);
        for (int i = 0; i < 20000; i++) /* 20 x 10000 bytes: fails at 100000, then goes on */
            fputs("0123456789", a.f);
        errno = 0;
        int rc = fs_atomic_commit(&a);
        _exit(rc == 0 ? 11 : errno == EFBIG ? 0 : errno == EIO ? 12 : 13);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 12: EIO instead of EFBIG */
    assert_false(fs_exists(path));
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fs_read_all_refuses_devices),
        cmocka_unit_test(test_fs_read_pipe_once),
        cmocka_unit_test(test_fs_copy_file),
        cmocka_unit_test(test_fs_atomic_commit_reports_the_write_errno),
        cmocka_unit_test(test_fs_read_all_refuses_directories_and_caps),
        cmocka_unit_test(test_fs_write_all_ignores_planted_links),
        cmocka_unit_test(test_fs_dir_lock),
        cmocka_unit_test(test_fs_dir_lock_holder_late),
        cmocka_unit_test(test_fs_remove_tree),
    };
    return cmocka_run_group_tests_name("fsutil", tests, setup, teardown);
}
