/* topology/topo.c -- torus coordinates, neighbours and dimension-order routes. */
#include "topology/topo.h"

#include <stdint.h>
#include <stdlib.h>

int topo_init(struct topo *t, int ndims, const int *shape, const bool *wrap)
{
    if (ndims < 1 || ndims > TOPO_MAX_DIMS)
        return -1;
    t->ndims = ndims;
    int64_t chips = 1; /* each length <= INT_MAX, three of them: no int64 overflow */
    for (int i = 0; i < TOPO_MAX_DIMS; i++) {
        t->shape[i] = i < ndims ? shape[i] : 1;
        t->wrap[i] = i < ndims && wrap[i] && t->shape[i] > 2;
        if (t->shape[i] < 1 || t->shape[i] > TOPO_MAX_CHIPS)
            return -1;
        chips *= t->shape[i];
    }
    if (chips > TOPO_MAX_CHIPS)
        return -1;
    t->nchips = (int)chips;
    return 0;
}

void topo_coords(const struct topo *t, int rank, int *coords)
{
    for (int i = 0; i < t->ndims; i++) {
        coords[i] = rank % t->shape[i];
        rank /= t->shape[i];
    }
}

int topo_rank(const struct topo *t, const int *coords)
{
    int r = 0;
    for (int i = t->ndims - 1; i >= 0; i--)
        r = r * t->shape[i] + coords[i];
    return r;
}

int topo_neighbor(const struct topo *t, int rank, int axis, int dir)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, rank, c);
    int L = t->shape[axis];
    int n = c[axis] + dir;
    if (n < 0 || n >= L) {
        if (!t->wrap[axis])
            return -1;
        n = (n + L) % L;
    }
    if (n == c[axis])
        return -1;
    c[axis] = n;
    return topo_rank(t, c);
}

/* The direction rule of SimGrid 3.32 TorusZone::get_local_route: go "up" if
 * the target is within L/2 above, or if the source is past L/2 and the target
 * is within L/2 above through the wrap link; otherwise go down. */
int topo_axis_delta(const struct topo *t, int axis, int a, int b)
{
    int L = t->shape[axis];
    if (a == b)
        return 0;
    if (!t->wrap[axis])
        return b - a;
    bool up = (b > a && b <= a + L / 2) || (a > L / 2 && (a + L / 2) % L >= b);
    return up ? (b - a + L) % L : -((a - b + L) % L);
}

int topo_hops(const struct topo *t, int a, int b)
{
    int ca[TOPO_MAX_DIMS], cb[TOPO_MAX_DIMS];
    topo_coords(t, a, ca);
    topo_coords(t, b, cb);
    int h = 0;
    for (int i = 0; i < t->ndims; i++)
        h += abs(topo_axis_delta(t, i, ca[i], cb[i]));
    return h;
}

int topo_route(const struct topo *t, int a, int b, struct topo_hop *hops)
{
    int ca[TOPO_MAX_DIMS], cb[TOPO_MAX_DIMS];
    topo_coords(t, a, ca);
    topo_coords(t, b, cb);
    int n = 0, cur = a;
    for (int i = 0; i < t->ndims; i++) {
        int d = topo_axis_delta(t, i, ca[i], cb[i]);
        int dir = d > 0 ? 1 : -1;
        for (int k = 0; k < abs(d); k++) {
            int next = topo_neighbor(t, cur, i, dir);
            hops[n++] = (struct topo_hop){cur, next, i, dir};
            cur = next;
        }
    }
    return n;
}

int topo_sim_dim(const struct topo *t, int axis)
{
    int L = t->shape[axis];
    return (t->wrap[axis] || L < 2) ? L : 2 * L;
}

int topo_sim_nodes(const struct topo *t)
{
    int n = 1;
    for (int i = 0; i < t->ndims; i++)
        n *= topo_sim_dim(t, i);
    return n;
}

int topo_sim_node(const struct topo *t, int rank)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, rank, c);
    int id = 0;
    for (int i = t->ndims - 1; i >= 0; i--)
        id = id * topo_sim_dim(t, i) + c[i];
    return id;
}

void topo_default_wrap(enum topo_wrap_rule rule, int nd, const int *shape, bool *wrap)
{
    bool cube = true;
    for (int i = 0; i < TOPO_MAX_DIMS; i++)
        cube &= (i < nd ? shape[i] : 1) % 4 == 0;
    for (int i = 0; i < nd; i++) {
        switch (rule) {
        case TOPO_WRAP_AXIS16:
            wrap[i] = shape[i] == 16;
            break;
        case TOPO_WRAP_CUBE4:
            wrap[i] = cube;
            break;
        case TOPO_WRAP_ALWAYS:
            wrap[i] = shape[i] > 2;
            break;
        case TOPO_WRAP_NEVER:
            wrap[i] = false;
            break;
        case TOPO_WRAP_AXIS32:
            wrap[i] = shape[i] == 32;
            break;
        }
    }
}

int topo_fold(const struct topo *t, const int *period, struct topo *q)
{
    int shape[TOPO_MAX_DIMS];
    bool wrap[TOPO_MAX_DIMS];
    for (int a = 0; a < t->ndims; a++) {
        int p = period[a];
        if (p < 1 || t->shape[a] % p != 0)
            return -1;
        if (p < t->shape[a] && p > 1 && !t->wrap[a])
            return -1;
        shape[a] = p;
        /* a folded ring keeps its wraparound: period[a] > 2 chips still form a ring */
        wrap[a] = p < t->shape[a] ? p > 2 : t->wrap[a];
    }
    return topo_init(q, t->ndims, shape, wrap);
}

int topo_fold_rank(const struct topo *t, const struct topo *q, int rank)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, rank, c);
    for (int a = 0; a < t->ndims; a++)
        c[a] %= q->shape[a];
    return topo_rank(q, c);
}

int topo_unfold_rank(const struct topo *t, const struct topo *q, int qrank)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(q, qrank, c);
    return topo_rank(t, c);
}
