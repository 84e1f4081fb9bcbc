/* cli/cmd_run.c -- `tpusim run`, `check` and `platform`: the commands that
 * take a scenario, with --set overrides and the resource-guard flags (check
 * also takes a sweep spec, told apart by its top-level keys). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/fmt.h"
#include "base/fsutil.h"
#include "base/units.h"
#include "base/xalloc.h"
#include "study/autotune.h"
#include "config/cfg.h"
#include "cli/cli.h"
#include "engine/outputs.h"
#include "engine/sim.h"
#include "study/sweep.h"
#include "study/train_eval.h"
#include "engine/validate.h"
#include "engine/spmd.h"
#include "serving/serve_run.h"

#define MAX_MEMORY_BYTES 1125899906842624.0 /* 1 PiB: more than any host has */

struct cli {
    const char *scenario;
    const char *out_dir;
    const char **sets;
    int nsets;
    int64_t max_steps;
    double max_memory;
    bool quiet;
    char **sg_argv;
    int sg_argc;
    struct sim_opts trace; /* the --trace* flags */
    char *command;         /* owned: the command line, shell-quoted (report.html) */
    const char *hlo, *chip, *topology; /* --hlo FILE --chip CHIP --topology AxB */
    char *hlo_text, *hlo_file;         /* owned: the scenario they make (cli/cli_hlo.c) */
};

/* Loads the scenario: the file named, or the one --hlo made. */
static int load_scenario(const struct cli *c, struct cfg_scenario *sc, struct diag *d)
{
    if (c->hlo_text)
        return cfg_load_scenario_text(c->hlo_text, strlen(c->hlo_text), c->hlo_file, c->sets,
                                      c->nsets, sc, d);
    return cfg_load_scenario(c->scenario, c->sets, c->nsets, sc, d);
}

/* argv as one shell command line: "tpusim run ..." with each word that
 * needs it in single quotes. New string. */
static char *command_line(int argc, char **argv)
{
    char *s = xstrdup("tpusim");
    for (int i = 0; i < argc; i++) {
        char *w = fmt_shell_word(argv[i]);
        char *n = xasprintf("%s %s", s, w);
        free(w);
        free(s);
        s = n;
    }
    return s;
}

static void add_set(struct cli *c, const char *s)
{
    c->sets = xrealloc(c->sets, sizeof *c->sets * (size_t)(c->nsets + 1));
    c->sets[c->nsets++] = s;
}

/* Parses "START:END" durations ("10ms:20ms", ":5ms", "1ms:"). Returns 0 or -1. */
static int parse_window(const char *s, double *t0, double *t1)
{
    const char *colon = strchr(s, ':');
    if (!colon)
        return -1;
    char *a = xasprintf("%.*s", (int)(colon - s), s);
    *t0 = 0, *t1 = 1e300;
    int rc = 0;
    if (*a && strcmp(a, "0") != 0 && units_parse(a, UNITS_TIME, t0) != 0)
        rc = -1; /* "0" needs no unit */
    if (colon[1] && units_parse(colon + 1, UNITS_TIME, t1) != 0)
        rc = -1;
    free(a);
    return rc == 0 && *t0 >= 0 && *t1 > *t0 ? 0 : -1;
}

/* One of --trace, --trace-chips, --trace-window, --trace-max-events. Returns 0 or 2. */
static int parse_trace_flag(int ch, const char *arg, struct sim_opts *o)
{
    if (ch == 'T') {
        enum trace_level l;
        if (trace_level_parse(arg, &l) != 0)
            return cli_usage_error("--trace takes none, ops, units or steps");
        o->trace = l; /* run applies it as --set options.trace=LEVEL */
    } else if (ch == 'C') {
        o->trace_chips = arg; /* checked against the slice by the run */
    } else if (ch == 'W') {
        if (parse_window(arg, &o->trace_t0_s, &o->trace_t1_s) != 0)
            return cli_usage_error("--trace-window takes START:END durations like 10ms:20ms "
                                   "(either may be left out; END after START)");
        o->trace_window = true;
    } else {
        char *end;
        errno = 0;
        long long n = strtoll(arg, &end, 10);
        if (end == arg || *end || errno == ERANGE || n < 1)
            return cli_usage_error("--trace-max-events takes an integer of at least 1");
        o->max_trace_events = (size_t)n;
    }
    return 0;
}

/* Parses the options of run/check/platform. Returns 0, or 2 on a usage error. */
static int parse_args(int argc, char **argv, struct cli *c, char **fid)
{
    static const struct option longs[] = {{"out", required_argument, 0, 'o'},
                                          {"set", required_argument, 0, 's'},
                                          {"fidelity", required_argument, 0, 'f'},
                                          {"max-steps", required_argument, 0, 'm'},
                                          {"max-memory", required_argument, 0, 'M'},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"all-chips", no_argument, 0, 'A'},
                                          {"no-kernel-memo", no_argument, 0, 'K'},
                                          {"sg", required_argument, 0, 'g'},
                                          {"trace", required_argument, 0, 'T'},
                                          {"trace-chips", required_argument, 0, 'C'},
                                          {"trace-window", required_argument, 0, 'W'},
                                          {"trace-max-events", required_argument, 0, 'E'},
                                          {"hlo", required_argument, 0, 'H'},
                                          {"chip", required_argument, 0, 'c'},
                                          {"topology", required_argument, 0, 't'},
                                          {0, 0, 0, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:qs:", longs, NULL)) != -1) {
        switch (ch) {
        case 'o':
            c->out_dir = optarg;
            break;
        case 's':
            add_set(c, optarg);
            break;
        case 'f':
            if (strcmp(optarg, "fast") != 0 && strcmp(optarg, "exact") != 0)
                return cli_usage_error("--fidelity takes fast or exact");
            *fid = xasprintf("options.fidelity=%s", optarg);
            add_set(c, *fid);
            break;
        case 'm': {
            char *end;
            errno = 0;
            c->max_steps = strtoll(optarg, &end, 10);
            if (end == optarg || *end || errno == ERANGE || c->max_steps < 1)
                return cli_usage_error("--max-steps takes an integer from 1 to "
                                       "9223372036854775807");
            break;
        }
        case 'M':
            if (units_parse(optarg, UNITS_BYTES, &c->max_memory) != 0 || !(c->max_memory > 0) ||
                c->max_memory > MAX_MEMORY_BYTES)
                return cli_usage_error("--max-memory takes a size like 20GiB (at most 1PiB)");
            break;
        case 'A':
            add_set(c, "options.all_chips=true");
            break;
        case 'K':
            add_set(c, "options.kernel_memo=false");
            break;
        case 'q':
            c->quiet = true;
            break;
        case 'T':
        case 'C':
        case 'W':
        case 'E':
            if (parse_trace_flag(ch, optarg, &c->trace) != 0)
                return 2;
            if (ch == 'T')
                add_set(c, strcmp(optarg, "none") == 0    ? "options.trace=none"
                           : strcmp(optarg, "ops") == 0   ? "options.trace=ops"
                           : strcmp(optarg, "units") == 0 ? "options.trace=units"
                                                          : "options.trace=steps");
            break;
        case 'H':
            c->hlo = optarg;
            break;
        case 'c':
            c->chip = optarg;
            break;
        case 't':
            c->topology = optarg;
            break;
        case 'g':
            c->sg_argv = xrealloc(c->sg_argv, sizeof(char *) * (size_t)(c->sg_argc + 1));
            c->sg_argv[c->sg_argc++] = optarg;
            break;
        default:
            return cli_usage_error("bad option");
        }
    }
    if (optind < argc)
        c->scenario = argv[optind++];
    if (optind < argc)
        return cli_usage_error("too many arguments");
    if ((c->chip || c->topology) && !c->hlo)
        return cli_usage_error("--chip and --topology go with --hlo FILE");
    if (c->hlo && c->scenario)
        return cli_usage_error("--hlo FILE stands for the scenario: give one of them");
    if (c->hlo) {
        c->hlo_text = cli_hlo_scenario(c->hlo, c->chip ? c->chip : "v5e", c->topology,
                                       &c->hlo_file);
        if (!c->hlo_text)
            return 2;
        c->scenario = c->hlo_file;
    }
    return 0;
}

/* Gives the `block: auto` ops of the loaded scenario their blocks; '*st'
 * (may be NULL) gets what the search took. Frees 'sc' on failure. */
static int resolve_blocks(struct cli *c, struct cfg_scenario *sc, struct diag *d,
                          struct autotune_stats *st)
{
    spmd_fold(sc, sc->all_chips);
    struct autotune_cache *cache = autotune_cache_new();
    struct autotune_opts ao = {.sg_argc = c->sg_argc, .sg_argv = c->sg_argv};
    int rc = autotune_resolve(sc, cache, &ao, d);
    if (st)
        autotune_stats(cache, st);
    autotune_cache_free(cache);
    if (rc != 0) {
        diag_print(d, stderr);
        cfg_scenario_fini(sc);
    }
    return rc;
}

/* Loads the scenario and gives its `block: auto` ops their blocks. */
static int load(struct cli *c, struct cfg_scenario *sc, struct diag *d, struct autotune_stats *st)
{
    if (load_scenario(c, sc, d) != 0) {
        diag_print(d, stderr);
        return 2;
    }
    return resolve_blocks(c, sc, d, st);
}

/* A run's output directory, locked before any work. */
struct out_lock {
    char *dir; /* owned */
    int fd;    /* -1: not held */
    bool made; /* the run made the directory */
};

/* Makes and locks 'dir'. Returns 0, or 1 after printing why not (busy). */
static int lock_out(struct out_lock *lk, const char *dir, struct diag *d)
{
    lk->dir = xstrdup(dir);
    lk->made = !fs_exists(dir);
    lk->fd = outputs_dir_lock(dir, d);
    if (lk->fd >= 0)
        return 0;
    diag_print(d, stderr);
    return 1;
}

/* Drops the lock; a directory the run made stays only when it wrote to it ('rc' 0). */
static void unlock_out(struct out_lock *lk, int rc)
{
    if (!lk->dir)
        return;
    fs_dir_unlock(lk->dir, lk->fd);
    if (rc != 0 && lk->made)
        rmdir(lk->dir); /* only if empty */
    free(lk->dir);
    lk->dir = NULL;
}

/* A serving run's trace as the --trace flags and options.trace ask. */
static struct serve_trace_opts serve_trace_opts_of(const struct cli *c,
                                                   const struct cfg_scenario *sc)
{
    return (struct serve_trace_opts){.level = (enum trace_level)sc->trace_level,
                                     .level_set = sc->trace_level_set,
                                     .max_events = c->trace.max_trace_events,
                                     .window = c->trace.trace_window,
                                     .window_t0_s = c->trace.trace_t0_s,
                                     .window_t1_s = c->trace.trace_t1_s};
}

static int run_scenario(struct cli *c)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct out_lock lk = {NULL, -1, false};
    /* the lock comes first: a second run into the directory is refused from the start; the
     * default directory (out/NAME) is known once the scenario is read, before the block search */
    int rc = c->out_dir ? lock_out(&lk, c->out_dir, d) : 0;
    if (rc == 0 && load_scenario(c, &sc, d) != 0) {
        diag_print(d, stderr);
        rc = 2;
    }
    if (rc == 0 && !c->out_dir) {
        char *def = xasprintf("out/%s", sc.name);
        if ((rc = lock_out(&lk, def, d)) != 0)
            cfg_scenario_fini(&sc);
        free(def);
    }
    if (rc == 0 && sc.serve) { /* a serving run: its steps are searched and run one by one */
        struct serve_run_opts so = {.out_dir = lk.dir, .sg_argc = c->sg_argc,
                                    .sg_argv = c->sg_argv, .quiet = c->quiet,
                                    .trace = serve_trace_opts_of(c, &sc)};
        if (c->trace.trace_chips) {
            diag_error(d, NULL, "--trace-chips", "a serving run's trace has no chips (its "
                       "processes are the engine's replicas): leave the flag out");
            rc = 2;
        } else {
            rc = serve_run(&sc, &so, d);
        }
        diag_print(d, stderr);
        cfg_scenario_fini(&sc);
        unlock_out(&lk, rc);
        diag_free(d);
        return rc;
    }
    if (rc == 0)
        rc = resolve_blocks(c, &sc, d, NULL);
    if (rc == 0) {
        struct sim_opts eo = {.sg_argc = c->sg_argc, .sg_argv = c->sg_argv,
                              .max_steps = c->max_steps, .max_memory_bytes = c->max_memory};
        if ((rc = train_eval_step(&sc, &eo, d)) != 0) {
            diag_print(d, stderr);
            cfg_scenario_fini(&sc);
        }
    }
    if (rc == 0) {
        char *dir = xstrdup(lk.dir);
        struct sim_opts o = c->trace;
        o.out_dir = dir, o.out_locked = true, o.sg_argc = c->sg_argc, o.sg_argv = c->sg_argv;
        o.max_steps = c->max_steps, o.max_memory_bytes = c->max_memory;
        o.command = c->command;
        o.estimate_to = c->quiet ? NULL : stderr, o.announce_s = SIM_ANNOUNCE_S;
        struct summary s = {0};
        rc = sim_run(&sc, &o, &s, d);
        if (rc == 0 && !c->quiet) {
            summary_print_table(&s, stdout);
            summary_print_trace(&s, dir, stdout);
        } else if (rc == 0 && s.trace.st.dropped) { /* said even with --quiet */
            summary_print_trace(&s, dir, stderr);
        }
        diag_print(d, stderr);
        summary_fini(&s);
        free(dir);
        cfg_scenario_fini(&sc);
    }
    unlock_out(&lk, rc);
    diag_free(d);
    return rc;
}

static int check_scenario(struct cli *c, bool platform)
{
    struct validate_limits lim = {c->max_steps, c->max_memory, NULL};
    if (!platform && !c->hlo_text && sweep_spec_detect(c->scenario))
        return sweep_check(c->scenario, c->sets, c->nsets, &lim);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    struct autotune_stats st;
    int rc = load(c, &sc, d, &st);
    if (rc == 0) {
        /* check refuses whatever run would refuse before it starts */
        if (platform ? validate_prebuild(&sc, &lim, d) != 0 || validate_ops(&sc, d) != 0
                     : validate_scenario(&sc, &lim, d) != 0) {
            diag_print(d, stderr);
            rc = 2;
        } else if (platform) {
            rc = outputs_platform(&sc, stdout) ? 1 : 0;
        } else {
            struct validate_estimate e;
            validate_estimate(&sc, &e);
            printf("%s: ok (%d ops, %d chips", sc.file, sc.nops, cfg_total_chips(&sc));
            if (sc.dcn.slices > 1)
                printf(" in %d slices of %d", sc.dcn.slices, sc.topo.nchips);
            printf(", %lld grid steps", (long long)e.grid_steps);
            if (e.copy_chunks)
                printf(", %lld copy chunks", (long long)e.copy_chunks);
            char about[96];
            printf("; an estimated %lld steps of work, limit %lld; %s to run here)\n",
                   (long long)e.work, (long long)(lim.max_steps ? lim.max_steps : sc.max_steps),
                   validate_estimate_text(&e, about, sizeof about));
            autotune_print(&sc, stdout);
            if (st.ops)
                printf("block: auto: %d ops, %d searches, %d runs of candidates, %d of %d "
                       "feasible candidates bounded, %.3f s\n",
                       st.ops, st.searches, st.runs, st.bounds, st.feasible, st.wall_s);
        }
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
    return rc;
}

enum mode { MODE_RUN, MODE_CHECK, MODE_PLATFORM };

/* Parses the arguments of a scenario command and runs it. */
static int scenario_command(int argc, char **argv, enum mode mode)
{
    struct cli c = {0};
    char *fid = NULL;
    c.command = command_line(argc, argv);
    int rc = parse_args(argc, argv, &c, &fid);
    if (rc == 0 && mode != MODE_RUN && !c.scenario)
        rc = cli_usage_error("missing SCENARIO");
    if (rc == 0)
        rc = mode == MODE_RUN ? run_scenario(&c) : check_scenario(&c, mode == MODE_PLATFORM);
    free(c.sets);
    free(c.sg_argv);
    free(c.command);
    free(c.hlo_text);
    free(c.hlo_file);
    free(fid);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    return scenario_command(argc, argv, MODE_RUN);
}

int cmd_check(int argc, char **argv)
{
    return scenario_command(argc, argv, MODE_CHECK);
}

int cmd_platform(int argc, char **argv)
{
    return scenario_command(argc, argv, MODE_PLATFORM);
}
