/* kernels/kernel.c -- an op built into pallas_calls by its kind's builder. */
#include "kernels/kernel.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/xalloc.h"

int kern_init(struct kern *k, const struct kern_kind *kind, const struct op *op,
              const struct chip_params *chip, bool functional, char *err, size_t n)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->op = op;
    k->chip = chip;
    k->functional = functional;
    k->calls = xcalloc(KERN_MAX_CALLS, sizeof *k->calls);
    if (k->kind->init(k, err, n) != 0)
        return -1;
    k->calls = xrealloc(k->calls, sizeof *k->calls * (size_t)(k->ncalls ? k->ncalls : 1));
    for (int i = 0; i < k->ncalls; i++) {
        k->calls[i].functional = functional;
        if (!k->calls[i].vmem_limit_bytes)
            k->calls[i].vmem_limit_bytes = op->vmem_limit_bytes;
        if (pl_check(&k->calls[i], chip, err, n) != 0)
            return -1;
    }
    return 0;
}

void kern_data(struct kern *k, uint64_t seed)
{
    if (k->kind->data)
        k->kind->data(k, seed);
}

double kern_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    *ok = true;
    if (msg && n)
        msg[0] = '\0';
    return k->kind->verify ? k->kind->verify(k, ok, msg, n) : 0.0;
}

void kern_fini(struct kern *k)
{
    if (k->kind && k->kind->fini)
        k->kind->fini(k);
    free(k->calls);
    memset(k, 0, sizeof *k);
}

int64_t kern_steps(const struct kern *k)
{
    int64_t n = 0;
    for (int i = 0; i < k->ncalls; i++)
        if (__builtin_add_overflow(n, pl_num_steps(&k->calls[i]), &n))
            return INT64_MAX;
    return n;
}

float kern_rand(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

float *kern_rand_array(uint64_t seed, int64_t n, enum dtype dt, float scale)
{
    float *a = xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        a[i] = pl_round(kern_rand(seed, (uint64_t)i) * scale, dt);
    return a;
}

int kern_check_smem(const struct kern *k, uint64_t bytes, const char *what, char *err, size_t n)
{
    if (bytes <= k->chip->smem_bytes)
        return 0;
    return diag_fail(err, n, "scalar prefetch (%s) needs %llu bytes of SMEM, the chip has %llu",
                     what, (unsigned long long)bytes, (unsigned long long)k->chip->smem_bytes);
}
