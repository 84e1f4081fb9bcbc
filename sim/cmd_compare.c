/* sim/cmd_compare.c -- `tpusim compare A B`: two summary.json files or two
 * sweep outputs side by side (the comparison itself is traces/'s). */
#include <stdio.h>
#include <string.h>

#include "sim/cli.h"
#include "traces/compare.h"

static const char usage_text[] =
    "usage: tpusim compare A B\n"
    "  A and B are two summary.json files (or run directories) or two sweep outputs\n"
    "  (sweep.json or sweep directories); prints them side by side with deltas\n";

int cmd_compare(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "tpusim compare: expected two inputs\n%s", usage_text);
        return 2;
    }
    return compare_outputs(argv[1], argv[2], stdout, stderr);
}
