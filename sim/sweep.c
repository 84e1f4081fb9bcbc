/* sim/sweep.c -- placeholder until sweeps land. */
#include "sim/sweep.h"

#include <stdio.h>

int sweep_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    fprintf(stderr, "tpusim: sweep is not implemented yet\n");
    return 2;
}

int compare_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    fprintf(stderr, "tpusim: compare is not implemented yet\n");
    return 2;
}
