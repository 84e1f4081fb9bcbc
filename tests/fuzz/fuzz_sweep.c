/* tests/fuzz/fuzz_sweep.c -- libFuzzer harness: arbitrary bytes as a sweep
 * spec (loaded from a file, as `tpusim sweep` does). Loading must give a spec
 * or messages, never a crash or a leak; a loaded spec must expand its points. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/diag.h"
#include "study/sweep_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-sweep-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct diag *d = diag_new();
    struct sweep_spec sp;
    if (sweep_spec_load(path, NULL, 0, &sp, d) == 0) {
        for (int i = 0; i < sp.npoints && i < 64; i++) {
            int n;
            sweep_sets_free(sweep_point_sets(&sp, i, &n));
        }
        sweep_spec_fini(&sp);
    }
    diag_free(d);
    unlink(path);
    return 0;
}
