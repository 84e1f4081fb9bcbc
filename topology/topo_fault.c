/* topology/topo_fault.c -- routes around down ICI links (topology/topo_fault.h). */
#include "topology/topo_fault.h"

#include <stdlib.h>

/* Walks 'n' hops from 'cur' along 'axis' in 'dir', appending them to 'hops'
 * at '*len' (room 'max'); returns the chip reached, or -1 if a hop is down,
 * missing or the route too long. */
static int walk_axis(const struct topo *t, int cur, int axis, int dir, int n, topo_down_fn *down,
                     const void *ctx, struct topo_hop *hops, int *len, int max)
{
    for (int k = 0; k < n; k++) {
        int next = topo_neighbor(t, cur, axis, dir);
        if (next < 0 || down(ctx, cur, axis, dir) || *len >= max)
            return -1;
        hops[(*len)++] = (struct topo_hop){cur, next, axis, dir};
        cur = next;
    }
    return cur;
}

/* The segment along 'axis' from 'cur' to coordinate 'to': the engine's
 * direction, else the other way round a wrapped ring. */
static int segment(const struct topo *t, int cur, int axis, int to, topo_down_fn *down,
                   const void *ctx, struct topo_hop *hops, int *len, int max)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, cur, c);
    int d = topo_axis_delta(t, axis, c[axis], to), L = t->shape[axis], start = *len;
    if (d == 0)
        return cur;
    int r = walk_axis(t, cur, axis, d > 0 ? 1 : -1, abs(d), down, ctx, hops, len, max);
    if (r >= 0 || !t->wrap[axis])
        return r;
    *len = start;
    return walk_axis(t, cur, axis, d > 0 ? -1 : 1, L - abs(d), down, ctx, hops, len, max);
}

/* The segment with one sidestep along another axis, out and back. */
static int sidestep(const struct topo *t, int cur, int axis, int to, topo_down_fn *down,
                    const void *ctx, struct topo_hop *hops, int *len, int max)
{
    int start = *len;
    for (int j = 0; j < t->ndims; j++) {
        for (int s = 1; s >= -1 && j != axis; s -= 2) {
            *len = start;
            int side = walk_axis(t, cur, j, s, 1, down, ctx, hops, len, max);
            int end = side >= 0 ? segment(t, side, axis, to, down, ctx, hops, len, max) : -1;
            int back = end >= 0 ? walk_axis(t, end, j, -s, 1, down, ctx, hops, len, max) : -1;
            if (back >= 0)
                return back;
        }
    }
    *len = start;
    return -1;
}

int topo_route_around(const struct topo *t, int a, int b, topo_down_fn *down, const void *ctx,
                      struct topo_hop *hops, int max)
{
    int cb[TOPO_MAX_DIMS], len = 0, cur = a;
    topo_coords(t, b, cb);
    for (int i = 0; i < t->ndims && cur >= 0; i++) {
        int start = len;
        int next = segment(t, cur, i, cb[i], down, ctx, hops, &len, max);
        if (next < 0) {
            len = start;
            next = sidestep(t, cur, i, cb[i], down, ctx, hops, &len, max);
        }
        cur = next;
    }
    return cur == b ? len : -1;
}

bool topo_route_blocked(const struct topo *t, int a, int b, topo_down_fn *down, const void *ctx)
{
    int ca[TOPO_MAX_DIMS], cb[TOPO_MAX_DIMS], cur = a;
    topo_coords(t, a, ca);
    topo_coords(t, b, cb);
    for (int i = 0; i < t->ndims; i++) {
        int d = topo_axis_delta(t, i, ca[i], cb[i]), dir = d > 0 ? 1 : -1;
        for (int k = 0; k < abs(d); k++) {
            if (down(ctx, cur, i, dir))
                return true;
            cur = topo_neighbor(t, cur, i, dir);
        }
    }
    return false;
}
