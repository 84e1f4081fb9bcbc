/* study/sweep.c -- `tpusim sweep` and `tpusim compare`.
 * SimGrid runs once per process, so every point is a fork()ed child that
 * loads the base scenario with the point's --set overrides, runs it and writes
 * points/NNNN/summary.json; its stderr goes to points/NNNN/log.txt and becomes
 * the row's reason when it exits 2 (infeasible) or 1 (failed). The parent
 * waits with SIGINT/SIGTERM/SIGCHLD blocked (sigtimedwait), so Ctrl-C stops
 * launching, kills the running points and still writes the tables. */
#include "study/sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "base/fmt.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "study/autotune.h"
#include "study/train_eval.h"
#include "engine/sim.h"
#include "study/sweep_int.h"
#include "outputs/plots.h"
#include "outputs/report_html.h"
#include "outputs/report_md.h"
#include "outputs/summary.h"
#include "outputs/table.h"
#include "engine/spmd.h"
#include "outputs/progress.h"


struct job {
    pid_t pid;
    int point;
    bool trace; /* a re-run that keeps trace.json */
    double t0;  /* when it was started (progress_now_s) */
};

/* What a point's process cost: its wall time, from fork to reaping, its CPU
 * time (wait4's user + system time: the child's and that of the processes it
 * waited for) and its peak resident memory (ru_maxrss: the child's own, or
 * that of a process it waited for, whichever is larger). */
struct point_usage {
    double wall_s, cpu_s, peak_rss_bytes;
};

struct runner {
    struct sweep_spec *sp;
    char *dir;
    char *standin_dir;      /* DIR/.standins: the points' stand-ins' lone runs, shared by
                               them while the sweep runs (engine/eng_standin.c), or NULL */
    bool *probe;            /* per point: run with the stand-ins' probe (engine/sim.c) after
                               a run that trusted them came back SIM_STANDIN_RETRY */
    struct sweep_lock lock; /* of 'dir', held while the sweep runs */
    pid_t parent;           /* the sweep's own process */
    int jobs;
    bool resume, force, tty;
    int shard, nshards; /* this process runs the points i with i % nshards == shard */
    int nmine;          /* how many points that is (all of them without shards) */
    int sg_argc;
    char **sg_argv;
    int (*serve_point)(const struct cfg_scenario *, const char *, int, char **, struct diag *);
    sigset_t oldmask, waitset;
    int stop;               /* the signal that stopped the sweep, or 0 */
    bool broken;            /* a runtime failure (fork, mkdir) */
    struct table_row *rows; /* per point */
    bool *done;
    struct job run[SWEEP_MAX_JOBS];
    int nrun;
    int ndone, ntodo, nfinished; /* done overall, to run this time, finished this time */
    int count[TABLE_STATUS_COUNT];
    double t0, drawn; /* start, last progress bar */
    double noted;     /* not a terminal: the last progress line (progress_note) */
    double note_s;    /* ... printed every this many seconds */
    int default_point;
    bool wrote;      /* the tables (a shard's shard.json) were written */
    char *base_desc; /* the base scenario, as the report names it */
    char *command;   /* "tpusim sweep SPEC --set ...": what reruns it (report.html) */
};


static char *point_file(const struct runner *r, int i, const char *name)
{
    return xasprintf("%s/points/%04d%s%s", r->dir, i, name ? "/" : "", name ? name : "");
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void remove_point_file(const struct runner *r, int i, const char *name)
{
    char *p = point_file(r, i, name);
    unlink(p);
    free(p);
}

/* Reads a small text file (a log); "" when absent. Trailing newlines dropped. */
static char *slurp(const char *path)
{
    size_t n = 0;
    char *s = fs_read_all(path, 1 << 20, &n);
    if (!s)
        return xstrdup("");
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    s[n] = '\0';
    return s;
}

/* ---------------- the child ---------------- */

static void child_main(struct runner *r, int i, bool trace)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed sweep takes its points with it */
#endif
    if (getppid() != r->parent) /* it died before that */
        _exit(1);
    sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
    char *pdir = point_file(r, i, NULL);
    char *log = point_file(r, i, trace ? "trace.log" : "log.txt");
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    int n;
    char **sets = sweep_point_sets(r->sp, i, &n);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    int rc = 2;
    int loaded = cfg_load_scenario(r->sp->base_path, (const char *const *)sets, n, &sc, d);
    if (loaded == 0 && sc.serve) { /* a serving run: study/sweep_serve.c */
        rc = sweep_serve_child(&sc, pdir, r->serve_point, r->sg_argc, r->sg_argv, d);
        cfg_scenario_fini(&sc);
    } else if (loaded == 0) {
        spmd_fold(&sc, sc.all_chips);
        struct sim_opts o = {
            .out_dir = trace ? pdir : NULL, .sg_argc = r->sg_argc, .sg_argv = r->sg_argv,
            .no_summary = true, .standin_dir = r->standin_dir,
            .standin_trust = !trace && !r->probe[i]};
        struct summary s = {0};
        struct autotune_cache *cache = autotune_cache_new();
        struct autotune_opts ao = {.sg_argc = r->sg_argc, .sg_argv = r->sg_argv};
        rc = autotune_resolve(&sc, cache, &ao, d);
        autotune_cache_free(cache);
        if (rc == 0)
            rc = train_eval_step(&sc, &o, d);
        if (rc == 0)
            rc = sim_run(&sc, &o, &s, d);
        char *path = point_file(r, i, "summary.json");
        if (rc == 0 && !trace && summary_write_json(&s, path) != 0) {
            struct diag_loc loc = {path, 0, 0};
            diag_error(d, &loc, NULL, "cannot write: %s", strerror(errno));
            rc = 1;
        }
        free(path);
        summary_fini(&s);
        cfg_scenario_fini(&sc);
    }
    diag_print(d, stderr);
    diag_free(d);
    sweep_sets_free(sets);
    free(log);
    free(pdir);
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
}

static int launch(struct runner *r, int i, bool trace)
{
    char *pdir = point_file(r, i, NULL);
    int rc = fs_mkdirs(pdir);
    free(pdir);
    if (rc != 0) {
        fprintf(stderr, "tpusim sweep: cannot create %s/points/%04d: %s\n", r->dir, i,
                strerror(errno));
        return -1;
    }
    if (!trace) {
        static const char *const stale[] = {"point.json",   "summary.json", "trace.json",
                                            "platform.xml", "log.txt",      "requests.csv",
                                            "steps.csv",    NULL};
        for (int k = 0; stale[k]; k++)
            remove_point_file(r, i, stale[k]);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tpusim sweep: cannot fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_main(r, i, trace);
    r->run[r->nrun++] = (struct job){pid, i, trace, progress_now_s()};
    return 0;
}

/* ---------------- results ---------------- */

static void row_init(struct runner *r, int i, struct table_row *row)
{
    memset(row, 0, sizeof *row);
    row->point = i;
    row->values = xcalloc((size_t)r->sp->nkeys + 1, sizeof *row->values);
    for (int k = 0; k < r->sp->nkeys; k++)
        row->values[k] = xstrdup(r->sp->points[i].shown[k]);
}

static int write_point_json(struct runner *r, const struct table_row *row, int code,
                            const struct point_usage *u)
{
    char *path = point_file(r, row->point, "point.json");
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    if (rc == 0) {
        FILE *f = a.f;
        int n;
        char **sets = sweep_point_sets(r->sp, row->point, &n);
        fprintf(f, "{\"point\": %d, \"base\": ", row->point);
        /* an inline base is DIR/base.yaml: relative, so shards and a merge write the same */
        json_write_string(f, r->sp->base_inline ? "base.yaml" : r->sp->base_path);
        fprintf(f, ", \"base_hash\": \"%016llx\",\n \"sets\": [",
                (unsigned long long)r->sp->base_hash);
        for (int k = 0; k < n; k++) {
            fputs(k ? ", " : "", f);
            json_write_string(f, sets[k]);
        }
        fputs("],\n \"values\": [", f);
        for (int k = 0; k < r->sp->nkeys; k++) {
            fputs(k ? ", " : "", f);
            json_write_string(f, row->values[k]);
        }
        fprintf(f, "],\n \"status\": \"%s\", \"exit\": %d, \"reason\": ",
                table_status_name(row->status), code);
        json_write_string(f, row->reason);
        fprintf(f, ",\n \"wall_s\": %.6f, \"cpu_s\": %.6f, \"peak_rss_bytes\": %.0f}\n",
                u->wall_s, u->cpu_s, u->peak_rss_bytes);
        sweep_sets_free(sets);
        rc = fs_atomic_commit(&a);
    }
    if (rc != 0)
        fprintf(stderr, "tpusim sweep: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    return rc;
}

/* Fills 'row' from points/NNNN/summary.json. */
void sweep_read_summary(const char *dir, struct table_row *row)
{
    char *path = xasprintf("%s/points/%04d/summary.json", dir, row->point);
    char err[512];
    struct json *j = json_read_file(path, JSON_MAX_BYTES, err, sizeof err);
    if (!j || table_row_from_summary(row, j, err, sizeof err) != 0) {
        row->status = TABLE_FAILED;
        free(row->reason);
        row->reason = xasprintf("cannot read the point's summary: %s", err);
    }
    json_free(j);
    free(path);
}

static void record(struct runner *r, struct table_row *row)
{
    int i = row->point;
    r->rows[i] = *row;
    r->done[i] = true;
    r->ndone++;
    r->count[row->status]++;
}

static void progress_line(struct runner *r, const struct table_row *row);

/* True when a child ended because of Ctrl-C (sim_run exits 130 on SIGINT) or our kill. */
static bool interrupted(const struct runner *r, int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) == 130;
    int sig = WTERMSIG(status);
    return sig == SIGINT || sig == SIGTERM || (r->stop && sig == SIGKILL);
}

/* A point's child has ended with 'status'. */
static void finish_point(struct runner *r, int i, int status, const struct point_usage *u)
{
    char *logp = point_file(r, i, "log.txt");
    char *log = slurp(logp);
    struct table_row row;
    row_init(r, i, &row);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    bool retry = code == SIM_STANDIN_RETRY && !r->probe[i];
    if (retry && !r->stop && !r->broken) {
        /* a stand-in was not alone: the point again, as `tpusim run` runs it */
        r->probe[i] = true;
        table_row_fini(&row, r->sp->nkeys);
        unlink(logp);
        free(log);
        free(logp);
        if (launch(r, i, false) != 0)
            r->broken = true;
        return;
    }
    /* not finished (a retry the sweep's stop or failure leaves undone is one too, never
     * recorded with its internal exit status): run again by --resume */
    if (retry || interrupted(r, status)) {
        table_row_fini(&row, r->sp->nkeys);
        char *dir = point_file(r, i, NULL);
        fs_remove_temps(dir);
        free(dir);
        unlink(logp);
        free(log);
        free(logp);
        return;
    }
    if (code == 0) {
        row.reason = xstrdup("");
        sweep_read_summary(r->dir, &row);
    } else {
        row.status = code == 2 ? TABLE_INFEASIBLE : TABLE_FAILED;
        char why[64];
        if (code >= 0)
            snprintf(why, sizeof why, "exit status %d", code);
        else
            snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
        row.reason = *log ? sweep_map_message(r->sp, log) : xstrdup(why);
    }
    if (row.status != TABLE_OK || !*log)
        unlink(logp);
    row.wall_s = u->wall_s, row.peak_rss_bytes = u->peak_rss_bytes;
    write_point_json(r, &row, code, u);
    record(r, &row);
    r->nfinished++;
    progress_line(r, &r->rows[i]);
    free(log);
    free(logp);
}

static void finish_trace(struct runner *r, int i, int status)
{
    char *logp = point_file(r, i, "trace.log");
    char *log = slurp(logp);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (!r->stop)
            fprintf(stderr, "tpusim sweep: point %d: the run with a trace failed: %s\n", i,
                    *log ? log : "killed");
        remove_point_file(r, i, "trace.json");
    }
    unlink(logp);
    free(log);
    free(logp);
}

/* Resume: the point's earlier result, if it was run with the same base and values. */
static bool load_previous(struct runner *r, int i)
{
    char *path = point_file(r, i, "point.json");
    char err[512];
    struct json *j = json_read_file(path, JSON_MAX_BYTES, err, sizeof err);
    free(path);
    if (!j)
        return false;
    int n;
    char **sets = sweep_point_sets(r->sp, i, &n);
    const struct json *js = json_get(j, "sets");
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->sp->base_hash);
    bool same = js && js->type == JSON_ARR && js->n == n &&
                !strcmp(json_str(j, "base_hash", ""), hash);
    for (int k = 0; same && k < n; k++)
        same = js->kids[k]->type == JSON_STR && !strcmp(js->kids[k]->str, sets[k]);
    sweep_sets_free(sets);
    enum table_status st;
    bool ok = same && table_status_parse(json_str(j, "status", ""), &st) == 0 &&
              st != TABLE_FAILED;
    if (ok) {
        struct table_row row;
        row_init(r, i, &row);
        ok = sweep_row_from_point(r->dir, j, &row) == 0 && row.status == st;
        if (ok)
            record(r, &row);
        else
            table_row_fini(&row, r->sp->nkeys);
    }
    json_free(j);
    return ok;
}

int sweep_row_from_point(const char *dir, const struct json *pj, struct table_row *row)
{
    if (table_status_parse(json_str(pj, "status", ""), &row->status) != 0)
        return -1;
    row->reason = xstrdup(json_str(pj, "reason", ""));
    if (row->status == TABLE_OK)
        sweep_read_summary(dir, row);
    row->wall_s = json_num(pj, "wall_s", 0); /* (a point.json before issue 31.6 has none) */
    row->peak_rss_bytes = json_num(pj, "peak_rss_bytes", 0);
    return 0;
}

/* ---------------- progress ---------------- */

double sweep_progress_interval_s(void)
{
    const char *e = getenv("TPUSIM_PROGRESS_INTERVAL");
    char *end;
    double v = e ? strtod(e, &end) : 0;
    return e && end != e && !*end && v >= 0.01 && v <= 3600 ? v : SWEEP_PROGRESS_INTERVAL_S;
}

static void progress_bar(struct runner *r)
{
    if (!r->tty || (progress_now_s() - r->drawn < 0.1 && r->ndone < r->nmine))
        return;
    r->drawn = progress_now_s();
    int total = r->nmine, w = 30;
    int fill = total ? (int)((double)w * r->ndone / total) : w;
    char bar[64], what[128];
    for (int k = 0; k < w; k++)
        bar[k] = k < fill ? '#' : '.';
    bar[w] = '\0';
    snprintf(what, sizeof what, "[%s] %d/%d points, %d running", bar, r->ndone, total, r->nrun);
    double e = progress_now_s() - r->t0;
    int left = r->ntodo - r->nfinished;
    progress_draw(stderr, what, e, r->nfinished > 0 ? e / r->nfinished * left : -1);
}

/* Not a terminal (a log, a batch job's file): a plain line every
 * r->note_s seconds with the points done, those running, the time elapsed
 * and an ETA, and one when the last point is done. */
static void progress_note(struct runner *r)
{
    double now = progress_now_s();
    bool last = r->ndone >= r->nmine;
    if (r->tty || r->ntodo == 0 || (!last && now - r->noted < r->note_s) ||
        (last && r->noted < 0))
        return;
    r->noted = last ? -1 : now; /* (the last line once) */
    double e = now - r->t0;
    int left = r->ntodo - r->nfinished;
    char el[32], eta[32] = "--:--";
    progress_clock_text(el, sizeof el, e);
    if (r->nfinished > 0)
        progress_clock_text(eta, sizeof eta, e / r->nfinished * left);
    fprintf(stderr, "progress: %d/%d points done (%d%%), %d running, %s elapsed, ETA %s\n",
            r->ndone, r->nmine, r->nmine ? 100 * r->ndone / r->nmine : 100, r->nrun, el,
            last ? "0:00" : eta);
    fflush(stderr);
}

static void progress_line(struct runner *r, const struct table_row *row)
{
    if (r->tty) {
        progress_bar(r);
        return;
    }
    char tm[32] = "";
    if (row->status == TABLE_OK)
        table_format_time(tm, sizeof tm, row->time_s);
    fprintf(stderr, "point %d/%d done: %04d %s%s%s\n", r->ndone, r->nmine, row->point,
            table_status_name(row->status), *tm ? " " : "", tm);
    if (r->ndone >= r->nmine)
        progress_note(r);
}

/* ---------------- the loop ---------------- */

static void reaped(struct runner *r, int j, int status, const struct rusage *ru)
{
    struct job jb = r->run[j];
    r->run[j] = r->run[--r->nrun];
    /* ru_maxrss is in KiB on Linux */
    double cpu_s = (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
                   (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1e-6;
    struct point_usage u = {progress_now_s() - jb.t0, cpu_s, (double)ru->ru_maxrss * 1024.0};
    if (jb.trace)
        finish_trace(r, jb.point, status);
    else
        finish_point(r, jb.point, status, &u);
}

static void reap(struct runner *r, bool block)
{
    for (int j = 0; j < r->nrun;) {
        int status;
        struct rusage ru = {0};
        pid_t p = wait4(r->run[j].pid, &status, block ? 0 : WNOHANG, &ru);
        if (p == r->run[j].pid || (p < 0 && errno == ECHILD))
            reaped(r, j, p < 0 ? 0x7f00 : status, &ru); /* a lost child counts as exit 127 */
        else if (p < 0 && errno == EINTR)
            continue;
        else
            j++;
    }
}

static void take_signal(struct runner *r, int sig)
{
    if ((sig == SIGINT || sig == SIGTERM) && !r->stop) {
        r->stop = sig;
        for (int j = 0; j < r->nrun; j++)
            kill(r->run[j].pid, SIGKILL);
    }
}

static void poll_signals(struct runner *r, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    struct timespec zero = {0, 0};
    int sig;
    while ((sig = sigtimedwait(&stops, NULL, &zero)) > 0) /* stops first, before reaping */
        take_signal(r, sig);
    if (timeout_s > 0 && (sig = sigtimedwait(&r->waitset, NULL, &ts)) > 0)
        take_signal(r, sig);
}

/* Runs 'todo' (point indices), 'trace' selecting the kind of run, -j at a time. */
static void run_list(struct runner *r, const int *todo, int ntodo, bool trace)
{
    int next = 0;
    for (;;) {
        poll_signals(r, 0);
        reap(r, false);
        while (!r->stop && !r->broken && r->nrun < r->jobs && next < ntodo)
            if (launch(r, todo[next++], trace) != 0)
                r->broken = true;
        if (r->stop || r->broken) {
            for (int j = 0; j < r->nrun; j++)
                kill(r->run[j].pid, SIGKILL);
            reap(r, true);
            return;
        }
        if (r->nrun == 0)
            return;
        progress_bar(r);
        progress_note(r);
        poll_signals(r, r->tty ? 0.25 : r->note_s < 5.0 ? r->note_s : 5.0);
    }
}

/* ---------------- outputs ---------------- */

/* "points/NNNN/trace.json" when 'dir' holds that trace, else NULL. */
static char *trace_rel(const char *dir, int point)
{
    if (point < 0)
        return NULL;
    char *rel = xasprintf("points/%04d/trace.json", point);
    char *p = xasprintf("%s/%s", dir, rel);
    bool ok = exists(p);
    free(p);
    if (!ok) {
        free(rel);
        rel = NULL;
    }
    return rel;
}

/* Removes plot_*.svg files of keys 't' does not have, and heatmap.svg unless two keys. */
static void remove_stale_plots(const struct table *t, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        bool plot = !strncmp(n, "plot_", 5) && len > 9 && !strcmp(n + len - 4, ".svg");
        bool stale = plot || (!strcmp(n, "heatmap.svg") && t->nkeys != 2);
        for (int k = 0; plot && k < t->nkeys && stale; k++) {
            char *want = plot_file_name(t->keys[k]);
            stale = strcmp(want, n) != 0;
            free(want);
        }
        if (stale) {
            char *p = xasprintf("%s/%s", dir, n);
            unlink(p);
            free(p);
        }
    }
    if (d)
        closedir(d);
}

int sweep_write_tables(struct table *t, const char *dir)
{
    int best = table_best_row(t);
    t->best_trace = trace_rel(dir, best >= 0 ? t->rows[best].point : -1);
    t->default_trace = trace_rel(dir, t->default_point);
    static const char *const names[] = {"sweep.csv", "sweep.json", "report.md"};
    int (*const writers[])(const struct table *, const char *) = {
        table_write_csv, table_write_json, report_md_write};
    int rc = 0;
    for (int w = 0; w < 3 && rc == 0; w++) {
        char *path = xasprintf("%s/%s", dir, names[w]);
        if ((rc = writers[w](t, path)) != 0)
            fprintf(stderr, "tpusim sweep: cannot write %s: %s\n", path, strerror(errno));
        free(path);
    }
    if (rc == 0 && (rc = plot_write_sweep(t, dir)) != 0)
        fprintf(stderr, "tpusim sweep: cannot write the plots in %s: %s\n", dir, strerror(errno));
    if (rc == 0 && (rc = report_html_sweep(t, t->command, dir)) != 0)
        fprintf(stderr, "tpusim sweep: cannot write %s/report.html: %s\n", dir, strerror(errno));
    if (rc == 0)
        remove_stale_plots(t, dir);
    free(t->best_trace);
    free(t->default_trace);
    t->best_trace = t->default_trace = NULL;
    return rc;
}

/* Prints that 'dir'/'rel' is missing unless it exists; returns 1 if missing. */
static int missing(const char *dir, const char *rel, const char *what)
{
    char *p = xasprintf("%s/%s", dir, rel);
    bool ok = exists(p);
    if (!ok)
        fprintf(stderr, "tpusim sweep: %s (%s) is missing\n", p, what);
    free(p);
    return !ok;
}

int sweep_missing_outputs(const struct table *t, const char *dir, bool traces)
{
    int n = 0;
    for (int i = 0; i < t->nrows; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "points/%04d/point.json", t->rows[i].point);
        n += missing(dir, rel, "the point's result");
        snprintf(rel, sizeof rel, "points/%04d/summary.json", t->rows[i].point);
        if (t->rows[i].status == TABLE_OK)
            n += missing(dir, rel, "the point's summary");
    }
    int best = table_best_row(t), def = table_find_row(t, t->default_point);
    int want[2] = {best, def >= 0 && t->rows[def].status == TABLE_OK ? def : -1};
    for (int k = 0; traces && k < 2; k++) {
        if (want[k] < 0 || (k == 1 && want[1] == want[0]) || t->rows[want[k]].has_serving)
            continue; /* a serving run writes no trace.json */
        char rel[64];
        snprintf(rel, sizeof rel, "points/%04d/trace.json", t->rows[want[k]].point);
        n += missing(dir, rel, k ? "the default point's trace" : "the best point's trace");
    }
    return n;
}

/* "tpusim sweep SPEC --set 'k=v'...": the sweep's spec and --set edits,
 * each word quoted for a POSIX shell when it needs it. */
char *sweep_command(const struct sweep_spec *sp)
{
    char *s = xstrdup("tpusim sweep");
    for (int i = -1; i < sp->nbase_sets; i++) {
        char *w = fmt_shell_word(i < 0 ? sp->file : sp->base_sets[i]);
        char *n = xasprintf("%s%s %s", s, i < 0 ? "" : " --set", w);
        free(w);
        free(s);
        s = n;
    }
    return s;
}

static void build_table(struct runner *r, struct table *t, struct table_row *rows)
{
    memset(t, 0, sizeof *t);
    t->name = r->sp->name;
    t->base = r->base_desc;
    t->command = r->command;
    t->nkeys = r->sp->nkeys;
    t->keys = xcalloc((size_t)t->nkeys + 1, sizeof *t->keys);
    for (int k = 0; k < t->nkeys; k++)
        t->keys[k] = r->sp->keys[k].path;
    t->npoints = r->sp->npoints;
    t->rows = rows;
    for (int i = 0; i < r->sp->npoints; i++)
        if (r->done[i])
            rows[t->nrows++] = r->rows[i];
    t->default_point = r->default_point;
    t->default_is_base = true;
    t->default_added = r->sp->default_added;
}

/* DIR/shard.json: what `tpusim sweep merge` needs to check and join the shards. */
static int write_shard_json(struct runner *r)
{
    char *path = xasprintf("%s/shard.json", r->dir);
    struct fs_atomic a;
    int rc = fs_atomic_open(&a, path);
    if (rc == 0) {
        FILE *f = a.f;
        fputs("{\"sweep\": ", f);
        json_write_string(f, r->sp->name);
        fputs(", \"base\": ", f);
        json_write_string(f, r->base_desc);
        fputs(", \"command\": ", f);
        json_write_string(f, r->command);
        fprintf(f, ",\n \"base_hash\": \"%016llx\", \"spec_hash\": \"%016llx\",\n \"keys\": [",
                (unsigned long long)r->sp->base_hash,
                (unsigned long long)sweep_spec_hash(r->sp));
        for (int k = 0; k < r->sp->nkeys; k++) {
            fputs(k ? ", " : "", f);
            json_write_string(f, r->sp->keys[k].path);
        }
        fprintf(f,
                "],\n \"points_total\": %d, \"default_point\": %d, \"default_added\": %s,\n"
                " \"shard\": %d, \"shards\": %d, \"points\": %d, \"points_done\": %d, "
                "\"complete\": %s}\n",
                r->sp->npoints, r->default_point, r->sp->default_added ? "true" : "false",
                r->shard, r->nshards, r->nmine, r->ndone,
                r->ndone == r->nmine && !r->stop ? "true" : "false");
        rc = fs_atomic_commit(&a);
    }
    if (rc != 0)
        fprintf(stderr, "tpusim sweep: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    return rc;
}

/* Writes the tables (a shard: shard.json; r->wrote says whether they all
 * were) and checks every promised output; returns 0 or 1. */
static int write_outputs(struct runner *r)
{
    struct table t;
    struct table_row *rows = xcalloc((size_t)r->sp->npoints + 1, sizeof *rows);
    build_table(r, &t, rows);
    int rc = (r->nshards ? write_shard_json(r) : sweep_write_tables(&t, r->dir)) != 0;
    r->wrote = rc == 0;
    if (sweep_missing_outputs(&t, r->dir, !r->stop && !r->broken) > 0)
        rc = 1;
    free(t.keys);
    free(rows);
    return rc;
}

/* Re-runs the best and the default point with a trace (unless they have one)
 * and drops the traces other points kept from earlier sweeps. */
static void keep_traces(struct runner *r)
{
    struct table t;
    struct table_row *rows = xcalloc((size_t)r->sp->npoints + 1, sizeof *rows);
    build_table(r, &t, rows);
    int best = table_best_row(&t);
    int want[2] = {best >= 0 ? t.rows[best].point : -1, -1}, n = 0, todo[2];
    if (r->default_point >= 0 && r->done[r->default_point] &&
        r->rows[r->default_point].status == TABLE_OK && r->default_point != want[0])
        want[1] = r->default_point;
    free(t.keys);
    free(rows);
    for (int k = 0; k < 2; k++) {
        bool serving = want[k] >= 0 && r->rows[want[k]].has_serving; /* writes no trace.json */
        char *p = want[k] >= 0 && !serving ? point_file(r, want[k], "trace.json") : NULL;
        if (p && !exists(p))
            todo[n++] = want[k];
        free(p);
    }
    run_list(r, todo, n, true);
    for (int i = 0; i < r->sp->npoints; i++) {
        if (i == want[0] || i == want[1])
            continue;
        remove_point_file(r, i, "trace.json");
        remove_point_file(r, i, "platform.xml");
    }
}

/* ---------------- sweep_main ---------------- */

/* DIR/.standins, empty (what an earlier sweep, or another binary, left there
 * goes): the points' lone runs of stand-ins are kept there and found again
 * by the points that have the same (engine/eng_standin.c); without it each
 * point runs its own. */
static void standins_open(struct runner *r)
{
    r->standin_dir = xasprintf("%s/.standins", r->dir);
    if (fs_remove_tree(r->standin_dir) != 0 ||
        fs_mkdirs(r->standin_dir) != 0) {
        free(r->standin_dir);
        r->standin_dir = NULL;
    }
}

static void standins_close(struct runner *r)
{
    if (r->standin_dir)
        fs_remove_tree(r->standin_dir);
    free(r->standin_dir);
    r->standin_dir = NULL;
}

/* Resumed points, then the list of points to run; returns its length. */
static int plan(struct runner *r, int *todo)
{
    int n = 0;
    for (int i = 0; i < r->sp->npoints; i++)
        if (sweep_shard_owns(r->shard, r->nshards, i) && !(r->resume && load_previous(r, i)))
            todo[n++] = i;
    if (r->resume)
        fprintf(stderr, "resume: %d of %d points already done, %d to run\n", r->ndone, r->nmine,
                n);
    return n;
}

static void print_result(struct runner *r, double wall_s)
{
    if (r->tty)
        fputs("\r\033[K", stderr);
    if (r->nshards)
        printf("shard %d/%d of ", r->shard, r->nshards);
    printf("sweep %s: %d of %d points (%d ok, %d infeasible, %d failed) in %.1f s with -j %d\n",
           r->sp->name, r->ndone, r->nmine, r->count[TABLE_OK], r->count[TABLE_INFEASIBLE],
           r->count[TABLE_FAILED], wall_s, r->jobs);
    int best = -1;
    bool by = table_rank_by_train(r->rows, r->sp->npoints, r->done);
    for (int i = 0; i < r->sp->npoints; i++)
        if (r->done[i] && r->rows[i].status == TABLE_OK &&
            (best < 0 || table_rank_value(&r->rows[i], by) < table_rank_value(&r->rows[best], by)))
            best = i;
    if (best >= 0 && !r->rows[best].has_serving) { /* serving: sweep_serve_print */
        char tm[32];
        table_format_time(tm, sizeof tm, r->rows[best].time_s);
        printf("best: point %d, %s, bound %s", best, tm, r->rows[best].bound);
        if (by) {
            table_format_time(tm, sizeof tm, r->rows[best].time_to_train_s);
            printf(", time to train %s (ranked by it)", tm);
        }
        int d = r->default_point;
        if (d == best)
            printf(" (the default point)");
        else if (d >= 0 && r->done[d] && r->rows[d].status == TABLE_OK && r->rows[best].time_s > 0)
            printf("; %.2fx the speed of the default (point %d)",
                   table_rank_value(&r->rows[d], by) / table_rank_value(&r->rows[best], by), d);
        printf("\n");
    }
    sweep_serve_print(r->sp, r->rows, r->done);
    char shard[64] = "";
    if (r->nshards)
        snprintf(shard, sizeof shard, " --shard %d/%d", r->shard, r->nshards);
    if (!r->wrote) /* never claim a write that failed (a full disk): the messages said which */
        fprintf(stderr, "tpusim sweep: the outputs in %s are incomplete: see the messages above\n",
                r->dir);
    else if (r->nshards)
        printf("wrote %s/shard.json and %s/points: join the %d shards with `tpusim sweep merge "
               "OUT DIR...`\n",
               r->dir, r->dir, r->nshards);
    else
        printf("wrote %s/report.html, report.md, sweep.csv, sweep.json and the plots\n", r->dir);
    if (r->stop)
        printf("interrupted: run `tpusim sweep %s%s -o %s --resume` to finish\n", r->sp->file,
               shard, r->dir);
}

/* Claims the output directory (study/sweep_dir.c) and writes an inline base
 * into it. Returns 0 with the directory locked, or the exit status. */
static int prepare_dir(struct runner *r)
{
    enum sweep_reuse reuse = r->resume  ? SWEEP_REUSE_RESUME
                             : r->force ? SWEEP_REUSE_FORCE
                                        : SWEEP_REUSE_NONE;
    const char **keys = xcalloc((size_t)r->sp->nkeys + 1, sizeof *keys);
    for (int k = 0; k < r->sp->nkeys; k++)
        keys[k] = r->sp->keys[k].path;
    struct sweep_ident id = {r->sp->name, r->sp->nkeys, keys, r->shard, r->nshards};
    int rc = sweep_dir_claim(r->dir, reuse, "use --resume to finish an interrupted sweep", &id,
                             &r->lock);
    free(keys);
    if (rc != 0)
        return rc;
    if (r->resume)
        sweep_dir_prune(r->dir, r->sp->npoints);
    if (!r->sp->base_inline)
        return 0;
    char *bp = xasprintf("%s/base.yaml", r->dir);
    rc = sweep_spec_write_base(r->sp, bp);
    if (rc != 0)
        fprintf(stderr, "tpusim sweep: cannot write %s: %s\n", bp, strerror(errno));
    free(bp);
    if (rc != 0)
        sweep_dir_unlock(&r->lock);
    return rc != 0;
}

/* SIGINT, SIGTERM and SIGCHLD are only ever taken by sigtimedwait() while points run. */
static void block_signals(struct runner *r, bool block)
{
    if (block) {
        sigemptyset(&r->waitset);
        sigaddset(&r->waitset, SIGINT);
        sigaddset(&r->waitset, SIGTERM);
        sigaddset(&r->waitset, SIGCHLD);
        sigprocmask(SIG_BLOCK, &r->waitset, &r->oldmask);
        return;
    }
    poll_signals(r, 0);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&r->waitset, NULL, &zero) > 0) /* drop pending SIGCHLDs */
        ;
    sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
}

static int run_sweep(struct runner *r)
{
    int rc = prepare_dir(r);
    if (rc != 0)
        return rc;
    r->parent = getpid();
    r->base_desc = r->sp->base_inline ? xasprintf("base.yaml (inline in %s)", r->sp->file)
                                      : xstrdup(r->sp->base_path);
    r->command = sweep_command(r->sp);
    int n = r->sp->npoints;
    r->rows = xcalloc((size_t)n, sizeof *r->rows);
    r->done = xcalloc((size_t)n, sizeof *r->done);
    r->probe = xcalloc((size_t)n, sizeof *r->probe);
    r->default_point = r->sp->default_point;
    for (int i = 0; i < n; i++)
        r->nmine += sweep_shard_owns(r->shard, r->nshards, i);
    r->tty = isatty(STDERR_FILENO);
    r->note_s = sweep_progress_interval_s();
    block_signals(r, true);
    r->t0 = r->noted = progress_now_s();
    int *todo = xcalloc((size_t)n, sizeof *todo);
    r->ntodo = plan(r, todo);
    standins_open(r);
    run_list(r, todo, r->ntodo, false);
    if (!r->stop && !r->broken)
        keep_traces(r);
    standins_close(r);
    rc = write_outputs(r) != 0 || r->broken ? 1 : 0;
    block_signals(r, false);
    sweep_dir_unlock(&r->lock);
    print_result(r, progress_now_s() - r->t0);
    for (int i = 0; i < n; i++)
        if (r->done[i])
            table_row_fini(&r->rows[i], r->sp->nkeys);
    free(todo);
    free(r->base_desc);
    free(r->command);
    free(r->rows);
    free(r->done);
    free(r->probe);
    return r->stop ? 128 + r->stop : rc;
}

int sweep_run(const char *spec, const struct sweep_opts *o)
{
    struct runner r;
    memset(&r, 0, sizeof r);
    r.jobs = o->jobs;
    r.resume = o->resume;
    r.force = o->force;
    r.shard = o->shard;
    r.nshards = o->nshards;
    r.sg_argc = o->sg_argc;
    r.sg_argv = o->sg_argv;
    r.serve_point = o->serve_point;
    /* the lock of a directory given with -o comes first: a second sweep or run into it is
     * refused from the start, not once the spec and its base are read */
    r.lock = (struct sweep_lock){-1, NULL};
    bool made = o->out_dir && !fs_exists(o->out_dir);
    if (o->out_dir && fs_mkdirs(o->out_dir) != 0) {
        fprintf(stderr, "tpusim sweep: cannot create %s: %s\n", o->out_dir, strerror(errno));
        return 1;
    }
    if (o->out_dir && sweep_dir_lock(o->out_dir, &r.lock) != 0)
        return 1;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc;
    if (sweep_spec_load(spec, o->sets, o->nsets, &sp, d) != 0) {
        diag_print(d, stderr);
        sweep_dir_unlock(&r.lock);
        if (made)
            rmdir(o->out_dir); /* only if empty */
        rc = 2;
    } else {
        r.sp = &sp;
        r.dir = o->out_dir  ? xstrdup(o->out_dir)
                : o->nshards ? xasprintf("out/%s-shard-%d-of-%d", sp.name, o->shard, o->nshards)
                             : xasprintf("out/%s", sp.name);
        rc = run_sweep(&r);
        free(r.dir);
    }
    sweep_spec_fini(&sp);
    diag_free(d);
    return rc;
}
