/* cli/main.c -- the tpusim command line: dispatch only (cli/cli.h).
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input (usage, YAML, rules),
 * 130 interrupted. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define TPUSIM_VERSION "0.2.0"

static const char usage_text[] =
    "usage: tpusim COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.yaml] [-o DIR] [--set key.path=value]... [--fidelity fast|exact]\n"
    "                       [--max-steps N] [--max-memory SIZE] [--all-chips]\n"
    "                       [--no-kernel-memo] [--quiet]\n"
    "        simulate a scenario (default: the embedded configs/scenarios/default.yaml;\n"
    "        - reads it from standard input, as for check, platform and sweep);\n"
    "        writes DIR/trace.json, DIR/summary.json, DIR/platform.xml\n"
    "        (DIR defaults to out/<scenario name>)\n"
    "      [--trace none|ops|units|steps] what trace.json holds (default units)\n"
    "      [--trace-chips N,M|distinct] [--trace-window START:END]\n"
    "      [--trace-max-events N] (default 2000000; what is left out is reported)\n"
    "  run --hlo FILE --topology AxB[xC] [--chip CHIP] [options as above]\n"
    "        simulate an HLO program (XLA's text after SPMD partitioning) on a slice\n"
    "        (chip default v5e); check takes the same\n"
    "  check SCENARIO.yaml|SWEEP.yaml [--set key.path=value]... [--max-steps N]\n"
    "        [--max-memory SIZE]  validate without running: every check and resource\n"
    "        guard run applies (for a sweep spec: every point's)\n"
    "  platform SCENARIO.yaml [--set ...]             print the SimGrid platform XML\n"
    "  expand SCENARIO.yaml [--set ...]               print a model scenario as the plain\n"
    "                                                 scenario it expands into\n"
    "  chips                                          print the chip presets\n"
    "  maskinfo --mask SPEC [--mask SPEC]... --shape Q,K --block BQ,BKV [--heads H]\n"
    "           [--dense] [--head-shards N] [--q-seq-shards N] [--dkv] [--dynamic] [--json]\n"
    "        splash attention's MaskInfo (block_mask, data_next, mask_next) exactly as\n"
    "        upstream computes it; SPEC is causal[:OFFSET], local:LEFT,RIGHT[:OFFSET],\n"
    "        chunked:C, full or file:PATH; one --mask for all heads or one per head\n"
    "  sweep SWEEP.yaml [-o DIR] [-j N] [--resume | --force] [--set key.path=value]...\n"
    "                   [--shard I/N]\n"
    "        run every point of a sweep spec in parallel; writes DIR/sweep.csv, sweep.json,\n"
    "        report.md and SVG plots (DIR defaults to out/<sweep name>); --shard runs\n"
    "        the points i with i % N == I, for `sweep merge`\n"
    "  sweep merge OUT DIR... [--force]               join the N shards of a sweep into OUT\n"
    "  plan PLAN.yaml [-o DIR] [-j N] [--resume | --force] [--shard I/N] [--chips N |\n"
    "       --budget-usd-per-hour X] [--generation G] [--rank-by KEY] [--dry-run]\n"
    "        rank the slices, meshes, remat policies and batches of a model step: prune\n"
    "        what does not fit in HBM, simulate the rest as a sweep; DIR/report.html\n"
    "  compare A B [--labels NAME_A,NAME_B]           two summary.json files or sweep outputs\n"
    "                                                 side by side, with per-op deltas\n"
    "  compare --profile TRACE.json RUN [--device N] [--module NAME] [--steps N] [--top N]\n"
    "          [--csv FILE]  a measured XProf / jax.profiler trace beside a simulated run:\n"
    "                        measured vs simulated time per HLO op and per category\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 1 runtime failure, 2 bad input\n";

int cli_usage_error(const char *msg)
{
    fprintf(stderr, "tpusim: %s\n%s", msg, usage_text);
    return 2;
}

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} commands[] = {
    {"run", cmd_run},           {"check", cmd_check},       {"platform", cmd_platform},
    {"chips", cmd_chips},       {"maskinfo", cmd_maskinfo}, {"sweep", cmd_sweep},
    {"compare", cmd_compare},   {"expand", cmd_expand},     {"plan", cmd_plan},
};

/* A command's exit status once its standard output is flushed: output lost
 * to a full disk (`> /dev/full`) is a failure, with the system's reason. */
static int flush_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "tpusim: cannot write the standard output: %s\n",
            errno ? strerror(errno) : "write error");
    return rc ? rc : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("missing command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return flush_stdout(0);
    }
    if (!strcmp(cmd, "--version")) {
        printf("tpusim %s\n", TPUSIM_VERSION);
        return flush_stdout(0);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name) != 0)
            continue;
        int rc = commands[i].main(argc - 1, argv + 1);
        if (rc == 130) { /* interrupted: the killed actors' memory is not worth freeing */
            fflush(NULL);
            _exit(rc);
        }
        return flush_stdout(rc);
    }
    return cli_usage_error("unknown command");
}
