/* cli/cmd_chips.c -- `tpusim chips`: the embedded chip presets, one line each. */
#include <stdio.h>

#include "base/diag.h"
#include "base/units.h"
#include "config/cfg.h"
#include "cli/cli.h"

int cmd_chips(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return cli_usage_error("chips takes no arguments");
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
        static const char *const wraps[] = {"axis16", "cube4", "always", "never", "axis32"};
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

