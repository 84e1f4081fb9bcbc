/* sim/sim.c -- run lifecycle: check ops, write the platform, start SimGrid
 * with exact network settings, spawn the actors, collect the summary.
 * The four --cfg flags make a transfer cost exactly latency + bytes / bw
 * (shared/reference/simgrid-notes.md); they are passed from here, never by users. */
#include "sim/sim.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/collective.h"
#include "sim/sim_int.h"
#include "sim/xalloc.h"
#include "topology/plat_xml.h"

/* The only mutable global besides SimGrid's: what a signal handler may set. */
static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    got_sigint = 1;
}

bool sim_interrupted(void)
{
    return got_sigint != 0;
}

void sim_stop_if_interrupted(void)
{
    if (got_sigint)
        sg_actor_kill_all();
}

static void op_error(struct diag *d, const struct cfg_scenario *sc, int i, const char *msg)
{
    struct diag_loc loc = {sc->file, 0, 0};
    char path[32];
    snprintf(path, sizeof path, "workload.%d", i);
    diag_error(d, &loc, path, "%s: %s", op_kind_name(sc->ops[i].kind), msg);
}

static bool is_pow2(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

static int check_ppermute(const struct cfg_scenario *sc, const struct op *op, char *err, size_t n)
{
    const struct op_ppermute *p = &op->u.ppermute;
    if (p->axis >= sc->topo.ndims) {
        snprintf(err, n, "axis %d does not exist (the topology has %d axes)", p->axis,
                 sc->topo.ndims);
        return -1;
    }
    int L = sc->topo.shape[p->axis], off = ((p->shift % L) + L) % L;
    if (sc->chip.routing == ICI_ROUTE_POW2 && off != 0 && !is_pow2(off) && !is_pow2(L - off)) {
        snprintf(err, n, "%s can only route to power-of-2 offsets; shift %d on an axis of %d "
                         "is offset %d", sc->chip.name, p->shift, L, off);
        return -1;
    }
    return 0;
}

static int check_hbm_copy(const struct cfg_scenario *sc, const struct op *op, char *err, size_t n)
{
    uint64_t limit = op->vmem_limit_bytes ? op->vmem_limit_bytes : sc->chip.vmem_limit_bytes;
    if (op->u.hbm_copy.chunk_bytes * 2 > limit) {
        snprintf(err, n, "two chunks of %llu bytes exceed the scoped VMEM limit %llu bytes",
                 (unsigned long long)op->u.hbm_copy.chunk_bytes, (unsigned long long)limit);
        return -1;
    }
    if (op->u.hbm_copy.bytes > sc->chip.hbm_bytes) {
        snprintf(err, n, "%llu bytes exceed the chip's HBM (%llu bytes)",
                 (unsigned long long)op->u.hbm_copy.bytes, (unsigned long long)sc->chip.hbm_bytes);
        return -1;
    }
    return 0;
}

static int check_cmm(const struct cfg_scenario *sc, const struct op *op, char *err, size_t n)
{
    const struct op_collective_matmul *p = &op->u.cmm;
    if (p->axis >= sc->topo.ndims) {
        snprintf(err, n, "axis %d does not exist (the topology has %d axes)", p->axis,
                 sc->topo.ndims);
        return -1;
    }
    if (p->m % 8 || p->k % 128 || p->n % 128) {
        snprintf(err, n, "m must be a multiple of 8 and k, n multiples of 128 (got %lld, %lld, "
                         "%lld)", (long long)p->m, (long long)p->k, (long long)p->n);
        return -1;
    }
    return 0;
}

/* Device ids inside the mesh; on v5e every hop offset a power of 2. */
static int check_remote_copy(const struct cfg_scenario *sc, const struct op *op, char *err,
                             size_t n)
{
    const struct op_remote_copy *r = &op->u.rc;
    if (r->id_kind != 2 && r->ncoords != sc->topo.ndims) {
        snprintf(err, n, "device id has %d coordinates, the mesh has %d axes", r->ncoords,
                 sc->topo.ndims);
        return -1;
    }
    for (int me = 0; me < sc->topo.nchips; me++) {
        int dst = sim_remote_target(sc, r, me);
        if (dst < 0 && r->id_kind == 2) {
            snprintf(err, n, "device id %lld is outside the mesh of %d chips (LOGICAL ids are "
                             "0..%d)", (long long)r->logical, sc->topo.nchips, sc->topo.nchips - 1);
            return -1;
        }
        if (dst < 0) {
            char id[64] = "", shape[64] = "";
            for (int i = 0; i < sc->topo.ndims; i++) {
                snprintf(id + strlen(id), sizeof id - strlen(id), "%s%d", i ? ", " : "",
                         r->coords[i]);
                snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%d",
                         i ? ", " : "", sc->topo.shape[i]);
            }
            snprintf(err, n, "device id (%s) is outside the mesh [%s]", id, shape);
            return -1;
        }
        int a[TOPO_MAX_DIMS], b[TOPO_MAX_DIMS];
        topo_coords(&sc->topo, me, a);
        topo_coords(&sc->topo, dst, b);
        for (int i = 0; sc->chip.routing == ICI_ROUTE_POW2 && i < sc->topo.ndims; i++) {
            int off = abs(topo_axis_delta(&sc->topo, i, a[i], b[i]));
            if (off && !is_pow2(off)) {
                snprintf(err, n, "%s can only route to power-of-2 offsets; chip %d -> chip %d "
                                 "is %d hops on axis %d", sc->chip.name, me, dst, off, i);
                return -1;
            }
        }
    }
    return 0;
}

int sim_check(const struct cfg_scenario *sc, struct diag *d)
{
    int before = diag_count(d);
    for (int i = 0; i < sc->nops; i++) {
        char err[1024] = "";
        const struct op *op = &sc->ops[i];
        int rc = 0;
        if (kern_is_pallas(op->kind)) {
            struct kern k;
            rc = kern_init(&k, op, &sc->chip, false, err, sizeof err);
            kern_fini(&k);
        } else if (op->kind == OP_PPERMUTE) {
            rc = check_ppermute(sc, op, err, sizeof err);
        } else if (op->kind == OP_HBM_COPY) {
            rc = check_hbm_copy(sc, op, err, sizeof err);
        } else if (op->kind >= OP_ALL_GATHER && op->kind <= OP_ALL_TO_ALL) {
            rc = coll_check(op, &sc->topo, err, sizeof err);
        } else if (op->kind == OP_COLLECTIVE_MATMUL) {
            rc = check_cmm(sc, op, err, sizeof err);
        } else if (op->kind == OP_REMOTE_COPY) {
            rc = check_remote_copy(sc, op, err, sizeof err);
        } else {
            snprintf(err, sizeof err, "%s is not implemented yet", op_kind_name(op->kind));
            rc = -1;
        }
        if (rc)
            op_error(d, sc, i, err);
    }
    return diag_count(d) > before ? -1 : 0;
}

int64_t sim_estimate_steps(const struct cfg_scenario *sc)
{
    int64_t steps = 0;
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        if (kern_is_pallas(op->kind)) {
            char err[512];
            struct kern k;
            if (kern_init(&k, op, &sc->chip, false, err, sizeof err) == 0) {
                int cores = sc->chip.megacore ? 1 : sc->chip.cores;
                steps += kern_steps(&k) * sc->topo.nchips * cores;
            }
            kern_fini(&k);
        }
    }
    return steps;
}

double sim_estimate_memory(const struct cfg_scenario *sc)
{
    double actors = (double)sc->topo.nchips * (2.0 * sc->chip.cores + 3.0);
    double steps = (double)sim_estimate_steps(sc);
    double events = 6.0 * (sc->fidelity == CFG_FIDELITY_EXACT ? steps : steps / 16.0);
    return actors * 131072.0 + (events < 2e6 ? events : 2e6) * 200.0 + 64e6;
}

static void plat_params(const struct cfg_scenario *sc, struct plat_params *p)
{
    p->cores = sc->chip.cores;
    p->core_flops = sc->chip.peak_flops[DT_BF16];
    p->hbm_bw_Bps = sc->chip.hbm_bw_Bps * sc->chip.hbm_efficiency;
    p->ici_bw_Bps = sc->chip.ici_bw_Bps * sc->chip.ici_efficiency;
    p->ici_lat_s = sc->chip.ici_hop_lat_s;
}

int sim_write_platform(const struct cfg_scenario *sc, FILE *f)
{
    struct plat_params p;
    plat_params(sc, &p);
    return plat_write_xml(f, &sc->topo, &p);
}

/* Writes the platform to 'path' via a temporary file. */
static int write_platform_file(const struct cfg_scenario *sc, const char *path)
{
    char *tmp = xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (f) {
        rc = sim_write_platform(sc, f);
        rc |= fclose(f) != 0 ? -1 : 0;
        if (rc == 0)
            rc = rename(tmp, path);
        if (rc)
            remove(tmp);
    }
    free(tmp);
    return rc;
}

/* Many actors: small stacks without guard pages, to stay under the
 * process's limit of memory mappings (vm.max_map_count, 65,530).
 * network/optim:Full: SimGrid 3.32's default lazy max-min update let flows
 * of a line all-gather with a non-zero link latency finish a third early
 * (a 25 MB transfer over a 42.75 GB/s link in 392 us); Full recomputes the
 * shares at every event and is exact (tests/unit/test_coll.c). */
static void init_simgrid(const struct sim_opts *o, int actors)
{
    static const char *const flags[] = {
        "--cfg=network/latency-factor:1", "--cfg=network/bandwidth-factor:1",
        "--cfg=network/crosstraffic:0",   "--cfg=network/TCP-gamma:0",
        "--cfg=network/optim:Full",
        "--cfg=surf/precision:1e-12",   "--cfg=maxmin/precision:1e-9",   "--log=root.thresh:critical",
        "--log=ker_engine.app:file:/dev/null", "--log=ker_engine.add:0"};
    int n = (int)(sizeof flags / sizeof flags[0]);
    int argc = 0;
    char **argv = xcalloc((size_t)(n + o->sg_argc + 4), sizeof *argv);
    argv[argc++] = xstrdup("tpusim");
    for (int i = 0; i < n; i++)
        argv[argc++] = xstrdup(flags[i]);
    argv[argc++] = xstrdup("--cfg=contexts/stack-size:256");
    if (actors > 8000)
        argv[argc++] = xstrdup("--cfg=contexts/guard-size:0");
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

static void build_kernels(struct sim_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    r->kern = xcalloc((size_t)sc->nops, sizeof *r->kern);
    r->kern_fn = xcalloc((size_t)sc->nops, sizeof *r->kern_fn);
    for (int i = 0; i < sc->nops; i++) {
        if (!kern_is_pallas(sc->ops[i].kind))
            continue;
        char err[1024];
        kern_init(&r->kern[i], &sc->ops[i], &sc->chip, false, err, sizeof err);
        if (sc->ops[i].functional) {
            kern_init(&r->kern_fn[i], &sc->ops[i], &sc->chip, true, err, sizeof err);
            kern_data(&r->kern_fn[i], sc->seed + (uint64_t)i);
        }
    }
}

static void trace_tracks(struct sim_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    trace_meta(r->trace, "scenario", sc->name);
    trace_meta(r->trace, "chip", sc->chip.name);
    for (int chip = 0; chip < sc->topo.nchips; chip++) {
        int c[TOPO_MAX_DIMS] = {0};
        topo_coords(&sc->topo, chip, c);
        char name[96];
        snprintf(name, sizeof name, "chip %d (%d,%d,%d)", chip, c[0], c[1], c[2]);
        trace_process(r->trace, chip, name);
        for (int k = 0; k < sc->chip.cores; k++) {
            static const char *const unit[4] = {"", " MXU", " VPU", " DMA"};
            for (int u = 0; u < 4; u++) {
                snprintf(name, sizeof name, "TC%d%s", k, unit[u]);
                trace_thread(r->trace, chip, k * 10 + u, name, k * 10 + u);
            }
        }
        for (int a = 0; a < sc->topo.ndims; a++)
            for (int dir = 1; dir >= -1; dir -= 2) {
                snprintf(name, sizeof name, "ICI %c%c", "xyz"[a], dir > 0 ? '+' : '-');
                trace_thread(r->trace, chip, SIM_TID_ICI(a, dir), name, SIM_TID_ICI(a, dir));
            }
    }
}

static void spawn(struct sim_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    r->ncores = sc->topo.nchips * sc->chip.cores;
    r->cores = xcalloc((size_t)r->ncores, sizeof *r->cores);
    r->barrier = sg_barrier_init((unsigned)r->ncores);
    r->op_barrier = xcalloc((size_t)sc->nops, sizeof *r->op_barrier);
    for (int i = 0; i < sc->nops; i++)
        r->op_barrier[i] = sg_barrier_init((unsigned)sc->topo.nchips);
    if (sc->chip.cores > 1) {
        r->chip_barrier = xcalloc((size_t)sc->topo.nchips, sizeof *r->chip_barrier);
        for (int i = 0; i < sc->topo.nchips; i++)
            r->chip_barrier[i] = sg_barrier_init((unsigned)sc->chip.cores);
    }
    for (int chip = 0; chip < sc->topo.nchips; chip++) {
        char host[32];
        sg_host_t h = sg_host_by_name(plat_host_name(&sc->topo, chip, host, sizeof host));
        for (int k = 0; k < sc->chip.cores; k++) {
            struct sim_core *c = &r->cores[chip * sc->chip.cores + k];
            *c = (struct sim_core){.run = r, .chip = chip, .core = k, .host = h};
            c->gid = chip * sc->chip.cores + k;
            char name[48];
            snprintf(name, sizeof name, "eng.%d", c->gid);
            c->engine = sg_mailbox_by_name(name);
            sg_actor_t eng = sg_actor_init(name, h);
            sg_actor_set_data(eng, c);
            sg_actor_start(eng, sim_engine_main, 0, NULL);
            sg_actor_daemonize(eng);
            snprintf(name, sizeof name, "tc%d", c->gid);
            sg_actor_t a = sg_actor_init(name, h);
            sg_actor_set_data(a, c);
            sg_actor_start(a, sim_core_main, 0, NULL);
        }
    }
}

/* Cores that never finished: the ones blocked on something other than a
 * barrier are the cause, so they are listed first. */
static int report_deadlock(struct sim_run *r, struct diag *d)
{
    int stuck = 0, shown = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r->ncores; i++) {
            const struct sim_core *c = &r->cores[i];
            bool barrier = strstr(c->waiting, "barrier") != NULL;
            if (c->done || barrier != (pass == 1))
                continue;
            stuck++;
            if (shown++ < 8)
                diag_error(d, NULL, NULL, "deadlock: chip %d core %d waits on %s", c->chip,
                           c->core, c->waiting[0] ? c->waiting : "?");
        }
    }
    if (stuck > 8)
        diag_error(d, NULL, NULL, "deadlock: ... and %d more cores", stuck - 8);
    return stuck ? -1 : 0;
}

static void finish_op(const struct cfg_scenario *sc, struct summary_op *o, const struct op *op)
{
    int chips = sc->topo.nchips, cores = o->cores ? o->cores : 1;
    double t = o->end_s - o->start_s;
    o->name = xstrdup(op->name);
    o->kind = op_kind_name(op->kind);
    o->mxu_s /= cores;
    o->vpu_s /= cores;
    o->overhead_s /= cores;
    o->latency_s /= chips;
    o->hbm_s = o->hbm_bytes / (sc->chip.hbm_bw_Bps * chips);
    int dirs = 0; /* link directions a chip can drive: 2 per axis longer than 1 */
    for (int a = 0; a < sc->topo.ndims; a++)
        dirs += sc->topo.shape[a] > 1 ? 2 : 0;
    dirs = dirs < sc->chip.ici_links ? dirs : sc->chip.ici_links;
    o->ici_s = o->ici_bytes / (sc->chip.ici_bw_Bps * chips * (dirs ? dirs : 1));
    summary_pick_bound(o);
    double busy[BOUND_COUNT] = {o->mxu_s, o->vpu_s, o->hbm_s, o->ici_s, o->overhead_s,
                                o->latency_s};
    if (o->bound == BOUND_MXU && t > 0) {
        int used = sc->chip.megacore ? chips * sc->chip.cores : cores;
        o->peak_frac = o->flops / (t * sc->chip.peak_flops[DT_BF16] * used);
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
static void hbm_counters(struct sim_run *r)
{
    size_t n = r->nrates * 2;
    double *ev = xcalloc(n ? n * 3 : 3, sizeof *ev);
    for (size_t i = 0; i < r->nrates; i++) {
        const struct sim_rate *q = &r->rates[i];
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
            trace_counter(r->trace, (int)e[0], "HBM GB/s", e[1], level > 1 ? level / 1e9 : 0);
            if (i + 1 == n || ev[3 * (i + 1)] != e[0])
                level = 0;
        }
    }
    free(ev);
}

static void collect(struct sim_run *r, struct summary *s)
{
    const struct cfg_scenario *sc = r->sc;
    memset(s, 0, sizeof *s);
    s->scenario = xstrdup(sc->name);
    s->chip = xstrdup(sc->chip.name);
    s->ndims = sc->topo.ndims;
    memcpy(s->shape, sc->topo.shape, sizeof s->shape);
    s->nops = sc->nops;
    s->ops = r->res;
    r->res = NULL;
    for (int i = 0; i < sc->nops; i++) {
        finish_op(sc, &s->ops[i], &sc->ops[i]);
        s->total_steps += s->ops[i].grid_steps;
        if (s->ops[i].end_s > s->total_time_s)
            s->total_time_s = s->ops[i].end_s;
    }
}

static int verify(struct sim_run *r, struct diag *d)
{
    int bad = 0;
    for (int i = 0; i < r->sc->nops; i++) {
        if (!r->kern_fn[i].kind)
            continue;
        bool ok;
        char msg[512];
        kern_verify(&r->kern_fn[i], &ok, msg, sizeof msg);
        if (!ok) {
            diag_error(d, NULL, r->sc->ops[i].name, "functional check failed: %s", msg);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

static int write_outputs(struct sim_run *r, const struct summary *s, const char *dir,
                         struct diag *d)
{
    char *tp = xasprintf("%s/trace.json", dir), *sp = xasprintf("%s/summary.json", dir);
    int rc = 0;
    if (trace_write(r->trace, tp) != 0 || summary_write_json(s, sp) != 0) {
        struct diag_loc loc = {dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot write outputs: %s", strerror(errno));
        rc = -1;
    }
    free(tp);
    free(sp);
    return rc;
}

static void free_run(struct sim_run *r)
{
    for (int i = 0; r->kern && i < r->sc->nops; i++) {
        kern_fini(&r->kern[i]);
        kern_fini(&r->kern_fn[i]);
    }
    free(r->kern);
    free(r->kern_fn);
    for (int i = 0; r->chip_barrier && i < r->sc->topo.nchips; i++)
        sg_barrier_destroy(r->chip_barrier[i]);
    free(r->chip_barrier);
    free(r->cores);
    if (r->barrier)
        sg_barrier_destroy(r->barrier);
    for (int i = 0; r->op_barrier && i < r->sc->nops; i++)
        sg_barrier_destroy(r->op_barrier[i]);
    free(r->op_barrier);
    free(r->res);
    free(r->error);
    free(r->rates);
    trace_free(r->trace);
}

/* Makes 'dir' (and its parents); returns 0 or -1 with errno. */
static int make_dirs(const char *dir)
{
    char *p = xstrdup(dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

int sim_run(const struct cfg_scenario *sc, const struct sim_opts *o, struct summary *s,
            struct diag *d)
{
    if (sim_check(sc, d) != 0)
        return 2;
    int64_t max = o->max_steps ? o->max_steps : sc->max_steps, est = sim_estimate_steps(sc);
    if (est > max) {
        diag_error(d, NULL, NULL, "the run would simulate %lld grid steps, above the limit of "
                                  "%lld; raise it with --max-steps N (or options.max_steps)",
                   (long long)est, (long long)max);
        return 2;
    }
    double mem = sim_estimate_memory(sc), mem_max = o->max_memory_bytes ? o->max_memory_bytes
                                                                        : 16.0 * 1073741824.0;
    if (mem > mem_max) {
        diag_error(d, NULL, NULL, "the run would need about %.1f GiB of memory, above the limit "
                                  "of %.1f GiB; raise it with --max-memory SIZE",
                   mem / 1073741824.0, mem_max / 1073741824.0);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_sigint}, old_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sigint);
    char *plat = NULL;
    if (o->out_dir && make_dirs(o->out_dir) != 0) {
        struct diag_loc loc = {o->out_dir, 0, 0};
        diag_error(d, &loc, NULL, "cannot create output directory: %s", strerror(errno));
        return 1;
    }
    plat = o->out_dir ? xasprintf("%s/platform.xml", o->out_dir)
                      : xasprintf("/tmp/tpusim-platform-%ld.xml", (long)getpid());
    if (write_platform_file(sc, plat) != 0) {
        struct diag_loc loc = {plat, 0, 0};
        diag_error(d, &loc, NULL, "cannot write the platform: %s", strerror(errno));
        free(plat);
        return 1;
    }
    struct sim_run r = {.sc = sc};
    r.trace = trace_new(o->max_trace_events ? o->max_trace_events : 2000000);
    r.res = xcalloc((size_t)sc->nops, sizeof *r.res);
    build_kernels(&r);
    trace_tracks(&r);
    init_simgrid(o, sc->topo.nchips * sc->chip.cores * 2 + sc->topo.nchips * 3);
    simgrid_load_platform(plat);
    if (!o->out_dir)
        remove(plat);
    free(plat);
    spawn(&r);
    sigaction(SIGINT, &sa, NULL); /* simgrid_init installed its own (verbose-exit) */
    simgrid_run();
    sigaction(SIGINT, &old_sigint, NULL);
    if (sim_interrupted()) { /* nothing is written: earlier outputs stay as they were */
        diag_error(d, NULL, NULL, "interrupted: trace.json and summary.json not written");
        free_run(&r);
        memset(s, 0, sizeof *s);
        return 130;
    }
    int rc = report_deadlock(&r, d) ? 1 : 0;
    if (r.error) {
        diag_error(d, NULL, NULL, "%s", r.error);
        rc = 1;
    }
    hbm_counters(&r);
    collect(&r, s);
    if (rc == 0 && verify(&r, d) != 0)
        rc = 1;
    if (rc == 0 && o->out_dir && write_outputs(&r, s, o->out_dir, d) != 0)
        rc = 1;
    free_run(&r);
    return rc;
}
