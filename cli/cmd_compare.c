/* cli/cmd_compare.c -- `tpusim compare A B [--labels NAME_A,NAME_B]`: two
 * summary.json files or two sweep outputs side by side (outputs/compare.c);
 * `tpusim compare --profile TRACE RUN`: a measured Chrome trace (XProf) beside
 * a simulated run (outputs/xprof.c). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/cli.h"
#include "outputs/compare.h"
#include "outputs/xprof.h"

static const char usage_text[] =
    "usage: tpusim compare A B [--labels NAME_A,NAME_B]\n"
    "       tpusim compare --profile TRACE.json RUN [--device N|NAME] [--module NAME]\n"
    "                      [--steps N] [--top N] [--csv FILE]\n"
    "  A and B are two summary.json files (or run directories) or two sweep outputs\n"
    "  (sweep.json or sweep directories); prints them side by side with deltas, each\n"
    "  side named by its label (default: its directory's name)\n"
    "  --profile: a measured trace (XProf / TensorBoard trace viewer JSON, or\n"
    "  jax.profiler's trace.json, gunzipped) beside a simulated run of the same\n"
    "  program: measured vs simulated time per HLO op and per category; a Chrome\n"
    "  trace given as A is taken as --profile\n";

static int compare_usage(const char *msg)
{
    fprintf(stderr, "tpusim compare: %s\n%s", msg, usage_text);
    return 2;
}

/* Parses a whole positive number for 'opt'; -1 when it is none. */
static long count_arg(const char *v)
{
    char *e;
    long n = strtol(v, &e, 10);
    return e != v && !*e && n > 0 && n <= 1000000000L ? n : -1;
}

static int profile_compare(const char *trace, const char *run, struct xprof_opts *po)
{
    return xprof_compare(trace, run, po, stdout, stderr);
}

int cmd_compare(int argc, char **argv)
{
    static const struct option longs[] = {
        {"labels", required_argument, 0, 'l'}, {"help", no_argument, 0, 'h'},
        {"profile", no_argument, 0, 'p'},      {"device", required_argument, 0, 'd'},
        {"module", required_argument, 0, 'm'}, {"steps", required_argument, 0, 's'},
        {"top", required_argument, 0, 't'},    {"csv", required_argument, 0, 'c'},
        {0, 0, 0, 0}};
    char *labels = NULL;
    struct xprof_opts po = {0};
    bool profile = false, profile_opt = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        long n = 0;
        switch (ch) {
        case 'h':
            fputs(usage_text, stdout);
            free(labels);
            return 0;
        case 'l':
            free(labels);
            labels = xstrdup(optarg);
            break;
        case 'p':
            profile = true;
            break;
        case 'd':
        case 'm':
        case 'c':
            *(ch == 'd' ? &po.device : ch == 'm' ? &po.module : &po.csv) = optarg;
            profile_opt = true;
            break;
        case 's':
        case 't':
            if ((n = count_arg(optarg)) < 0 || (ch == 't' && n > 100000)) {
                free(labels);
                return compare_usage(ch == 's' ? "--steps takes a whole number from 1"
                                                : "--top takes a whole number from 1 to 100000");
            }
            if (ch == 's')
                po.steps = n;
            else
                po.top = (int)n;
            profile_opt = true;
            break;
        default:
            free(labels);
            return compare_usage("bad option");
        }
    }
    if (argc - optind != 2) {
        free(labels);
        return compare_usage("expected two inputs");
    }
    profile = profile || xprof_is_trace(argv[optind]);
    if (profile || profile_opt) {
        free(labels);
        if (!profile)
            return compare_usage("--device, --module, --steps, --top and --csv go with --profile");
        return profile_compare(argv[optind], argv[optind + 1], &po);
    }
    char *comma = labels ? strchr(labels, ',') : NULL;
    if (labels && (!comma || comma == labels || !comma[1] || strchr(comma + 1, ','))) {
        free(labels);
        return compare_usage("--labels takes two names: NAME_A,NAME_B");
    }
    if (comma)
        *comma = '\0';
    const char *const names[2] = {labels, comma ? comma + 1 : NULL};
    int rc = compare_outputs(argv[optind], argv[optind + 1], labels ? names : NULL, stdout, stderr);
    free(labels);
    return rc;
}
