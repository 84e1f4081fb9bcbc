/* tests/fuzz/fuzz_reqs.c -- libFuzzer harness: arbitrary bytes as a serving
 * request trace (serve.requests.trace, config/cfg_serve_trace.c). Reading
 * must give requests (sorted, each within max_model_len) or messages --
 * never a crash, a leak, or time beyond linear in the input. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "config/cfg_serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag *d = diag_new();
    struct serve_cfg c = {.max_model_len = 4096};
    if (cfg_serve_trace_parse((const char *)data, size, "fuzz.csv", &c, d) == 0) {
        assert(c.trace.n >= 1 && c.trace.n <= SERVE_MAX_REQUESTS && diag_count(d) == 0);
        for (int64_t i = 0; i < c.trace.n; i++) {
            assert(c.trace.in[i] >= 1 && c.trace.out[i] >= 1);
            assert(c.trace.in[i] + c.trace.out[i] <= c.max_model_len);
            assert(i == 0 || c.trace.arrival_s[i] >= c.trace.arrival_s[i - 1]);
        }
    } else {
        assert(diag_count(d) > 0 && c.trace.n == 0);
    }
    cfg_serve_fini(&c);
    diag_free(d);
    return 0;
}
