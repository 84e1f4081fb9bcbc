/* engine/engine.h -- the engine: tpusim on SimGrid. The only header that
 * includes SimGrid. One struct eng_run per process; each TensorCore actor gets
 * its struct eng_core as actor data; each op an actor runs is a struct
 * eng_task. The engine files call downward:
 *   sim.c (lifecycle) -> eng_core.c (core actors, op dispatch through
 *   eng_runners.c) -> eng_ops.c, eng_coll.c (the runners) -> eng_pallas.c (the
 *   Pallas executor) -> eng_memo.c (kernel memos) -> eng_dma.c (DMAs, the DMA
 *   engine, trace helpers)
 * with one call back up: eng_dma.c hands each DMA's trace span to eng_unit
 * (eng_memo.c), which keeps it in the memo being measured; keep it the only
 * one. Every file
 * may use base/interrupt.h. Around the engine: spmd.c (which chips are
 * simulated), validate.c (what run checks first), timeline.c and explain.c
 * (what a run's times say), outputs.c (the files a run writes). Time itself is decided by
 * models/ (the amounts) and SimGrid (the sharing). */
#ifndef TPUSIM_ENGINE_ENGINE_H
#define TPUSIM_ENGINE_ENGINE_H

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "config/cfg.h"
#include "engine/sim_opts.h"
#include "base/interrupt.h"
#include "config/op_table.h"
#include "outputs/progress.h"
#include "outputs/summary.h"
#include "outputs/trace.h"

/* The simulated clock, in seconds. */
static inline double eng_now(void)
{
    return simgrid_get_clock();
}

/* Trace tracks (thread ids) within a chip's process. */
#define ENG_TID_TC(c) ((c)*10 + 0)
#define ENG_TID_MXU(c) ((c)*10 + 1)
#define ENG_TID_VPU(c) ((c)*10 + 2)
#define ENG_TID_DMA(c) ((c)*10 + 3)
#define ENG_TID_ASYNC(c) ((c)*10 + 4)
#define ENG_TID_PCIE(dir) (90 + (dir)) /* host_copy: 90 to host, 91 to device */
#define ENG_TID_ICI(axis, dir) (100 + (axis)*2 + ((dir) > 0 ? 0 : 1))
#define ENG_TID_DCN 110

#define ENG_NOTE_BYTES 240

struct eng_run;
struct eng_memo;

struct eng_core {
    struct eng_run *run;
    int chip, core, gid; /* gid = chip * cores + core */
    sg_host_t host;
    sg_mailbox_t engine;                /* DMA engine wake-ups */
    bool engine_started;                /* its DMA engine actor runs (started on demand) */
    bool engine_idle;                   /* it blocks with an empty queue: a request wakes it */
    sg_comm_t *engine_w;                /* what the DMA engine waits on (the array freed with the run) */
    size_t engine_n, engine_cap;
    struct eng_dma **engine_q;          /* its requests, FIFO (the array freed with the run) */
    size_t engine_qhead, engine_qn, engine_qcap;
    bool done;                          /* finished every op */
    char waiting[ENG_NOTE_BYTES];       /* what its compute stream blocks on ("" when running) */
    char async_waiting[ENG_NOTE_BYTES]; /* what an async op on it last blocked on */
    int async_running;                  /* async op instances running on it */
    bool computing;                     /* its compute stream runs a kernel */
    double tc_debt_s; /* TensorCore time reductions took beside that kernel (eng_tc_reduce),
                         not yet paid by it */
    uint8_t *done_bits; /* per op instance (eng_program.inst_off): finished on this core */
};

/* What the cores of one chip share: the completion of op instances. */
struct eng_chip {
    sg_mutex_t mutex;
    sg_cond_t changed;            /* notified whenever an op instance finishes on the chip */
    bool async_done;              /* its async walker issued every async op */
    char waiting[ENG_NOTE_BYTES]; /* what its async stream blocks on */
    sg_host_t nic;                /* its NIC host on the DCN (multislice), else NULL */
    sg_host_t nic_rx;             /* where DCN transfers to it land (nic, or with one slice
                                     of several simulated its receiving NIC: dcn_nic_rx) */
};

/* One actor running one op on one core. */
struct eng_task {
    struct eng_core *core;
    const struct op *op;
    int opi;
    int64_t inst;         /* which instance of the op (graph_instance) */
    char *note;           /* where its waits are noted: its core's compute or async note */
    sg_mailbox_t done_mb; /* completions of this actor's local DMAs */
    struct pl_stats st;
    struct sim_coll *coll; /* collectives: the device's shared semaphore state */
    double flow_t;         /* issue time of the last input DMA waited on, or -1 */
    struct eng_memo *capture; /* a memo being measured: its unit events are kept */
    double capture_t0;        /* when that measurement started */
    int64_t steps_shown;   /* st.steps already counted in the progress line */
    int busy_cores;        /* a pallas_call: its chip's cores that have grid steps of it */
};

/* A span of HBM traffic on one chip, for the "HBM GB/s" counter. */
struct eng_rate {
    int chip;
    double t0, t1, Bps;
};

/* The simulated machine: built by sim.c before the actors start. */
struct eng_machine {
    struct eng_core *cores;
    int ncores;                /* all TensorCores of the slice */
    struct eng_chip *chips;    /* per chip */
    sg_bar_t *chip_barrier;    /* per chip: its cores meet between the pallas_calls of an op */
    sg_host_t *ports;          /* per chip x 8 flip sets: its port hosts (topology/plat_dir.h;
                                  NULL where not written), NULL on a TORUS cluster */
};

/* What the cores run, per op: built by sim.c from the scenario. */
struct eng_program {
    int64_t *inst_off;           /* per op: its first instance's bit in eng_core.done_bits */
    sg_bar_t *op_barrier;        /* per op, for ops that start with a device barrier */
    struct kern *kern;           /* per op: timing-only kernels (zeroed for other kinds) */
    struct kern *kern_fn;        /* per op: functional kernel run by chip 0 (zeroed if none) */
    struct pl_script ***scripts; /* per op, per call x core: its recorded run, or NULL
                                    (eng_pallas.c records it) */
    struct eng_chunk_memo *chunk_memo; /* per op x core x 2: a collective matmul's chunk
                                          matmul, measured once (eng_coll.c) */
};

/* A collective matmul's chunk matmul as first run (fast fidelity, kernel memos on): later
 * chunks of the op on that core take its time and add its work. */
struct eng_chunk_memo {
    bool measured;
    double dur_s;
    struct pl_stats work;
};

/* What the run measures for the summary: written as ops end (eng_core.c,
 * eng_ops.c, eng_coll.c), as DMAs move (eng_dma.c) and as memos are taken
 * (eng_memo.c); read by sim.c's collect. */
struct eng_run_stats {
    struct summary_op *res;      /* per op */
    double *inst_dur;            /* per op instance: its longest run on any core */
    double *chip0_t0, *chip0_t1; /* per op instance: the same on chip 0 (its timeline) */
    struct summary_core_work *core_op;  /* per op and core of chip 0 */
    struct summary_core_work *core_sub; /* per op, pallas_call (KERN_MAX_CALLS), core of chip 0 */
    struct eng_rate *rates;      /* HBM traffic spans, turned into counters after the run */
    size_t nrates, caprates;
    int64_t memo_hits, memo_measured; /* replays a memo stood for; memos measured */
};

/* One run: what it simulates and where it reports (given by sim_run), and
 * its parts by owner. */
struct eng_run {
    const struct cfg_scenario *sc;
    struct trace *trace;
    struct progress *progress;   /* the terminal's progress line (outputs/progress.h), or NULL */
    char *error;                 /* first runtime failure; owned */
    struct eng_machine hw;       /* sim.c builds it */
    struct eng_program prog;     /* sim.c builds it */
    struct eng_run_stats stats;  /* the runners fill it, sim.c reads it */
    struct eng_memo_state *memo; /* eng_memo.c's alone (declared with its functions below) */
    struct eng_standin_state *standin; /* eng_standin.c's alone; NULL: no stand-ins */
};

/* One local DMA (HBM<->VMEM) or remote DMA in flight. */
struct eng_dma {
    double t_issue, ready;
    uint64_t bytes;
    sg_mailbox_t dst;
    sg_comm_t comm; /* the get (local) or the put (remote) */
    sg_comm_t post; /* local: the transfer when it has no latency, or the wake-up of the idle
                     * DMA engine that its request sent (NULL if the engine was awake) */
    void *got;
    int operand;
    bool in;
};

/* --- eng_dma.c: local DMAs, the DMA engine, trace helpers --- */
/* Chip numbers: the engine's chips are the simulated ones (sc->plan.sim, the SPMD
 * fold of the slice, in every slice: engine chip e is chip e % sim.nchips of
 * slice e / sim.nchips); algorithms work on the slice (sc->topo).
 * eng_sim_chip: the engine chip that plays chip 'slice_chip' of the slice of
 * engine chip 'me'; eng_slice_chip: engine chip 'sim_chip' in its slice;
 * eng_slice_of: its slice. */
int eng_sim_chip(const struct eng_run *r, int me, int slice_chip);
int eng_slice_chip(const struct eng_run *r, int sim_chip);
int eng_slice_of(const struct eng_run *r, int sim_chip);
/* On a fold whose transfers keep their direction (sc->plan.sim_dirs): moves the
 * calling actor (on engine chip 'src') onto the port host that routes its
 * transfer to chip 'slice_dst' of the slice the way the whole torus does, for
 * the put that starts the transfer (a comm's route is fixed when it starts).
 * Returns the host to move back to with eng_port_leave, or NULL when the
 * chip's own host routes it so. */
sg_host_t eng_port_enter(struct eng_run *r, int src, int slice_dst);
void eng_port_leave(sg_host_t home);
/* Starts a DMA of 'bytes' from this core's HBM to its VMEM (or back). */
struct eng_dma *eng_dma_start(struct eng_task *task, bool in, uint64_t bytes, int operand);
void eng_dma_wait(struct eng_task *task, struct eng_dma *d);
/* eng_dma_wait(eng_dma_start(...)) for a caller that blocks on the DMA at
 * once: it waits out the latency itself and the transfer starts at the
 * same instant, without the core's DMA engine actor. */
void eng_dma_sync(struct eng_task *task, bool in, uint64_t bytes, int operand);
/* The 'n' DMAs of a stream (pl_exec_ops.stream), issued together at
 * 't_issue' (now or later): the caller waits out their latency itself and
 * their transfers start at the same instant, without the core's DMA engine
 * actor; handles go to 'h'. */
void eng_dma_stream_start(struct eng_task *task, double t_issue, int n, const bool *in,
                          const uint64_t *bytes, const int *operand, struct eng_dma **h);
/* eng_dma_wait of a DMA begun before 'deadline', the time its waiter would
 * have waited it: on the trace as if waited then. */
void eng_dma_wait_from(struct eng_task *task, struct eng_dma *d, double deadline);
/* The DMA engine actor of one core: posts each DMA once its latency is over. */
void eng_dma_engine_main(int argc, char **argv);
/* Records 'bytes' of HBM traffic on 'chip' over [t0, t1] (for the counter). */
void eng_note_hbm(struct eng_run *r, int chip, double t0, double t1, double bytes);
/* Puts a span on the ICI track of every hop from chip 'src' to 'dst' (chip
 * 'slice_dst' of the slice, whose direction a directed fold keeps; -1: the
 * fold's own route; ENG_DST_DCN: over the DCN, on its track, even from a chip
 * to itself when one slice stands for all). */
#define ENG_DST_DCN (-2)
void eng_trace_route(struct eng_run *r, int src, int dst, int slice_dst, double t0, double t1,
                     uint64_t bytes, const char *name);
/* Records what 'task' is about to block on (NULL: it runs again). */
void eng_wait_note(struct eng_task *task, const char *what);
/* The mailbox where the local DMAs of op 'opi' on core 'c' complete. */
sg_mailbox_t eng_task_mailbox(const struct eng_core *c, int opi);
/* Kills every actor if SIGINT arrived, so simgrid_run returns at once. */
void eng_stop_if_interrupted(void);
/* Waits on barrier 'b', noting 'what' for deadlock reports meanwhile. */
void eng_barrier_wait(struct eng_task *task, sg_bar_t b, const char *what);

/* Puts a unit's span on the trace for 'task' (tid on its chip), and keeps it
 * in the memo being measured, if any. */
void eng_unit(struct eng_task *task, int tid, const char *cat, const char *name, double t0,
              double t1, double bytes, const char *args);

/* --- eng_memo.c: kernel memos ---
 * A pallas_call replayed (fast fidelity) on a chip whose cores run it
 * together (one core, a megacore pair, or a v7 chip's two devices, each
 * running all of it at the same time) while nothing but compute-stream
 * kernels runs anywhere on the slice ("quiet") takes the same time on every
 * chip and every time: its resources (the cores, the chip's HBM) are its own.
 * Beside async collectives it shares the chip's HBM (and a reduction's
 * cores) with them, and its time depends on which collectives run on its
 * chip and how far along they are: its "overlap", the running collective
 * ops with the time since each started (to a nanosecond), which the
 * layers of a model step repeat. A replay whose overlap matches a measured
 * one (and no other collective runs anywhere) takes its time. The first
 * replay of each script and overlap is measured, with its unit spans; later
 * ones sleep that long and put the spans on the trace shifted, without
 * issuing the replay's activities, and the ones that start at the instant
 * of the measurement on other chips wait for it to end. A start of any
 * other op instance while a memo sleeps wakes it: at the same instant it
 * falls back to the replay; later (chips out of step, which SPMD programs are
 * not) the rest of the sleep stands, the memo's one approximation; another
 * is that a memo issues no HBM traffic of its own: beside collectives it
 * holds, while it sleeps, the HBM bandwidth its measured run used on average
 * (its bytes over its time; taken off the chip's HBM limiter link), so that
 * the collectives beside it share the HBM as they did beside its DMAs. */
/* What the memos follow (which ops run where, the overlaps, the cores asleep)
 * and the memos themselves; defined in eng_memo.c, the only file that uses it. */
struct eng_memo_state;
/* Allocates r->memo: the counters, and the memos unless 'on' is false. */
void eng_memo_init(struct eng_run *r, bool on);
void eng_memo_fini(struct eng_run *r);
/* Around every op instance's run (eng_task_run). */
void eng_memo_task_start(struct eng_task *task);
void eng_memo_task_end(struct eng_task *task);
/* True while another op instance than 'task' runs on its chip (a kernel on
 * any core, another collective). */
bool eng_memo_chip_shared(const struct eng_task *task);
/* True when an async collective runs on the chip of 'task' (beside it; memos on or off). */
bool eng_memo_chip_colls(const struct eng_task *task);
/* Runs 'script' for 'task' from its memo 'slot' for the chip's overlap if measured (or
 * being measured from this instant on another chip: it waits for the end);
 * true when done (stats added), false when the caller must replay. */
bool eng_memo_run(struct eng_task *task, int slot, const struct pl_script *script);
/* Around a replay the caller runs: measures it into the memo of its overlap. */
void eng_memo_begin(struct eng_task *task, int slot);
void eng_memo_end(struct eng_task *task);

/* --- eng_standin.c: all-to-alls stood in by their lone runs (engine/spmd.h) ---
 * A stand-in op meets the other chips at its device barrier, then takes the
 * time of its lone run on every chip of the slice and adds that run's work
 * per chip, without issuing its transfers (none on the trace). */
struct eng_standin_state;
/* Before SimGrid starts: runs each stand-in op of 'sc' (spmd_standin; a
 * distinct one once) alone on every chip in a forked child. '*out' gets
 * their state, NULL when there are none. Returns 0, or the child's code with
 * a message in 'd'. */
int eng_standin_measure(const struct cfg_scenario *sc, const struct sim_opts *o,
                        struct eng_standin_state **out, struct diag *d);
void eng_standin_free(struct eng_standin_state *ss);
/* Around every op instance's run (eng_task_run): what runs beside a stand-in. */
void eng_standin_task_start(struct eng_task *task);
void eng_standin_task_end(struct eng_task *task);
/* Runs 'task' (core 0 of a collective) as its stand-in; false if it is not one. */
bool eng_standin_run(struct eng_task *task);
/* Stand-ins that ran beside other ops: a warning each on 'to'. */
void eng_standin_report(const struct eng_run *r, FILE *to);
/* Ops that run as stand-ins. */
int eng_standin_count(const struct eng_run *r);
/* Stand-ins that ran beside other ops. */
int eng_standin_disturbed(const struct eng_run *r);
/* True if the program's order alone keeps everything else off every stand-in
 * of 'ss' (spmd_hb_alone). */
bool eng_standin_alone(const struct cfg_scenario *sc, const struct eng_standin_state *ss);

/* --- eng_pallas.c: the Pallas executor on SimGrid (its 'ex' is a struct eng_task) --- */
extern const struct pl_exec_ops eng_pallas_ops;
/* Runs 'call' on this task's core (megacore split) through SimGrid. With
 * 'script' (one slot per call and core range, living as long as 'call'), a
 * fast-fidelity run is recorded into *script the first time and replayed
 * after (kernels/pallas.h: pl_record, pl_replay). */
void eng_run_pallas(struct eng_task *task, const struct pl_call *call, struct pl_script **script);
/* Runs steps [begin, end) of 'call' on this task's core. */
void eng_run_pallas_steps(struct eng_task *task, const struct pl_call *call, int64_t begin,
                          int64_t end);

/* --- eng_ops.c, eng_coll.c: the runners; eng_runners.c: which kind runs with which --- */
/* The engine's body for one op on one core. */
typedef void eng_run_fn(struct eng_task *t);
eng_run_fn eng_run_kernel, eng_run_hbm_copy, eng_run_host_copy, eng_run_ppermute, eng_run_collective,
    eng_run_remote_copy, eng_run_collective_matmul;
/* The runner of 'kind': its row in eng_runners.c, or eng_run_kernel for a
 * Pallas kind (its op table row has a builder); NULL if it has neither. */
eng_run_fn *eng_runner(enum op_kind kind);

/* --- eng_fault.c: the scenario's faults (config/cfg_faults.h) --- */
/* Applies the faults that start at 0 and starts the actor that applies the later ones. */
void eng_fault_init(struct eng_run *r);
/* True if engine chip 'src''s transfer to 'dst' (same slice) must detour around a down link. */
bool eng_fault_detours(const struct eng_run *r, int src, int dst);
/* Puts 'msg' of 'bytes' into 'mb' (whose receiver is on engine chip 'dst')
 * from engine chip 'src', whose host the caller runs on: on SimGrid's route,
 * or on the detour around the down links (legs at once, the last one after
 * the earlier legs' hop latency counted from 't0', when the DMA was posted). */
sg_comm_t eng_fault_put(struct eng_run *r, int src, int dst, sg_mailbox_t mb, void *msg,
                        uint64_t bytes, double t0);
/* The slices a DCN collective of slice 'slice' runs over (the survivors; 1
 * for a lost slice) and its index among them in '*eff'. */
int eng_fault_slices(const struct eng_run *r, int slice, int *eff);
/* The slice of index 'eff' among those slice 'slice' runs with. */
int eng_fault_real_slice(const struct eng_run *r, int slice, int eff);

/* --- eng_core.c: the program on each chip --- */
/* A TensorCore's compute stream: runs the compute ops in program order. */
void eng_core_main(int argc, char **argv);
/* A chip's async stream: issues the async ops (collectives, copies) in
 * program order as soon as what they wait for is done. */
void eng_async_main(int argc, char **argv);
/* Runs the op of 'task' through its row's runner and accounts for it. */
void eng_task_run(struct eng_task *task);
/* A reduction took 's' of core 'c's TensorCore: the kernel its compute stream
 * runs, if any, ends that much later (an idle TensorCore loses nothing). */
void eng_tc_reduce(struct eng_core *c, double s);

#endif
