/* tests/fuzz/fuzz_set.c -- libFuzzer harness: arbitrary bytes as --set
 * overrides and as sweep keys (issue 18.1, 18.2: an empty path freed the root,
 * a huge list index wrote out of bounds). The input is split into lines. When
 * its first byte is even, every line is a "key.path=value" override of a small
 * scenario with lists (loaded as `tpusim check --set` loads it); when odd, the
 * first line is a sweep key and the other lines its values, written into a
 * sweep spec with an inline base (as `tpusim sweep` reads it), and every point
 * is loaded as its run would load it. Either way: a scenario or messages,
 * never a crash, a leak or an abort. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "study/sweep_int.h"
#include "engine/validate.h"

#define MAX_LINES 8

static const char base_text[] =
    "name: fuzz\n"
    "chip: v5e\n"
    "topology: {shape: [2, 2]}\n"
    "workload:\n"
    "  - {op: matmul, name: mm, m: 512, k: 512, n: 512}\n"
    "  - {op: hbm_copy, name: cp, bytes: 1MiB, after: [mm]}\n"
    "  - {op: all_gather, name: ag, bytes: 1MiB, axes: [0]}\n"
    "  - {op: flash_attention, name: fa, batch: 1, heads: 2, q_seq_len: 512, kv_seq_len: 512,\n"
    "     head_dim: 128, causal: true}\n";

/* Splits data into at most MAX_LINES NUL-terminated lines (in 'buf'). */
static int split_lines(const uint8_t *data, size_t size, char *buf, char **lines)
{
    memcpy(buf, data, size);
    buf[size] = '\0';
    int n = 0;
    char *s = buf;
    while (n < MAX_LINES && *s) {
        lines[n++] = s;
        char *nl = strchr(s, '\n');
        if (!nl)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    return n;
}

static void load_and_validate(const char *path, const char *text, const char *const *sets, int n)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    int rc = text ? cfg_load_scenario_text(text, strlen(text), "fuzz.yaml", sets, n, &sc, d)
                  : cfg_load_scenario(path, sets, n, &sc, d);
    if (rc == 0) {
        /* what building the kernels takes first (a MaskInfo may be huge) */
        struct validate_limits lim = {.max_steps = 100000, .max_memory_bytes = 1e9};
        if (validate_prebuild(&sc, &lim, d) == 0 && validate_estimate_steps(&sc) < 100000000)
            validate_ops(&sc, d);
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
}

/* Appends 's' to 'f' as a YAML double-quoted scalar (nothing can escape it). */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A value: plain when it is a number or a word (so 1MiB stays a size), quoted otherwise. */
static void put_value(FILE *f, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") ==
                  strlen(s))
        fputs(s, f);
    else
        put_quoted(f, s);
}

static void fuzz_sweep_key(char **lines, int n)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-set-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fputs("base:\n", f);
    for (const char *s = base_text; *s; s++) { /* indent the base under base: */
        if (s == base_text || s[-1] == '\n')
            fputs("  ", f);
        fputc(*s, f);
    }
    fputs("sweep:\n  ", f);
    put_quoted(f, lines[0]);
    fputs(": [", f);
    for (int i = 1; i < n; i++) {
        fputs(i > 1 ? ", " : "", f);
        put_value(f, lines[i]);
    }
    fputs(n > 1 ? "]\n" : "1]\n", f);
    fclose(f);
    struct diag *d = diag_new();
    struct sweep_spec sp;
    if (sweep_spec_load(path, NULL, 0, &sp, d) == 0) {
        for (int i = 0; i < sp.npoints && i < 8; i++) {
            int k;
            char **sets = sweep_point_sets(&sp, i, &k);
            load_and_validate(sp.base_path, NULL, (const char *const *)sets, k);
            sweep_sets_free(sets);
        }
    }
    sweep_spec_fini(&sp);
    diag_free(d);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    char *buf = malloc(size);
    char *lines[MAX_LINES];
    int n = split_lines(data + 1, size - 1, buf, lines);
    if (data[0] % 2 == 0)
        load_and_validate(NULL, base_text, (const char *const *)lines, n);
    else if (n > 0)
        fuzz_sweep_key(lines, n);
    free(buf);
    return 0;
}
