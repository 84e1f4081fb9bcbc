/* topology/plat_dir.c -- the platform of a fold whose transfers keep their direction. */
#include "topology/plat_dir.h"

#include <stdlib.h>

#include "base/xalloc.h"

/* The chip one step from 'rank' along 'axis' in 'dir' on the ring of the fold
 * (every axis longer than 1 is a ring here, a length-2 one too). */
static int ring_step(const struct topo *q, int rank, int axis, int dir)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(q, rank, c);
    int L = q->shape[axis];
    c[axis] = (c[axis] + dir + L) % L;
    return topo_rank(q, c);
}

int plat_dir_route(const struct topo *q, int a, int b, unsigned flip, struct topo_hop *hops)
{
    int ca[TOPO_MAX_DIMS], cb[TOPO_MAX_DIMS];
    topo_coords(q, a, ca);
    topo_coords(q, b, cb);
    int n = 0, cur = a;
    for (int i = 0; i < q->ndims; i++) {
        int d = topo_axis_delta(q, i, ca[i], cb[i]), L = q->shape[i];
        if ((flip & (1u << i)) && d != 0)
            d = d > 0 ? d - L : d + L;
        int dir = d > 0 ? 1 : -1;
        for (int k = 0; k < abs(d); k++) {
            int next = ring_step(q, cur, i, dir);
            hops[n++] = (struct topo_hop){cur, next, i, dir};
            cur = next;
        }
    }
    return n;
}

int plat_dir_flip(const struct topo *t, const struct topo *q, unsigned dirs, int src, int dst)
{
    int cs[TOPO_MAX_DIMS], cd[TOPO_MAX_DIMS];
    topo_coords(t, src, cs);
    topo_coords(t, dst, cd);
    int flip = 0;
    for (int i = 0; i < t->ndims; i++) {
        int L = q->shape[i];
        int real = topo_axis_delta(t, i, cs[i], cd[i]);
        int fold = topo_axis_delta(q, i, cs[i] % L, cd[i] % L);
        if (real == fold)
            continue;
        if (abs(real) >= L || !(dirs & (1u << i)) || (real - fold) % L != 0)
            return -1;
        flip |= 1 << i;
    }
    return flip;
}

char *plat_dir_port_name(const char *prefix, const struct topo *q, int rank, unsigned flip,
                         char *buf, size_t n)
{
    if (flip == 0)
        snprintf(buf, n, "%s%d", prefix, topo_sim_node(q, rank));
    else
        snprintf(buf, n, "%s%d.p%u", prefix, topo_sim_node(q, rank), flip);
    return buf;
}

char *plat_dir_host_name(const struct topo *q, int rank, unsigned flip, char *buf, size_t n)
{
    if (flip == 0)
        return plat_host_name(q, rank, buf, n);
    return plat_dir_port_name("chip", q, rank, flip, buf, n);
}

/* The flip sets written: every subset of 'dirs' among the fold's axes. */
static bool flip_written(const struct topo *q, unsigned dirs, unsigned flip)
{
    return flip < (1u << q->ndims) && (flip & ~dirs) == 0;
}

long plat_dir_routes(const struct topo *q, unsigned dirs)
{
    long sets = 0;
    for (unsigned f = 0; f < (1u << q->ndims); f++)
        sets += flip_written(q, dirs, f);
    return sets * q->nchips * sets * q->nchips;
}

static void write_hosts(FILE *out, const struct topo *q, unsigned dirs, const struct plat_params *p,
                        const char *prefix)
{
    char name[64];
    for (int r = 0; r < q->nchips; r++)
        for (unsigned f = 0; f < (1u << q->ndims); f++) {
            if (!flip_written(q, dirs, f))
                continue;
            fprintf(out, "    <host id=\"%s\" speed=\"%.17gf",
                    plat_dir_port_name(prefix, q, r, f, name, sizeof name), p->core_flops);
            for (int i = 0; i < p->npstates; i++)
                fprintf(out, ",%.17gf", p->core_flops * p->pstate_factors[i]);
            fprintf(out, "\" core=\"%d\"/>\n", p->cores);
        }
}

/* Per chip: its HBM limiter "<lp>h<rank>", and per axis the two directions of
 * the link to the next chip up the ring: "<lp>i<rank>_<axis>u" (up from it)
 * and "<lp>i<rank>_<axis>d" (down to it), as SPLITDUPLEX makes them in the
 * cluster ('lp': the slice's link prefix, "" for one slice). */
static void write_links(FILE *out, const struct topo *q, const struct plat_params *p, const char *lp)
{
    for (int r = 0; r < q->nchips; r++) {
        fprintf(out, "    <link id=\"%sh%d\" bandwidth=\"%.17gBps\" latency=\"0s\"/>\n", lp, r,
                p->hbm_bw_Bps);
        for (int a = 0; a < q->ndims; a++)
            for (int up = 1; up >= 0 && q->shape[a] > 1; up--)
                fprintf(out,
                        "    <link id=\"%si%d_%d%c\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n",
                        lp, r, a, up ? 'u' : 'd', p->ici_bw_Bps, p->ici_lat_s);
    }
}

/* The routes from host 'flip' of chip 'a' to every host of chip 'b', in
 * TorusZone's order: per hop the limiter of the chip it leaves and the link,
 * then the destination's limiter. A route ends at any host of 'b' alike: a
 * receiving actor may stand on one of its chip's ports for its own send
 * when a transfer to it starts, and it is its chip that receives. */
static void write_routes(FILE *out, const struct topo *q, unsigned dirs, const char *prefix,
                         const char *lp, int a, int b, unsigned flip, struct topo_hop *h)
{
    int n = plat_dir_route(q, a, b, flip, h);
    char src[64], dst[64];
    for (unsigned g = 0; g < (1u << q->ndims); g++) {
        if (!flip_written(q, dirs, g))
            continue;
        fprintf(out, "    <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">",
                plat_dir_port_name(prefix, q, a, flip, src, sizeof src),
                plat_dir_port_name(prefix, q, b, g, dst, sizeof dst));
        for (int k = 0; k < n; k++) {
            int link = h[k].dir > 0 ? h[k].from : h[k].to;
            fprintf(out, "<link_ctn id=\"%sh%d\"/><link_ctn id=\"%si%d_%d%c\"/>", lp, h[k].from,
                    lp, link, h[k].axis, h[k].dir > 0 ? 'u' : 'd');
        }
        fprintf(out, "<link_ctn id=\"%sh%d\"/></route>\n", lp, b);
    }
}

void plat_dir_write_zone(FILE *out, const struct topo *q, unsigned dirs, const struct plat_params *p,
                         const char *id, const char *prefix, const char *link_prefix)
{
    fprintf(out, "  <zone id=\"%s\" routing=\"Full\">\n", id);
    write_hosts(out, q, dirs, p, prefix);
    write_links(out, q, p, link_prefix);
    int max = q->shape[0] + q->shape[1] + q->shape[2];
    struct topo_hop *h = xmalloc((size_t)max * sizeof *h);
    for (int a = 0; a < q->nchips; a++)
        for (unsigned f = 0; f < (1u << q->ndims); f++)
            for (int b = 0; b < q->nchips && flip_written(q, dirs, f); b++)
                write_routes(out, q, dirs, prefix, link_prefix, a, b, f, h);
    free(h);
    fprintf(out, "  </zone>\n");
}

int plat_dir_write_xml(FILE *out, const struct topo *q, unsigned dirs, const struct plat_params *p)
{
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out, "  <!-- %d chips of an SPMD fold whose transfers keep their direction: "
                 "hosts chipN.pM send the other way round the rings of the axes in M -->\n",
            q->nchips);
    if (p->pcie_Bps > 0)
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
    plat_dir_write_zone(out, q, dirs, p, "pod", "chip", "");
    if (p->pcie_Bps > 0) {
        plat_write_pcie_zone(out, q->nchips, p->pcie_Bps);
        fprintf(out, "</zone>\n");
    }
    fprintf(out, "</platform>\n");
    return ferror(out) ? -1 : 0;
}
