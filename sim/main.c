/* sim/main.c -- the tpusim command line.
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input (usage, YAML, rules). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/maskinfo.h"
#include "sim/cfg.h"
#include "base/diag.h"
#include "sim/sim.h"
#include "sim/sweep.h"
#include "base/units.h"
#include "base/xalloc.h"

#define TPUSIM_VERSION "0.1.0"

static const char usage_text[] =
    "usage: tpusim COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.yaml] [-o DIR] [--set key.path=value]... [--fidelity fast|exact]\n"
    "                       [--max-steps N] [--max-memory SIZE] [--quiet]\n"
    "        simulate a scenario (default: the embedded configs/scenarios/default.yaml);\n"
    "        writes DIR/trace.json, DIR/summary.json, DIR/platform.xml\n"
    "        (DIR defaults to out/<scenario name>)\n"
    "  check SCENARIO.yaml [--set key.path=value]...   validate without running\n"
    "  platform SCENARIO.yaml [--set ...]             print the SimGrid platform XML\n"
    "  chips                                          print the chip presets\n"
    "  maskinfo --mask SPEC [--mask SPEC]... --shape Q,K --block BQ,BKV [--heads H]\n"
    "           [--dense] [--head-shards N] [--q-seq-shards N] [--dkv] [--dynamic] [--json]\n"
    "        splash attention's MaskInfo (block_mask, data_next, mask_next) exactly as\n"
    "        upstream computes it; SPEC is causal[:OFFSET], local:LEFT,RIGHT[:OFFSET],\n"
    "        chunked:C, full or file:PATH; one --mask for all heads or one per head\n"
    "  sweep SWEEP.yaml [-o DIR] [-j N] [--resume]\n"
    "        run every point of a sweep spec in parallel; writes DIR/sweep.csv, sweep.json,\n"
    "        report.md and SVG plots (DIR defaults to out/<sweep name>)\n"
    "  compare A B                                    two summary.json files or sweep outputs\n"
    "                                                 side by side, with per-op deltas\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 1 runtime failure, 2 bad input\n";

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
                                          {"max-memory", required_argument, 0, 'M'},
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
        case 'M':
            if (units_parse(optarg, UNITS_BYTES, &c->max_memory) != 0 || c->max_memory <= 0)
                return usage_error("--max-memory takes a size like 20GiB");
            break;
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
                             .max_steps = c->max_steps, .max_memory_bytes = c->max_memory};
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

struct mi_args {
    const char *specs[1024];
    int nspecs;
    int64_t q, k;
    int bq, bkv, heads;
    bool dense, json;
    struct maskinfo_params p;
};

static int parse_pair(const char *s, int64_t *a, int64_t *b)
{
    char *end;
    *a = strtoll(s, &end, 10);
    if (*end != ',' || *a < 1)
        return -1;
    *b = strtoll(end + 1, &end, 10);
    return *end || *b < 1 ? -1 : 0;
}

static int parse_mi_args(int argc, char **argv, struct mi_args *m)
{
    static const struct option longs[] = {
        {"mask", required_argument, 0, 'm'},    {"shape", required_argument, 0, 's'},
        {"block", required_argument, 0, 'b'},   {"heads", required_argument, 0, 'H'},
        {"dense", no_argument, 0, 'd'},         {"head-shards", required_argument, 0, 'h'},
        {"q-seq-shards", required_argument, 0, 'q'}, {"dkv", no_argument, 0, 'k'},
        {"dynamic", no_argument, 0, 'y'},       {"json", no_argument, 0, 'j'},
        {0, 0, 0, 0}};
    int ch;
    int64_t bq = 0, bkv = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        char *end = NULL;
        switch (ch) {
        case 'm':
            if (m->nspecs == 1024)
                return usage_error("too many --mask");
            m->specs[m->nspecs++] = optarg;
            break;
        case 's':
            if (parse_pair(optarg, &m->q, &m->k))
                return usage_error("--shape takes Q,K (positive integers)");
            break;
        case 'b':
            if (parse_pair(optarg, &bq, &bkv) || bq > 1 << 24 || bkv > 1 << 24)
                return usage_error("--block takes BQ,BKV (positive integers)");
            break;
        case 'H':
        case 'h':
        case 'q': {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 65536)
                return usage_error("--heads, --head-shards and --q-seq-shards take a positive "
                                   "integer");
            *(ch == 'H' ? &m->heads : ch == 'h' ? &m->p.head_shards : &m->p.q_seq_shards) =
                (int)v;
            break;
        }
        case 'd':
            m->dense = true;
            break;
        case 'k':
            m->p.is_dkv = true;
            break;
        case 'y':
            m->p.dynamic = true;
            break;
        case 'j':
            m->json = true;
            break;
        default:
            return usage_error("bad option");
        }
    }
    if (optind < argc || !m->nspecs || !m->q || !bq)
        return usage_error("maskinfo needs --mask, --shape and --block");
    m->p.bq = (int)bq, m->p.bkv = (int)bkv;
    if (!m->heads)
        m->heads = m->nspecs;
    if (m->nspecs != 1 && m->nspecs != m->heads)
        return usage_error("give one --mask for all heads or one per head");
    return 0;
}

/* Builds head masks from specs; "file:PATH" loads an explicit mask. */
static struct mask *mi_mask(const char *spec, const struct mi_args *m, bool dense, char *err,
                            size_t n)
{
    struct mask *mk = strncmp(spec, "file:", 5) == 0 ? mask_load_file(spec + 5, err, n)
                                                      : mask_parse_spec(spec, m->q, m->k, err, n);
    if (mk && (mk->q_len != m->q || mk->kv_len != m->k)) {
        snprintf(err, n, "mask '%s' is %lldx%lld, --shape is %lldx%lld", spec,
                 (long long)mk->q_len, (long long)mk->kv_len, (long long)m->q, (long long)m->k);
        mask_free(mk);
        return NULL;
    }
    if (mk && dense && mk->kind != MASK_DENSE) {
        struct mask *d = mask_dense_from(mk);
        mask_free(mk);
        mk = d;
    }
    return mk;
}

static int cmd_maskinfo(int argc, char **argv)
{
    struct mi_args *m = xcalloc(1, sizeof *m);
    maskinfo_params_init(&m->p, 1, 1);
    int rc = parse_mi_args(argc, argv, m);
    if (rc) {
        free(m);
        return rc;
    }
    struct mask **heads = xcalloc((size_t)m->heads, sizeof *heads);
    char err[512] = "";
    for (int h = 0; h < m->heads && rc == 0; h++) {
        const char *spec = m->specs[m->nspecs == 1 ? 0 : h];
        /* one spec for all heads: the same mask object content in every head */
        heads[h] = mi_mask(spec, m, m->dense, err, sizeof err);
        rc = heads[h] ? 0 : 2;
    }
    struct mask_info mi;
    if (rc == 0 && maskinfo_process(heads, m->heads, &m->p, &mi, err, sizeof err) != 0)
        rc = 2;
    if (rc == 0) {
        maskinfo_print(stdout, &mi, m->json);
        maskinfo_free(&mi);
    } else {
        fprintf(stderr, "tpusim maskinfo: %s\n", err);
    }
    for (int h = 0; h < m->heads; h++)
        mask_free(heads[h]);
    free(heads);
    free(m);
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
    if (!strcmp(cmd, "maskinfo"))
        return cmd_maskinfo(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep"))
        return sweep_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare"))
        return compare_main(argc - 1, argv + 1);
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
    if (rc == 130) { /* interrupted: the killed actors' memory is not worth freeing */
        fflush(NULL);
        _exit(rc);
    }
    free(c.sets);
    free(c.sg_argv);
    free(fid);
    return rc;
}
