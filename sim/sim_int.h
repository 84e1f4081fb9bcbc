/* sim/sim_int.h -- run state shared by sim/sim.c and sim/actor_*.c.
 * One struct sim_run per process; each TensorCore actor gets its struct
 * sim_core as actor data; each op an actor runs gets a struct sim_ctx. */
#ifndef TPUSIM_SIM_SIM_INT_H
#define TPUSIM_SIM_SIM_INT_H

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "sim/sim.h"
#include "traces/trace.h"

/* Trace tracks (thread ids) within a chip's process. */
#define SIM_TID_TC(c) ((c) * 10 + 0)
#define SIM_TID_MXU(c) ((c) * 10 + 1)
#define SIM_TID_VPU(c) ((c) * 10 + 2)
#define SIM_TID_DMA(c) ((c) * 10 + 3)
#define SIM_TID_ICI(axis, dir) (100 + (axis) * 2 + ((dir) > 0 ? 0 : 1))

struct sim_run;

struct sim_core {
    struct sim_run *run;
    int chip, core, gid;   /* gid = chip * cores + core */
    sg_host_t host;
    sg_mailbox_t engine;   /* DMA engine requests */
    bool done;             /* finished every op */
    char waiting[240];     /* what it blocks on, for deadlock reports ("" when running) */
};

/* One actor running one op on one core. */
struct sim_ctx {
    struct sim_core *core;
    const struct op *op;
    int opi;
    sg_mailbox_t done_mb;  /* completions of this actor's local DMAs */
    struct pl_stats st;
    struct sim_coll *coll; /* collectives: the device's shared semaphore state */
    double flow_t;         /* issue time of the last input DMA waited on, or -1 */
};

/* A span of HBM traffic on one chip, for the "HBM GB/s" counter. */
struct sim_rate {
    int chip;
    double t0, t1, Bps;
};

struct sim_run {
    const struct cfg_scenario *sc;
    struct trace *trace;
    struct sim_core *cores;
    int ncores;            /* all TensorCores of the slice */
    sg_bar_t barrier;      /* between op groups */
    sg_bar_t *op_barrier;  /* per op, for ops that start with a device barrier */
    struct summary_op *res;/* per op */
    struct kern *kern;     /* per op: timing-only kernels (zeroed for other kinds) */
    struct kern *kern_fn;  /* per op: functional kernel run by chip 0 (zeroed if none) */
    sg_bar_t *chip_barrier;/* per chip: its cores meet between the pallas_calls of an op */
    char *error;           /* first runtime failure; owned */
    struct sim_rate *rates;/* HBM traffic spans, turned into counters after the run */
    size_t nrates, caprates;
};

/* One local DMA (HBM<->VMEM) or remote DMA in flight. */
struct sim_dma {
    double t_issue, ready;
    uint64_t bytes;
    sg_mailbox_t dst;
    sg_comm_t comm;  /* the get (local) or the put (remote) */
    void *got;
    int operand;
    bool in;
};

/* actor_core.c */
void sim_core_main(int argc, char **argv);
void sim_engine_main(int argc, char **argv);
/* Starts a DMA of 'bytes' from this core's HBM to its VMEM (or back). */
struct sim_dma *sim_dma_local(struct sim_ctx *x, bool in, uint64_t bytes, int operand);
void sim_dma_wait(struct sim_ctx *x, struct sim_dma *d);

/* sim_ops.c: the op bodies run by an actor */
void sim_op_run(struct sim_ctx *x);
/* The Pallas executor on SimGrid (its 'ex' is a struct sim_ctx). */
extern const struct pl_exec_ops sim_pl_ops;
/* Runs 'call' on this actor's core (megacore split) through SimGrid. */
void sim_run_pallas(struct sim_ctx *x, const struct pl_call *call);
/* sim_coll.c: collectives on remote DMAs and semaphores */
void sim_op_collective(struct sim_ctx *x);
void sim_op_remote_copy(struct sim_ctx *x);
void sim_op_collective_matmul(struct sim_ctx *x);
/* The chip a remote_copy on chip 'me' targets, or -1 outside the mesh. */
int sim_remote_target(const struct cfg_scenario *sc, const struct op_remote_copy *r, int me);
/* True once SIGINT arrived; actors then stop the run (sim_stop_if_interrupted). */
bool sim_interrupted(void);
/* Kills every actor if SIGINT arrived, so simgrid_run returns at once. */
void sim_stop_if_interrupted(void);
/* Records 'bytes' of HBM traffic on 'chip' over [t0, t1] (for the counter). */
void sim_note_hbm(struct sim_run *r, int chip, double t0, double t1, double bytes);
/* Puts a span on the ICI track of every hop from chip 'src' to 'dst'. */
void sim_trace_route(struct sim_run *r, int src, int dst, double t0, double t1, uint64_t bytes,
                     const char *name);
/* Records what core 'c' is about to block on (NULL: it runs again). */
void sim_wait_note(struct sim_core *c, const char *what);

#endif
