/* tests/unit/test_cfg.c -- scenario loading, presets, overrides, errors. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_tree.h"
#include "config/cfg_walk.h"

static char path[64];

static const char *tmp_yaml(const char *text)
{
    snprintf(path, sizeof path, "/tmp/tpusim-cfg-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static int load(const char *text, const char *const *sets, int n, struct cfg_scenario *sc,
                struct diag *d)
{
    int rc = cfg_load_scenario(tmp_yaml(text), sets, n, sc, d);
    unlink(path);
    return rc;
}

static void test_cfg_presets_load(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    for (const char *const *n = cfg_chip_names(); *n; n++) {
        struct chip_params c;
        assert_int_equal(cfg_load_chip(*n, &c, d), 0);
        assert_string_equal(c.name, *n);
        assert_true(c.peak_flops[DT_BF16] > 2e13); /* v2: 23 TF per TensorCore */
        assert_int_equal(c.vpu_sublanes, 8);
        assert_int_equal(c.vpu_lanes, 128);
    }
    struct chip_params c;
    assert_int_equal(cfg_load_chip("v5e", &c, d), 0);
    assert_true(c.hbm_bw_Bps == 819e9);
    assert_true(c.peak_flops[DT_BF16] == 197e12);
    assert_int_equal(c.vmem_bytes, 128u << 20);
    assert_int_equal(c.routing, ICI_ROUTE_POW2);
    /* the older chips: two TensorCores as separate devices, 4 ICI ports (a 2-D torus) */
    assert_int_equal(cfg_load_chip("v2", &c, d), 0);
    assert_true(c.peak_flops[DT_BF16] == 23e12 && c.cores == 2 && !c.megacore);
    assert_true(c.mxu_count == 1 && c.ici_links == 4 && c.wrap == TOPO_WRAP_AXIS16);
    assert_int_equal(cfg_load_chip("v3", &c, d), 0);
    assert_true(c.peak_flops[DT_BF16] == 61.5e12 && c.cores == 2 && !c.megacore);
    assert_true(c.mxu_count == 2 && c.hbm_bw_Bps == 900e9 && c.wrap == TOPO_WRAP_AXIS32);
    /* megacore: v4 and v5p only [JAX-TI supports_megacore] */
    const char *mc[] = {"v4", "v5p"}, *no[] = {"v2", "v3", "v5e", "v6e", "v7"};
    for (int i = 0; i < 2; i++)
        assert_true(cfg_load_chip(mc[i], &c, d) == 0 && c.megacore && c.cores == 2);
    for (int i = 0; i < 5; i++)
        assert_true(cfg_load_chip(no[i], &c, d) == 0 && !c.megacore);
    /* a grid step's fixed cost is scalar-core work: v5e's calibrated 0.18 us is
     * 270 cycles at 1.5 GHz, and every preset charges those cycles at its own
     * clock (v5p: 0.154 us at 1.75 GHz, not v5e's 0.18 us) */
    for (const char *const *n = cfg_chip_names(); *n; n++) {
        assert_int_equal(cfg_load_chip(*n, &c, d), 0);
        double cycles = c.step_overhead_s * c.clock_hz;
        if (cycles < 260 || cycles > 275)
            print_error("%s: step overhead is %.0f cycles\n", *n, cycles);
        assert_true(cycles >= 260 && cycles <= 275);
    }
    assert_int_equal(diag_count(d), 0);
    diag_free(d);
}

static void test_cfg_chip_override_and_set(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *sets[] = {"workload.0.bytes=1GiB", "chip.ici.bandwidth=50GBps"};
    assert_int_equal(load("chip: {base: v5e, hbm: {bandwidth: 1TBps}}\n"
                          "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n",
                          sets, 2, &sc, d),
                     0);
    assert_true(sc.chip.hbm_bw_Bps == 1e12);
    assert_true(sc.chip.ici_bw_Bps == 50e9);
    assert_true(sc.chip.peak_flops[DT_BF16] == 197e12); /* the rest comes from the preset */
    assert_int_equal(sc.ops[0].u.hbm_copy.bytes, 1u << 30);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* The generation-specific rules are preset fields: v7 packs bf16 into 16
 * sublanes (jax's get_sublane_tiling), earlier chips only narrower types;
 * ragged attention's untuned default is 32 KV pages per block on v4, 128 on
 * the others. */
static void test_cfg_generation_rules_are_preset_fields(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct chip_params c;
    assert_int_equal(cfg_load_chip("v7", &c, d), 0);
    assert_int_equal(chip_sublane_tiling(&c, DT_BF16), 16);
    assert_int_equal(chip_sublane_tiling(&c, DT_F32), 8);
    assert_int_equal(chip_sublane_tiling(&c, DT_INT8), 32);
    assert_int_equal(c.rpa_kv_pages_per_block, 128);
    const char *older[] = {"v4", "v5e", "v5p", "v6e"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(cfg_load_chip(older[i], &c, d), 0);
        assert_int_equal(chip_sublane_tiling(&c, DT_BF16), 8);
        assert_int_equal(chip_sublane_tiling(&c, DT_INT8), 32);
        assert_int_equal(c.rpa_kv_pages_per_block, i == 0 ? 32 : 128);
    }
    diag_free(d);
}

/* Issue 29.8 (v4): XLA's VMEM holds an op's scoped buffers and the allocations that
 * live across ops (openxla's error 1001 page), and every generation with a public
 * default leaves at least half of it outside the scoped limit (openxla
 * platform_info.py: 32 MiB of v5e's and v6e's 128, of v5p's and v7x's 64). v4's 16 MiB
 * then gives at most 16 MiB / 2 = 8 MiB = 8388608 B, not all of it; every preset
 * from v4 on keeps limit <= vmem / 2. */
static void test_cfg_scoped_vmem_leaves_half(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct chip_params c;
    assert_int_equal(cfg_load_chip("v4", &c, d), 0);
    assert_int_equal(c.vmem_bytes, (uint64_t)16 << 20);
    assert_int_equal(c.vmem_limit_bytes, (uint64_t)8388608);
    const char *gens[] = {"v4", "v5e", "v5p", "v6e", "v7"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(cfg_load_chip(gens[i], &c, d), 0);
        assert_true(2 * c.vmem_limit_bytes <= c.vmem_bytes);
    }
    diag_free(d);
}

/* hbm.usable, the bytes XLA may allocate (its OOM messages' "of X hbm"): the
 * presets that give it, and a scenario that overrides the capacity alone
 * dropping the preset's figure (it was for the preset's capacity). */
static void test_cfg_hbm_usable(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct chip_params c;
    assert_int_equal(cfg_load_chip("v5p", &c, d), 0);
    assert_int_equal(c.hbm_bytes, (uint64_t)96 << 30);
    assert_int_equal(c.hbm_usable_bytes, (uint64_t)98038 << 20); /* 95.74 GiB */
    assert_int_equal(cfg_load_chip("v6e", &c, d), 0);
    assert_int_equal(c.hbm_usable_bytes, (uint64_t)32000 << 20); /* 31.25 GiB */
    assert_int_equal(cfg_load_chip("v7", &c, d), 0);
    assert_int_equal(c.hbm_usable_bytes, 0); /* not known: the model's default share */
    struct cfg_scenario sc;
    const char *w = "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n";
    char buf[256];
    snprintf(buf, sizeof buf, "chip: {base: v5p, hbm: {capacity: 8GiB}}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_int_equal(sc.chip.hbm_usable_bytes, 0);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: {base: v5p, hbm: {capacity: 8GiB, usable: 7GiB}}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_int_equal(sc.chip.hbm_usable_bytes, (uint64_t)7 << 30);
    cfg_scenario_fini(&sc);
    assert_int_equal(diag_count(d), 0);
    diag_free(d);
}

static void test_cfg_default_wraparound_rules(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *w = "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n";
    char buf[256];
    snprintf(buf, sizeof buf, "chip: v5e\ntopology: {shape: [8, 16]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_false(sc.topo.wrap[0]);
    assert_true(sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5p\ntopology: {shape: [4, 4, 8]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(sc.topo.wrap[0] && sc.topo.wrap[1] && sc.topo.wrap[2]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5p\ntopology: {shape: [2, 4, 4]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_false(sc.topo.wrap[0] || sc.topo.wrap[1] || sc.topo.wrap[2]);
    cfg_scenario_fini(&sc);
    /* v2 wraps an axis spanning its 16-chip pod edge, v3 its 32-chip edge */
    snprintf(buf, sizeof buf, "chip: v2\ntopology: {shape: [8, 16]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(!sc.topo.wrap[0] && sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v3\ntopology: {shape: [16, 32]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(!sc.topo.wrap[0] && sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5e\ntopology: {shape: [8, 16], wraparound: [true, false]}\n%s",
             w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(sc.topo.wrap[0]);
    assert_false(sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_cfg_errors_have_positions_and_suggestions(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load("chip: v5e\nworkload:\n  - op: hbm_copy\n    byts: 1MiB\n"
                          "  - {op: matmul, m: x, k: 128, n: 128}\n",
                          NULL, 0, &sc, d),
                     -1);
    char want[128];
    snprintf(want, sizeof want, "%s:4:5: workload.0: unknown key 'byts' (did you mean 'bytes'?)",
             path);
    assert_string_equal(diag_message(d, 0), want);
    snprintf(want, sizeof want, "%s:3:5: workload.0: missing required key 'bytes'", path);
    assert_string_equal(diag_message(d, 1), want);
    snprintf(want, sizeof want, "%s:5:21: workload.1.m: expected a positive integer, got 'x'",
             path);
    assert_string_equal(diag_message(d, 2), want);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_cfg_set_errors(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *sets[] = {"workload.3.bytes=1MiB"};
    assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1,
                          &sc, d),
                     -1);
    assert_non_null(strstr(diag_message(d, 0), "index 3 is out of range (the list has 1 item)"));
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* Issue 18.1: an empty path segment used to free the root the caller keeps. */
static void test_cfg_set_empty_segment(void **state)
{
    (void)state;
    static const char *const bad[] = {".=1", "..=1", "workload..bytes=1MiB", ".workload=1",
                                      "workload.=1", "=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {bad[i]};
        assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1,
                              &sc, d),
                         -1);
        assert_non_null(strstr(diag_message(d, 0), "expected key.path=value"));
        diag_free(d);
    }
}

/* Issue 18.2: list indices were read with atoi: 2^63 wrote out of bounds and
 * 2^32+3 silently named item 3. */
static void test_cfg_set_index_overflow(void **state)
{
    (void)state;
    static const char *const bad[] = {"workload.9223372036854775808.bytes=1MiB",
                                      "workload.4294967299.name=X",
                                      "workload.18446744073709551616.bytes=1MiB",
                                      "workload.4.bytes=1MiB", "workload.0004.name=X"};
    static const char *const want[] = {"index 9223372036854775808 is out of range",
                                       "index 4294967299 is out of range",
                                       "index 18446744073709551616 is out of range",
                                       "index 4 is out of range (the list has 4 items)",
                                       "index 0004 is out of range (the list has 4 items)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {bad[i]};
        assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n"
                              "  - {op: hbm_copy, bytes: 1MiB}\n  - {op: hbm_copy, bytes: 1MiB}\n"
                              "  - {op: hbm_copy, bytes: 1MiB}\n",
                              sets, 1, &sc, d),
                         -1);
        assert_non_null(strstr(diag_message(d, 0), want[i]));
        diag_free(d);
    }
}

/* Issue 18.8: a scenario name is a directory under out/: name=../../escaped
 * wrote outside it, name=.. into the working directory. */
static void test_cfg_scenario_name_rule(void **state)
{
    (void)state;
    static const char *const bad[] = {"name=../../escaped", "name=..", "name=.", "name=a/b",
                                      "name=\"a\\nb\"", "name=\"a b\"", "name=''", "name=[a]",
                                      "name=.hidden"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {bad[i]};
        if (load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1, &sc, d) == 0)
            fail_msg("%s was accepted", bad[i]);
        assert_non_null(strstr(diag_message(d, 0), "name: expected a name (no spaces, slashes or "
                                                   "'..')"));
        diag_free(d);
    }
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *ok[] = {"name=run-1_v5e.b128"};
    assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", ok, 1, &sc, d),
                     0);
    assert_string_equal(sc.name, "run-1_v5e.b128");
    cfg_scenario_fini(&sc);
    /* a name taken from the file name is made safe, not refused */
    static const struct {
        const char *file, *name;
    } files[] = {{"/tmp/tpusim name test.yaml", "tpusim_name_test"}, {"/tmp/..yaml", "scenario"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i].file, "w");
        fputs("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", f);
        fclose(f);
        assert_int_equal(cfg_load_scenario(files[i].file, NULL, 0, &sc, d), 0);
        unlink(files[i].file);
        assert_string_equal(sc.name, files[i].name);
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
}

/* Issue 18.7: hbm.bandwidth: 1e300TBps passed check and aborted inside
 * SimGrid. Every rate, time and size has stated bounds. */
static void test_cfg_quantities_have_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *set, *want;
    } cases[] = {
        {"chip.hbm.bandwidth=1e300TBps", "chip.hbm.bandwidth: expected a bandwidth like 819GBps "
                                         "from 1MBps to 1PBps, got '1e300TBps'"},
        {"chip.hbm.bandwidth=1e-300Bps", "from 1MBps to 1PBps, got '1e-300Bps'"},
        {"chip.ici.bandwidth=2PBps", "chip.ici.bandwidth: expected a bandwidth"},
        {"chip.tensorcore.clock=1e30GHz", "chip.tensorcore.clock: expected a frequency like "
                                          "1.5GHz from 1MHz to 100GHz, got '1e30GHz'"},
        {"chip.tensorcore.peak.bf16=1e-12Tf", "chip.tensorcore.peak.bf16: expected a FLOP rate "
                                              "like 197Tf from 1Gf to 1Ef, got '1e-12Tf'"},
        {"chip.tensorcore.peak.int8=1e19f", "chip.tensorcore.peak.int8: expected a FLOP rate"},
        {"chip.ici.hop_latency=1e300s", "chip.ici.hop_latency: expected a duration like 1us "
                                        "(0s, or from 1ps to 1s), got '1e300s'"},
        /* subnormal: passed check, then SimGrid aborted in run */
        {"chip.ici.hop_latency=1e-310s", "(0s, or from 1ps to 1s), got '1e-310s'"},
        {"chip.ici.efficiency=1e-310", "chip.ici.efficiency: expected a fraction in [0.01, 1], "
                                       "got '1e-310'"},
        {"chip.hbm.efficiency=1e-310", "chip.hbm.efficiency: expected a fraction in [0.01, 1]"},
        {"chip.tensorcore.vpu.alu_per_cycle=1e-310", "expected a rate per cycle in [0.01, 64]"},
        {"chip.tensorcore.step_overhead=2s", "chip.tensorcore.step_overhead: expected a duration"},
        {"chip.tensorcore.vmem=2EB", "chip.tensorcore.vmem: expected a size like 128MiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {cases[i].set};
        if (load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1, &sc, d) == 0)
            fail_msg("%s was accepted", cases[i].set);
        if (!strstr(diag_message(d, 0), cases[i].want))
            fail_msg("%s: got '%s'", cases[i].set, diag_message(d, 0));
        diag_free(d);
    }
}

/* Parses 'text'; returns the first message ("" when it parsed). */
static char *parse_msg(const char *text, size_t len)
{
    struct diag *d = diag_new();
    struct cfg_node *n = cfg_parse(text, len, "t.yaml", d);
    char *m = xstrdup(diag_count(d) ? diag_message(d, 0) : "");
    assert_true(n || diag_count(d) > 0);
    cfg_node_free(n);
    diag_free(d);
    return m;
}

/* 11 levels of 10 aliases: 10^11 nodes once expanded (caller frees). */
static char *alias_bomb_yaml(void)
{
    char *t = xstrdup("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i <= 11; i++) {
        char *n = xasprintf("%sa%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, "
                            "*a%d]\n",
                            t, i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
                            i - 1);
        free(t);
        t = n;
    }
    return t;
}

/* Issue 18.4: 11 levels of 10 aliases expanded to 10^11 nodes (12 GB in 40 s). */
static void test_cfg_parse_alias_bomb_stops_at_the_limit(void **state)
{
    (void)state;
    char *t = alias_bomb_yaml();
    char *m = parse_msg(t, strlen(t)); /* the limit's message: it stopped counting there */
    assert_non_null(strstr(m, "the document expands to more than 1000000 nodes"));
    free(m);
    free(t);
    /* one long scalar aliased many times: bounded by bytes, not nodes */
    size_t big = (size_t)8 << 20;
    char *s = xmalloc(big + 4096);
    memcpy(s, "a: &a ", 6);
    memset(s + 6, 'x', big);
    strcpy(s + 6 + big, "\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, "
                        "*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n");
    m = parse_msg(s, strlen(s));
    assert_non_null(strstr(m, "the document expands to more than 256 MiB"));
    free(m);
    free(s);
}

/* walk_suggest: a known word (wherever it sits in the list) is known with no
 * hint; an unknown one gets the first closest candidate within 2 edits. */
static void test_cfg_walk_suggest(void **state)
{
    (void)state;
    static const char *const keys[] = {"bytes", "bm", "bk", "bn", "name", "m", NULL};
    bool known = false;
    assert_null(walk_suggest("m", keys, &known)); /* 1 edit from "bm" before it: still known */
    assert_true(known);
    assert_null(walk_suggest("bytes", keys, &known));
    assert_true(known);
    assert_string_equal(walk_suggest("byts", keys, &known), "bytes");
    assert_false(known);
    assert_string_equal(walk_suggest("bmm", keys, &known), "bm");
    assert_false(known);
    assert_string_equal(walk_suggest("mm", keys, &known), "bm"); /* bm and m tie at 1: the first */
    assert_null(walk_suggest("zzzzzz", keys, &known));
    assert_false(known);
}

/* The peak resident memory (KiB) of a child that parses 'text'. */
static long parse_maxrss_kb(const char *text)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct diag *d = diag_new();
        cfg_node_free(cfg_parse(text, strlen(text), "t.yaml", d));
        diag_free(d);
        _exit(0);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return ru.ru_maxrss;
}

/* An alias bomb past the node limit is refused before anything is expanded:
 * aliases stay placeholders until the document ends within the limits. It
 * used to build the 1,000,000 nodes first (about 160 MB, 1.1 s for `tpusim
 * check`); now its peak memory is within 16 MiB of a one-line document's. */
static void test_cfg_parse_alias_bomb_builds_nothing(void **state)
{
    (void)state;
    char *t = alias_bomb_yaml();
    long base = parse_maxrss_kb("a: 1\n"), bomb = parse_maxrss_kb(t);
    print_message("peak memory: one line %ld KiB, the bomb %ld KiB\n", base, bomb);
    assert_true(bomb < base + 16 * 1024);
    free(t);
}

/* Placeholders expand into the same tree copies gave: an alias inside an
 * anchored collection aliased again, a redefined anchor (the latest wins), an
 * alias as a key, every copy at its alias's mark and its insides at theirs. */
static void test_cfg_parse_nested_aliases_expand(void **state)
{
    (void)state;
    const char *t = "s: &s 7\n"
                    "in: &in {x: *s, y: [*s, 2]}\n"
                    "out: &out [*in, *in]\n"
                    "s2: &s 8\n"
                    "both: [*out, *s]\n"
                    "*s : key\n";
    struct diag *d = diag_new();
    struct cfg_node *n = cfg_parse(t, strlen(t), "t.yaml", d);
    assert_non_null(n);
    assert_int_equal(diag_count(d), 0);
    const struct cfg_node *both = cfg_get(n, "both");
    assert_int_equal(both->n, 2);
    const struct cfg_node *out = both->kids[0];
    assert_int_equal(out->type, CFG_SEQ);
    assert_int_equal(out->n, 2);
    assert_int_equal(out->line, 5); /* the alias *out */
    assert_int_equal(out->col, 8);
    for (int i = 0; i < 2; i++) {
        const struct cfg_node *in = out->kids[i];
        assert_int_equal(in->type, CFG_MAP);
        assert_null(in->alias);
        assert_int_equal(in->line, 3); /* the aliases *in inside &out */
        assert_int_equal(in->col, 12 + 5 * i);
        assert_string_equal(cfg_get(in, "x")->value, "7");
        assert_int_equal(cfg_get(in, "x")->line, 2);
        assert_int_equal(cfg_get(in, "x")->col, 13);
        assert_string_equal(cfg_get(in, "y")->kids[0]->value, "7");
        assert_string_equal(cfg_get(in, "y")->kids[1]->value, "2");
    }
    assert_string_equal(both->kids[1]->value, "8"); /* the redefined &s */
    assert_string_equal(cfg_get(n, "8")->value, "key");
    assert_string_equal(cfg_get(cfg_get(n, "out")->kids[1], "y")->kids[0]->value, "7");
    /* the copies are apart: freeing the tree frees each once (ASan, valgrind) */
    assert_true(cfg_get(n, "out")->kids[0] != out->kids[0]);
    cfg_node_free(n);
    diag_free(d);
}

/* Issue 18.19: [[[... was quadratic in libyaml's loader: 800 KB took over 60 s. */
static void test_cfg_parse_deep_nesting_stops_at_once(void **state)
{
    (void)state;
    size_t n = 800000;
    char *t = xmalloc(n + 1);
    memset(t, '[', n);
    t[n] = '\0';
    char *m = parse_msg(t, n); /* stopped at the 65th level, not at the end */
    assert_string_equal(m, "t.yaml:1:65: document nested too deeply (more than 64 levels)");
    free(m);
    for (size_t i = 0; i + 1 < n; i += 2) /* block style: "- - - ..." */
        t[i] = '-', t[i + 1] = ' ';
    m = parse_msg(t, n);
    assert_string_equal(m, "t.yaml:1:129: document nested too deeply (more than 64 levels)");
    free(m);
    free(t);
}

/* Issue 18.20: a second document and unknown tags were silently ignored. */
static void test_cfg_parse_rejects_documents_and_tags(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"a: 1\n---\nb: 2\n",
         "t.yaml:2:1: expected one YAML document, got a second one (a '---' after the first)"},
        {"a: !foo 1\n", "t.yaml:1:4: unsupported tag '!foo'"},
        {"a: !!int 1\n", "t.yaml:1:4: unsupported tag 'tag:yaml.org,2002:int'"},
        {"a: !!map {b: 1}\n", "t.yaml:1:4: unsupported tag 'tag:yaml.org,2002:map'"},
        {"a: *nope\n", "t.yaml:1:4: undefined alias '*nope'"},
        {"a: &x [*x]\n", "t.yaml:1:8: undefined alias '*x'"},
        {"{[1]: 2}\n", "t.yaml:1:2: expected a key (a plain word), got a sequence"},
        {"a: &k [1]\n*k : 2\n", "t.yaml:2:1: expected a key (a plain word), got an alias of a "
                                "sequence"},
        {"a: 1\na: 2\n", "t.yaml:2:1: a: duplicate key"},
        {"a: [1\n", "t.yaml:2:1: did not find expected ',' or ']'"},
        {"---\na: !!str 12\nb: &v {c: 1}\nd: *v\n...\n", ""}, /* one document, marked */
        /* a NUL cut the value short: "v5e\u0000junk" read as v5e */
        {"chip: \"v5e\\u0000junk\"\n",
         "t.yaml:1:7: chip: expected text without a NUL character (\\u0000), got "
         "\"v5e\\u0000junk\""},
        {"w:\n  - {name: \"a\\0b\"}\n",
         "t.yaml:2:12: w.0.name: expected text without a NUL character (\\u0000), got "
         "\"a\\u0000b\""},
        {"\"k\\0\": 1\n", "t.yaml:1:1: expected a key without a NUL character (\\u0000), got "
                          "\"k\\u0000\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *m = parse_msg(cases[i].text, strlen(cases[i].text));
        if (!strstr(m, cases[i].want) || (!*cases[i].want && *m))
            print_error("case %zu: got '%s', want '%s'\n", i, m, cases[i].want);
        assert_non_null(strstr(m, cases[i].want));
        assert_true(*cases[i].want || !*m);
        free(m);
    }
}

/* Aliases are copies: !!str quotes, an anchored map reads the same at both places. */
static void test_cfg_parse_aliases_and_str(void **state)
{
    (void)state;
    const char *t = "a: !!str 12\nb: &v {c: 1}\nd: *v\n";
    struct diag *d = diag_new();
    struct cfg_node *n = cfg_parse(t, strlen(t), "t.yaml", d);
    assert_non_null(n);
    assert_true(cfg_get(n, "a")->quoted);
    const struct cfg_node *dd = cfg_get(n, "d");
    assert_int_equal(dd->type, CFG_MAP);
    assert_string_equal(cfg_get(dd, "c")->value, "1");
    assert_int_equal(dd->line, 3);
    assert_int_equal(dd->col, 4);
    cfg_node_free(n);
    diag_free(d);
}

/* Issue 32.9: a map of N keys is read in O(N) (duplicate detection, lookups
 * and overrides use the map's hash index; 500k keys took 12 min). The
 * results are those of the linear scans: every key found with its own
 * value, the duplicate reported once at its own line, the first of two
 * equal keys kept, --set replacing in place. */
static void test_cfg_many_keys(void **state)
{
    (void)state;
    enum { N = 200000 };
    size_t cap = (size_t)N * 24 + 64, o = 0;
    char *y = xmalloc(cap);
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(y + o, cap - o, "k%d: %d\n", i, i);
    o += (size_t)snprintf(y + o, cap - o, "k7: dup\n"); /* line N + 1 */
    struct diag *d = diag_new();
    struct cfg_node *root = cfg_parse(y, o, "m.yaml", d);
    assert_non_null(root);
    assert_int_equal(diag_count(d), 1);
    char want[64];
    snprintf(want, sizeof want, "m.yaml:%d:1: k7: duplicate key", N + 1);
    assert_string_equal(diag_message(d, 0), want);
    assert_int_equal(root->n, N + 1);
    for (int i = 0; i < N; i += 997) {
        char k[16], v[16];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "%d", i);
        assert_string_equal(cfg_get(root, k)->value, v);
    }
    assert_string_equal(cfg_get(root, "k7")->value, "7"); /* the first one */
    assert_null(cfg_get(root, "k200000"));
    assert_null(cfg_get(root, "k"));
    assert_int_equal(cfg_apply_set(root, "k199999=x", d), 0);
    assert_int_equal(cfg_apply_set(root, "new.key=y", d), 0);
    assert_int_equal(root->n, N + 2);
    assert_string_equal(cfg_get(root, "k199999")->value, "x");
    assert_string_equal(cfg_get(cfg_get(root, "new"), "key")->value, "y");
    cfg_node_free(root);
    diag_free(d);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfg_presets_load),
        cmocka_unit_test(test_cfg_chip_override_and_set),
        cmocka_unit_test(test_cfg_hbm_usable),
        cmocka_unit_test(test_cfg_scoped_vmem_leaves_half),
        cmocka_unit_test(test_cfg_generation_rules_are_preset_fields),
        cmocka_unit_test(test_cfg_default_wraparound_rules),
        cmocka_unit_test(test_cfg_errors_have_positions_and_suggestions),
        cmocka_unit_test(test_cfg_set_errors),
        cmocka_unit_test(test_cfg_set_empty_segment),
        cmocka_unit_test(test_cfg_set_index_overflow),
        cmocka_unit_test(test_cfg_scenario_name_rule),
        cmocka_unit_test(test_cfg_quantities_have_bounds),
        cmocka_unit_test(test_cfg_parse_alias_bomb_stops_at_the_limit),
        cmocka_unit_test(test_cfg_parse_deep_nesting_stops_at_once),
        cmocka_unit_test(test_cfg_parse_rejects_documents_and_tags),
        cmocka_unit_test(test_cfg_parse_aliases_and_str),
        cmocka_unit_test(test_cfg_parse_alias_bomb_builds_nothing),
        cmocka_unit_test(test_cfg_walk_suggest),
        cmocka_unit_test(test_cfg_many_keys),
        cmocka_unit_test(test_cfg_parse_nested_aliases_expand),
    };
    return cmocka_run_group_tests_name("cfg", tests, NULL, NULL);
}
