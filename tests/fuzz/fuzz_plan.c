/* tests/fuzz/fuzz_plan.c -- libFuzzer harness: arbitrary bytes as a plan spec
 * (study/plan.h) beside a fixed small model scenario, base.yaml, in the same
 * directory (so `base: base.yaml` names it; a seed in tests/fuzz/seeds/plan/
 * does). Loading must give a spec or messages, and enumerating its candidates
 * (slices, meshes, remat, batches; the HBM check of each, no simulation) must
 * finish within the search-space guard -- never a crash, a leak or a hang. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/diag.h"
#include "study/plan.h"
#include "study/plan_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_yaml[] =
    "name: fuzz-plan-base\n"
    "chip: v5e\n"
    "topology: {shape: [4, 4]}\n"
    "mesh: {fsdp: 16}\n"
    "model: {arch: llama, layers: 2, d_model: 512, heads: 8, kv_heads: 4, head_dim: 64,\n"
    "        ffn: 1024, vocab: 1024, seq_len: 256, batch: 16, remat: full}\n";

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(p, 1, n, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[64], spec[96], base[96];
    snprintf(dir, sizeof dir, "/tmp/fuzz-plan-%d", (int)getpid());
    snprintf(spec, sizeof spec, "%s/spec.yaml", dir);
    snprintf(base, sizeof base, "%s/base.yaml", dir);
    mkdir(dir, 0700);
    write_file(base, base_yaml, sizeof base_yaml - 1);
    write_file(spec, data, size);
    struct diag *d = diag_new();
    struct plan p;
    memset(&p, 0, sizeof p);
    struct plan_opts o = {0};
    if (plan_spec_load(spec, &o, &p.sp, d) == 0 && plan_enumerate(&p, d) == 0)
        plan_rank(&p);
    plan_fini(&p);
    diag_free(d);
    unlink(spec);
    return 0;
}
