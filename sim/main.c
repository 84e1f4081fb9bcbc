/* sim/main.c -- the tpusim command line.
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input (usage, YAML, rules). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cfg.h"
#include "sim/diag.h"
#include "sim/sim.h"
#include "sim/units.h"
#include "sim/xalloc.h"

#define TPUSIM_VERSION "0.1.0"

static const char usage_text[] =
    "usage: tpusim COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.yaml] [-o DIR] [--set key.path=value]... [--fidelity fast|exact]\n"
    "                       [--max-steps N] [--quiet]\n"
    "        simulate a scenario (default: the embedded configs/scenarios/default.yaml);\n"
    "        writes DIR/trace.json, DIR/summary.json, DIR/platform.xml\n"
    "        (DIR defaults to out/<scenario name>)\n"
    "  check SCENARIO.yaml [--set key.path=value]...   validate without running\n"
    "  platform SCENARIO.yaml [--set ...]             print the SimGrid platform XML\n"
    "  chips                                          print the chip presets\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 1 runtime failure, 2 bad input\n";

struct cli {
    const char *scenario;
    const char *out_dir;
    const char **sets;
    int nsets;
    int64_t max_steps;
    bool quiet;
    char **sg_argv;
    int sg_argc;
};

static int usage_error(const char *msg)
{
    fprintf(stderr, "tpusim: %s\n%s", msg, usage_text);
    return 2;
}

static void add_set(struct cli *c, const char *s)
{
    c->sets = xrealloc(c->sets, sizeof *c->sets * (size_t)(c->nsets + 1));
    c->sets[c->nsets++] = s;
}

/* Parses the options of run/check/platform. Returns 0, or 2 on a usage error. */
static int parse_args(int argc, char **argv, struct cli *c, char **fid)
{
    static const struct option longs[] = {{"out", required_argument, 0, 'o'},
                                          {"set", required_argument, 0, 's'},
                                          {"fidelity", required_argument, 0, 'f'},
                                          {"max-steps", required_argument, 0, 'm'},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"sg", required_argument, 0, 'g'},
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
                return usage_error("--fidelity takes fast or exact");
            *fid = xasprintf("options.fidelity=%s", optarg);
            add_set(c, *fid);
            break;
        case 'm': {
            char *end;
            c->max_steps = strtoll(optarg, &end, 10);
            if (*end || c->max_steps < 1)
                return usage_error("--max-steps takes a positive integer");
            break;
        }
        case 'q':
            c->quiet = true;
            break;
        case 'g':
            c->sg_argv = xrealloc(c->sg_argv, sizeof(char *) * (size_t)(c->sg_argc + 1));
            c->sg_argv[c->sg_argc++] = optarg;
            break;
        default:
            return usage_error("bad option");
        }
    }
    if (optind < argc)
        c->scenario = argv[optind++];
    if (optind < argc)
        return usage_error("too many arguments");
    return 0;
}

static int load(struct cli *c, struct cfg_scenario *sc, struct diag *d)
{
    if (cfg_load_scenario(c->scenario, c->sets, c->nsets, sc, d) != 0) {
        diag_print(d, stderr);
        return 2;
    }
    return 0;
}

static int cmd_run(struct cli *c)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    int rc = load(c, &sc, d);
    if (rc == 0) {
        char *dir = c->out_dir ? xstrdup(c->out_dir) : xasprintf("out/%s", sc.name);
        struct sim_opts o = {.out_dir = dir, .sg_argc = c->sg_argc, .sg_argv = c->sg_argv,
                             .max_steps = c->max_steps};
        struct summary s = {0};
        rc = sim_run(&sc, &o, &s, d);
        if (rc == 0 && !c->quiet) {
            summary_print_table(&s, stdout);
            printf("wrote %s/trace.json (open in https://ui.perfetto.dev), %s/summary.json\n", dir,
                   dir);
        }
        diag_print(d, stderr);
        summary_fini(&s);
        free(dir);
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
    return rc;
}

static int cmd_check(struct cli *c, bool platform)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    int rc = load(c, &sc, d);
    if (rc == 0) {
        if (sim_check(&sc, d) != 0) {
            diag_print(d, stderr);
            rc = 2;
        } else if (platform) {
            rc = sim_write_platform(&sc, stdout) ? 1 : 0;
        } else {
            printf("%s: ok (%d ops, %d chips, %lld grid steps)\n", sc.file, sc.nops,
                   sc.topo.nchips, (long long)sim_estimate_steps(&sc));
        }
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
    return rc;
}

static int cmd_chips(void)
{
    struct diag *d = diag_new();
    printf("%-5s %4s %4s %6s %12s %12s %10s %10s %8s %10s %8s %s\n", "chip", "TCs", "MXUs",
           "mxu", "bf16/TC", "int8/TC", "HBM", "HBM bw", "VMEM", "ICI/link", "links", "wrap");
    int rc = 0;
    for (const char *const *n = cfg_chip_names(); *n; n++) {
        struct chip_params c;
        if (cfg_load_chip(*n, &c, d) != 0) {
            rc = 1;
            continue;
        }
        char a[32], b[32], h[32], hb[32], v[32], ic[32];
        static const char *const wraps[] = {"axis16", "cube4", "always", "never"};
        printf("%-5s %4d %4d %6d %12s %12s %10s %10s %8s %10s %8d %s%s\n", c.name, c.cores,
               c.mxu_count, c.mxu_dim, units_format(a, sizeof a, c.peak_flops[DT_BF16], UNITS_FLOPS),
               units_format(b, sizeof b, c.peak_flops[DT_INT8], UNITS_FLOPS),
               units_format(h, sizeof h, (double)c.hbm_bytes, UNITS_BYTES),
               units_format(hb, sizeof hb, c.hbm_bw_Bps, UNITS_BANDWIDTH),
               units_format(v, sizeof v, (double)c.vmem_bytes, UNITS_BYTES),
               units_format(ic, sizeof ic, c.ici_bw_Bps, UNITS_BANDWIDTH), c.ici_links,
               wraps[c.wrap], c.megacore ? " megacore" : "");
    }
    diag_print(d, stderr);
    diag_free(d);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("missing command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tpusim %s\n", TPUSIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "chips"))
        return cmd_chips();
    struct cli c = {0};
    char *fid = NULL;
    int rc;
    if (strcmp(cmd, "run") && strcmp(cmd, "check") && strcmp(cmd, "platform")) {
        rc = usage_error("unknown command");
    } else if ((rc = parse_args(argc - 1, argv + 1, &c, &fid)) == 0) {
        if (strcmp(cmd, "run") != 0 && !c.scenario)
            rc = usage_error("missing SCENARIO");
        else if (!strcmp(cmd, "run"))
            rc = cmd_run(&c);
        else
            rc = cmd_check(&c, !strcmp(cmd, "platform"));
    }
    free(c.sets);
    free(c.sg_argv);
    free(fid);
    return rc;
}
