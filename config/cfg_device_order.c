/* config/cfg_device_order.c -- program.device_order: which chip of the slice
 * runs each device of an HLO program (workload/device_order.h).
 *   device_order: iota                          device d on chip d (the default)
 *   device_order: [3, 2, 0, 1, ...]             device d on chip list[d]
 *   device_order: {create_device_mesh: [4, 2]}  as jax's create_device_mesh lays
 *                                               out a mesh of that shape */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "workload/device_order.h"
#include "config/cfg_int.h"

#define DO_PATH "program.device_order"

static int order_list(struct walk *w, const struct cfg_node *n, int nchips, int slices,
                      int *chip_of)
{
    if (n->n != nchips) {
        char want[128];
        snprintf(want, sizeof want, "a list of the %s %d chips, one per device (it has %d "
                 "entries)", slices > 1 ? "slices'" : "slice's", nchips, n->n);
        walk_type_error(w, n, DO_PATH, want);
        return -1;
    }
    int *dev_of = xcalloc((size_t)nchips, sizeof *dev_of);
    int rc = 0;
    for (int d = 0; d < nchips && rc == 0; d++) {
        int64_t v = 0;
        if (walk_item(w, n, DO_PATH, d, 0, nchips - 1, &v) != 0) {
            rc = -1;
        } else if (dev_of[v]) {
            char *ip = xasprintf(DO_PATH ".%d", d);
            char want[96];
            snprintf(want, sizeof want, "each chip once (chip %lld also runs device %d)",
                     (long long)v, dev_of[v] - 1);
            walk_type_error(w, n->kids[d], ip, want);
            free(ip);
            rc = -1;
        } else {
            dev_of[v] = d + 1;
            chip_of[d] = (int)v;
        }
    }
    free(dev_of);
    return rc;
}

static int order_mesh(struct walk *w, const struct cfg_node *n, const struct chip_params *chip,
                      const struct topo *t, int slices, int *chip_of)
{
    static const char *const keys[] = {"create_device_mesh", NULL};
    walk_check_keys(w, n, DO_PATH, keys);
    const struct cfg_node *ms = walk_field(w, n, DO_PATH, "create_device_mesh", true);
    const char *mp = DO_PATH ".create_device_mesh";
    if (!ms)
        return -1;
    if (ms->type != CFG_SEQ || ms->n < 1 || ms->n > DEVICE_ORDER_MAX_AXES) {
        walk_type_error(w, ms, mp, "a mesh shape of 1 to 8 sizes, like [4, 2]");
        return -1;
    }
    if (slices > 1) {
        walk_type_error(w, ms, mp, "one slice (over several, jax's create_hybrid_device_mesh "
                        "lays the mesh out, which tpusim does not model; give a list)");
        return -1;
    }
    if (chip->cores > 1 && !chip->megacore) {
        char want[128];
        snprintf(want, sizeof want, "a chip with one device per chip (%s has %d TensorCores, "
                 "each a jax device; give a list)", chip->name, chip->cores);
        walk_type_error(w, ms, mp, want);
        return -1;
    }
    int64_t mesh[DEVICE_ORDER_MAX_AXES];
    for (int i = 0; i < ms->n; i++)
        if (walk_item(w, ms, mp, i, 1, 1 << 20, &mesh[i]) != 0)
            return -1;
    char err[256];
    if (device_order_create_mesh(device_family_of(chip->name), t, mesh, ms->n, chip_of, err,
                                 sizeof err) != 0) {
        walk_type_error(w, ms, mp, err);
        return -1;
    }
    return 0;
}

int cfg_load_device_order(struct walk *w, const struct cfg_node *n,
                          const struct chip_params *chip, const struct topo *t, int slices,
                          int **chip_of)
{
    *chip_of = NULL;
    if (!n || (n->type == CFG_SCALAR && strcmp(n->value, "iota") == 0))
        return 0;
    int total = t->nchips * (slices > 1 ? slices : 1);
    int *order = xcalloc((size_t)total, sizeof *order);
    int rc = -1;
    if (n->type == CFG_SEQ)
        rc = order_list(w, n, total, slices, order);
    else if (n->type == CFG_MAP)
        rc = order_mesh(w, n, chip, t, slices, order);
    else
        walk_type_error(w, n, DO_PATH, "iota, a list of chips (one per device) or "
                        "{create_device_mesh: [sizes]}");
    if (rc != 0) {
        free(order);
        return -1;
    }
    *chip_of = order;
    return 0;
}
