/* tests/fuzz/fuzz_xprof.c -- libFuzzer harness: arbitrary bytes as a measured
 * Chrome trace for `tpusim compare --profile` (outputs/xprof.c), against a
 * small simulated run. Reading must give the comparison or a message (exit
 * 2) -- never a crash, a leak, or time beyond linear in the input. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "outputs/xprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char RUN[] =
    "{\"scenario\": \"f\", \"total_time_s\": 2e-05, \"program\": {\"module\": \"jit_f\"},"
    " \"ops\": [{\"name\": \"ynn_fusion\", \"time_s\": 5e-06, \"category\": \"matmul\","
    " \"instances\": 1}, {\"name\": \"while:6.all-reduce:1\", \"time_s\": 1e-05,"
    " \"category\": \"collective\", \"instances\": 4}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct json *run;
    static FILE *null;
    char why[64];
    if (!run) {
        run = json_parse(RUN, strlen(RUN), why, sizeof why);
        null = fopen("/dev/null", "w");
        assert(run && null);
    }
    struct xprof_opts o = {.device = size & 1 ? "1" : NULL, .top = 3};
    int rc = xprof_compare_text("fuzz.json", (const char *)data, size, run, &o, null, null);
    assert(rc == 0 || rc == 2);
    return 0;
}
