/* engine/sim_child.c -- an engine run in a forked child (see engine/sim_child.h). */
#include "engine/sim_child.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/diag.h"

/* Reads up to 'size' bytes of 'fd' into 'out'; the count read. */
static size_t read_all(int fd, void *out, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, (char *)out + got, size - got);
        if (k <= 0 && !(k < 0 && errno == EINTR))
            break;
        got += k > 0 ? (size_t)k : 0;
    }
    return got;
}

int sim_child_run(void (*body)(void *arg, void *out), void *arg, void *out, size_t size,
                  const char *what, char *err, size_t n)
{
    int fd[2];
    if (pipe(fd) != 0) {
        diag_fail(err, n, "cannot create a pipe: %s", strerror(errno));
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        diag_fail(err, n, "cannot fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return 1;
    }
    if (pid == 0) {
        close(fd[0]);
        body(arg, out);
        ssize_t w = write(fd[1], out, size);
        _exit(w == (ssize_t)size ? 0 : 3);
    }
    close(fd[1]);
    size_t got = read_all(fd[0], out, size);
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got == size && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    memset(out, 0, size);
    diag_fail(err, n, "the %s ended abnormally (status %d)", what, status);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGINT ? 130 : 1;
}
