/* tests/fuzz/fuzz_cfg.c -- libFuzzer harness: arbitrary bytes as a scenario.
 * Loading must give either a scenario or messages (never a crash, a leak or
 * an abort), and a loaded scenario must pass or fail validate_ops cleanly:
 * that runs every kernel's block-size and VMEM rules without SimGrid. */
#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "base/diag.h"
#include "engine/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (cfg_load_scenario_text((const char *)data, size, "fuzz.yaml", NULL, 0, &sc, d) == 0) {
        /* what building the kernels takes first (a MaskInfo may be huge) */
        struct validate_limits lim = {.max_steps = 100000, .max_memory_bytes = 1e9};
        if (validate_prebuild(&sc, &lim, d) == 0 && validate_estimate_steps(&sc) < 100000000)
            validate_ops(&sc, d);
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
    return 0;
}
