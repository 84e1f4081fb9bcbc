/* topology/mesh.h -- a logical device mesh laid out on a torus.
 * A mesh names logical axes (data, fsdp, tensor, ...) with sizes whose
 * product is the chip count. Each logical axis occupies one or more factors
 * of the physical axes: a factor is a run of 'extent' coordinates of physical
 * axis 'phys' spaced 'stride' apart (the first factor placed on an axis has
 * stride 1 -- neighbouring chips -- the next one stride = the extents before
 * it). The default layout follows jax's mesh_utils.create_device_mesh for
 * tori: logical axes are placed from the last to the first (the last being
 * the most communication-intensive), each on the first set of whole free
 * physical axes (3, then 2, then 1 of them, in x, y, z order) whose product
 * is its size; an axis no whole set fits is given the innermost part of a
 * physical axis (jax's allow_split_physical_axes). A collective over some
 * logical axes runs within each group of chips that share the other axes'
 * coordinates; the group is itself a small torus (one dimension per factor,
 * wrapping when the factor is a whole wrapped ring), so the collective
 * algorithms run on it unchanged. Uses topology/topo.h only. */
#ifndef TPUSIM_TOPOLOGY_MESH_H
#define TPUSIM_TOPOLOGY_MESH_H

#include <stdbool.h>
#include <stddef.h>

#include "topology/topo.h"

#define MESH_MAX_AXES 8
#define MESH_MAX_FACTORS 3
#define MESH_NAME_MAX 24

struct mesh_factor {
    int phys;   /* physical axis */
    int stride; /* coordinate step between neighbours of this factor */
    int extent; /* how many coordinates */
};

struct mesh_axis {
    char name[MESH_NAME_MAX];
    int size;
    int nfactors;                 /* 0 for a size-1 axis */
    struct mesh_factor f[MESH_MAX_FACTORS];
    bool placed;                  /* the caller gave the factors */
    int dcn;                      /* multislice: the slices it spans (its outer factor,
                                   * over the DCN); 0 or 1: none. 'size' counts them. */
};

struct mesh {
    int naxes;
    struct mesh_axis axis[MESH_MAX_AXES];
    int dev_axis;     /* mesh_fold_devices: the axis that held a chip's devices, or -1 */
    int dev_per_chip; /* ... and how many (1 when the sizes were given in chips) */
};

/* Places every axis not 'placed' on 't' (see above) and checks the layout:
 * sizes multiply to the chip count, factors fit their physical axes without
 * overlap, each axis' factors multiply to its size. Returns 0, or -1 with the
 * reason in 'err'. */
int mesh_layout(struct mesh *m, const struct topo *t, char *err, size_t n);
/* A mesh may count devices rather than chips where each TensorCore of a
 * chip is a JAX device (v7: 2 per chip). When the sizes multiply to
 * 'nchips' x 'dev_per_chip' (> 1), the chip's devices are taken out of one
 * axis -- the last of data, fsdp and expert divisible by them (a chip's
 * cores take part of the batch, as MaxText's data and FSDP shardings lay
 * them out), else the last divisible axis -- which becomes a size in chips;
 * 'dev_axis' and 'dev_per_chip' say so. Sizes in chips are left as they are.
 * Returns 0, or -1 with the reason in 'err' (also when the product matches
 * neither count). Call before mesh_layout. */
int mesh_fold_devices(struct mesh *m, int nchips, int dev_per_chip, char *err, size_t n);
/* Multislice: gives the 'slices' to one axis as its outer factor (over the
 * DCN), as jax's create_hybrid_device_mesh does for MaxText's
 * dcn_*_parallelism: the axis that names them ({size, dcn}), else 'data',
 * else the first axis whose size they divide. Checks the sizes multiply to
 * the 'nchips' x 'slices' chips. Returns 0, or -1 with the reason in 'err'.
 * Call before mesh_layout (which lays out size / dcn chips of it). */
int mesh_place_slices(struct mesh *m, int nchips, int slices, char *err, size_t n);
/* True if one of the logical axes 'axes' spans the slices. */
bool mesh_axes_dcn(const struct mesh *m, const int *axes, int naxes);
/* Index of the axis named 'name', or -1. */
int mesh_axis_index(const struct mesh *m, const char *name);

/* The group of chip 'chip' for a collective over the logical axes listed in
 * 'axes' ('naxes' indices, in the order the collective visits them): its
 * torus (one dimension per factor, at most TOPO_MAX_DIMS) and 'chip''s rank
 * in it. Returns 0, or -1 if the axes have more than TOPO_MAX_DIMS factors. */
int mesh_group(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
               struct topo *group);
int mesh_group_rank(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                    int chip);
/* The chip of the slice with rank 'rank' in the group of chip 'chip'. */
int mesh_group_chip(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                    int chip, int rank);
/* For SPMD folding: along each physical axis, the farthest hop between group
 * neighbours (raises hops[a]) and the period the groups repeat with
 * (period[a] is multiplied up to a common multiple). */
void mesh_reach(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                int *hops, int *period);

#endif
