/* cli/cli_hlo.c -- `tpusim run --hlo FILE --chip CHIP --topology AxB`: the
 * scenario of an HLO program written for the user (cli/cli.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "cli/cli.h"

/* "16x16" as "16, 16": 1 to 3 positive sizes of at most 5 digits; false if not. */
static bool topology_list(const char *t, char *out, size_t n)
{
    size_t len = 0;
    int dims = 0;
    out[0] = '\0';
    while (*t) {
        size_t k = strspn(t, "0123456789");
        if (k == 0 || k > 5 || ++dims > 3 || (t[k] && t[k] != 'x') || atoi(t) < 1)
            return false;
        len += (size_t)snprintf(out + len, n - len, "%s%.*s", dims > 1 ? ", " : "", (int)k, t);
        t += k;
        if (*t == 'x' && !*++t)
            return false;
    }
    return dims > 0 && len < n;
}

/* The scenario's name: the file's base name without ".txt" and ".hlo",
 * other characters than a name takes as '_', at most 64. */
static char *hlo_scenario_name(const char *path)
{
    const char *b = strrchr(path, '/');
    char *s = xstrdup(b ? b + 1 : path);
    for (const char *ext[] = {".txt", ".hlo"}, **e = ext; e < ext + 2; e++) {
        size_t n = strlen(s), k = strlen(*e);
        if (n > k && strcmp(s + n - k, *e) == 0)
            s[n - k] = '\0';
    }
    if (strlen(s) > 64)
        s[64] = '\0';
    for (char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
            *c = '_';
    if (!cfg_name_ok(s)) {
        free(s);
        s = xstrdup("hlo");
    }
    return s;
}

char *cli_hlo_scenario(const char *hlo, const char *chip, const char *topology, char **file)
{
    char dims[64];
    if (!topology) {
        cli_usage_error("--hlo needs --topology, the slice's shape like 4x4 or 2x2x4");
        return NULL;
    }
    if (!topology_list(topology, dims, sizeof dims)) {
        cli_usage_error("--topology takes 1 to 3 sizes joined by x, like 16x16");
        return NULL;
    }
    for (const char *c = hlo; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f) {
            cli_usage_error("--hlo takes a file name without control characters");
            return NULL;
        }
    for (const char *c = chip; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') {
            cli_usage_error("--chip takes a chip name like v5e (tpusim chips lists them)");
            return NULL;
        }
    /* the path is relative to the scenario's file: the HLO file's directory */
    const char *base = strrchr(hlo, '/');
    base = base ? base + 1 : hlo;
    char *quoted = xcalloc(2 * strlen(base) + 3, 1), *q = quoted;
    *q++ = '"';
    for (const char *c = base; *c; c++) {
        if (*c == '"' || *c == '\\')
            *q++ = '\\';
        *q++ = *c;
    }
    *q = '"';
    char *name = hlo_scenario_name(hlo);
    char *text = xasprintf("name: %s\nchip: %s\ntopology: {shape: [%s]}\nprogram: {hlo: %s}\n",
                           name, chip, dims, quoted);
    *file = xasprintf("%s (--hlo)", hlo);
    free(name);
    free(quoted);
    return text;
}
