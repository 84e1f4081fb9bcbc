/* cli/cmd_plan.c -- `tpusim plan PLAN.yaml [-o DIR] [-j N] [--resume | --force]
 * [--shard I/N] [--chips N | --budget-usd-per-hour X] [--generation G]
 * [--rank-by K] [--dry-run]`: arguments only; the planner is study/plan.h. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "study/plan.h"
#include "study/sweep.h"

static const char usage_text[] =
    "usage: tpusim plan PLAN.yaml [-o DIR] [-j N] [--resume | --force] [--shard I/N]\n"
    "                  [--chips N | --budget-usd-per-hour X] [--generation G]\n"
    "                  [--rank-by step_time|mfu|usd_per_million_tokens|time_to_train]\n"
    "                  [--dry-run]\n"
    "  enumerates the legal slices, multislice splits, meshes, remat policies and\n"
    "  batches of a plan spec's model step, prunes what does not fit in HBM, simulates\n"
    "  the rest as a sweep (DIR/sweep) and ranks them; writes DIR/report.html (the\n"
    "  time/cost Pareto front, why the winner wins), plan.csv and plan.json\n"
    "  (DIR defaults to out/plan-<name>)\n"
    "  --chips N, --budget-usd-per-hour X, --generation G, --rank-by K  override the spec\n"
    "  --dry-run  enumerate and prune only (nothing simulated)\n"
    "  -j, --resume, --force, --shard: as for tpusim sweep\n";

static int plan_usage(const char *msg)
{
    fprintf(stderr, "tpusim plan: %s\n%s", msg, usage_text);
    return 2;
}

static int parse_shard(const char *s, struct plan_opts *o)
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

static int parse_opt(int ch, struct plan_opts *o)
{
    char *end = NULL;
    switch (ch) {
    case 'o':
        o->out_dir = optarg;
        return 0;
    case 'j':
        o->jobs = (int)strtol(optarg, &end, 10);
        return *end || o->jobs < 1 || o->jobs > SWEEP_MAX_JOBS
                   ? plan_usage("-j takes a number of processes from 1 to 1024") : 0;
    case 'r':
        o->resume = true;
        return 0;
    case 'f':
        o->force = true;
        return 0;
    case 'n':
        o->dry_run = true;
        return 0;
    case 'S':
        return parse_shard(optarg, o) ? plan_usage("--shard takes I/N: shard I (0 to N-1) of N")
                                      : 0;
    case 'c':
        o->chips = strtol(optarg, &end, 10);
        return *end || o->chips < 1 || o->chips > (1 << 20)
                   ? plan_usage("--chips takes a chip count from 1 to 1048576") : 0;
    case 'b':
        o->budget = strtod(optarg, &end);
        return *end || !(o->budget > 0 && o->budget <= 1e12)
                   ? plan_usage("--budget-usd-per-hour takes a positive number of USD") : 0;
    case 'g':
        o->generation = optarg;
        return 0;
    case 'k':
        o->rank_by = optarg;
        return 0;
    default:
        return plan_usage("bad option");
    }
}

int cmd_plan(int argc, char **argv)
{
    static const struct option longs[] = {
        {"out", required_argument, 0, 'o'},    {"jobs", required_argument, 0, 'j'},
        {"resume", no_argument, 0, 'r'},       {"force", no_argument, 0, 'f'},
        {"dry-run", no_argument, 0, 'n'},      {"shard", required_argument, 0, 'S'},
        {"chips", required_argument, 0, 'c'},  {"budget-usd-per-hour", required_argument, 0, 'b'},
        {"generation", required_argument, 0, 'g'}, {"rank-by", required_argument, 0, 'k'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    struct plan_opts o = {0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o.jobs = cpus < 1 ? 1 : cpus > SWEEP_MAX_JOBS ? SWEEP_MAX_JOBS : (int)cpus;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:j:h", longs, NULL)) != -1) {
        if (ch == 'h') {
            fputs(usage_text, stdout);
            return 0;
        }
        int rc = parse_opt(ch, &o);
        if (rc)
            return rc;
    }
    if (o.resume && o.force)
        return plan_usage("--resume keeps an earlier plan's points, --force removes them: "
                          "pick one");
    if (o.chips && o.budget > 0)
        return plan_usage("--chips or --budget-usd-per-hour, not both");
    if (optind + 1 != argc)
        return plan_usage(optind < argc ? "too many arguments" : "missing PLAN.yaml");
    return plan_run(argv[optind], &o);
}
