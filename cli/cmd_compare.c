/* cli/cmd_compare.c -- `tpusim compare A B [--labels NAME_A,NAME_B]`: two
 * summary.json files or two sweep outputs side by side (the comparison itself
 * is traces/'s). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/cli.h"
#include "outputs/compare.h"

static const char usage_text[] =
    "usage: tpusim compare A B [--labels NAME_A,NAME_B]\n"
    "  A and B are two summary.json files (or run directories) or two sweep outputs\n"
    "  (sweep.json or sweep directories); prints them side by side with deltas, each\n"
    "  side named by its label (default: its directory's name)\n";

static int compare_usage(const char *msg)
{
    fprintf(stderr, "tpusim compare: %s\n%s", msg, usage_text);
    return 2;
}

int cmd_compare(int argc, char **argv)
{
    static const struct option longs[] = {
        {"labels", required_argument, 0, 'l'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    char *labels = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (ch == 'h') {
            fputs(usage_text, stdout);
            free(labels);
            return 0;
        }
        if (ch != 'l') {
            free(labels);
            return compare_usage("bad option");
        }
        free(labels);
        labels = xstrdup(optarg);
    }
    char *comma = labels ? strchr(labels, ',') : NULL;
    if (labels && (!comma || comma == labels || !comma[1] || strchr(comma + 1, ','))) {
        free(labels);
        return compare_usage("--labels takes two names: NAME_A,NAME_B");
    }
    if (argc - optind != 2) {
        free(labels);
        return compare_usage("expected two inputs");
    }
    if (comma)
        *comma = '\0';
    const char *const names[2] = {labels, comma ? comma + 1 : NULL};
    int rc = compare_outputs(argv[optind], argv[optind + 1], labels ? names : NULL, stdout, stderr);
    free(labels);
    return rc;
}
