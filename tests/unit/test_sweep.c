/* tests/unit/test_sweep.c -- sweep specs (parsing, expansion, messages with
 * file:line:col), the JSON reader, and whole sweeps run through the tpusim
 * binary next to this test (build/<variant>/tpusim): infeasible points are
 * rows, --resume skips finished points, Ctrl-C keeps finished points and
 * valid tables, -j does not change the tables, compare. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "config/cfg_tree.h"
#include "cli/cli.h"
#include "study/sweep.h"
#include "study/sweep_int.h"

static char tmpdir[64];
static char bin[4096];

/* ---------------- helpers ---------------- */

static char *path_in(const char *name)
{
    return xasprintf("%s/%s", tmpdir, name);
}

static char *write_file(const char *name, const char *text)
{
    char *p = path_in(name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

/* Removes from 't' the measured figures of issue 31.6, the only parts of a
 * sweep's tables that differ between runs (a point's wall time and peak
 * memory): in JSON ', "wall_s": X, "peak_rss_bytes": Y' (the comma, and a
 * line break before the key, included); in a CSV whose header ends with
 * them, the last two fields of each line. The tests below compare the rest. */
static void strip_measured(char *t)
{
    const char *hdr = ",wall_s,peak_rss_bytes\n";
    char *nl = strchr(t, '\n');
    if (nl && (size_t)(nl + 1 - t) >= strlen(hdr) && !strncmp(nl + 1 - strlen(hdr), hdr, strlen(hdr))) {
        char *w = t;
        for (char *line = t; *line;) {
            char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            size_t keep = n;
            for (int k = 0; k < 2 && keep > 0;) /* back to the second-last comma */
                if (line[--keep] == ',')
                    k++;
            memmove(w, line, keep);
            w += keep;
            if (end)
                *w++ = '\n';
            line += n + (end ? 1 : 0);
        }
        *w = '\0';
        return;
    }
    char *k;
    while ((k = strstr(t, "\"wall_s\": "))) {
        char *b = k;
        while (b > t && (b[-1] == ' ' || b[-1] == '\n'))
            b--;
        if (b > t && b[-1] == ',')
            b--;
        char *e = strstr(k, "\"peak_rss_bytes\": ");
        assert_non_null(e);
        e += strlen("\"peak_rss_bytes\": ");
        while (*e && strchr("0123456789.enul", *e))
            e++;
        memmove(b, e, strlen(e) + 1);
    }
}

static char *read_all(const char *path)
{
    size_t n;
    char *t = fs_read_all(path, (size_t)1 << 30, &n);
    if (t)
        strip_measured(t);
    return t;
}

/* "diff -r A B" over two sweep directories, their measured figures
 * (strip_measured) replaced by the same placeholders first. */
static char *diff_cmd(const char *a, const char *b)
{
    static const char sed[] =
        "sed -i -e 's/\"wall_s\": [0-9.]*/\"wall_s\": W/' "
        "-e 's/\"cpu_s\": [0-9.]*/\"cpu_s\": C/' "
        "-e 's/\"peak_rss_bytes\": [0-9]*/\"peak_rss_bytes\": R/'";
    return xasprintf("find '%s' '%s' -name '*.json' -exec %s {} + && "
                     "find '%s' '%s' -name '*.csv' -exec sed -i 's/,[0-9.]*,[0-9]*$/,W,R/' {} + && "
                     "diff -r '%s' '%s'",
                     a, b, sed, a, b, a, b);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Runs `tpusim ARGS...` with stdout to 'out' and stderr to 'err' (file paths),
 * files limited to 'fsize' bytes when not 0 (writes past it fail as on a full
 * disk). Returns the child's pid without waiting when 'nowait', else its exit status. */
static int run_bin_limited(const char *const *args, const char *out, const char *err,
                           bool nowait, long fsize)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = bin;
    for (; *args; args++)
        argv[n++] = *args;
    char *flags = getenv("TPUSIM_SIMFLAGS");
    char *sg = flags && *flags ? xasprintf("--sg=%s", flags) : NULL;
    if (sg && !strcmp(argv[1], "sweep") && strcmp(argv[2], "merge")) /* merge runs nothing */
        argv[n++] = sg;
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        if (fsize) {
            struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
            signal(SIGXFSZ, SIG_IGN);
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    free(sg);
    if (nowait)
        return pid;
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_bin(const char *const *args, const char *out, const char *err, bool nowait)
{
    return run_bin_limited(args, out, err, nowait, 0);
}

/* Runs cmd_sweep() itself in a child (so valgrind and ASan see the sweep code). */
static int run_inproc(const char *const *args, const char *err)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = "sweep";
    for (; *args; args++)
        argv[n++] = *args;
    char *flags = getenv("TPUSIM_SIMFLAGS");
    char *sg = flags && *flags ? xasprintf("--sg=%s", flags) : NULL;
    if (sg)
        argv[n++] = sg;
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fo = open("/dev/null", O_WRONLY);
        dup2(fo, 1);
        dup2(fe, 2);
        int rc = cmd_sweep(n, (char **)argv);
        free(sg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    free(sg);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void need_bin(void)
{
    if (!exists(bin)) {
        print_message("skipped: %s is not built\n", bin);
        skip();
    }
}

static int setup(void **state)
{
    (void)state;
    if (test_tmpdir_make(tmpdir, sizeof tmpdir, "sweep") != 0)
        return -1;
    /* this test is build/<variant>/tests/test_sweep; the binary is build/<variant>/tpusim */
    ssize_t n = readlink("/proc/self/exe", bin, sizeof bin - 16);
    bin[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(bin, '/');
    if (slash && slash - bin >= 6 && !strncmp(slash - 6, "/tests", 6))
        strcpy(slash - 6, "/tpusim");
    else
        strcpy(bin, "build/release/tpusim");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_tmpdir_remove(tmpdir);
}

static const char base_yaml[] = "name: mm\n"
                                "chip: v5e\n"
                                "topology: {shape: [1]}\n"
                                "workload:\n"
                                "  - op: matmul\n"
                                "    m: 256\n"
                                "    k: 256\n"
                                "    n: 256\n"
                                "    block: {bm: 128, bk: 128, bn: 128}\n";

/* Loads spec text 'yaml' (written as 'name' next to base.yaml); returns the rc. */
static int load_spec(const char *name, const char *yaml, struct sweep_spec *sp, struct diag *d)
{
    free(write_file("base.yaml", base_yaml));
    char *p = write_file(name, yaml);
    int rc = sweep_spec_load(p, NULL, 0, sp, d);
    free(p);
    return rc;
}

/* load_spec with --set edits of the base. */
static int load_spec_sets(const char *name, const char *yaml, const char *const *sets, int nsets,
                          struct sweep_spec *sp, struct diag *d)
{
    free(write_file("base.yaml", base_yaml));
    char *p = write_file(name, yaml);
    int rc = sweep_spec_load(p, sets, nsets, sp, d);
    free(p);
    return rc;
}

static const char *point_set(const struct sweep_spec *sp, int i, int k)
{
    return sp->points[i].values[k];
}

/* 'text' with each 'word' replaced by 'spec' (a new string). */
static char *subst(const char *text, const char *word, const char *spec)
{
    char *out = xstrdup("");
    for (const char *p = text;;) {
        const char *q = strstr(p, word);
        char *n = xasprintf("%s%.*s%s", out, (int)(q ? q - p : (long)strlen(p)), p, q ? spec : "");
        free(out);
        out = n;
        if (!q)
            return out;
        p = q + strlen(word);
    }
}

/* Asserts that message 'i' of 'd' is 'want_text', where SPEC stands for the spec's path
 * and BASE for base.yaml's. */
static void assert_message(struct diag *d, int i, const char *name, const char *want_text)
{
    char *spec = path_in(name), *base = path_in("base.yaml");
    char *want0 = subst(want_text, "SPEC", spec);
    char *want = subst(want0, "BASE", base);
    free(want0);
    free(base);
    assert_true(diag_count(d) > i);
    if (strcmp(diag_message(d, i), want))
        print_error("got  %s\nwant %s\n", diag_message(d, i), want);
    assert_string_equal(diag_message(d, i), want);
    free(want);
    free(spec);
}

/* ---------------- spec parsing and expansion ---------------- */

static void test_spec_cartesian_in_written_order(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("cart.yaml",
                       "base: base.yaml\n"
                       "sweep:\n"
                       "  workload.0.block.bm: [128, 256]\n"
                       "  workload.0.block.bn: [64, 128, 256]\n",
                       &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_string_equal(sp.name, "cart");
    assert_int_equal(sp.nkeys, 2);
    assert_int_equal(sp.npoints, 6);
    static const char *const want[6][2] = {{"128", "64"}, {"128", "128"}, {"128", "256"},
                                           {"256", "64"}, {"256", "128"}, {"256", "256"}};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(point_set(&sp, i, 0), want[i][0]);
        assert_string_equal(point_set(&sp, i, 1), want[i][1]);
    }
    int n;
    char **sets = sweep_point_sets(&sp, 4, &n);
    assert_int_equal(n, 2);
    assert_string_equal(sets[0], "workload.0.block.bm=256");
    assert_string_equal(sets[1], "workload.0.block.bn=128");
    assert_null(sets[2]);
    sweep_sets_free(sets);
    assert_int_equal(sp.default_point, 1); /* 128 x 128 */
    assert_false(sp.default_added);
    sweep_spec_fini(&sp);
    diag_free(d);
}

static void test_spec_zip_and_points(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("zip.yaml",
                       "name: zz\n"
                       "base: base.yaml\n"
                       "sweep:\n"
                       "  workload.0.k: [256, 512]\n"
                       "zip:\n"
                       "  workload.0.m: [512, 1024]\n"
                       "  workload.0.n: [1024, 2048]\n"
                       "points:\n"
                       "  - {workload.0.m: 8}\n"
                       "  - {topology.shape: [2, 2], workload.0.dtype: 'f32'}\n",
                       &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_string_equal(sp.name, "zz");
    assert_int_equal(sp.nkeys, 5);
    assert_string_equal(sp.keys[0].path, "workload.0.k");
    assert_string_equal(sp.keys[3].path, "topology.shape");
    assert_int_equal(sp.npoints, 7); /* 2 x 2, 2 points and the default */
    /* zip varies fastest, its keys together */
    assert_string_equal(point_set(&sp, 1, 0), "256");
    assert_string_equal(point_set(&sp, 1, 1), "1024");
    assert_string_equal(point_set(&sp, 1, 2), "2048");
    assert_string_equal(point_set(&sp, 2, 0), "512");
    assert_string_equal(point_set(&sp, 2, 1), "512");
    /* explicit points come last; keys they do not set stay unset (base values shown) */
    assert_string_equal(point_set(&sp, 4, 1), "8");
    assert_null(point_set(&sp, 4, 0));
    assert_string_equal(sp.points[4].shown[0], "256");
    assert_string_equal(point_set(&sp, 5, 3), "[2, 2]");
    assert_string_equal(sp.points[5].shown[3], "[2, 2]");
    assert_string_equal(point_set(&sp, 5, 4), "\"f32\"");
    assert_string_equal(sp.points[5].shown[4], "f32");
    assert_string_equal(sp.keys[3].base_value, "[1]");
    assert_null(sp.keys[4].base_value); /* the base does not say */
    /* no point has the base's values (k=256, m=256, n=256, [1], unset dtype): one more does */
    assert_int_equal(sp.default_point, 6);
    assert_true(sp.default_added);
    int n;
    char **sets = sweep_point_sets(&sp, 6, &n);
    assert_int_equal(n, 0);
    sweep_sets_free(sets);
    assert_string_equal(sp.points[6].shown[0], "256");
    assert_string_equal(sp.points[6].shown[3], "[1]");
    assert_string_equal(sp.points[6].shown[4], "");
    sweep_spec_fini(&sp);
    diag_free(d);
}

static void test_spec_errors_name_file_line_col(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("bad.yaml",
                       "base: nope.yaml\n"
                       "swep: {}\n"
                       "sweep:\n"
                       "  workload.0.m: 512\n"
                       "zip:\n"
                       "  workload.0.k: [1, 2]\n"
                       "  workload.0.n: [1, 2, 3]\n",
                       &sp, d);
    assert_int_equal(rc, -1);
    assert_int_equal(diag_count(d), 4);
    assert_message(d, 0, "bad.yaml", "SPEC:2:1: unknown key 'swep' (did you mean 'sweep'?)");
    assert_message(
        d, 1, "bad.yaml",
        "SPEC:4:17: sweep.workload.0.m: expected a non-empty list of values, got a scalar");
    assert_message(
        d, 2, "bad.yaml",
        "SPEC:7:17: zip.workload.0.n: expected a list of 2 values (like zip.workload.0.k), "
        "got 3");
    char *missing = path_in("nope.yaml");
    char *fmt = xasprintf("SPEC:1:7: base: expected a scenario file (relative to the spec's "
                          "directory), got 'nope.yaml' (%s: No such file or directory)",
                          missing);
    assert_message(d, 3, "bad.yaml", fmt);
    free(fmt);
    free(missing);
    sweep_spec_fini(&sp);
    diag_clear(d);
    rc = load_spec("syntax.yaml", "base: base.yaml\nsweep:\n  workload.0.m: [1, 2\n", &sp, d);
    assert_int_equal(rc, -1);
    assert_message(d, 0, "syntax.yaml",
                   "SPEC:4:1: did not find expected ',' or ']' while parsing a flow sequence");
    sweep_spec_fini(&sp);
    diag_clear(d);
    rc = load_spec("empty.yaml", "base: base.yaml\n", &sp, d);
    assert_int_equal(rc, -1);
    assert_message(d, 0, "empty.yaml", "SPEC:1:1: expected at least one of sweep, zip or points");
    sweep_spec_fini(&sp);
    diag_free(d);
}

static void test_spec_unknown_key_path_points_at_the_spec(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("keys.yaml",
                       "base: base.yaml\n"
                       "sweep:\n"
                       "  workload.0.block.bmm: [128]\n"
                       "  workload.3.m: [1]\n"
                       "  workload.0.m: [256, x]\n",
                       &sp, d);
    assert_int_equal(rc, -1);
    assert_int_equal(diag_count(d), 2); /* 'x' is a point's problem (infeasible), not the spec's */
    assert_message(
        d, 0, "keys.yaml",
        "SPEC:3:3: sweep.workload.0.block.bmm: expected a key path of the base scenario, "
        "got BASE: workload.0.block: unknown key 'bmm' (did you mean 'bm'?)");
    assert_message(d, 1, "keys.yaml",
                   "SPEC:4:3: sweep.workload.3.m: expected a key path of the base scenario, got "
                   "--set workload.3.m=1: workload.3.m: index 3 is out of range (the list has 1 item)");
    sweep_spec_fini(&sp);
    diag_free(d);
}

/* Issue 19.3: --set edits the base: every point's runs start from it, and so does the default. */
static void test_spec_set_edits_the_base(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    static const char spec[] = "base: base.yaml\n"
                               "sweep:\n"
                               "  workload.0.block.bm: [128, 256]\n";
    const char *sets[] = {"workload.0.block.bm=256", "workload.0.m=512"};
    int rc = load_spec_sets("set.yaml", spec, sets, 2, &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_int_equal(sp.npoints, 2);
    assert_int_equal(sp.default_point, 1); /* bm=256 is the base's own value now */
    assert_false(sp.default_added);
    int n;
    char **ps = sweep_point_sets(&sp, 0, &n);
    assert_int_equal(n, 3);
    assert_string_equal(ps[0], "workload.0.block.bm=256");
    assert_string_equal(ps[1], "workload.0.m=512");
    assert_string_equal(ps[2], "workload.0.block.bm=128");
    sweep_sets_free(ps);
    sweep_spec_fini(&sp);
    diag_clear(d);
    const char *bad[] = {"workload.0.mm=512"};
    rc = load_spec_sets("set.yaml", spec, bad, 1, &sp, d);
    assert_int_equal(rc, -1);
    assert_true(diag_count(d) >= 1);
    assert_non_null(strstr(diag_message(d, 0), "unknown key 'mm' (did you mean 'm'?)"));
    sweep_spec_fini(&sp);
    diag_free(d);
}

static const char base2_yaml[] = "name: mm2\n"
                                 "chip: v5e\n"
                                 "topology: {shape: [1]}\n"
                                 "workload:\n"
                                 "  - {op: matmul, m: 256, k: 256, n: 256, block: {bm: 128}}\n"
                                 "  - {op: matmul, m: 256, k: 256, n: 256, block: {bm: 128}}\n";

/* Issue 19.3: vars: one swept value feeds several ops' keys. */
static void test_spec_vars_set_several_paths(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    free(write_file("base2.yaml", base2_yaml));
    int rc = load_spec("vars.yaml",
                       "base: base2.yaml\n"
                       "vars:\n"
                       "  bm: [workload.0.block.bm, workload.1.block.bm]\n"
                       "sweep:\n"
                       "  bm: [64, 128]\n"
                       "  workload.0.k: [256, 512]\n",
                       &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_int_equal(sp.nkeys, 2);
    assert_string_equal(sp.keys[0].path, "bm"); /* one column, named by the var */
    assert_int_equal(sp.keys[0].npaths, 2);
    assert_int_equal(sp.npoints, 4);
    assert_int_equal(sp.default_point, 2); /* bm=128 (both ops), k=256 */
    int n;
    char **ps = sweep_point_sets(&sp, 1, &n);
    assert_int_equal(n, 3);
    assert_string_equal(ps[0], "workload.0.block.bm=64");
    assert_string_equal(ps[1], "workload.1.block.bm=64");
    assert_string_equal(ps[2], "workload.0.k=512");
    sweep_sets_free(ps);
    sweep_spec_fini(&sp);
    diag_clear(d);
    /* the paths differ in the base: no point has its values, the default is added */
    rc = load_spec("vars2.yaml",
                   "base: base2.yaml\n"
                   "vars: {mk: [workload.0.m, workload.1.block.bm]}\n"
                   "points: [{mk: 256}]\n",
                   &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_true(sp.default_added);
    assert_string_equal(sp.points[1].shown[0], "256 / 128");
    sweep_spec_fini(&sp);
    diag_clear(d);
    rc = load_spec("vars3.yaml",
                   "base: base2.yaml\n"
                   "vars:\n"
                   "  bm: [workload.0.block.bm, workload.1.block.bm]\n"
                   "  unused: [workload.0.m]\n"
                   "  a.b: [workload.0.m]\n"
                   "  bad: [workload..m]\n"
                   "sweep:\n"
                   "  bm: [64]\n"
                   "  workload.1.block.bm: [64]\n",
                   &sp, d);
    assert_int_equal(rc, -1);
    assert_message(d, 0, "vars3.yaml",
                   "SPEC:5:3: vars.a.b: expected a name of letters, digits, '_', '-' or ':' (no "
                   "dots: key paths have them), got 'a.b'");
    assert_message(d, 1, "vars3.yaml",
                   "SPEC:6:9: vars.bad: expected a key path like workload.0.block.bm, got "
                   "workload..m");
    assert_message(d, 2, "vars3.yaml",
                   "SPEC:4:3: vars.unused: not used by sweep, zip or points");
    assert_message(d, 5, "vars3.yaml",
                   "SPEC:9:3: sweep.workload.1.block.bm: sets workload.1.block.bm, which sweep.bm "
                   "(SPEC:8:3) sets too");
    assert_int_equal(diag_count(d), 6); /* and a.b and bad are not used either */
    sweep_spec_fini(&sp);
    diag_free(d);
}

/* Issue 18.2: a point's index beyond 2^63 wrote out of bounds (atoi). */
static void test_spec_huge_index_is_out_of_range(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("huge.yaml",
                       "base: base.yaml\n"
                       "points:\n"
                       "  - {workload.9223372036854775808.m: 256}\n",
                       &sp, d);
    assert_int_equal(rc, -1);
    assert_message(d, 0, "huge.yaml",
                   "SPEC:3:6: points.0.workload.9223372036854775808.m: expected a key path of the "
                   "base scenario, got --set workload.9223372036854775808.m=256: "
                   "workload.9223372036854775808.m: index 9223372036854775808 is out of range "
                   "(the list has 1 item)");
    sweep_spec_fini(&sp);
    diag_free(d);
}

static void test_spec_inline_base_messages_point_into_the_spec(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("inline.yaml",
                       "base:\n"
                       "  chip: v5e\n"
                       "  workload:\n"
                       "    - op: matmul\n"
                       "      m: 256\n"
                       "      k: 256\n"
                       "      n: abc\n"
                       "sweep:\n"
                       "  workload.0.m: [128, 256]\n",
                       &sp, d);
    assert_int_equal(rc, -1);
    assert_message(d, 0, "inline.yaml",
                   "SPEC:7:10: workload.0.n: expected a positive integer, got 'abc'");
    sweep_spec_fini(&sp);
    diag_clear(d);
    rc = load_spec("inline2.yaml",
                   "base:\n"
                   "  chip: v5e\n"
                   "  workload:\n"
                   "    - {op: matmul, m: 256, k: 256, n: 256, block: {bm: 128}}\n"
                   "sweep:\n"
                   "  workload.0.block.bm: [128, 100]\n",
                   &sp, d);
    diag_print(d, stderr);
    assert_int_equal(rc, 0);
    assert_true(sp.base_inline);
    char *bp = path_in("base_out.yaml");
    assert_int_equal(sweep_spec_write_base(&sp, bp), 0);
    assert_string_equal(sp.base_path, bp);
    char *text = read_all(bp);
    assert_non_null(strstr(text, "name: \"inline2\"\n"));
    assert_non_null(strstr(text, "    block:\n      bm: 128\n"));
    /* a message about line 11 col 11 of the generated file (the bm value) maps back */
    char *msg =
        xasprintf("%s:11:11: workload.0.block.bm: bad\n%s: workload.0: matmul: rule", bp, bp);
    char *mapped = sweep_map_message(&sp, msg);
    char *want = xasprintf("%s:4:56: workload.0.block.bm: bad\n%s: workload.0: matmul: rule",
                           sp.file, sp.file);
    assert_string_equal(mapped, want);
    free(want);
    free(mapped);
    free(msg);
    free(text);
    free(bp);
    sweep_spec_fini(&sp);
    diag_free(d);
}

/* fuzz_sweep's timeout (3 min 44 s for a 268-byte spec): a ragged decode
 * generator of 40,024 sequences with a bad kv_len said it once per sequence,
 * and the sweep joined the 40,025 messages by copying the text so far each
 * time. Now the generator stops at its first message, the collector keeps
 * 64 as text and counts the rest, and the join is one pass of 20 + a count. */
static void test_many_messages_stay_linear(void **state)
{
    (void)state;
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = load_spec("many.yaml",
                       "base:\n"
                       "  chip: v5e\n"
                       "  workload:\n"
                       "    - op: ragged_paged_attention\n"
                       "      decode: {batch: 40024, kv_len: 00x}\n"
                       "sweep:\n"
                       "  workload.0.q_heads: [1, 4]\n",
                       &sp, d);
    assert_int_equal(rc, -1);
    int kv = 0;
    for (int i = 0; i < diag_kept(d); i++)
        for (const char *q = diag_message(d, i); (q = strstr(q, "decode.kv_len")); q++)
            kv++;
    assert_int_equal(kv, 1);
    sweep_spec_fini(&sp);
    diag_free(d);
    /* the collector: 100,000 messages counted, 64 kept, diag_print's 20 + a count */
    d = diag_new();
    for (int i = 0; i < 100000; i++)
        diag_error(d, NULL, "k", "message %d", i);
    assert_int_equal(diag_count(d), 100000);
    assert_int_equal(diag_kept(d), 64);
    assert_string_equal(diag_message(d, 63), "k: message 63");
    assert_null(diag_message(d, 64));
    struct sweep_spec none = {0};
    char *text = sweep_diag_text(&none, d);
    int lines = 1;
    for (const char *q = text; *q; q++)
        lines += *q == '\n';
    assert_int_equal(lines, 21);
    assert_non_null(strstr(text, "k: message 19\n... and 99980 more"));
    free(text);
    diag_free(d);
}

static void test_node_text_round_trips(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"512", "512"},           {"-1", "-1"},
        {"1GiB", "1GiB"},         {"'f32'", "\"f32\""},
        {"[16, 16]", "[16, 16]"}, {"{a: 1, b: [x]}", "{a: 1, b: [x]}"},
        {"\"a,b\"", "\"a,b\""},   {"true", "true"},
        {"null", "null"}};
    struct diag *d = diag_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cfg_node *n = cfg_parse(cases[i][0], strlen(cases[i][0]), "t", d);
        assert_non_null(n);
        char *t = cfg_node_text(n);
        assert_string_equal(t, cases[i][1]);
        /* and it parses back to the same text */
        struct cfg_node *m = cfg_parse(t, strlen(t), "t", d);
        char *t2 = cfg_node_text(m);
        assert_string_equal(t2, t);
        free(t2);
        free(t);
        cfg_node_free(m);
        cfg_node_free(n);
    }
    assert_int_equal(diag_count(d), 0);
    diag_free(d);
}

static void test_json_reader(void **state)
{
    (void)state;
    static const char text[] =
        "{\"a\": [1, -2.5e3, true, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\","
        " \"o\": {}}";
    char err[128];
    struct json *j = json_parse(text, strlen(text), err, sizeof err);
    assert_non_null(j);
    const struct json *a = json_get(j, "a");
    assert_int_equal(a->type, JSON_ARR);
    assert_int_equal(a->n, 4);
    assert_true(a->kids[1]->num == -2500.0);
    assert_true(a->kids[2]->b);
    assert_int_equal(a->kids[3]->type, JSON_NULL);
    assert_string_equal(json_str(j, "s", NULL), "x\n\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(json_get(j, "o")->type, JSON_OBJ);
    assert_null(json_get(j, "missing"));
    json_free(j);
    static const char *const bad[] = {"{\"a\": }", "[1, 2", "{\"a\" 1}", "\"abc", "[1] x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(json_parse(bad[i], strlen(bad[i]), err, sizeof err));
        assert_non_null(strstr(err, "line 1: "));
    }
}

/* ---------------- whole sweeps ---------------- */

static void test_sweep_infeasible_point_is_a_row(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("blocks"), *err = path_in("blocks.err");
    const char *args[] = {"tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "-j", "2", NULL};
    assert_int_equal(run_inproc(args, err), 0);
    char *csvp = xasprintf("%s/sweep.csv", dir);
    char *csv = read_all(csvp);
    assert_non_null(csv);
    assert_int_equal(count(csv, "\n"), 7);
    assert_int_equal(count(csv, ",ok,\n"), 2);
    assert_int_equal(count(csv, ",infeasible,"), 4);
    /* the reason is exactly what `tpusim run` prints for that point */
    char *rout = path_in("run.out"), *rerr = path_in("run.err"), *rdir = path_in("run");
    const char *run_args[] = {"run",
                              "tests/data/sweeps/matmul_base.yaml",
                              "-o",
                              rdir,
                              "-q",
                              "--set",
                              "workload.0.block.bm=100",
                              "--set",
                              "workload.0.block.bn=128",
                              NULL};
    assert_int_equal(run_bin(run_args, rout, rerr, false), 2);
    char *msg = read_all(rerr);
    msg[strcspn(msg, "\n")] = '\0';
    assert_string_equal(msg, "tests/data/sweeps/matmul_base.yaml:6:5: workload.0: matmul: m=256 "
                             "should be divisible by bm=100");
    char *row = xasprintf("\n3,100,128,,,,,,infeasible,%s\n", msg);
    assert_non_null(strstr(csv, row));
    /* the JSON and the report carry it too; only the best and default keep a trace */
    char *jp = xasprintf("%s/sweep.json", dir), *mdp = xasprintf("%s/report.md", dir);
    char why[256];
    struct json *j = json_read_file(jp, JSON_MAX_BYTES, why, sizeof why);
    assert_non_null(j);
    const struct json *pts = json_get(j, "points");
    assert_int_equal(pts->n, 6);
    assert_string_equal(json_str(pts->kids[3], "status", ""), "infeasible");
    assert_string_equal(json_str(pts->kids[3], "reason", ""), msg);
    int best = (int)json_num(j, "best_point", -1);
    assert_true(best == 0 || best == 1); /* the feasible points */
    assert_true(json_num(j, "default_point", -1) == 0);
    json_free(j);
    char *md = read_all(mdp);
    char *best_line = xasprintf("- **Best**: point %d (bm=128, bn=%s)", best, best ? "256" : "128");
    assert_non_null(strstr(md, best_line));
    free(best_line);
    assert_non_null(strstr(md, "- **Default**: point 0 (bm=128, bn=128)"));
    assert_non_null(strstr(md, "| 3 | 100 | 128 | infeasible | "));
    for (int i = 0; i < 6; i++) {
        char *t = xasprintf("%s/points/%04d/trace.json", dir, i);
        assert_int_equal(exists(t), i == best || i == 0);
        free(t);
    }
    char *heat = xasprintf("%s/heatmap.svg", dir),
         *plot = xasprintf("%s/plot_workload.0.block.bm.svg", dir);
    assert_true(exists(heat) && exists(plot));
    char *svg = read_all(heat);
    assert_int_equal(count(svg, ">infeasible</text>"), 4 + 1); /* 4 cells and the legend */
    free(svg);
    free(heat);
    free(plot);
    free(md);
    free(mdp);
    free(jp);
    free(row);
    free(msg);
    free(rdir);
    free(rerr);
    free(rout);
    free(csv);
    free(csvp);
    free(err);
    free(dir);
}

/* A point whose all-to-all stand-in (engine/spmd.h) has a matmul beside it: the point
 * trusts its stand-in first (no probe), comes back SIM_STANDIN_RETRY and runs again as
 * `tpusim run` runs it, every chip simulated, the same times. */
static void test_sweep_point_retries_a_stand_in(void **state)
{
    (void)state;
    need_bin();
    free(write_file("beside.yaml", "chip: {base: v5p}\ntopology: {shape: [4, 4, 4]}\n"
                                   "workload:\n"
                                   "  - {op: all_gather, name: g, bytes: 1MiB, axes: [0]}\n"
                                   "  - {op: all_to_all, name: x, bytes: 1MiB, axes: [1]}\n"
                                   "  - {op: matmul, name: m, m: 256, k: 256, n: 256, "
                                   "after: [g]}\n"));
    char *spec = write_file("retry.yaml", "base: beside.yaml\npoints:\n"
                                          "  - {workload.2.m: 256}\n  - {workload.2.m: 512}\n");
    char *dir = path_in("retry"), *err = path_in("retry.err");
    const char *args[] = {spec, "-o", dir, "-j", "2", NULL};
    assert_int_equal(run_inproc(args, err), 0);
    char *base = path_in("beside.yaml"), *rdir = path_in("beside-run");
    char *rout = path_in("beside-run.out"), *rerr = path_in("beside-run.err");
    const char *run_args[] = {"run", base, "-o", rdir, "--trace", "none", "-q", NULL};
    assert_int_equal(run_bin(run_args, rout, rerr, false), 0);
    char why[256];
    char *pp = xasprintf("%s/points/0000/summary.json", dir), *rp = xasprintf("%s/summary.json", rdir);
    struct json *a = json_read_file(pp, JSON_MAX_BYTES, why, sizeof why);
    struct json *b = json_read_file(rp, JSON_MAX_BYTES, why, sizeof why);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(json_num(a, "simulated_chips", 0) == 64 && json_num(b, "simulated_chips", 0) == 64);
    assert_true(json_num(a, "total_time_s", 0) == json_num(b, "total_time_s", -1));
    json_free(a);
    json_free(b);
    free(pp);
    free(rp);
    free(base);
    free(rdir);
    free(rout);
    free(rerr);
    free(err);
    free(dir);
    free(spec);
}

/* Issue 19.3: the default point is the base's own values, run as an extra point when the
 * sweep does not contain them (point 0 stood in for it, giving headlines like "14.65x"). */
static void test_sweep_runs_the_default_point(void **state)
{
    (void)state;
    need_bin();
    free(write_file("base.yaml", base_yaml));
    char *spec = write_file("nodef.yaml", "base: base.yaml\n"
                                          "sweep:\n"
                                          "  workload.0.block.bn: [256, 64]\n");
    char *dir = path_in("nodef"), *err = path_in("nodef.err");
    const char *args[] = {spec, "-o", dir, "--set", "workload.0.m=512", NULL};
    assert_int_equal(run_inproc(args, err), 0);
    char *jp = xasprintf("%s/sweep.json", dir), *mdp = xasprintf("%s/report.md", dir);
    char why[256];
    struct json *j = json_read_file(jp, JSON_MAX_BYTES, why, sizeof why);
    assert_non_null(j);
    assert_true(json_num(j, "points_total", 0) == 3);
    assert_true(json_num(j, "default_point", -1) == 2);
    assert_true(json_get(j, "default_added")->b);
    const struct json *pts = json_get(j, "points");
    assert_string_equal(json_str(pts->kids[2], "status", ""), "ok");
    json_free(j);
    char *md = read_all(mdp);
    assert_non_null(strstr(md, "- **Default**: point 2 (bn=128)"));
    assert_non_null(strstr(md, "run as an extra point"));
    char *tr = xasprintf("%s/points/0002/trace.json", dir);
    assert_true(exists(tr));
    /* --set edited the base of every point, the default's too */
    char *pj = xasprintf("%s/points/0002/point.json", dir);
    char *pt = read_all(pj);
    assert_non_null(strstr(pt, "\"sets\": [\"workload.0.m=512\"]"));
    free(pt);
    /* what the point cost: its process's CPU time beside its wall time */
    char why2[256];
    struct json *pjj = json_read_file(pj, JSON_MAX_BYTES, why2, sizeof why2);
    assert_non_null(pjj);
    double cpu = json_num(pjj, "cpu_s", -1), wall = json_num(pjj, "wall_s", -1);
    assert_true(cpu > 0 && wall > 0);
    json_free(pjj);
    free(pj);
    /* the points' shared lone runs of stand-ins go with the sweep (engine/eng_standin.c) */
    char *sd = xasprintf("%s/.standins", dir);
    assert_false(exists(sd));
    free(sd);
    free(tr);
    free(md);
    free(mdp);
    free(jp);
    free(err);
    free(dir);
    free(spec);
}

/* A swept string with a backslash: sweep.json escapes it ("x\\y") and reads back as
 * valid JSON with the value as written (an unescaped backslash made it invalid). */
static void test_sweep_value_with_backslash(void **state)
{
    (void)state;
    need_bin();
    free(write_file("base.yaml", base_yaml));
    char *spec = write_file("bs.yaml", "base: base.yaml\nsweep:\n  name: ['x\\y', z]\n");
    char *dir = path_in("bs"), *err = path_in("bs.err");
    const char *args[] = {spec, "-o", dir, NULL};
    assert_int_equal(run_inproc(args, err), 0);
    char *jp = xasprintf("%s/sweep.json", dir), *text = read_all(jp);
    assert_non_null(strstr(text, "\"values\": {\"name\": \"x\\\\y\"}"));
    char why[256];
    struct json *j = json_read_file(jp, JSON_MAX_BYTES, why, sizeof why);
    if (!j)
        fail_msg("sweep.json: %s", why);
    const struct json *pts = json_get(j, "points");
    assert_string_equal(json_str(json_get(pts->kids[0], "values"), "name", ""), "x\\y");
    json_free(j);
    free(text);
    free(jp);
    free(err);
    free(dir);
    free(spec);
}

/* Issue 19.3: `tpusim check SWEEP.yaml` checks every point (with --set edits), running none. */
static void test_check_takes_a_sweep_spec(void **state)
{
    (void)state;
    need_bin();
    char *out = path_in("check.out"), *err = path_in("check.err");
    const char *args[] = {"check", "tests/data/sweeps/matmul_blocks.yaml", "--set",
                          "workload.0.m=512", NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    char *text = read_all(out);
    assert_non_null(strstr(text, "point 3 (bm=100, bn=128): infeasible: "
                                 "tests/data/sweeps/matmul_base.yaml:6:5: workload.0: matmul: "
                                 "m=512 should be divisible by bm=100\n"));
    assert_non_null(strstr(text, "tests/data/sweeps/matmul_blocks.yaml: ok (sweep matmul_blocks, "
                                 "6 points: 2 feasible, 4 infeasible; default point 0)\n"));
    assert_int_equal(count(text, "infeasible: "), 4);
    free(text);
    /* a scenario is still a scenario */
    const char *scen[] = {"check", "tests/data/sweeps/matmul_base.yaml", NULL};
    assert_int_equal(run_bin(scen, out, err, false), 0);
    text = read_all(out);
    assert_non_null(strstr(text, "matmul_base.yaml: ok (1 ops"));
    free(text);
    free(err);
    free(out);
}

static void test_sweep_failed_point_is_a_row(void **state)
{
    (void)state;
    need_bin();
    /* a directory where point 0's summary.json goes: its run (again, by --resume) exits 1 */
    char *dir = path_in("failed"), *out = path_in("failed.out"), *err = path_in("failed.err");
    const char *first[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, NULL};
    assert_int_equal(run_bin(first, out, err, false), 0);
    char *blocker = xasprintf("%s/points/0000/summary.json", dir);
    char *cmd = xasprintf("rm -f '%s' '%s/points/0000/point.json' && mkdir -p '%s'", blocker, dir,
                          blocker);
    assert_int_equal(system(cmd), 0);
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "--resume",
                          NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    char *csvp = xasprintf("%s/sweep.csv", dir);
    char *csv = read_all(csvp);
    char *want = xasprintf("\n0,128,128,,,,,,failed,%s: cannot write: Is a directory\n", blocker);
    assert_non_null(strstr(csv, want));
    assert_int_equal(count(csv, ",ok,\n"), 1);
    free(want);
    free(csv);
    free(csvp);
    free(cmd);
    free(blocker);
    free(err);
    free(out);
    free(dir);
}

/* Issue 32.3 (data loss): `--resume` into another sweep's directory deleted
 * its points (those past its own count), traces and the user's files under
 * points/NNNN, then exited 0. A sweep records who it is (.sweep-id.json:
 * its name, keys and shard) when it first writes a directory; a resume
 * proves it is the same sweep or is refused (exit 2) before anything is
 * touched, and removes only files a sweep writes. */
static void test_sweep_resume_refuses_another_sweep(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("other"), *out = path_in("other.out"), *err = path_in("other.err");
    const char *a[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, NULL};
    assert_int_equal(run_bin(a, out, err, false), 0);
    char *csvp = xasprintf("%s/sweep.csv", dir);
    char *csv1 = read_all(csvp);
    char *notes3 = xasprintf("%s/points/0003/notes.txt", dir);
    char *point5 = xasprintf("%s/points/0005/point.json", dir);
    char *cmd = xasprintf("echo mine > '%s'", notes3);
    assert_int_equal(system(cmd), 0);
    /* a 2-point sweep: its resume pruned points 2..5 and rewrote 0 and 1 */
    char *spec = write_file("other_spec.yaml",
                            "name: other\n"
                            "base: {chip: v5e, workload: [{op: hbm_copy, bytes: 1MiB}]}\n"
                            "sweep:\n  workload.0.bytes: [1MiB, 2MiB]\n");
    const char *b[] = {"sweep", spec, "-o", dir, "--resume", NULL};
    assert_int_equal(run_bin(b, out, err, false), 2);
    char *text = read_all(err);
    char *want = xasprintf("tpusim sweep: %s holds sweep 'matmul_blocks' (keys workload.0.block.bm, "
                           "workload.0.block.bn), not sweep 'other' (keys workload.0.bytes): "
                           "--resume continues only the sweep that wrote it",
                           dir);
    if (!strstr(text, want))
        fail_msg("stderr: %s", text);
    free(want);
    free(text);
    assert_true(exists(notes3) && exists(point5));
    char *csv2 = read_all(csvp);
    assert_string_equal(csv1, csv2);
    free(csv2);
    /* another shard of the same sweep is another sweep too */
    char *sdir = path_in("other_shard");
    const char *s0[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "--shard", "0/2",
                        "-o",    sdir, NULL};
    assert_int_equal(run_bin(s0, out, err, false), 0);
    const char *s1[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "--shard", "1/2",
                        "-o",    sdir, "--resume", NULL};
    assert_int_equal(run_bin(s1, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "holds sweep 'matmul_blocks' shard 0/2 (keys"));
    free(text);
    /* a directory without the record is not resumed either */
    char *bare = path_in("other_bare");
    free(cmd);
    cmd = xasprintf("mkdir -p '%s/points/0000' && echo mine > '%s/points/0000/notes.txt'", bare,
                    bare);
    assert_int_equal(system(cmd), 0);
    const char *c[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", bare, "--resume",
                       NULL};
    assert_int_equal(run_bin(c, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "holds no record of the sweep that wrote it (.sweep-id.json)"));
    free(text);
    /* the same sweep resumes, and leaves the user's files where they are: a point run
     * again keeps notes.txt, a point past the sweep's count loses only what a sweep wrote */
    char *m3 = xasprintf("%s/points/0003/point.json", dir);
    unlink(m3);
    char *p42 = xasprintf("%s/points/0042", dir);
    free(cmd);
    cmd = xasprintf("mkdir -p '%s' && touch '%s/point.json' '%s/summary.json' '%s/mine.txt'", p42,
                    p42, p42, p42);
    assert_int_equal(system(cmd), 0);
    /* and a planted link points/0050 -> a directory of the user's is not followed */
    char *elsewhere = path_in("other_elsewhere"), *p50 = xasprintf("%s/points/0050", dir);
    char *their = xasprintf("%s/point.json", elsewhere);
    free(cmd);
    cmd = xasprintf("mkdir -p '%s' && touch '%s' && ln -s '%s' '%s'", elsewhere, their, elsewhere,
                    p50);
    assert_int_equal(system(cmd), 0);
    const char *again[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "--resume",
                           NULL};
    assert_int_equal(run_bin(again, out, err, false), 0);
    assert_true(exists(notes3) && exists(m3));
    char *mine42 = xasprintf("%s/mine.txt", p42), *pj42 = xasprintf("%s/point.json", p42);
    assert_true(exists(mine42));
    assert_false(exists(pj42));
    assert_true(exists(their));
    unlink(p50);
    free(their);
    free(p50);
    free(elsewhere);
    csv2 = read_all(csvp);
    assert_string_equal(csv1, csv2);
    free(csv2);
    /* --force refuses a directory whose points hold a file a sweep does not write */
    unlink(mine42);
    rmdir(p42);
    const char *force[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "--force",
                           NULL};
    assert_int_equal(run_bin(force, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "holds 'points/0003/notes.txt', which a sweep does not write"));
    free(text);
    assert_true(exists(notes3) && exists(point5));
    free(mine42);
    free(pj42);
    free(p42);
    free(m3);
    free(bare);
    free(sdir);
    free(spec);
    free(cmd);
    free(point5);
    free(notes3);
    free(csv1);
    free(csvp);
    free(err);
    free(out);
    free(dir);
}

static void test_sweep_resume_skips_finished_points(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("resume"), *out = path_in("resume.out"), *err = path_in("resume.err");
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "-j", "2",
                          NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    char *text = read_all(err);
    assert_int_equal(count(text, " done: "), 6); /* six launches */
    free(text);
    char *csvp = xasprintf("%s/sweep.csv", dir);
    char *csv1 = read_all(csvp);

    const char *again[] = {
        "sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "-j", "2", "--resume", NULL};
    assert_int_equal(run_bin(again, out, err, false), 0);
    text = read_all(err);
    assert_non_null(strstr(text, "resume: 6 of 6 points already done, 0 to run"));
    assert_int_equal(count(text, " done: "), 0);
    free(text);
    char *csv2 = read_all(csvp);
    assert_string_equal(csv1, csv2);
    free(csv2);

    /* a point without its marker, and one whose summary is gone, run again */
    char *m1 = xasprintf("%s/points/0001/point.json", dir);
    char *m4 = xasprintf("%s/points/0004/point.json", dir);
    char *s0 = xasprintf("%s/points/0000/summary.json", dir);
    unlink(m1);
    unlink(m4);
    unlink(s0);
    /* and an earlier, larger sweep's point 99 goes */
    char *p99 = xasprintf("%s/points/0099", dir);
    char *mk = xasprintf("mkdir -p '%s' && touch '%s/point.json'", p99, p99);
    assert_int_equal(system(mk), 0);
    assert_int_equal(run_bin(again, out, err, false), 0);
    assert_false(exists(p99));
    free(mk);
    free(p99);
    text = read_all(err);
    assert_non_null(strstr(text, "resume: 3 of 6 points already done, 3 to run"));
    assert_int_equal(count(text, " done: "), 3);
    assert_non_null(strstr(text, "done: 0000 ok"));
    assert_non_null(strstr(text, "done: 0001 ok"));
    assert_non_null(strstr(text, "done: 0004 infeasible"));
    free(text);
    csv2 = read_all(csvp);
    assert_string_equal(csv1, csv2);
    free(csv2);
    free(m1);
    free(m4);
    free(s0);
    free(csv1);
    free(csvp);
    free(err);
    free(out);
    free(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_sweep_sigint_keeps_finished_points(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("slow"), *out = path_in("slow.out"), *err = path_in("slow.err");
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_slow.yaml", "-o", dir, "-j", "1",
                          NULL};
    pid_t pid = run_bin(args, out, err, true);
    char *marker = xasprintf("%s/points/0000/point.json", dir);
    double t0 = now_s();
    while (!exists(marker) && now_s() - t0 < 60) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_true(exists(marker));
    struct timespec ts = {0, 200000000}; /* the slow point is running by now */
    nanosleep(&ts, NULL);
    double t1 = now_s();
    kill(pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    /* it did not wait for the slow point (about 9 s) to finish */
    assert_true(now_s() - t1 < 5);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 130);

    char *s0 = xasprintf("%s/points/0000/summary.json", dir);
    char *s1 = xasprintf("%s/points/0001/summary.json", dir);
    char *m1 = xasprintf("%s/points/0001/point.json", dir);
    assert_true(exists(s0));
    assert_false(exists(s1));
    assert_false(exists(m1));
    char *csvp = xasprintf("%s/sweep.csv", dir), *jp = xasprintf("%s/sweep.json", dir);
    char *csv = read_all(csvp);
    assert_int_equal(count(csv, "\n"), 2);
    assert_non_null(strstr(csv, "\n0,256,"));
    char why[256];
    struct json *j = json_read_file(jp, JSON_MAX_BYTES, why, sizeof why);
    assert_non_null(j);
    assert_false(json_get(j, "complete")->b);
    assert_true(json_num(j, "points_done", 0) == 1);
    assert_true(json_num(j, "points_total", 0) == 2);
    json_free(j);
    char *md = xasprintf("%s/report.md", dir);
    char *mdt = read_all(md);
    assert_non_null(strstr(mdt, "**Interrupted**: 1 of 2 points finished"));
    char *cmd = xasprintf("ls -R '%s' | grep -c '\\.tmp\\.'", dir);
    FILE *p = popen(cmd, "r");
    int ntmp = -1;
    assert_int_equal(fscanf(p, "%d", &ntmp), 1);
    pclose(p);
    assert_int_equal(ntmp, 0);
    free(cmd);
    free(mdt);
    free(md);
    free(jp);
    free(csv);
    free(csvp);
    free(m1);
    free(s1);
    free(s0);
    free(marker);
    free(err);
    free(out);
    free(dir);
}

static void test_sweep_jobs_give_identical_tables(void **state)
{
    (void)state;
    need_bin();
    char *d1 = path_in("j1"), *d2 = path_in("j2"), *out = path_in("j.out"), *err = path_in("j.err");
    const char *a1[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", d1, "-j", "1", NULL};
    const char *a2[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", d2, "-j", "2", NULL};
    assert_int_equal(run_bin(a1, out, err, false), 0);
    assert_int_equal(run_bin(a2, out, err, false), 0);
    static const char *const files[] = {"sweep.csv",
                                        "sweep.json",
                                        "report.md",
                                        "heatmap.svg",
                                        "plot_workload.0.block.bm.svg",
                                        "plot_workload.0.block.bn.svg"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *p1 = xasprintf("%s/%s", d1, files[i]), *p2 = xasprintf("%s/%s", d2, files[i]);
        char *t1 = read_all(p1), *t2 = read_all(p2);
        assert_non_null(t1);
        assert_non_null(t2);
        assert_string_equal(t1, t2);
        free(t1);
        free(t2);
        free(p1);
        free(p2);
    }
    free(err);
    free(out);
    free(d2);
    free(d1);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&ts, NULL);
}

/* Waits up to 60 s for 'path' to exist. */
static bool wait_for(const char *path)
{
    double t0 = now_s();
    while (!exists(path) && now_s() - t0 < 60)
        sleep_ms(10);
    return exists(path);
}

/* Issue 16 (hardening): a sweep into a directory that holds an earlier sweep
 * mixed the two (old plots and points beside the new ones). */
static void test_sweep_refuses_a_used_directory(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("used"), *out = path_in("used.out"), *err = path_in("used.err");
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    assert_int_equal(run_bin(args, out, err, false), 2);
    char *text = read_all(err);
    assert_non_null(strstr(text, " is not empty (it holds '"));
    assert_non_null(strstr(text, "use --resume to finish an interrupted sweep, --force"));
    free(text);
    /* --force removes an earlier sweep's files (a stale plot and point, and the stand-ins a
     * killed sweep left in .standins), and only those */
    char *stale_plot = xasprintf("%s/plot_workload.0.m.svg", dir);
    char *stale_point = xasprintf("%s/points/0099", dir);
    char *stale_standin = xasprintf("%s/.standins/0123", dir);
    char *mine = xasprintf("%s/notes.txt", dir);
    char *cmd = xasprintf("mkdir -p '%s' '%s/.standins' && touch '%s/point.json' '%s' '%s'",
                          stale_point, dir, stale_point, stale_plot, stale_standin);
    assert_int_equal(system(cmd), 0);
    const char *force[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "--force",
                           NULL};
    assert_int_equal(run_bin(force, out, err, false), 0);
    assert_false(exists(stale_plot));
    assert_false(exists(stale_point));
    assert_false(exists(stale_standin));
    free(stale_standin);
    char *csv = xasprintf("%s/sweep.csv", dir);
    assert_true(exists(csv));
    free(write_file("used/notes.txt", "mine\n"));
    assert_int_equal(run_bin(force, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "holds 'notes.txt', which a sweep does not write"));
    assert_true(exists(mine) && exists(csv));
    free(text);
    free(csv);
    free(cmd);
    free(mine);
    free(stale_point);
    free(stale_plot);
    free(err);
    free(out);
    free(dir);
}

/* Two sweeps into one directory: the second is refused while the first runs;
 * started together, exactly one of them writes the directory. */
static void test_sweep_two_sweeps_one_directory(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("busy"), *out = path_in("busy.out"), *err = path_in("busy.err");
    char *out2 = path_in("busy2.out"), *err2 = path_in("busy2.err");
    const char *slow[] = {"sweep", "tests/data/sweeps/matmul_slow.yaml", "-o", dir, "-j", "1",
                          NULL};
    pid_t pid = run_bin(slow, out, err, true);
    char *marker = xasprintf("%s/points/0000/point.json", dir);
    assert_true(wait_for(marker));
    const char *again[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, "--resume",
                           NULL};
    assert_int_equal(run_bin(again, out2, err2, false), 1);
    char *text = read_all(err2);
    char *want = xasprintf("tpusim sweep: %s is in use by another sweep (pid %d)", dir, (int)pid);
    assert_non_null(strstr(text, want));
    free(want);
    free(text);
    kill(pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 130);
    char *lock = xasprintf("%s/.tpusim-lock", dir);
    assert_false(exists(lock)); /* and the lock is gone with it */

    /* started together into a new directory: one runs, the other is refused */
    char *dir2 = path_in("race"), *ref = path_in("race_ref");
    const char *a[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir2, "-j", "1",
                       NULL};
    pid_t p1 = run_bin(a, out, err, true), p2 = run_bin(a, out2, err2, true);
    int s1, s2;
    waitpid(p1, &s1, 0);
    waitpid(p2, &s2, 0);
    assert_true(WIFEXITED(s1) && WIFEXITED(s2));
    int rc1 = WEXITSTATUS(s1), rc2 = WEXITSTATUS(s2);
    assert_true((rc1 == 0) != (rc2 == 0));
    text = read_all(rc1 ? err : err2);
    /* refused by the sweep lock, or by a point run's lock in the other sweep's directory */
    assert_true(strstr(text, "in use by another") || strstr(text, "is not empty"));
    free(text);
    const char *r[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", ref, NULL};
    assert_int_equal(run_bin(r, out, err, false), 0);
    char *c1 = xasprintf("%s/sweep.csv", dir2), *c2 = xasprintf("%s/sweep.csv", ref);
    char *t1 = read_all(c1), *t2 = read_all(c2);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    free(c1);
    free(c2);
    free(ref);
    free(dir2);
    free(lock);
    free(marker);
    free(err2);
    free(out2);
    free(err);
    free(out);
    free(dir);
}

/* True while process 'pid' runs (a zombie has ended). */
static bool alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z';
}

/* The parent of 'pid' from /proc, or -1. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    int ppid = -1;
    return close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 ? ppid : -1;
}

/* The pids of the children of 'parent', at most 'max'. */
static int children_of(pid_t parent, pid_t *kids, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && n < max && (e = readdir(d)) != NULL) {
        int pid = atoi(e->d_name);
        if (pid > 0 && parent_of(pid) == parent)
            kids[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* Issue 16: a SIGKILLed sweep left its points running (and writing) as orphans. */
static void test_sweep_sigkill_takes_its_points(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("killed"), *out = path_in("killed.out"), *err = path_in("killed.err");
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_slow.yaml", "-o", dir, "-j", "1",
                          NULL};
    pid_t pid = run_bin(args, out, err, true);
    char *marker = xasprintf("%s/points/0000/point.json", dir);
    assert_true(wait_for(marker));
    pid_t kids[8];
    int n = 0;
    for (double t0 = now_s(); n == 0 && now_s() - t0 < 10; sleep_ms(10))
        n = children_of(pid, kids, 8); /* the slow point */
    assert_true(n > 0);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        while (alive(kids[i]) && now_s() - t0 < 5)
            sleep_ms(10);
    for (int i = 0; i < n; i++)
        assert_false(alive(kids[i]));
    free(marker);
    free(err);
    free(out);
    free(dir);
}

/* Issue 16: a sweep that ran out of disk exited 0 with the best point's trace missing. */
static void test_sweep_missing_output_fails(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("full"), *ref = path_in("full_ref");
    char *out = path_in("full.out"), *err = path_in("full.err");
    /* traces of every step: larger than the tables */
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", ref,
                          "--set", "options.trace=steps", NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    /* a file limit between the largest other output and the smallest kept trace */
    static const char *const others[] = {"sweep.csv", "sweep.json", "report.md", "heatmap.svg",
                                         "plot_workload.0.block.bm.svg",
                                         "plot_workload.0.block.bn.svg", "points/0000/summary.json",
                                         "points/0000/platform.xml"};
    long big = 0, trace = -1;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char *p = xasprintf("%s/%s", ref, others[i]);
        big = file_size(p) > big ? file_size(p) : big;
        free(p);
    }
    for (int i = 0; i < 2; i++) {
        char *p = xasprintf("%s/points/%04d/trace.json", ref, i);
        if (trace < 0 || file_size(p) < trace)
            trace = file_size(p);
        free(p);
    }
    if (trace <= big + 2) {
        print_message("skipped: the traces (%ld bytes) are not larger than the tables (%ld)\n",
                      trace, big);
        skip();
    }
    const char *full[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir,
                          "--set", "options.trace=steps", NULL};
    assert_int_equal(run_bin_limited(full, out, err, false, (big + trace) / 2), 1);
    char *text = read_all(err);
    assert_non_null(strstr(text, "the run with a trace failed"));
    assert_non_null(strstr(text, "/trace.json (the best point's trace) is missing"));
    free(text);
    char *csv = xasprintf("%s/sweep.csv", dir);
    assert_true(exists(csv)); /* the tables are still written */
    free(csv);
    free(err);
    free(out);
    free(ref);
    free(dir);
}

/* Pages (4 KiB, tmpfs's unit) used in the file system of 'path'. */
static long used_pages(const char *path)
{
    struct statvfs v;
    if (statvfs(path, &v) != 0)
        return -1;
    return (long)((v.f_blocks - v.f_bfree) * v.f_frsize / 4096);
}

static long pages_of(const char *path)
{
    long n = file_size(path);
    return n < 0 ? 0 : (n + 4095) / 4096;
}

/* Issue 32.20: on a full disk a sweep exited 1 but still printed "wrote
 * report.html, ... sweep.json", and a write that failed part way was reported
 * as "Input/output error". A tmpfs (when this test may mount one: root)
 * sized to hold the points and one page more: the tables do not fit. */
static void test_sweep_full_disk_claims_no_write(void **state)
{
    (void)state;
    need_bin();
    char *mnt = path_in("tmpfs"), *out = path_in("tmpfs.out"), *err = path_in("tmpfs.err");
    mkdir(mnt, 0755);
    if (mount("tpusim-test", mnt, "tmpfs", 0, "size=16m") != 0) {
        print_message("skipped: cannot mount a tmpfs here (%s)\n", strerror(errno));
        free(mnt), free(out), free(err);
        skip();
    }
    /* the 64-point example: sweep.csv is about 6 KB, more than one write() */
    char *dir = xasprintf("%s/s", mnt);
    const char *args[] = {"sweep", "configs/sweeps/flash_v5e_blocks.yaml", "-o", dir, "-j", "2",
                          NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    long total = used_pages(mnt), tables = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char *p = xasprintf("%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, "points") && e->d_name[0] != '.')
            tables += pages_of(p);
        free(p);
    }
    closedir(d);
    char *csv = xasprintf("%s/sweep.csv", dir);
    long csv_bytes = file_size(csv);
    assert_int_equal(umount(mnt), 0);
    assert_true(csv_bytes > 4096); /* more than one stdio buffer of 4 KiB */
    char *opts = xasprintf("size=%ld", (total - tables + 1) * 4096);
    assert_int_equal(mount("tpusim-test", mnt, "tmpfs", 0, opts), 0);
    int rc = run_bin(args, out, err, false);
    char *so = read_all(out), *se = read_all(err);
    umount(mnt);
    assert_int_equal(rc, 1);
    if (!strstr(se, "No space left on device") || strstr(se, "Input/output error"))
        fail_msg("stderr: %s", se);
    if (strstr(so, "wrote "))
        fail_msg("claims a write that failed: %s", so);
    assert_non_null(strstr(se, "tpusim sweep: the outputs in "));
    free(so);
    free(se);
    free(opts);
    free(csv);
    free(dir);
    free(err);
    free(out);
    free(mnt);
}

/* Issue 17.3: shards of a sweep, merged, give the bytes of one run: tables, report, plots,
 * every point and the best and default points' traces. */
static void test_sweep_shards_merge_to_the_same_bytes(void **state)
{
    (void)state;
    need_bin();
    char *spec = write_file("sharded.yaml", "base:\n"
                                            "  chip: v5e\n"
                                            "  topology: {shape: [1]}\n"
                                            "  workload:\n"
                                            "    - {op: matmul, m: 256, k: 256, n: 256,\n"
                                            "       block: {bm: 128, bk: 128, bn: 128}}\n"
                                            "sweep:\n"
                                            "  workload.0.block.bm: [128, 100, 256]\n"
                                            "  workload.0.block.bn: [256, 64]\n");
    char *one = path_in("sh_one"), *s0 = path_in("sh_0"), *s1 = path_in("sh_1");
    char *s2 = path_in("sh_2"), *mg = path_in("sh_merged");
    char *out = path_in("sh.out"), *err = path_in("sh.err");
    const char *a1[] = {"sweep", spec, "-o", one, "-j", "2", NULL};
    assert_int_equal(run_bin(a1, out, err, false), 0);
    const char *a2[] = {"sweep", spec, "--shard", "0/3", "-o", s0, "-j", "1", NULL};
    const char *a3[] = {"sweep", spec, "--shard", "1/3", "-o", s1, "-j", "1", NULL};
    const char *a4[] = {"sweep", spec, "--shard", "2/3", "-o", s2, "-j", "1", NULL};
    assert_int_equal(run_bin(a2, out, err, false), 0);
    assert_int_equal(run_bin(a3, out, err, false), 0);
    /* a merge refuses a missing shard, then an incomplete set of directories */
    const char *m1[] = {"sweep", "merge", mg, s0, s1, NULL};
    assert_int_equal(run_bin(m1, out, err, false), 2);
    char *text = read_all(err);
    assert_non_null(strstr(text, "tpusim sweep merge: shard 2/3 is missing"));
    free(text);
    assert_false(exists(mg)); /* nothing written */
    assert_int_equal(run_bin(a4, out, err, false), 0);
    char *p3 = xasprintf("%s/points/0003/point.json", s0); /* shard 0 has 0, 3, 6 */
    char *p4 = xasprintf("%s/points/0004/point.json", s0);
    assert_true(exists(p3) && !exists(p4));
    const char *m2[] = {"sweep", "merge", mg, s2, s0, s1, NULL};
    assert_int_equal(run_bin(m2, out, err, false), 0);
    text = read_all(out);
    assert_non_null(strstr(text, "merged 3 shards of sweep sharded into "));
    free(text);
    /* every file, the traces too: byte for byte (but the measured wall times and memory) */
    char *cmd = diff_cmd(one, mg);
    assert_int_equal(system(cmd), 0);
    char *tr = xasprintf("%s/points/0006/trace.json", mg); /* the added default point */
    assert_true(exists(tr));
    /* the same shard twice, and a shard of another sweep */
    const char *m3[] = {"sweep", "merge", mg, s0, s0, s1, s2, "--force", NULL};
    assert_int_equal(run_bin(m3, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "both hold shard 0/3"));
    free(text);
    char *other = path_in("sh_other");
    const char *a5[] = {"sweep", spec, "--shard", "1/3", "-o", other, "-j", "1", "--set",
                        "workload.0.m=512", NULL};
    assert_int_equal(run_bin(a5, out, err, false), 0);
    const char *m4[] = {"sweep", "merge", mg, s0, other, s2, "--force", NULL};
    assert_int_equal(run_bin(m4, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "is a shard of another sweep than"));
    assert_non_null(strstr(text, "(spec_hash differs)"));
    free(text);
    /* issue 32.7's class: a point's log.txt planted as a link to /dev/zero is refused at
     * once (every input is read by the one opener), not copied until the disk is full */
    char *log0 = xasprintf("%s/points/0000/log.txt", s0), *mg2 = path_in("sh_merged2");
    unlink(log0);
    assert_int_equal(symlink("/dev/zero", log0), 0);
    const char *m5[] = {"sweep", "merge", mg2, s0, s1, s2, NULL};
    assert_int_equal(run_bin(m5, out, err, false), 1);
    text = read_all(err);
    assert_non_null(strstr(text, "/points/0000/log.txt: expected a regular file, got a device"));
    free(text);
    unlink(log0);
    free(mg2);
    free(log0);
    free(other);
    free(tr);
    free(cmd);
    free(p4);
    free(p3);
    free(err);
    free(out);
    free(mg);
    free(s2);
    free(s1);
    free(s0);
    free(one);
    free(spec);
}

static void test_compare_summaries_and_sweeps(void **state)
{
    (void)state;
    need_bin();
    char *dir = path_in("cmp"), *out = path_in("cmp.out"), *err = path_in("cmp.err");
    const char *args[] = {"sweep", "tests/data/sweeps/matmul_blocks.yaml", "-o", dir, NULL};
    assert_int_equal(run_bin(args, out, err, false), 0);
    char *a = xasprintf("%s/points/0000/summary.json", dir);
    char *b = xasprintf("%s/points/0001/summary.json", dir);
    const char *c1[] = {"compare", a, b, NULL};
    assert_int_equal(run_bin(c1, out, err, false), 0);
    char *text = read_all(out);
    assert_non_null(strstr(text, "\nmm "));
    assert_non_null(strstr(text, "%"));
    assert_non_null(strstr(text, " -> "));
    assert_non_null(strstr(text, "\ntotal "));
    free(text);
    const char *c2[] = {"compare", dir, dir, NULL};
    assert_int_equal(run_bin(c2, out, err, false), 0);
    text = read_all(out);
    assert_non_null(strstr(text, "ok -> ok"));
    assert_non_null(strstr(text, "infeasible -> infeasible"));
    assert_non_null(strstr(text, "+0.0%"));
    free(text);
    const char *c3[] = {"compare", a, dir, NULL};
    assert_int_equal(run_bin(c3, out, err, false), 2);
    char *missing = path_in("missing.json");
    const char *c4[] = {"compare", a, missing, NULL};
    assert_int_equal(run_bin(c4, out, err, false), 2);
    text = read_all(err);
    assert_non_null(strstr(text, "missing.json: No such file or directory"));
    free(text);
    char *garbage = write_file("garbage.json", "{\"ops\": [}");
    const char *c5[] = {"compare", a, garbage, NULL};
    assert_int_equal(run_bin(c5, out, err, false), 2);
    free(garbage);
    free(missing);
    free(b);
    free(a);
    free(err);
    free(out);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_cartesian_in_written_order),
        cmocka_unit_test(test_spec_zip_and_points),
        cmocka_unit_test(test_spec_errors_name_file_line_col),
        cmocka_unit_test(test_spec_unknown_key_path_points_at_the_spec),
        cmocka_unit_test(test_spec_huge_index_is_out_of_range),
        cmocka_unit_test(test_spec_set_edits_the_base),
        cmocka_unit_test(test_spec_vars_set_several_paths),
        cmocka_unit_test(test_spec_inline_base_messages_point_into_the_spec),
        cmocka_unit_test(test_node_text_round_trips),
        cmocka_unit_test(test_json_reader),
        cmocka_unit_test(test_sweep_infeasible_point_is_a_row),
        cmocka_unit_test(test_sweep_runs_the_default_point),
        cmocka_unit_test(test_sweep_point_retries_a_stand_in),
        cmocka_unit_test(test_sweep_value_with_backslash),
        cmocka_unit_test(test_check_takes_a_sweep_spec),
        cmocka_unit_test(test_sweep_failed_point_is_a_row),
        cmocka_unit_test(test_sweep_resume_skips_finished_points),
        cmocka_unit_test(test_sweep_resume_refuses_another_sweep),
        cmocka_unit_test(test_sweep_sigint_keeps_finished_points),
        cmocka_unit_test(test_sweep_jobs_give_identical_tables),
        cmocka_unit_test(test_sweep_refuses_a_used_directory),
        cmocka_unit_test(test_sweep_two_sweeps_one_directory),
        cmocka_unit_test(test_sweep_sigkill_takes_its_points),
        cmocka_unit_test(test_sweep_missing_output_fails),
        cmocka_unit_test(test_sweep_full_disk_claims_no_write),
        cmocka_unit_test(test_sweep_shards_merge_to_the_same_bytes),
        cmocka_unit_test(test_compare_summaries_and_sweeps),
        cmocka_unit_test(test_many_messages_stay_linear),
    };
    return cmocka_run_group_tests_name("sweep", tests, setup, teardown);
}
