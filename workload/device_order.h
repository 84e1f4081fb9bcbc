/* workload/device_order.h -- which chip of a slice runs each device of an XLA
 * program. jax lowers a program over a Mesh whose devices, in row-major order
 * of the mesh, are the program's devices 0, 1, ...; on a TPU slice the mesh
 * comes from jax's mesh_utils.create_device_mesh (jax.make_mesh calls it),
 * which lays the mesh's axes on the slice's physical axes. This computes the
 * same layout for tpusim's slices: device d runs on the chip at row-major
 * position d of create_device_mesh(mesh_shape). Chips are numbered x fastest:
 * chip = x + X·(y + Y·z), jax's coords (x, y, z). Uses topology/topo.h. */
#ifndef TPUSIM_WORKLOAD_DEVICE_ORDER_H
#define TPUSIM_WORKLOAD_DEVICE_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "topology/topo.h"

#define DEVICE_ORDER_MAX_AXES 8

/* The tray orders jax applies by device kind before its general rule. */
enum device_family {
    DEVICE_FAMILY_OTHER, /* v4: the general rule only */
    DEVICE_FAMILY_V5E,   /* v5e and v6e ("TPU v5 lite", "TPU v6 lite") */
    DEVICE_FAMILY_V5P,
};

/* The family of chip preset 'name' (v5e, v6e, v5p; anything else OTHER). */
enum device_family device_family_of(const char *name);

/* chip_of[d] (t->nchips entries) for create_device_mesh('mesh', 'nmesh' axis
 * sizes, outermost first) on slice 't' of family 'f'. Returns 0, or -1 with
 * the reason in 'err' (the sizes do not multiply to the chips; a size no
 * set of whole physical axes gives, which jax lays out only with
 * allow_split_physical_axes). */
int device_order_create_mesh(enum device_family f, const struct topo *t, const int64_t *mesh,
                             int nmesh, int *chip_of, char *err, size_t n);

#endif
