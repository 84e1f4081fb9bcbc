/* tests/unit/sim_fork.h -- run a scenario on SimGrid in a child process
 * (SimGrid runs once per process) and bring back its summary. Include after
 * test_util.h; the functions are static so each test file gets its own copy. */
#ifndef TPUSIM_TESTS_SIM_FORK_H
#define TPUSIM_TESTS_SIM_FORK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "study/autotune.h"
#include "config/cfg.h"
#include "engine/sim.h"
#include "engine/spmd.h"
#include "engine/validate.h"

#define MAXOPS 8

struct result {
    int rc;
    int nops;
    double start[MAXOPS], end[MAXOPS], flops[MAXOPS], hbm[MAXOPS], ici[MAXOPS], dcn[MAXOPS];
    int64_t steps[MAXOPS], dmas[MAXOPS], runs[MAXOPS], compute_steps[MAXOPS];
    double trans[MAXOPS], vmem[MAXOPS], mxu_s[MAXOPS], vpu_s[MAXOPS], overhead_s[MAXOPS];
    char bound[MAXOPS][16];
    double peak[MAXOPS];       /* the summary's peak_frac */
    double time[MAXOPS];       /* the summary's time_s: summed over instances */
    int64_t instances[MAXOPS];
    double total;
    double cat[CAT_COUNT];     /* chip 0's time by category */
    int npath;                 /* critical path: ops and their instances on it */
    char path[MAXOPS][32];
    int64_t path_inst[MAXOPS];
    double est_memory;         /* validate_estimate_memory() of the scenario */
    long maxrss_kb;            /* the child's peak resident memory */
    int auto_rc;               /* autotune_resolve's code */
    int64_t auto_v[MAXOPS][TUNE_MAX_PARAMS]; /* blocks `block: auto` chose */
    bool auto_tuned[MAXOPS], auto_cached[MAXOPS];
    int auto_ntimed[MAXOPS];
    double auto_time[MAXOPS], auto_default[MAXOPS];
    struct autotune_stats auto_stats;
    /* explanations (engine/explain.h) */
    char runner_up[MAXOPS][16];
    double useful[MAXOPS];     /* useful_hbm_bytes */
    struct summary_core_work core[MAXOPS][SUMMARY_MAX_CORES];
    int nsub[MAXOPS];
    struct summary_sub sub[MAXOPS][SUMMARY_MAX_SUB];
    struct summary_coll coll[MAXOPS];
    int ntc;
    struct summary_tc tc[SUMMARY_MAX_CORES];
    char err[512];
};

/* The runs' sim_opts.standin_dir (NULL: none), as a sweep's points have theirs. */
static const char *sim_fork_standin_dir;
/* ... and sim_opts.standin_trust */
static bool sim_fork_standin_trust;

static char *write_tmp(const char *yaml)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tpusim-test-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(yaml, f);
    fclose(f);
    return path;
}

static void child(const char *path, const char *const *sets, int nsets, struct result *r)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    r->rc = 2;
    if (cfg_load_scenario(path, sets, nsets, &sc, d) == 0) {
        spmd_fold(&sc, sc.all_chips);
        char *flags = getenv("TPUSIM_SIMFLAGS");
        char *argv[1] = {flags};
        struct autotune_cache *cache = autotune_cache_new();
        struct autotune_opts ao = {.sg_argc = flags && *flags ? 1 : 0, .sg_argv = argv};
        r->auto_rc = autotune_resolve(&sc, cache, &ao, d);
        autotune_stats(cache, &r->auto_stats);
        autotune_cache_free(cache);
        for (int i = 0; sc.plan.tuned && i < sc.nops && i < MAXOPS; i++) {
            memcpy(r->auto_v[i], sc.plan.tuned[i].v, sizeof r->auto_v[i]);
            r->auto_tuned[i] = sc.plan.tuned[i].tuned, r->auto_cached[i] = sc.plan.tuned[i].cached;
            r->auto_ntimed[i] = sc.plan.tuned[i].ntimed;
            r->auto_time[i] = sc.plan.tuned[i].time_s, r->auto_default[i] = sc.plan.tuned[i].default_s;
        }
        r->est_memory = validate_estimate_memory(&sc);
        /* a run writes its outputs (a real run's peak memory includes them) */
        char dir[64];
        snprintf(dir, sizeof dir, "/tmp/tpusim-test-out-%d", (int)getpid());
        struct sim_opts o = {.sg_argc = flags && *flags ? 1 : 0, .sg_argv = argv, .out_dir = dir,
                             .standin_dir = sim_fork_standin_dir,
                             .standin_trust = sim_fork_standin_trust};
        struct summary s = {0};
        r->rc = r->auto_rc ? r->auto_rc : sim_run(&sc, &o, &s, d);
        r->nops = s.nops;
        for (int i = 0; i < s.nops && i < MAXOPS; i++) {
            r->start[i] = s.ops[i].start_s, r->end[i] = s.ops[i].end_s;
            r->flops[i] = s.ops[i].flops, r->hbm[i] = s.ops[i].hbm_bytes;
            r->ici[i] = s.ops[i].ici_bytes, r->steps[i] = s.ops[i].grid_steps;
            r->dcn[i] = s.ops[i].dcn_bytes;
            r->dmas[i] = s.ops[i].dmas, r->runs[i] = s.ops[i].coalesced_runs;
            r->compute_steps[i] = s.ops[i].compute_steps;
            r->trans[i] = s.ops[i].transcendentals, r->vmem[i] = (double)s.ops[i].vmem_peak_bytes;
            r->mxu_s[i] = s.ops[i].mxu_s, r->vpu_s[i] = s.ops[i].vpu_s;
            r->peak[i] = s.ops[i].peak_frac;
            r->overhead_s[i] = s.ops[i].overhead_s;
            snprintf(r->bound[i], sizeof r->bound[i], "%s", bound_name(s.ops[i].bound));
            r->time[i] = s.ops[i].time_s, r->instances[i] = s.ops[i].instances;
            snprintf(r->runner_up[i], sizeof r->runner_up[i], "%s", bound_name(s.ops[i].runner_up));
            memcpy(r->core[i], s.ops[i].core, sizeof r->core[i]);
            r->useful[i] = s.ops[i].useful_bytes;
            r->nsub[i] = s.ops[i].nsub;
            for (int k = 0; k < s.ops[i].nsub; k++)
                r->sub[i][k] = s.ops[i].sub[k];
            r->coll[i] = s.ops[i].coll;
        }
        r->ntc = s.ntc;
        memcpy(r->tc, s.tc, sizeof r->tc);
        r->total = s.total_time_s;
        memcpy(r->cat, s.cat_s, sizeof r->cat);
        r->npath = s.npath;
        for (int i = 0; i < s.npath && i < MAXOPS; i++) {
            snprintf(r->path[i], sizeof r->path[i], "%s", s.path[i].name);
            r->path_inst[i] = s.path[i].instances;
        }
        summary_fini(&s);
        cfg_scenario_fini(&sc);
        char *rm = xasprintf("rm -rf '%s'", dir);
        if (system(rm) != 0)
            r->rc = 1;
        free(rm);
    }
    if (diag_count(d))
        snprintf(r->err, sizeof r->err, "%s", diag_message(d, 0));
    diag_free(d);
}

/* Runs 'yaml' (with --set overrides) in a child process. */
static struct result run(const char *yaml, const char *const *sets, int nsets)
{
    struct result r;
    memset(&r, 0, sizeof r);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    char *path = write_tmp(yaml);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        child(path, sets, nsets, &r);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    r.maxrss_kb = ru.ru_maxrss;
    unlink(path);
    assert_int_equal(got, (ssize_t)sizeof r);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (r.rc != 0 && r.err[0])
        print_message("run: rc %d: %s\n", r.rc, r.err);
    return r;
}

__attribute__((unused)) static void assert_time(double got, double want)
{
    if (fabs(got - want) > 1e-12 + 1e-9 * fabs(want)) {
        print_error("time %.12g s, want %.12g s\n", got, want);
        fail();
    }
}


#endif
