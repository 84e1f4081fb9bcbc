/* engine/sim.c -- the run's lifecycle: validate, write the platform, start
 * SimGrid with exact network settings, spawn the actors, run, collect the
 * summary, write the outputs. The four network --cfg flags make a transfer
 * cost exactly latency + bytes / bw (docs/reference.md, "How it models a TPU"); they are passed from
 * here, never by users. The top of the engine (see engine/engine.h). */
#include "engine/sim.h"
#include "engine/cost.h"
#include "engine/uncertainty.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "models/hbm.h"
#include "models/ici.h"
#include "engine/engine.h"
#include "engine/explain.h"
#include "workload/model.h"
#include "config/op_table.h"
#include "engine/outputs.h"
#include "outputs/progress.h"
#include "engine/timeline.h"
#include "engine/validate.h"
#include "topology/dcn.h"
#include "topology/plat_dir.h"
#include "topology/plat_xml.h"
#include "engine/fault_report.h"
#include "engine/sim_child.h"

/* Many actors: small stacks (32 KiB: each is committed and zeroed when
 * guard pages are off, so 256 KiB stacks were most of the memory of a
 * 6144-chip slice) without guard pages, to stay under the process's limit
 * of memory mappings (vm.max_map_count, 65,530). The deepest actor (an exact
 * reduce-scatter's accumulate step, a collective matmul's chunks) needs
 * between 12 and 16 KiB: with guard pages, every unit, e2e and bad-input
 * case passes on 16 KiB stacks and some crash on 12 (build with
 * CFLAGS='-O2 -DSIM_STACK_KIB=\"16\"' to check); 32 KiB keeps twice the
 * deepest. Big structures stay off actor stacks (a pallas_call's operand
 * states, a reduction's call). Unoptimised builds keep 64 KiB.
 * network/optim:Full: SimGrid 3.32's default lazy max-min update let flows
 * of a line all-gather with a non-zero link latency finish a third early
 * (a 25 MB transfer over a 42.75 GB/s link in 392 us); Full recomputes the
 * shares at every event and is exact (tests/unit/test_coll.c).
 * maxmin/precision at SimGrid's default 1e-5: with 1e-9 the solver aborted
 * ("cannot saturate more a constraint that has no active element") on
 * all-to-alls of 5 or more chips over 86.4 GB/s links; the run times of the
 * tests and the fidelity points are identical either way.
 * network/latency-factor and network/weight-S: see sim_penalty_scale. */
#if defined(SIM_STACK_KIB)
/* given at build time (stack-depth experiments) */
#elif defined(__SANITIZE_ADDRESS__)
#define SIM_STACK_KIB "256" /* the sanitizer's frames are several times larger */
#elif !defined(__OPTIMIZE__)
#define SIM_STACK_KIB "64" /* -O0 frames (make valgrind) are larger */
#else
#define SIM_STACK_KIB "32"
#endif
/* Without guard pages SimGrid takes each actor's stack from calloc: from
 * the heap that is a memset of the whole stack, all of it resident. An
 * allocation of the stack's size or more is mapped instead (fresh zero
 * pages, resident as they are touched: an actor uses a few KiB), for at
 * most SIM_LAZY_STACKS live ones so that the mappings stay under
 * vm.max_map_count (65,530; adjacent ones merge); more come from the heap
 * as before. 1 MiB all-reduce on 6144 chips: 1.77 -> 1.21 GB, same CPU.
 * These tune glibc's malloc, which serves the builds linked without an
 * allocator (ALLOC_LIBS=); the sanitizers and valgrind ignore them.
 * mimalloc (the release build's, Makefile) ignores them too: there the stacks
 * go to transparent huge pages instead (mimalloc's large OS pages: its new
 * segments are madvise'd MADV_HUGEPAGE). Every SimGrid call switches to an
 * actor's stack, and with tens of thousands of actors each switch missed the
 * TLB on 4 KiB pages (the first pop off the stack was 14 % of a 4096-chip
 * all-reduce); 2 MiB pages hold 64 stacks each. Side by side, every chip
 * of a 16x16x16, the same outputs: the 1 GiB all-reduce 7.1 -> 5.4 CPU
 * seconds (medians), but the all-gathers, with fewer switches, about 0.4 s
 * slower: zeroing 2 MiB pages cost this project's virtual machine about 1 s
 * of system time (docs/reference.md, "Every chip simulated, against
 * ASTRA-sim"). */
#if defined(__has_include)
#if __has_include(<mimalloc.h>)
#include <mimalloc.h>
#pragma weak mi_option_enable /* NULL when mimalloc is not linked (ALLOC_LIBS=) */
#define SIM_MIMALLOC 1
#endif
#endif
#define SIM_LAZY_STACKS 40000
static void lazy_stacks(void)
{
    mallopt(M_MMAP_THRESHOLD, atoi(SIM_STACK_KIB) * 1024);
    mallopt(M_MMAP_MAX, SIM_LAZY_STACKS);
#ifdef SIM_MIMALLOC
    if (mi_option_enable)
        mi_option_enable(mi_option_large_os_pages);
#endif
}

/* SimGrid's network model (CM02, with LV08's default weight-S of 20537) shares
 * a link among its transfers in inverse proportion to each one's penalty: the
 * latency of its route plus weight-S times the sum of 1/bandwidth over it; a
 * transfer whose route has no latency (a local DMA: the chip's HBM limiter
 * link alone, eng_dma.c) has penalty 1 instead. A one-hop ICI transfer's is
 * 2.5e-7 on a v5e, so on the HBM link a DMA weighed 4e6 times less than the
 * ICI transfers beside it. When those fill the HBM link (an ICI link as fast
 * as HBM, or HBM as slow as a link) the DMA's share, ~1/4e6 of the link, fell
 * under maxmin/precision (1e-5 of the link): SimGrid 3.32's solver then
 * counts the link as full without fixing the DMA, leaves it in the link's
 * active set, and aborts at the next solve (a boost::intrusive assertion in
 * lmm::Element::make_active, tests/run_e2e.sh). So every link latency goes to
 * SimGrid times the power of two S returned here, the latency factor is 1/S
 * (every transfer's latency is what it was, bit for bit) and weight-S is
 * 20537 S: every penalty but the latency-free transfers' 1 is S times what it
 * was, their ratios (how ICI transfers share a link) unchanged. S makes a
 * one-hop ICI transfer weigh K = SIM_ICI_OVER_DMA to 2K times a DMA: ICI
 * transfers still take the HBM they need first (their ICI links bind them
 * long before: 8 one-way links of a v5e are 342 of its 819 GB/s), and a DMA
 * beside n ICI transfers that fill the HBM keeps about 1/(2K n) of it, above
 * the solver's precision up to n = 390. */
#define SIM_ICI_OVER_DMA 128.0
#define SIM_LV08_WEIGHT_S 20537.0 /* SimGrid 3.32, surf_network_model_init_LegrandVelho */
static double sim_penalty_scale(const struct cfg_scenario *sc)
{
    const struct chip_params *ch = &sc->chip;
    double pen = ch->ici_hop_lat_s +
                 SIM_LV08_WEIGHT_S * (2.0 / hbm_bw_Bps(ch) + 1.0 / ici_link_Bps(ch));
    int e = 0;
    frexp(1.0 / (SIM_ICI_OVER_DMA * pen), &e); /* (pen is positive: bandwidths are) */
    e = e < -300 ? -300 : e > 300 ? 300 : e;
    return ldexp(1.0, e - 1); /* S pen in (1/2K, 1/K] */
}

/* Scales the latency of every link of the loaded platform by 'scale'. */
static void scale_latencies(double scale)
{
    sg_link_t *links = sg_link_list();
    for (size_t i = 0, n = sg_link_count(); i < n; i++)
        sg_link_set_latency(links[i], sg_link_get_latency(links[i]) * scale);
    free(links);
}

static void init_simgrid(const struct sim_opts *o, int actors, double scale)
{
    static const char *const flags[] = {
        "--cfg=network/bandwidth-factor:1",
        "--cfg=network/crosstraffic:0",   "--cfg=network/TCP-gamma:0",
        "--cfg=network/optim:Full",
        "--cfg=surf/precision:1e-12",     "--cfg=maxmin/precision:1e-5",
        "--log=root.thresh:critical",     "--log=ker_engine.app:file:/dev/null",
        "--log=ker_engine.add:0"};
    int n = (int)(sizeof flags / sizeof flags[0]);
    int argc = 0;
    char **argv = xcalloc((size_t)(n + o->sg_argc + 6), sizeof *argv);
    argv[argc++] = xstrdup("tpusim");
    for (int i = 0; i < n; i++)
        argv[argc++] = xstrdup(flags[i]);
    argv[argc++] = xasprintf("--cfg=network/latency-factor:%.17g", 1.0 / scale);
    argv[argc++] = xasprintf("--cfg=network/weight-S:%.17g", SIM_LV08_WEIGHT_S * scale);
    argv[argc++] = xstrdup("--cfg=contexts/stack-size:" SIM_STACK_KIB);
    if (actors > 8000) {
        argv[argc++] = xstrdup("--cfg=contexts/guard-size:0");
        lazy_stacks();
    }
    for (int i = 0; i < o->sg_argc; i++)
        argv[argc++] = xstrdup(o->sg_argv[i]);
    /* simgrid_init consumes the flags it knows and compacts argv: free a copy */
    int keep = argc;
    char **owned = xcalloc((size_t)keep, sizeof *owned);
    memcpy(owned, argv, sizeof *owned * (size_t)keep);
    simgrid_init(&argc, argv);
    for (int i = 0; i < keep; i++)
        free(owned[i]);
    free(owned);
    free(argv);
}

static void build_kernels(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    struct eng_program *p = &r->prog;
    p->kern = xcalloc((size_t)sc->nops, sizeof *p->kern);
    p->kern_fn = xcalloc((size_t)sc->nops, sizeof *p->kern_fn);
    p->scripts = xcalloc((size_t)sc->nops, sizeof *p->scripts);
    p->chunk_memo = xcalloc((size_t)sc->nops * (size_t)sc->chip.cores * 2, sizeof *p->chunk_memo);
    for (int i = 0; i < sc->nops; i++) {
        const struct kern_kind *kind = op_row(sc->ops[i].kind)->kern;
        if (!kind)
            continue;
        char err[1024];
        kern_init(&p->kern[i], kind, &sc->ops[i], &sc->chip, false, err, sizeof err);
        if (sc->ops[i].functional) {
            kern_init(&p->kern_fn[i], kind, &sc->ops[i], &sc->chip, true, err, sizeof err);
            kern_data(&p->kern_fn[i], sc->seed + (uint64_t)i);
        }
        p->scripts[i] = xcalloc((size_t)(p->kern[i].ncalls * sc->chip.cores) + 1,
                                sizeof *p->scripts[i]);
    }
}

static void trace_tracks(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    trace_meta(r->trace, "scenario", sc->name);
    trace_meta(r->trace, "chip", sc->chip.name);
    for (int chip = 0; chip < cfg_engine_chips(sc); chip++) {
        int c[TOPO_MAX_DIMS] = {0};
        topo_coords(&sc->plan.sim, chip % sc->plan.sim.nchips, c);
        char name[96], sl[24] = "";
        if (sc->dcn.slices > 1)
            snprintf(sl, sizeof sl, "slice %d ", chip / sc->plan.sim.nchips);
        if (sc->plan.sim_mult > 1)
            snprintf(name, sizeof name, "chip %d (%s%d,%d,%d), standing for %d chips", chip, sl,
                     c[0], c[1], c[2], sc->plan.sim_mult);
        else
            snprintf(name, sizeof name, "chip %d (%s%d,%d,%d)", chip, sl, c[0], c[1], c[2]);
        trace_process(r->trace, chip, name);
        for (int k = 0; k < sc->chip.cores; k++) {
            /* the compute stream, then the async stream under it, then the units */
            static const struct {
                const char *name;
                int tid, order;
            } tracks[] = {{"", 0, 0}, {" async", 4, 1}, {" MXU", 1, 2}, {" VPU", 2, 3},
                          {" DMA", 3, 4}};
            for (int u = 0; u < 5; u++) {
                snprintf(name, sizeof name, "TC%d%s", k, tracks[u].name);
                trace_thread(r->trace, chip, k * 10 + tracks[u].tid, name,
                             k * 10 + tracks[u].order);
            }
        }
        for (int dir = 0; dir < 2 && cfg_uses_kind(sc, OP_HOST_COPY); dir++)
            trace_thread(r->trace, chip, ENG_TID_PCIE(dir), dir ? "PCIe to device" : "PCIe to host",
                         ENG_TID_PCIE(dir));
        for (int a = 0; a < sc->plan.sim.ndims; a++)
            for (int dir = 1; dir >= -1; dir -= 2) {
                snprintf(name, sizeof name, "ICI %c%c", "xyz"[a], dir > 0 ? '+' : '-');
                trace_thread(r->trace, chip, ENG_TID_ICI(a, dir), name, ENG_TID_ICI(a, dir));
            }
        if (sc->dcn.slices > 1)
            trace_thread(r->trace, chip, ENG_TID_DCN, "DCN out", ENG_TID_DCN);
    }
}

/* Per-chip completion state and per-instance timing of the program. */
static void alloc_program_state(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    struct eng_run_stats *st = &r->stats;
    r->prog.inst_off = xcalloc((size_t)sc->nops + 1, sizeof *r->prog.inst_off);
    r->prog.sem_mb = xcalloc((size_t)sc->nops + 1, sizeof *r->prog.sem_mb);
    int64_t total = 0;
    for (int i = 0; i < sc->nops; i++) {
        r->prog.inst_off[i] = total;
        total += sc->graph.node[i].instances;
    }
    st->inst_dur = xcalloc((size_t)total + 1, sizeof *st->inst_dur);
    st->chip0_t0 = xcalloc((size_t)total + 1, sizeof *st->chip0_t0);
    st->chip0_t1 = xcalloc((size_t)total + 1, sizeof *st->chip0_t1);
    for (int i = 0; i < r->hw.ncores; i++)
        r->hw.cores[i].done_bits = xcalloc((size_t)total / 8 + 1, 1);
    st->core_op = xcalloc((size_t)sc->nops * (size_t)sc->chip.cores, sizeof *st->core_op);
    st->core_sub = xcalloc((size_t)sc->nops * KERN_MAX_CALLS * (size_t)sc->chip.cores,
                           sizeof *st->core_sub);
    r->hw.chips = xcalloc((size_t)cfg_engine_chips(sc), sizeof *r->hw.chips);
    for (int i = 0; i < cfg_engine_chips(sc); i++) {
        r->hw.chips[i].mutex = sg_mutex_init();
        r->hw.chips[i].changed = sg_cond_init();
    }
}

static void start_actor(const char *name, sg_host_t h, void *data, void (*code)(int, char **),
                        bool daemon)
{
    sg_actor_t a = sg_actor_init(name, h);
    sg_actor_set_data(a, data);
    sg_actor_start(a, code, 0, NULL);
    if (daemon)
        sg_actor_daemonize(a);
}

/* The SimGrid host of engine chip 'chip' (engine/engine.h numbers them). */
static char *chip_host_name(const struct cfg_scenario *sc, int chip, char *buf, size_t n)
{
    if (sc->dcn.slices <= 1)
        return plat_host_name(&sc->plan.sim, chip, buf, n);
    return dcn_host_name(&sc->plan.sim, chip / sc->plan.sim.nchips, chip % sc->plan.sim.nchips, buf, n);
}

/* Its NIC host on the DCN (topology/dcn.h), or NULL with one slice. */
static sg_host_t nic_host(const struct cfg_scenario *sc, int chip)
{
    if (sc->dcn.slices <= 1)
        return NULL;
    char name[32];
    int k = dcn_nic(&sc->dcn, &sc->topo, &sc->plan.sim, chip / sc->plan.sim.nchips, chip % sc->plan.sim.nchips);
    return sg_host_by_name(dcn_nic_name(k, name, sizeof name));
}

/* The NIC host where its DCN transfers land (its NIC's, or with one slice of
 * several simulated the receiving half: topology/dcn.h), or NULL with one slice. */
static sg_host_t nic_rx_host(const struct cfg_scenario *sc, int chip)
{
    if (sc->dcn.slices <= 1)
        return NULL;
    char name[32];
    int n = sc->plan.sim.nchips;
    int k = dcn_nic_rx(&sc->dcn, &sc->topo, &sc->plan.sim, cfg_sim_slices(sc), chip / n, chip % n);
    return sg_host_by_name(dcn_nic_name(k, name, sizeof name));
}

/* True if some op runs on the compute streams (a workload of collectives
 * alone leaves them nothing to do). */
static bool has_compute(const struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        if (!op_row(sc->ops[i].kind)->async)
            return true;
    return false;
}

/* The port hosts of a directed fold (topology/plat_dir.h), per chip x flip set. */
static void find_ports(struct eng_run *r, int nchips)
{
    const struct topo *q = &r->sc->plan.sim;
    bool slices = r->sc->dcn.slices > 1;
    r->hw.ports = xcalloc((size_t)nchips * 8, sizeof *r->hw.ports);
    for (int chip = 0; chip < nchips; chip++)
        for (unsigned f = 1; f < 8; f++) {
            char prefix[32], name[64];
            /* hosts of slice s are "s<s>-chip<n>" (topology/dcn.h) */
            if (slices)
                snprintf(prefix, sizeof prefix, "s%d-chip", chip / q->nchips);
            else
                snprintf(prefix, sizeof prefix, "chip");
            if ((f & ~r->sc->plan.sim_dirs) == 0 && f < (1u << q->ndims))
                r->hw.ports[chip * 8 + f] = sg_host_by_name(
                    plat_dir_port_name(prefix, q, chip % q->nchips, f, name, sizeof name));
        }
}

static void spawn(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    bool compute = has_compute(sc);
    int nchips = cfg_engine_chips(sc);
    r->hw.ncores = nchips * sc->chip.cores;
    r->hw.cores = xcalloc((size_t)r->hw.ncores, sizeof *r->hw.cores);
    alloc_program_state(r);
    r->prog.op_barrier = xcalloc((size_t)sc->nops, sizeof *r->prog.op_barrier);
    for (int i = 0; i < sc->nops; i++)
        r->prog.op_barrier[i] = sg_barrier_init((unsigned)nchips);
    if (sc->chip.cores > 1) {
        r->hw.chip_barrier = xcalloc((size_t)nchips, sizeof *r->hw.chip_barrier);
        for (int i = 0; i < nchips; i++)
            r->hw.chip_barrier[i] = sg_barrier_init((unsigned)sc->chip.cores);
    }
    if (sc->plan.sim_dirs)
        find_ports(r, nchips);
    eng_coll_prepare(r);
    for (int chip = 0; chip < nchips; chip++) {
        char host[32], name[48];
        sg_host_t h = sg_host_by_name(chip_host_name(sc, chip, host, sizeof host));
        r->hw.chips[chip].nic = nic_host(sc, chip);
        r->hw.chips[chip].nic_rx = nic_rx_host(sc, chip);
        for (int k = 0; k < sc->chip.cores; k++) {
            struct eng_core *c = &r->hw.cores[chip * sc->chip.cores + k];
            uint8_t *bits = c->done_bits;
            *c = (struct eng_core){.run = r, .chip = chip, .core = k, .host = h, .done_bits = bits};
            c->gid = chip * sc->chip.cores + k;
            snprintf(name, sizeof name, "eng.%d", c->gid);
            c->engine = sg_mailbox_by_name(name);
            snprintf(name, sizeof name, "tc%d", c->gid);
            if (compute) /* else no actor (and no stack) for an empty walk */
                start_actor(name, h, c, eng_core_main, false);
            else
                c->done = true;
        }
        snprintf(name, sizeof name, "async%d", chip);
        start_actor(name, h, &r->hw.cores[chip * sc->chip.cores], eng_async_main, false);
    }
}

/* Streams and async ops that never finished: the ones blocked on something
 * other than a barrier or another op are the cause, so they are listed first. */
static void stuck_list(struct eng_run *r, const char **what, int *chip, int *core, int *n)
{
    int cores = r->sc->chip.cores;
    *n = 0;
    for (int i = 0; i < r->hw.ncores; i++) {
        const struct eng_core *c = &r->hw.cores[i];
        if (!c->done)
            what[*n] = c->waiting, chip[*n] = c->chip, core[(*n)++] = c->core;
        if (c->async_running > 0)
            what[*n] = c->async_waiting, chip[*n] = c->chip, core[(*n)++] = c->core;
    }
    for (int i = 0; i < cfg_engine_chips(r->sc); i++)
        if (!r->hw.chips[i].async_done)
            what[*n] = r->hw.chips[i].waiting, chip[*n] = i, core[(*n)++] = -1;
    (void)cores;
}

static int report_deadlock(struct eng_run *r, struct diag *d)
{
    int max = 2 * r->hw.ncores + cfg_engine_chips(r->sc);
    const char **what = xcalloc((size_t)max, sizeof *what);
    int *chip = xcalloc((size_t)max, sizeof *chip), *core = xcalloc((size_t)max, sizeof *core);
    int n, shown = 0;
    stuck_list(r, what, chip, core, &n);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            bool secondary = strstr(what[i], "barrier") || strstr(what[i], "waiting for op");
            if (secondary != (pass == 1) || shown++ >= 8)
                continue;
            if (core[i] < 0)
                diag_error(d, NULL, NULL, "deadlock: chip %d async stream: %s", chip[i],
                           what[i][0] ? what[i] : "?");
            else
                diag_error(d, NULL, NULL, "deadlock: chip %d core %d waits on %s", chip[i], core[i],
                           what[i][0] ? what[i] : "?");
        }
    if (n > 8)
        diag_error(d, NULL, NULL, "deadlock: ... and %d more", n - 8);
    free(what);
    free(chip);
    free(core);
    return n ? -1 : 0;
}

/* Per-op totals: busy time per unit per core, summed over the op's
 * instances as time_s is (models/ decide the HBM and ICI figures), the bound
 * and its share of peak. 'cores' counts the cores that ran it, summed over
 * its instances: the units' sums divide by the cores of one instance. */
static void finish_op(const struct cfg_scenario *sc, struct summary_op *o, const struct op *op)
{
    const struct chip_params *ch = &sc->chip;
    int chips = cfg_total_chips(sc);
    double cores = o->cores ? (double)o->cores / (double)(o->instances > 0 ? o->instances : 1) : 1;
    double t = o->time_s;
    o->name = xstrdup(op->name);
    o->op_name = op->op_name ? xstrdup(op->op_name) : NULL;
    o->kind = op_kind_name(op->kind);
    o->mxu_s /= cores;
    o->vpu_s /= cores;
    o->overhead_s /= cores;
    o->latency_s /= chips;
    o->hbm_s = hbm_busy_s(ch, o->hbm_bytes / chips);
    o->ici_s = ici_busy_s(ch, &sc->topo, o->ici_bytes / chips);
    o->pcie_s = pcie_busy_s(ch, o->pcie_bytes / chips);
    if (sc->dcn.slices > 1) /* a chip's share of its host's NICs */
        o->dcn_s = o->dcn_bytes / chips / (sc->dcn.nic_Bps / sc->dcn.chips_per_host);
    summary_pick_bound(o);
    double busy[BOUND_COUNT] = {o->mxu_s,      o->vpu_s,     o->hbm_s,  o->ici_s,
                                o->overhead_s, o->latency_s, o->pcie_s, o->dcn_s};
    if (o->bound == BOUND_MXU && t > 0) {
        double used = ch->megacore ? chips * ch->cores : cores;
        o->peak_frac = o->flops / (t * ch->peak_flops[op_mxu_dtype(op)] * used);
    } else if (o->bound == BOUND_HBM) {
        o->peak_frac = hbm_peak_fraction(ch, o->hbm_bytes / chips, t);
    } else if (o->bound == BOUND_ICI) {
        o->peak_frac = ici_peak_fraction(ch, &sc->topo, o->ici_bytes / chips, t);
    } else {
        o->peak_frac = t > 0 ? busy[o->bound] / t : 0;
    }
}

static int cmp_rate_ev(const void *a, const void *b)
{
    const double *x = a, *y = b; /* {chip, t, delta} */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1])
        return x[1] < y[1] ? -1 : 1;
    return (x[2] > y[2]) - (x[2] < y[2]);
}

/* The "HBM GB/s" counter of each chip: the sum of the average rates of the
 * transfers in flight, sampled where it changes. */
static void hbm_counters(struct eng_run *r)
{
    size_t n = r->stats.nrates * 2;
    double *ev = xcalloc(n ? n * 3 : 3, sizeof *ev);
    for (size_t i = 0; i < r->stats.nrates; i++) {
        const struct eng_rate *q = &r->stats.rates[i];
        double *a = &ev[6 * i];
        a[0] = q->chip, a[1] = q->t0, a[2] = q->Bps;
        a[3] = q->chip, a[4] = q->t1, a[5] = -q->Bps;
    }
    qsort(ev, n, 3 * sizeof *ev, cmp_rate_ev);
    double level = 0;
    for (size_t i = 0; i < n; i++) {
        double *e = &ev[3 * i];
        level += e[2];
        bool last = i + 1 == n || ev[3 * (i + 1)] != e[0] || ev[3 * (i + 1) + 1] != e[1];
        if (last) {
            trace_counter(r->trace, TRACE_STEPS, (int)e[0], "HBM GB/s", e[1],
                          level > 1 ? level / 1e9 : 0);
            if (i + 1 == n || ev[3 * (i + 1)] != e[0])
                level = 0;
        }
    }
    free(ev);
}

/* The sum over an op's instances of its longest run on any core. */
static double instance_time(const struct eng_run *r, int op)
{
    double t = 0;
    for (int64_t k = 0; k < r->sc->graph.node[op].instances; k++)
        t += r->stats.inst_dur[r->prog.inst_off[op] + k];
    return t;
}

/* A model step's throughput, MFU (MaxText's: model FLOPs per device over the
 * step time and the device's peak in the model's dtype) and memory. */
static void model_summary(const struct cfg_scenario *sc, struct summary *s)
{
    const struct model_step *ms = sc->model;
    struct summary_model *o = &s->model;
    double t = s->total_time_s > 0 ? s->total_time_s : 1;
    o->present = true;
    snprintf(o->mode, sizeof o->mode, "%s", model_mode_names()[ms->m.mode]);
    o->tokens = (double)ms->m.batch * (double)ms->m.seq_len;
    o->tokens_per_s = o->tokens / t;
    o->tokens_per_s_per_chip = o->tokens_per_s / cfg_total_chips(sc);
    o->flops_per_device = ms->flops_per_device;
    o->mfu = ms->flops_per_device / (t * ms->peak_per_device);
    snprintf(o->peak_dtype, sizeof o->peak_dtype, "%s", dtype_name(ms->peak_dtype));
    const struct model_memory *m = &ms->mem;
    o->mem_params = m->params, o->mem_grads = m->grads, o->mem_optimizer = m->optimizer;
    o->mem_activations = m->activations, o->mem_weights_gathered = m->weights_gathered;
    o->mem_logits = m->logits, o->mem_kv_cache = m->kv_cache, o->mem_total = m->total;
    o->mem_capacity = m->capacity;
    struct model_pipeline_info pi;
    model_pipeline_info(&ms->m, &ms->shard, &pi);
    o->pipeline_stages = pi.stages, o->pipeline_microbatches = pi.microbatches;
    o->pipeline_repeats = pi.repeats, o->pipeline_iterations = pi.iterations;
    o->pipeline_bubble = pi.bubble;
    snprintf(o->pipeline_schedule, sizeof o->pipeline_schedule, "%s",
             model_pipe_schedule_names()[ms->m.pipeline_schedule]);
    o->moe = ms->m.arch == MODEL_MIXTRAL;
    o->moe_capacity_factor = ms->m.capacity_factor > 0 ? ms->m.capacity_factor : -1;
    o->moe_load_imbalance = ms->m.expert_load_imbalance >= 1 ? ms->m.expert_load_imbalance : 1;
    o->moe_dropped_share = model_moe_dropped_share(&ms->m);
    o->moe_sparse_matmul = !ms->m.dense_matmul;
    if (ms->m.mode == MODEL_DECODE) {
        o->mbu_bytes_per_chip = m->params + m->kv_cache;
        o->mbu = o->mbu_bytes_per_chip / (t * sc->chip.hbm_bw_Bps);
    }
}

static void collect(struct eng_run *r, struct summary *s)
{
    const struct cfg_scenario *sc = r->sc;
    memset(s, 0, sizeof *s);
    s->scenario = xstrdup(sc->name);
    s->program_json = sc->program_json ? xstrdup(sc->program_json) : NULL;
    s->chip = xstrdup(sc->chip.name);
    s->ndims = sc->topo.ndims;
    memcpy(s->shape, sc->topo.shape, sizeof s->shape);
    s->nops = sc->nops;
    s->ops = r->stats.res;
    r->stats.res = NULL;
    s->sim_chips = cfg_engine_chips(sc);
    s->memo_replays = r->stats.memo_hits, s->memo_measured = r->stats.memo_measured;
    s->slices = sc->dcn.slices;
    memcpy(s->sim_shape, sc->plan.sim.shape, sizeof s->sim_shape);
    for (int i = 0; i < sc->nops; i++) {
        struct summary_op *o = &s->ops[i];
        /* each simulated chip stands for sim_mult chips of each of slices / sim_slices slices */
        summary_op_scale(o, sc->plan.sim_mult * (sc->dcn.slices > 1 ? sc->dcn.slices : 1) /
                                cfg_sim_slices(sc));
        o->category = op_row(sc->ops[i].kind)->category;
        o->instances = sc->graph.node[i].instances;
        o->time_s = instance_time(r, i);
        finish_op(sc, o, &sc->ops[i]);
        const struct kern *k = r->prog.kern[i].kind ? &r->prog.kern[i] : NULL;
        explain_op(sc, k, i, r->stats.core_op, r->stats.core_sub, o);
        if (sc->plan.tuned && sc->plan.tuned[i].tuned) {
            o->tuned = xcalloc(1, sizeof *o->tuned);
            outputs_auto_summary(&sc->plan.tuned[i], o->tuned);
        }
        s->total_steps += o->grid_steps;
        if (o->end_s > s->total_time_s)
            s->total_time_s = o->end_s;
    }
    if (sc->nops > 1) {
        struct timeline_times tt = {r->prog.inst_off, r->stats.chip0_t0, r->stats.chip0_t1};
        timeline_fill(sc, &tt, s);
    }
    if (sc->model)
        model_summary(sc, s);
    explain_run(sc, s);
    unc_summary(sc, s);
    cost_summary(sc, s);
}

static int verify(struct eng_run *r, struct diag *d)
{
    int bad = 0;
    for (int i = 0; i < r->sc->nops; i++) {
        if (!r->prog.kern_fn[i].kind)
            continue;
        bool ok;
        char msg[512];
        kern_verify(&r->prog.kern_fn[i], &ok, msg, sizeof msg);
        if (!ok) {
            diag_error(d, NULL, r->sc->ops[i].name, "functional check failed: %s", msg);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

static void free_program(const struct cfg_scenario *sc, struct eng_program *p)
{
    for (int i = 0; p->kern && i < sc->nops; i++) {
        /* the scripts first: kern_fini clears ncalls, which counts them */
        int n = p->scripts && p->scripts[i] ? p->kern[i].ncalls * sc->chip.cores : 0;
        for (int j = 0; j < n; j++)
            pl_script_free(p->scripts[i][j]);
        free(p->scripts ? p->scripts[i] : NULL);
        kern_fini(&p->kern[i]);
        kern_fini(&p->kern_fn[i]);
    }
    free(p->scripts);
    for (int i = 0; p->sem_mb && i < sc->nops; i++)
        free(p->sem_mb[i]);
    free(p->sem_mb);
    free(p->chunk_memo);
    free(p->kern);
    free(p->kern_fn);
    free(p->inst_off);
    for (int i = 0; p->op_barrier && i < sc->nops; i++)
        sg_barrier_destroy(p->op_barrier[i]);
    free(p->op_barrier);
}

static void free_machine(const struct cfg_scenario *sc, struct eng_machine *hw)
{
    for (int i = 0; hw->chip_barrier && i < cfg_engine_chips(sc); i++)
        sg_barrier_destroy(hw->chip_barrier[i]);
    free(hw->chip_barrier);
    free(hw->ports);
    for (int i = 0; hw->cores && i < hw->ncores; i++) {
        free(hw->cores[i].done_bits);
        /* the engines' handles: released as their wait unwound when they were killed */
        free(hw->cores[i].engine_w);
        free(hw->cores[i].engine_q); /* empty: every DMA was waited by its task */
    }
    free(hw->cores);
    for (int i = 0; hw->chips && i < cfg_engine_chips(sc); i++) {
        sg_cond_destroy(hw->chips[i].changed);
        sg_mutex_destroy(hw->chips[i].mutex);
    }
    free(hw->chips);
}

static void free_stats(struct eng_run_stats *st)
{
    free(st->inst_dur);
    free(st->chip0_t0);
    free(st->chip0_t1);
    free(st->res);
    free(st->rates);
    free(st->core_op);
    free(st->core_sub);
}

static void free_run(struct eng_run *r)
{
    eng_memo_fini(r); /* first: it counts its slots by the kernels' calls */
    eng_standin_free(r->standin);
    free_program(r->sc, &r->prog);
    free_machine(r->sc, &r->hw);
    free_stats(&r->stats);
    free(r->error);
    trace_free(r->trace);
    progress_free(r->progress);
}

/* Starts SimGrid on the platform file 'plat' and spawns the actors. */
static void start(struct eng_run *r, const struct sim_opts *o, const char *plat)
{
    const struct cfg_scenario *sc = r->sc;
    r->stats.res = xcalloc((size_t)sc->nops, sizeof *r->stats.res);
    build_kernels(r);
    trace_tracks(r);
    double scale = sim_penalty_scale(sc);
    init_simgrid(o, cfg_engine_chips(sc) * (sc->chip.cores * 2 + 3), scale);
    simgrid_load_platform(plat);
    scale_latencies(scale);
    /* a slow chip's kernels do not take the time of the others: no memos with faults */
    eng_memo_init(r, sc->kernel_memo && !cfg_faults_asymmetric(&sc->faults));
    spawn(r);
    if (sc->faults.n)
        eng_fault_init(r);
    r->progress = progress_new(validate_estimate_steps(sc), isatty(STDERR_FILENO) ? stderr : NULL,
                               2.0);
}

/* Writes the platform into the run's stage; NULL on failure. */
static char *platform_path(const struct cfg_scenario *sc, const struct outputs_dir *od,
                           struct diag *d)
{
    char *plat = outputs_dir_staged(od, "platform.xml");
    if (outputs_platform_file(sc, plat) != 0) {
        struct diag_loc loc = {od->out ? od->out : plat, 0, 0};
        diag_error(d, &loc, NULL, "cannot write the platform: %s", strerror(errno));
        free(plat);
        return NULL;
    }
    return plat;
}

/* After the run: failures, summary, functional checks, outputs. */
static int finish(struct eng_run *r, const struct sim_opts *o, struct outputs_dir *od,
                  const struct fault_ref *ref, struct summary *s, struct diag *d)
{
    int rc = report_deadlock(r, d) ? 1 : 0;
    if (r->error) {
        diag_error(d, NULL, NULL, "%s", r->error);
        rc = 1;
    }
    hbm_counters(r);
    collect(r, s);
    fault_report(r->sc, r->sc->faults.n ? ref : NULL, s);
    if (rc == 0 && verify(r, d) != 0)
        rc = 1;
    if (rc == 0 && od->out &&
        (outputs_run(r->trace, s, o, od->stage, d) != 0 || outputs_dir_commit(od, d) != 0))
        rc = 1;
    return rc;
}

/* A long run says so before it starts. */
static void announce(const struct sim_opts *o, const struct validate_estimate *e)
{
    char about[96];
    if (o->estimate_to && e->wall_s >= o->announce_s)
        fprintf(o->estimate_to, "estimate: %s to run here (%lld steps of work)\n",
                validate_estimate_text(e, about, sizeof about), (long long)e->work);
}

/* ---- faults: the same run without them (engine/fault_report.h) ---- */

struct ref_args {
    const struct cfg_scenario *sc;
    const struct sim_opts *o;
    int nops;
};

/* In the child: the scenario without faults; out = rc, total, per-op times. */
static void ref_body(void *arg, void *out)
{
    const struct ref_args *a = arg;
    double *res = out;
    struct cfg_scenario ref = *a->sc; /* shallow: the child exits without freeing it */
    bool asym = cfg_faults_asymmetric(&ref.faults);
    memset(&ref.faults, 0, sizeof ref.faults);
    ref.kernel_memo = ref.kernel_memo && !asym; /* as the faulted run: no memos */
    struct sim_opts so = {.sg_argc = a->o->sg_argc, .sg_argv = a->o->sg_argv,
                          .trace_set = true, .trace = TRACE_NONE, .max_steps = a->o->max_steps,
                          .max_memory_bytes = a->o->max_memory_bytes, .max_trace_events = 1};
    struct diag *d = diag_new();
    struct summary s = {0};
    res[0] = sim_run(&ref, &so, &s, d);
    res[1] = s.total_time_s;
    for (int i = 0; i < s.nops && i < a->nops; i++)
        res[2 + i] = s.ops[i].time_s;
    summary_fini(&s);
    diag_free(d);
}

static int fault_ref_run(const struct cfg_scenario *sc, const struct sim_opts *o, struct fault_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    struct ref_args a = {sc, o, sc->nops};
    size_t size = (size_t)(sc->nops + 2) * sizeof(double);
    double *res = xcalloc((size_t)sc->nops + 2, sizeof *res);
    int rc = sim_child_run(ref_body, &a, res, size, "run without faults", ref->err,
                           sizeof ref->err);
    if (rc == 0 && res[0] != 0) {
        rc = (int)res[0];
        snprintf(ref->err, sizeof ref->err, "the run without faults failed (exit %d)", rc);
    }
    if (rc == 0) {
        ref->present = true;
        ref->total_s = res[1];
        ref->nops = sc->nops;
        ref->op_s = xcalloc((size_t)sc->nops, sizeof *ref->op_s);
        memcpy(ref->op_s, res + 2, (size_t)sc->nops * sizeof *ref->op_s);
    }
    free(res);
    return rc;
}

/* The run on SimGrid of 'sc', with stand-ins 'standin' (owned; NULL: none);
 * '*disturbed' gets the stand-ins that ran beside other ops (warnings on
 * 'warn', if not NULL). */
static int run_engine(const struct cfg_scenario *sc, const struct sim_opts *o, struct summary *s,
                      struct diag *d, struct fault_ref *ref, struct eng_standin_state *standin,
                      int *disturbed, FILE *warn)
{
    *disturbed = 0;
    struct eng_run r = {.sc = sc, .trace = outputs_trace_new(sc, o, d), .standin = standin};
    if (!r.trace) {
        eng_standin_free(standin);
        return 2;
    }
    struct sigaction old_sigint;
    interrupt_catch(&old_sigint);
    struct outputs_dir od;
    int opened = o->out_locked ? outputs_dir_open_locked(&od, o->out_dir, d)
                               : outputs_dir_open(&od, o->out_dir, d);
    char *plat = opened == 0 ? platform_path(sc, &od, d) : NULL;
    if (!plat || outputs_trace_open(r.trace, &od, d) != 0) {
        eng_standin_free(standin);
        free(plat);
        outputs_dir_close(&od);
        trace_free(r.trace);
        interrupt_restore(&old_sigint);
        return 1;
    }
    start(&r, o, plat);
    free(plat);
    interrupt_catch(NULL); /* simgrid_init installed its own (verbose-exit) */
    simgrid_run();
    interrupt_restore(&old_sigint);
    int rc = 130;
    if (interrupt_pending()) { /* nothing is moved in: earlier outputs stay as they were */
        diag_error(d, NULL, NULL, "interrupted: platform.xml, trace.json and summary.json not written");
        memset(s, 0, sizeof *s);
    } else {
        rc = finish(&r, o, &od, ref, s, d);
        *disturbed = eng_standin_disturbed(&r);
        eng_standin_report(&r, warn);
    }
    outputs_dir_close(&od);
    free_run(&r);
    return rc;
}

/* ---- stand-ins: the folded run first, when the program's order leaves
 * other ops free to run beside them (engine/spmd.h) ---- */

struct probe_args {
    const struct cfg_scenario *sc;
    const struct sim_opts *o;
    struct eng_standin_state *standin;
};

/* In the child: the folded run without outputs; out = {rc, stand-ins disturbed}. */
static void probe_body(void *arg, void *out)
{
    const struct probe_args *a = arg;
    int *res = out;
    struct sim_opts so = {.sg_argc = a->o->sg_argc, .sg_argv = a->o->sg_argv,
                          .trace_set = true, .trace = TRACE_NONE, .max_steps = a->o->max_steps,
                          .max_memory_bytes = a->o->max_memory_bytes, .max_trace_events = 1};
    struct diag *d = diag_new();
    struct summary s = {0};
    struct fault_ref ref = {0};
    res[0] = run_engine(a->sc, &so, &s, d, &ref, a->standin, &res[1], NULL);
}

/* True if the stand-ins of 'standin' stand for their ops exactly: nothing
 * can run beside them (the program's order), or nothing did in the folded
 * run, in a child. */
static bool standins_exact(const struct cfg_scenario *sc, const struct sim_opts *o,
                           struct eng_standin_state *standin)
{
    if (eng_standin_alone(sc, standin))
        return true;
    struct probe_args a = {sc, o, standin};
    int res[2] = {0, 0};
    char err[256];
    return sim_child_run(probe_body, &a, res, sizeof res, "folded run", err, sizeof err) == 0 &&
           res[0] == 0 && res[1] == 0;
}

int sim_run(const struct cfg_scenario *sc, const struct sim_opts *o, struct summary *s,
            struct diag *d)
{
    struct validate_estimate est = {0};
    struct validate_limits lim = {o->max_steps, o->max_memory_bytes, &est};
    if (validate_scenario(sc, &lim, d) != 0)
        return 2;
    announce(o, &est);
    struct fault_ref ref = {0}; /* faults: the same run without them, before SimGrid starts */
    if (sc->faults.n)
        fault_ref_run(sc, o, &ref);
    struct eng_standin_state *standin = NULL; /* before SimGrid starts: children fork */
    int rc = eng_standin_measure(sc, o, &standin, d);
    struct cfg_scenario full;
    if (rc == 0 && standin && !o->standin_trust && !standins_exact(sc, o, standin)) {
        /* something ran beside a stand-in: every chip, its all-to-alls for real */
        eng_standin_free(standin);
        standin = NULL;
        full = *sc;
        full.plan.sim = full.topo, full.plan.sim_mult = 1, full.plan.sim_dirs = 0;
        sc = &full;
        rc = validate_scenario(sc, &lim, d) != 0 ? 2 : 0;
    }
    int disturbed = 0;
    bool trusted = standin && o->standin_trust;
    if (rc == 0)
        rc = run_engine(sc, o, s, d, &ref, standin, &disturbed, stderr);
    else
        eng_standin_free(standin);
    if (rc == 0 && trusted && disturbed > 0)
        rc = SIM_STANDIN_RETRY; /* the probe would have found it: the caller runs it again */
    fault_ref_fini(&ref);
    return rc;
}
