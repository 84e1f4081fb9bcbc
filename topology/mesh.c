/* topology/mesh.c -- logical meshes laid out on tori (see topology/mesh.h). */
#include "topology/mesh.h"

#include <stdio.h>
#include <string.h>

#include "base/diag.h"

/* The chips an axis takes within a slice. */
static int ici_size(const struct mesh_axis *a)
{
    return a->dcn > 1 ? a->size / a->dcn : a->size;
}

struct space {
    int left[TOPO_MAX_DIMS];   /* coordinates of each physical axis not yet given away */
    int stride[TOPO_MAX_DIMS]; /* the stride of the next factor placed on it */
};

static int take(struct space *s, const struct topo *t, int phys, int extent,
                struct mesh_factor *f, char *err, size_t n)
{
    if (phys < 0 || phys >= t->ndims) {
        return diag_fail(err, n, "axis %d does not exist (the topology has %d axes)", phys,
                         t->ndims);
    }
    if (extent < 1 || s->left[phys] % extent != 0) {
        return diag_fail(err, n, "%d chips do not fit the %d left on physical axis %d", extent,
                         s->left[phys], phys);
    }
    *f = (struct mesh_factor){phys, s->stride[phys], extent};
    s->left[phys] /= extent;
    s->stride[phys] *= extent;
    return 0;
}

/* jax's rule: the first set of whole free physical axes (3, 2, then 1 of
 * them, in x, y, z order) whose lengths multiply to 'size'. */
static bool place_whole(struct mesh_axis *a, struct space *s, const struct topo *t)
{
    for (int k = t->ndims; k >= 1; k--) {
        for (int set = 0; set < (1 << t->ndims); set++) {
            if (__builtin_popcount((unsigned)set) != k)
                continue;
            int prod = 1;
            bool free = true;
            for (int p = 0; p < t->ndims; p++)
                if (set >> p & 1) {
                    prod *= t->shape[p];
                    free &= s->left[p] == t->shape[p] && t->shape[p] > 1;
                }
            if (!free || prod != ici_size(a))
                continue;
            a->nfactors = 0;
            for (int p = 0; p < t->ndims; p++)
                if (set >> p & 1)
                    take(s, t, p, t->shape[p], &a->f[a->nfactors++], NULL, 0);
            return true;
        }
    }
    return false;
}

static int gcd(int a, int b)
{
    while (b) {
        int r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Split placement: the innermost free part of each physical axis in turn. */
static int place_split(struct mesh_axis *a, struct space *s, const struct topo *t, char *err,
                       size_t n)
{
    int need = ici_size(a);
    a->nfactors = 0;
    for (int p = 0; p < t->ndims && need > 1; p++) {
        int e = gcd(need, s->left[p]);
        if (e <= 1)
            continue;
        if (a->nfactors == MESH_MAX_FACTORS)
            break;
        take(s, t, p, e, &a->f[a->nfactors++], err, n);
        need /= e;
    }
    if (need > 1) {
        return diag_fail(err, n, "mesh axis '%s' of %d does not fit the chips left on the topology",
                         a->name, ici_size(a));
    }
    return 0;
}

static long mesh_product(const struct mesh *m)
{
    long prod = 1; /* sizes are at most 2^20: stop before it can overflow */
    for (int i = 0; i < m->naxes && prod <= (1L << 40); i++)
        prod *= m->axis[i].size;
    return prod;
}

static long ici_product(const struct mesh *m)
{
    long prod = 1;
    for (int i = 0; i < m->naxes && prod <= (1L << 40); i++)
        prod *= ici_size(&m->axis[i]);
    return prod;
}

static int check_sizes(const struct mesh *m, const struct topo *t, char *err, size_t n)
{
    long prod = ici_product(m);
    if (prod == t->nchips)
        return 0;
    char sizes[256] = "";
    for (int i = 0; i < m->naxes; i++)
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%s %d",
                 i ? " x " : "", m->axis[i].name, m->axis[i].size);
    return diag_fail(err, n,
                     "expected axes whose sizes multiply to the topology's %d chips, got %ld (%s)",
                     t->nchips, prod, sizes);
}

static int pick_dev_axis(const struct mesh *m, int dev_per_chip)
{
    static const char *const batch[] = {"data", "fsdp", "expert"};
    for (int i = m->naxes - 1; i >= 0; i--)
        for (int k = 0; k < 3; k++)
            if (strcmp(m->axis[i].name, batch[k]) == 0 && m->axis[i].size % dev_per_chip == 0)
                return i;
    for (int i = m->naxes - 1; i >= 0; i--)
        if (m->axis[i].size % dev_per_chip == 0)
            return i;
    return -1;
}

int mesh_fold_devices(struct mesh *m, int nchips, int dev_per_chip, char *err, size_t n)
{
    m->dev_axis = -1, m->dev_per_chip = 1;
    long prod = mesh_product(m);
    if (dev_per_chip <= 1 || prod == nchips || prod != (long)nchips * dev_per_chip)
        return 0; /* mesh_layout checks the product against the chips */
    int i = pick_dev_axis(m, dev_per_chip);
    if (i < 0) {
        return diag_fail(err, n,
                         "expected an axis divisible by the %d devices of a chip (the mesh counts "
                         "the %d TensorCores of the topology's %d chips), got none",
                         dev_per_chip, nchips * dev_per_chip, nchips);
    }
    m->axis[i].size /= dev_per_chip;
    m->dev_axis = i, m->dev_per_chip = dev_per_chip;
    return 0;
}

int mesh_layout(struct mesh *m, const struct topo *t, char *err, size_t n)
{
    if (check_sizes(m, t, err, n) != 0)
        return -1;
    struct space s;
    for (int p = 0; p < TOPO_MAX_DIMS; p++)
        s.left[p] = p < t->ndims ? t->shape[p] : 1, s.stride[p] = 1;
    /* explicit placements first, the last axis first as below: a mesh that
     * `tpusim expand` prints with every axis placed lays out as it was */
    for (int i = m->naxes - 1; i >= 0; i--) {
        struct mesh_axis *a = &m->axis[i];
        int prod = 1;
        for (int k = 0; a->placed && k < a->nfactors; k++) {
            if (take(&s, t, a->f[k].phys, a->f[k].extent, &a->f[k], err, n) != 0)
                return -1;
            prod *= a->f[k].extent;
        }
        if (a->placed && prod != ici_size(a)) {
            return diag_fail(err, n, "mesh axis '%s' is placed on %d chips, its size is %d",
                             a->name,
                             prod, ici_size(a));
        }
    }
    for (int i = m->naxes - 1; i >= 0; i--) { /* the last axis first, as jax */
        struct mesh_axis *a = &m->axis[i];
        if (a->placed || ici_size(a) == 1)
            continue;
        if (!place_whole(a, &s, t) && place_split(a, &s, t, err, n) != 0)
            return -1;
    }
    return 0;
}

static int pick_slice_axis(const struct mesh *m, int slices)
{
    for (int i = 0; i < m->naxes; i++)
        if (m->axis[i].dcn > 0)
            return i;
    int i = mesh_axis_index(m, "data");
    if (i >= 0 && m->axis[i].size % slices == 0)
        return i;
    for (i = 0; i < m->naxes; i++)
        if (m->axis[i].size % slices == 0)
            return i;
    return -1;
}

int mesh_place_slices(struct mesh *m, int nchips, int slices, char *err, size_t n)
{
    if (slices <= 1)
        return 0;
    long prod = mesh_product(m);
    if (prod != (long)nchips * slices) {
        return diag_fail(err, n,
                         "expected axes whose sizes multiply to the %d chips of %d slices of "
                         "%d, got %ld", nchips * slices, slices, nchips, prod);
    }
    int i = pick_slice_axis(m, slices);
    struct mesh_axis *a = i >= 0 ? &m->axis[i] : NULL;
    if (!a) {
        return diag_fail(err, n,
                         "expected an axis that spans the %d slices (a size they divide), got "
                         "none", slices);
    }
    if (a->size % slices != 0 || (a->dcn > 0 && a->dcn != slices)) {
        return diag_fail(err, n, "expected the axis over the DCN to span the %d slices (dcn: %d, a "
                         "size they divide), got '%s' of %d with dcn: %d", slices, slices,
                         a->name, a->size, a->dcn);
    }
    for (int k = 0; k < m->naxes; k++)
        if (k != i && m->axis[k].dcn > 0) {
            return diag_fail(err, n, "expected one axis over the DCN, got '%s' and '%s'", a->name,
                             m->axis[k].name);
        }
    a->dcn = slices;
    return 0;
}

bool mesh_axes_dcn(const struct mesh *m, const int *axes, int naxes)
{
    for (int i = 0; i < naxes; i++)
        if (m->axis[axes[i]].dcn > 1)
            return true;
    return false;
}

int mesh_axis_index(const struct mesh *m, const char *name)
{
    for (int i = 0; i < m->naxes; i++)
        if (strcmp(m->axis[i].name, name) == 0)
            return i;
    return -1;
}

/* The factors of 'axes', in order; returns their count or -1 past TOPO_MAX_DIMS. */
static int factors(const struct mesh *m, const int *axes, int naxes,
                   const struct mesh_factor **out)
{
    int n = 0;
    for (int i = 0; i < naxes; i++)
        for (int k = 0; k < m->axis[axes[i]].nfactors; k++) {
            if (n == TOPO_MAX_DIMS)
                return -1;
            out[n++] = &m->axis[axes[i]].f[k];
        }
    return n;
}

int mesh_group(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
               struct topo *group)
{
    const struct mesh_factor *f[TOPO_MAX_DIMS];
    int nf = factors(m, axes, naxes, f);
    if (nf < 0)
        return -1;
    int shape[TOPO_MAX_DIMS] = {1, 1, 1};
    bool wrap[TOPO_MAX_DIMS] = {false, false, false};
    for (int k = 0; k < nf; k++) {
        shape[k] = f[k]->extent;
        wrap[k] = t->wrap[f[k]->phys] && f[k]->stride * f[k]->extent == t->shape[f[k]->phys];
    }
    return topo_init(group, nf ? nf : 1, shape, wrap);
}

int mesh_group_rank(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                    int chip)
{
    const struct mesh_factor *f[TOPO_MAX_DIMS];
    int nf = factors(m, axes, naxes, f), c[TOPO_MAX_DIMS], rank = 0;
    topo_coords(t, chip, c);
    for (int k = nf - 1; k >= 0; k--)
        rank = rank * f[k]->extent + (c[f[k]->phys] / f[k]->stride) % f[k]->extent;
    return rank;
}

int mesh_group_chip(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                    int chip, int rank)
{
    const struct mesh_factor *f[TOPO_MAX_DIMS];
    int nf = factors(m, axes, naxes, f), c[TOPO_MAX_DIMS];
    topo_coords(t, chip, c);
    for (int k = 0; k < nf; k++) {
        int v = rank % f[k]->extent, cur = (c[f[k]->phys] / f[k]->stride) % f[k]->extent;
        rank /= f[k]->extent;
        c[f[k]->phys] += (v - cur) * f[k]->stride;
    }
    return topo_rank(t, c);
}

void mesh_reach(const struct mesh *m, const struct topo *t, const int *axes, int naxes,
                int *hops, int *period)
{
    const struct mesh_factor *f[TOPO_MAX_DIMS];
    int nf = factors(m, axes, naxes, f);
    for (int k = 0; k < nf; k++) {
        int p = f[k]->phys, span = f[k]->stride * f[k]->extent;
        if (f[k]->stride > hops[p])
            hops[p] = f[k]->stride;
        if (f[k]->extent > 1 && span < t->shape[p]) /* a segment: its ends differ */
            period[p] = period[p] / gcd(period[p], span) * span;
    }
}
