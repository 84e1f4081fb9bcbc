/* kernels/copy.c -- hbm_copy, host_copy and ppermute rules and arithmetic. */
#include "kernels/copy.h"

#include <stdio.h>

#include "base/diag.h"

static uint64_t vmem_limit(const struct op *op, const struct chip_params *chip)
{
    return op->vmem_limit_bytes ? op->vmem_limit_bytes : chip->vmem_limit_bytes;
}

/* 0 if 'bytes' fit the chip's HBM, else -1 with the reason. */
static int fits_hbm(uint64_t bytes, const struct chip_params *chip, char *err, size_t n)
{
    if (bytes <= chip->hbm_bytes)
        return 0;
    return diag_fail(err, n, "%llu bytes exceed the chip's HBM (%llu bytes)",
                     (unsigned long long)bytes,
                     (unsigned long long)chip->hbm_bytes);
}

int copy_check_hbm(const struct op *op, const struct chip_params *chip, const struct topo *topo,
                   char *err, size_t n)
{
    (void)topo;
    uint64_t limit = vmem_limit(op, chip);
    if (op->u.hbm_copy.chunk_bytes * 2 > limit) {
        return diag_fail(err, n, "two chunks of %llu bytes exceed the scoped VMEM limit %llu bytes",
                         (unsigned long long)op->u.hbm_copy.chunk_bytes, (unsigned long long)limit);
    }
    return fits_hbm(op->u.hbm_copy.bytes, chip, err, n);
}

const char *const copy_host_dir_names[] = {"to_host", "to_device", NULL};

int copy_check_host(const struct op *op, const struct chip_params *chip, const struct topo *topo,
                    char *err, size_t n)
{
    (void)topo;
    if (chip->pcie_bw_Bps <= 0) {
        return diag_fail(err, n, "chip %s has no host link (set pcie.bandwidth in the chip)",
                         chip->name);
    }
    return fits_hbm(op->u.host_copy.bytes, chip, err, n);
}

uint64_t copy_chunk_bytes(const struct op *op, const struct chip_params *chip)
{
    uint64_t half = vmem_limit(op, chip) / 2;
    return op->u.hbm_copy.chunk_bytes ? op->u.hbm_copy.chunk_bytes : half ? half : 1;
}

uint64_t copy_chunks(const struct op *op, const struct chip_params *chip)
{
    uint64_t chunk = copy_chunk_bytes(op, chip);
    return (op->u.hbm_copy.bytes + chunk - 1) / chunk;
}

int copy_is_pow2(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

int copy_check_ppermute(const struct op *op, const struct chip_params *chip,
                        const struct topo *topo, char *err, size_t n)
{
    const struct op_ppermute *p = &op->u.ppermute;
    if (p->axis >= topo->ndims) {
        return diag_fail(err, n, "axis %d does not exist (the topology has %d axes)", p->axis,
                         topo->ndims);
    }
    int L = topo->shape[p->axis], off = ((p->shift % L) + L) % L;
    if (chip->routing == ICI_ROUTE_POW2 && off != 0 && !copy_is_pow2(off) &&
        !copy_is_pow2(L - off)) {
        return diag_fail(err, n,
                         "%s can only route to power-of-2 offsets; shift %d on an axis of %d "
                         "is offset %d", chip->name, p->shift, L, off);
    }
    return fits_hbm(p->bytes, chip, err, n);
}

int copy_ppermute_target(const struct topo *t, int rank, int axis, int shift)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, rank, c);
    int L = t->shape[axis];
    c[axis] = ((c[axis] + shift) % L + L) % L;
    return topo_rank(t, c);
}

int copy_reach_ppermute(const struct op *op, const struct topo *topo, int *hops, int *period)
{
    (void)period;
    const struct op_ppermute *p = &op->u.ppermute;
    int L = topo->shape[p->axis], off = ((p->shift % L) + L) % L;
    int h = topo->wrap[p->axis] && L - off < off ? L - off : off;
    hops[p->axis] = h > hops[p->axis] ? h : hops[p->axis];
    return 0;
}
