/* tests/fuzz/fuzz_hlo.c -- libFuzzer harness: arbitrary bytes as HLO text
 * (workload/hlo.h). Reading must give a module or one message (never a
 * crash, a leak or an abort); a module on at most 16 devices is lowered to a
 * program on a ring of that many chips, which must succeed or give messages,
 * and its program: block written. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/diag.h"
#include "workload/hlo.h"
#include "workload/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag *d = diag_new();
    struct hlo_module *m = hlo_parse((const char *)data, size, "fuzz.hlo", d);
    struct topo t;
    if (m && hlo_devices(m) <= 16 &&
        topo_init(&t, 1, (int[]){(int)hlo_devices(m)}, (bool[]){hlo_devices(m) > 2}) == 0) {
        struct hlo_report rep;
        struct program *p = hlo_program_report(m, &t, d, NULL, &rep);
        if (p) { /* the peak memory, the summary's program: block */
            hlo_memory(m, &rep);
            free(hlo_report_json(m, p, &rep));
        }
        prog_free(p);
    }
    hlo_free(m);
    diag_free(d);
    return 0;
}
