/* engine/eng_fault.c -- a scenario's faults on SimGrid (config/cfg_faults.h).
 * A degraded link is its two directions' bandwidth times the factor
 * (sg_link_set_bandwidth); a slow chip's compute is a pstate of its host
 * (the platform lists one per slow chip, engine/outputs.c) and its HBM its
 * limiter link's bandwidth times the factor. Faults with a start time are
 * applied then by a daemon actor. A down link carries nothing: a transfer
 * whose route crosses it takes the detour of topology/topo_fault.h, cut into
 * legs whose own SimGrid routes are the detour's hops; the legs carry the
 * payload at the same time (cut-through: each link of the detour streams it),
 * the last one lands on the receiver's semaphore after the detour's extra
 * hop latency. A lost slice (or a dead chip's) leaves the DCN collectives:
 * they run over the surviving slices. */
#include <stdio.h>
#include <stdlib.h>

#include "base/xalloc.h"
#include "engine/engine.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "topology/topo_fault.h"

static bool active(const struct cfg_fault *f)
{
    return eng_now() >= f->at_s;
}

/* The SimGrid link of one direction of the link from slice chip 'rank'
 * along 'axis' in 'dir' (the cluster's "<id>_link_from_A_to_B_UP|DOWN"). */
static sg_link_t ici_link(const struct eng_run *r, int slice, int rank, int axis, int dir)
{
    const struct topo *t = &r->sc->plan.sim;
    int lower = dir > 0 ? rank : topo_neighbor(t, rank, axis, -1);
    int upper = topo_neighbor(t, lower, axis, 1);
    char name[96];
    if (r->sc->dcn.slices > 1)
        snprintf(name, sizeof name, "slice%d_link_from_%d_to_%d_%s", slice,
                 topo_sim_node(t, lower), topo_sim_node(t, upper), dir > 0 ? "UP" : "DOWN");
    else
        snprintf(name, sizeof name, "pod_link_from_%d_to_%d_%s", topo_sim_node(t, lower),
                 topo_sim_node(t, upper), dir > 0 ? "UP" : "DOWN");
    return sg_link_by_name(name);
}

static sg_link_t limiter(const struct eng_run *r, int slice, int rank)
{
    char name[64];
    if (r->sc->dcn.slices > 1)
        snprintf(name, sizeof name, "slice%d_link_%d_limiter", slice,
                 topo_sim_node(&r->sc->plan.sim, rank));
    else
        snprintf(name, sizeof name, "pod_link_%d_limiter", topo_sim_node(&r->sc->plan.sim, rank));
    return sg_link_by_name(name);
}

static int engine_chip(const struct eng_run *r, int slice, int rank)
{
    return slice * r->sc->plan.sim.nchips + rank;
}

static void set_bw(struct eng_run *r, sg_link_t l, double Bps)
{
    if (l)
        sg_link_set_bandwidth(l, Bps);
    else if (!r->error)
        r->error = xasprintf("faults: a link of the platform was not found (internal error)");
}

/* Applies fault 'i' (now: its start time). */
static void apply(struct eng_run *r, int i)
{
    const struct cfg_fault *f = &r->sc->faults.f[i];
    const struct chip_params *ch = &r->sc->chip;
    if (f->kind == CFG_FAULT_LINK && f->bw_factor > 0) {
        int nb = topo_neighbor(&r->sc->plan.sim, f->chip, f->axis, f->dir);
        set_bw(r, ici_link(r, f->slice, f->chip, f->axis, f->dir), ici_link_Bps(ch) * f->bw_factor);
        set_bw(r, ici_link(r, f->slice, nb, f->axis, -f->dir), ici_link_Bps(ch) * f->bw_factor);
    } else if (f->kind == CFG_FAULT_CHIP && !f->dead) {
        int pstate = 1; /* the platform's pstates: one per chip fault, in order */
        for (int j = 0; j < i; j++)
            pstate += r->sc->faults.f[j].kind == CFG_FAULT_CHIP;
        int e = engine_chip(r, f->slice, f->chip);
        sg_host_set_pstate(r->hw.cores[e * ch->cores].host, (unsigned long)pstate);
        if (f->hbm_factor < 1)
            set_bw(r, limiter(r, f->slice, f->chip), hbm_bw_Bps(ch) * f->hbm_factor);
    }
}

static void timer_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_run *r = sg_actor_self_get_data();
    const struct cfg_faults *fs = &r->sc->faults;
    for (;;) { /* the next fault to start, in time order (ties: list order) */
        int next = -1;
        for (int i = 0; i < fs->n; i++)
            if (fs->f[i].at_s > eng_now() && (next < 0 || fs->f[i].at_s < fs->f[next].at_s))
                next = i;
        if (next < 0)
            return;
        sg_actor_sleep_until(fs->f[next].at_s);
        for (int i = 0; i < fs->n; i++)
            if (fs->f[i].at_s == fs->f[next].at_s)
                apply(r, i);
    }
}

void eng_fault_init(struct eng_run *r)
{
    const struct cfg_faults *fs = &r->sc->faults;
    bool later = false;
    for (int i = 0; i < fs->n; i++) {
        if (fs->f[i].at_s <= 0)
            apply(r, i);
        else
            later = true;
    }
    if (!later)
        return;
    sg_actor_t a = sg_actor_init("faults", r->hw.cores[0].host);
    sg_actor_set_data(a, r);
    sg_actor_start(a, timer_main, 0, NULL);
    sg_actor_daemonize(a);
}

/* ---- routes around down links ---- */

struct down_ctx {
    const struct eng_run *r;
    int slice;
};

static bool link_down(const void *ctx, int from, int axis, int dir)
{
    const struct down_ctx *c = ctx;
    const struct cfg_faults *fs = &c->r->sc->faults;
    const struct topo *t = &c->r->sc->plan.sim;
    for (int i = 0; i < fs->n; i++) {
        const struct cfg_fault *f = &fs->f[i];
        if (f->kind != CFG_FAULT_LINK || f->bw_factor > 0 || f->slice != c->slice ||
            f->axis != axis || !active(f))
            continue;
        if ((f->chip == from && f->dir == dir) ||
            (topo_neighbor(t, f->chip, axis, f->dir) == from && dir == -f->dir))
            return true; /* a link is down both ways */
    }
    return false;
}

static bool any_down(const struct eng_run *r)
{
    const struct cfg_faults *fs = &r->sc->faults;
    for (int i = 0; i < fs->n; i++)
        if (fs->f[i].kind == CFG_FAULT_LINK && fs->f[i].bw_factor == 0 && active(&fs->f[i]))
            return true;
    return false;
}

bool eng_fault_detours(const struct eng_run *r, int src, int dst)
{
    int n = r->sc->plan.sim.nchips;
    if (!any_down(r) || src / n != dst / n || src == dst)
        return false;
    struct down_ctx c = {r, src / n};
    return topo_route_blocked(&r->sc->plan.sim, src % n, dst % n, link_down, &c);
}

/* The hops of route[i .. j) are the SimGrid route between their ends. */
static bool one_leg(const struct topo *t, const struct topo_hop *h, int i, int j)
{
    struct topo_hop own[3 * TOPO_MAX_DIMS * 64];
    if (topo_hops(t, h[i].from, h[j - 1].to) != j - i || j - i > (int)(sizeof own / sizeof *own))
        return false;
    topo_route(t, h[i].from, h[j - 1].to, own);
    for (int k = i; k < j; k++)
        if (own[k - i].to != h[k].to)
            return false;
    return true;
}

struct leg {
    sg_host_t from, to;
    double bytes;
};

static void leg_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct leg *l = sg_actor_self_get_data();
    sg_host_sendto(l->from, l->to, l->bytes);
    free(l);
}

static sg_host_t host_of(const struct eng_run *r, int slice, int rank)
{
    return r->hw.cores[engine_chip(r, slice, rank) * r->sc->chip.cores].host;
}

sg_comm_t eng_fault_put(struct eng_run *r, int src, int dst, sg_mailbox_t mb, void *msg,
                        uint64_t bytes, double t0)
{
    if (!eng_fault_detours(r, src, dst))
        return sg_mailbox_put_async(mb, msg, (long)bytes);
    const struct topo *t = &r->sc->plan.sim;
    int n = t->nchips, slice = src / n;
    struct down_ctx c = {r, slice};
    int max = t->shape[0] + t->shape[1] + t->shape[2] + 6;
    struct topo_hop *h = xcalloc((size_t)max, sizeof *h);
    int len = topo_route_around(t, src % n, dst % n, link_down, &c, h, max);
    if (len < 0) {
        if (!r->error)
            r->error = xasprintf("faults: no route from chip %d to chip %d around the down "
                                 "links: the program cannot run on this slice", src % n, dst % n);
        free(h);
        return sg_mailbox_put_async(mb, msg, (long)bytes);
    }
    int i = 0, last = 0;
    while (i < len) { /* greedy legs: the longest run of hops that is its ends' own route */
        int j = i + 1;
        while (j < len && one_leg(t, h, i, j + 1))
            j++;
        if (j == len) {
            last = i;
            break;
        }
        struct leg *l = xmalloc(sizeof *l);
        *l = (struct leg){host_of(r, slice, h[i].from), host_of(r, slice, h[j - 1].to),
                          (double)bytes};
        sg_actor_t a = sg_actor_init("detour", l->from);
        sg_actor_set_data(a, l);
        sg_actor_start(a, leg_main, 0, NULL);
        i = j;
    }
    double start = t0 + (double)last * r->sc->chip.ici_hop_lat_s; /* the earlier legs' hops */
    if (start > eng_now())
        sg_actor_sleep_until(start);
    sg_host_t home = sg_actor_get_host(sg_actor_self());
    sg_actor_set_host(sg_actor_self(), host_of(r, slice, h[last].from));
    sg_comm_t comm = sg_mailbox_put_async(mb, msg, (long)bytes);
    sg_actor_set_host(sg_actor_self(), home);
    free(h);
    return comm;
}

/* ---- lost slices ---- */

int eng_fault_slices(const struct eng_run *r, int slice, int *eff)
{
    const struct cfg_faults *fs = &r->sc->faults;
    int slices = r->sc->dcn.slices > 1 ? r->sc->dcn.slices : 1;
    *eff = slice;
    if (fs->slices_lost == 0)
        return slices;
    if (cfg_slice_lost(fs, slice)) { /* it runs alone: its DCN phases are no-ops */
        *eff = 0;
        return 1;
    }
    *eff = 0;
    for (int s = 0; s < slice; s++)
        *eff += !cfg_slice_lost(fs, s);
    return slices - fs->slices_lost;
}

int eng_fault_real_slice(const struct eng_run *r, int slice, int eff)
{
    const struct cfg_faults *fs = &r->sc->faults;
    if (fs->slices_lost == 0)
        return eff;
    if (cfg_slice_lost(fs, slice))
        return slice;
    int slices = r->sc->dcn.slices;
    for (int s = 0, k = 0; s < slices; s++)
        if (!cfg_slice_lost(fs, s) && k++ == eff)
            return s;
    return eff;
}
