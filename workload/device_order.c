/* workload/device_order.c -- jax's create_device_mesh on tpusim's slices
 * (workload/device_order.h). The rules, as jax/_src/mesh_utils.py states them
 * (https://github.com/jax-ml/jax/blob/main/jax/_src/mesh_utils.py):
 *  - by device kind first: v5e and v6e ("TPU v5 lite", "TPU v6 lite") take the
 *    devices in x-fastest order and reorder them along a ring of the tray --
 *    on a 2x2 slice (0, 1, 3, 2); with 8 devices (0, 1, 2, 3, 7, 6, 5, 4),
 *    or (0, 4, 2, 6, 1, 5, 3, 7) on a 2x2x2; on a 4x4 slice, when one mesh
 *    axis holds all 16, the ring (0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13,
 *    12, 8, 4) -- and then reshape to the mesh; v5p on a 2x2x2 takes
 *    (0, 1, 3, 2, 6, 7, 5, 4);
 *  - else the general rule for an N-D torus (_create_device_mesh_for_nd_torus):
 *    the physical mesh is indexed [x, y, z]; the mesh's axes are assigned from
 *    the last (the most network-intensive) to the first, each to the first
 *    subset of the still free physical axes, 3 of them, then 2, then 1 (in
 *    itertools.combinations order), whose sizes multiply to its size; the
 *    physical mesh is transposed to the assigned axes in order (within a mesh
 *    axis, its physical axes in increasing order, so the last one -- z before
 *    y before x -- varies fastest) and reshaped to the mesh. */
#include "workload/device_order.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

static const int ring_2x2[] = {0, 1, 3, 2};
static const int v5e_ring_8[] = {0, 1, 2, 3, 7, 6, 5, 4};
static const int v5e_iota_2x2x2[] = {0, 4, 2, 6, 1, 5, 3, 7};
static const int ring_4x4[] = {0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4};
static const int v5p_2x2x2[] = {0, 1, 3, 2, 6, 7, 5, 4};

enum device_family device_family_of(const char *name)
{
    if (strcmp(name, "v5e") == 0 || strcmp(name, "v6e") == 0)
        return DEVICE_FAMILY_V5E;
    if (strcmp(name, "v5p") == 0)
        return DEVICE_FAMILY_V5P;
    return DEVICE_FAMILY_OTHER;
}

/* The tray order jax's device-kind handlers give, or NULL (the general rule). */
static const int *tray_order(enum device_family f, const int b[3], int n, const int64_t *mesh,
                             int nmesh)
{
    int64_t largest = 0;
    for (int i = 0; i < nmesh; i++)
        largest = mesh[i] > largest ? mesh[i] : largest;
    if (f == DEVICE_FAMILY_V5E) {
        if (b[0] == 2 && b[1] == 2 && b[2] == 1 && n == 4)
            return ring_2x2;
        if (n == 8)
            return b[0] == 2 && b[1] == 2 && b[2] == 2 ? v5e_iota_2x2x2 : v5e_ring_8;
        if (b[0] == 4 && b[1] == 4 && b[2] == 1 && n == 16 && largest == 16)
            return ring_4x4;
    }
    if (f == DEVICE_FAMILY_V5P && b[0] == 2 && b[1] == 2 && b[2] == 2 && n == 8)
        return v5p_2x2x2;
    return NULL;
}

/* The first subset of the free physical axes (3, then 2, then 1 of them, in
 * combinations order) whose sizes multiply to 'size': its axes into 'ax';
 * returns how many, 0 if none. */
static int assign_axis(const int64_t free_[3], int64_t size, int ax[3])
{
    static const int combos[7][4] = {{3, 0, 1, 2}, {2, 0, 1, 0}, {2, 0, 2, 0}, {2, 1, 2, 0},
                                     {1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 0, 0}};
    for (int c = 0; c < 7; c++) {
        int64_t p = 1;
        for (int k = 0; k < combos[c][0]; k++)
            p *= free_[combos[c][1 + k]];
        if (p == size) {
            for (int k = 0; k < combos[c][0]; k++)
                ax[k] = combos[c][1 + k];
            return combos[c][0];
        }
    }
    return 0;
}

int device_order_create_mesh(enum device_family f, const struct topo *t, const int64_t *mesh,
                             int nmesh, int *chip_of, char *err, size_t n)
{
    int b[3] = {1, 1, 1};
    for (int a = 0; a < t->ndims && a < 3; a++)
        b[a] = t->shape[a];
    int64_t prod = 1;
    for (int i = 0; i < nmesh; i++)
        prod *= mesh[i] <= t->nchips ? mesh[i] : (int64_t)t->nchips + 1;
    if (prod != t->nchips)
        return diag_fail(err, n, "a mesh shape whose sizes multiply to the slice's %d chips",
                         t->nchips);
    const int *tray = tray_order(f, b, t->nchips, mesh, nmesh);
    if (tray) {
        for (int d = 0; d < t->nchips; d++)
            chip_of[d] = tray[d];
        return 0;
    }
    int64_t free_[3] = {b[0], b[1], b[2]};
    int assigned[DEVICE_ORDER_MAX_AXES][3], nassigned[DEVICE_ORDER_MAX_AXES] = {0};
    for (int l = nmesh - 1; l >= 0; l--) {
        nassigned[l] = assign_axis(free_, mesh[l], assigned[l]);
        if (nassigned[l] == 0 && mesh[l] > 1)
            return diag_fail(err, n, "mesh axes that are products of whole physical axes (jax "
                             "lays mesh axis %d of size %lld out only by splitting a physical "
                             "axis, allow_split_physical_axes; give program.device_order as "
                             "a list)", l, (long long)mesh[l]);
        for (int k = 0; k < nassigned[l]; k++)
            free_[assigned[l][k]] = 0;
    }
    /* the transposition: the assigned physical axes in mesh order, then any left (size 1) */
    int perm[3], np = 0;
    bool used[3] = {false, false, false};
    for (int l = 0; l < nmesh; l++)
        for (int k = 0; k < nassigned[l]; k++)
            perm[np++] = assigned[l][k], used[assigned[l][k]] = true;
    for (int a = 0; a < 3; a++)
        if (!used[a])
            perm[np++] = a;
    for (int d = 0; d < t->nchips; d++) {
        int c[3], rem = d;
        for (int k = 2; k >= 0; k--) { /* row-major: perm[2] fastest */
            c[perm[k]] = rem % b[perm[k]];
            rem /= b[perm[k]];
        }
        chip_of[d] = c[0] + b[0] * (c[1] + b[1] * c[2]);
    }
    return 0;
}
