/* cli/cmd_sweep.c -- `tpusim sweep SWEEP.yaml [-o DIR] [-j N] [--resume | --force] [--set ..]
 * [--shard I/N]` and `tpusim sweep merge OUT DIR...`: arguments only; the
 * runner is study/sweep.c, the merge study/sweep_merge.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "cli/cli.h"
#include "serving/serve_run.h"
#include "study/sweep.h"

static const char usage_text[] =
    "usage: tpusim sweep SWEEP.yaml [-o DIR] [-j N] [--resume | --force] [--set key.path=value]...\n"
    "                   [--shard I/N]\n"
    "  runs every point of a sweep spec in parallel processes; writes DIR/sweep.csv,\n"
    "  DIR/sweep.json, DIR/report.md, DIR/plot_<key>.svg (and DIR/heatmap.svg for two keys)\n"
    "  and DIR/points/NNNN/summary.json (DIR defaults to out/<sweep name>); a serve:\n"
    "  scenario's sweep: its serving columns and DIR/latency_throughput.svg\n"
    "  -j N       points run at once (default: the number of online CPUs)\n"
    "  --set key.path=value   edit the base scenario (before every point's values)\n"
    "  --resume   keep the points already done with the same values\n"
    "  --force    replace an earlier sweep's files in DIR (a non-empty DIR is refused\n"
    "             without --resume or --force)\n"
    "  --shard I/N  run only the points i with i % N == I (I from 0), into DIR\n"
    "             (default out/<sweep name>-shard-I-of-N); writes DIR/shard.json\n"
    "usage: tpusim sweep merge OUT DIR... [--force]\n"
    "  joins the N shard directories of one sweep into OUT: the same tables, report,\n"
    "  plots and traces as one run of the whole sweep\n"
    "usage: tpusim compare A B\n"
    "  A and B: summary.json or sweep.json files, or directories holding one\n";
static int parse_jobs(const char *s, int *jobs)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > SWEEP_MAX_JOBS)
        return -1;
    *jobs = (int)v;
    return 0;
}

/* "I/N" into o->shard and o->nshards. */
static int parse_shard(const char *s, struct sweep_opts *o)
{
    char *end, *end2;
    long i = strtol(s, &end, 10);
    if (end == s || *end != '/')
        return -1;
    long n = strtol(end + 1, &end2, 10);
    if (end2 == end + 1 || *end2 || n < 1 || n > 100000 || i < 0 || i >= n)
        return -1;
    o->shard = (int)i;
    o->nshards = (int)n;
    return 0;
}

static int sweep_usage(const char *msg)
{
    fprintf(stderr, "tpusim sweep: %s\n%s", msg, usage_text);
    return 2;
}

static int parse_sweep_args(int argc, char **argv, struct sweep_opts *o, const char **spec)
{
    static const struct option longs[] = {
        {"out", required_argument, 0, 'o'}, {"jobs", required_argument, 0, 'j'},
        {"resume", no_argument, 0, 'r'},    {"force", no_argument, 0, 'f'},
        {"set", required_argument, 0, 's'}, {"sg", required_argument, 0, 'g'},
        {"shard", required_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},      {0, 0, 0, 0}};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cpus < 1 ? 1 : cpus > SWEEP_MAX_JOBS ? SWEEP_MAX_JOBS : (int)cpus;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:j:s:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'o':
            o->out_dir = optarg;
            break;
        case 'j':
            if (parse_jobs(optarg, &o->jobs) != 0)
                return sweep_usage("-j takes a number of processes from 1 to 1024");
            break;
        case 'r':
            o->resume = true;
            break;
        case 'f':
            o->force = true;
            break;
        case 's':
            o->sets = xrealloc(o->sets, sizeof *o->sets * (size_t)(o->nsets + 1));
            o->sets[o->nsets++] = optarg;
            break;
        case 'S':
            if (parse_shard(optarg, o) != 0)
                return sweep_usage("--shard takes I/N: shard I (0 to N-1) of N, N at most 100000");
            break;
        case 'g':
            o->sg_argv = xrealloc(o->sg_argv, sizeof(char *) * (size_t)(o->sg_argc + 1));
            o->sg_argv[o->sg_argc++] = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default:
            return sweep_usage("bad option");
        }
    }
    if (o->resume && o->force)
        return sweep_usage("--resume keeps an earlier sweep's points, --force removes them: "
                           "pick one");
    if (optind + 1 != argc)
        return sweep_usage(optind < argc ? "too many arguments" : "missing SWEEP.yaml");
    *spec = argv[optind];
    return 0;
}

/* `tpusim sweep merge OUT DIR... [--force]` */
static int cmd_merge(int argc, char **argv)
{
    static const struct option longs[] = {
        {"force", no_argument, 0, 'f'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool force = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (ch == 'h') {
            fputs(usage_text, stdout);
            return 0;
        }
        if (ch != 'f')
            return sweep_usage("bad option");
        force = true;
    }
    if (argc - optind < 2)
        return sweep_usage("merge takes OUT and the shard directories");
    return sweep_merge(argv[optind], argv + optind + 1, argc - optind - 1, force);
}

/* A serving point of a sweep: serving/serve_run.h into the point's directory. */
static int serve_point(const struct cfg_scenario *sc, const char *out_dir, int sg_argc,
                       char **sg_argv, struct diag *d)
{
    struct serve_run_opts so = {.out_dir = out_dir, .sg_argc = sg_argc, .sg_argv = sg_argv};
    return serve_run(sc, &so, d);
}

int cmd_sweep(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return cmd_merge(argc - 1, argv + 1);
    struct sweep_opts o;
    memset(&o, 0, sizeof o);
    const char *spec = NULL;
    int rc = parse_sweep_args(argc, argv, &o, &spec);
    o.serve_point = serve_point;
    if (rc == 0)
        rc = sweep_run(spec, &o);
    free(o.sg_argv);
    free(o.sets);
    return rc < 0 ? 0 : rc;
}
