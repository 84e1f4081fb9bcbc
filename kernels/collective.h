/* kernels/collective.h -- collectives written on Pallas' distributed primitives.
 * Each device runs the algorithm with push-only remote DMAs (a DMA into a
 * neighbour's HBM increments a DMA semaphore there as bytes land; the sender
 * waits on its own send), REGULAR semaphores for capacity handshakes, and
 * HBM<->VMEM pipelines for reductions (docs/pallas-semantics.md section 6). Rings follow
 * the upstream examples: all_gather (unidirectional ring; bidirectional as
 * ops/tpu/all_gather.py), reduce_scatter (bidirectional, accumulators
 * travel), all_reduce (ring psum with the capacity handshake, or
 * reduce-scatter + all-gather), all_to_all (direct pushes to every peer).
 * An axis without wraparound runs as a line: data flows both ways and the
 * ends send one way; its end chips take X-1 shards over their one link, what
 * a unidirectional ring costs. Several wrapped axes (and all-reduce over any
 * axes) run concurrently: the data is split in one part per axis and part p
 * visits the axes starting from axis p. An all-gather or reduce-scatter over
 * axes one of which does not wrap visits them one after the other as a
 * single part (one ring through the group). The engine (engine/) implements
 * struct coll_exec; tests can fake it. */
#ifndef TPUSIM_KERNELS_COLLECTIVE_H
#define TPUSIM_KERNELS_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/pallas.h"
#include "models/chip.h"
#include "topology/topo.h"

#define COLL_MAX_PHASES 8
/* The axis of a phase that runs across the slices, over the DCN. */
#define COLL_AXIS_DCN (-1)
#define COLL_MAX_PARTS 3

enum coll_phase_kind { COLL_AG, COLL_RS, COLL_PSUM, COLL_A2A };

/* One ring (or line) pass along one axis. */
struct coll_phase {
    enum coll_phase_kind kind;
    int axis;
    uint64_t bytes; /* per device: AG: the shard each device contributes; RS/PSUM/A2A: its input */
    bool bidi;      /* bidirectional on a wrapped axis */
};

/* What one concurrent part of the collective does, in order. */
struct coll_part {
    int nphases;
    struct coll_phase phases[COLL_MAX_PHASES];
};

struct coll_plan {
    int nparts;
    struct coll_part parts[COLL_MAX_PARTS];
};

/* How a device acts; engine/ implements it with SimGrid. Semaphore ids are small
 * integers local to the op; sem_id() gives each (part, phase, direction) one. */
struct coll_exec_ops {
    /* Remote DMA of 'bytes' from this device's HBM into device 'dst''s HBM,
     * counted on dst's DMA semaphore 'sem'; returns the send handle. */
    void *(*rdma)(void *ex, int dst, uint64_t bytes, int sem);
    void (*wait_send)(void *ex, void *h);
    /* Blocks until this device's DMA semaphore 'sem' holds 'bytes', then takes them. */
    void (*wait_recv)(void *ex, int sem, uint64_t bytes);
    /* REGULAR semaphores: add 'inc' to 'sem' on device 'dst'; wait for 'value' and take it. */
    void (*signal)(void *ex, int dst, int sem, int inc);
    void (*wait)(void *ex, int sem, int value);
    /* Adds 'bytes' of a received buffer into the local accumulator: a
     * pipelined HBM->VMEM->HBM kernel with a VPU add; 'times' such kernels
     * back to back (a coalesced ring pass's, one per step), each its own
     * pipeline (the executor may price them in one go). */
    void (*reduce)(void *ex, uint64_t bytes, enum dtype dt, int times);
    /* Copies 'bytes' within this device's HBM. */
    void (*local_copy)(void *ex, uint64_t bytes);
    /* Fixed costs: the sem handshake of a ring step. */
    void (*delay)(void *ex, double seconds);
    /* Remote DMA over the DCN to the device at this one's place in slice
     * 'dst_slice'; waited on with wait_send, counted on its 'sem' as rdma's. */
    void *(*rdma_dcn)(void *ex, int dst_slice, uint64_t bytes, int sem);
    /* True while the device runs another op beside this collective (a kernel,
     * another collective): fast fidelity then keeps a ring reduce-scatter's
     * steps (see collective.c). NULL: never. */
    bool (*shared)(void *ex);
};

struct coll_ctx {
    const struct topo *topo;
    const struct chip_params *chip;
    const struct op *op;
    int me;        /* chip rank */
    int part;      /* which part this actor runs */
    const struct coll_exec_ops *ops;
    void *ex;
    bool coalesce; /* fidelity fast: a phase's ring steps become one step (see collective.c) */
    int slice, nslices; /* multislice: this device's slice, and how many (1: none) */
    double dcn_lat_s;   /* one DCN transfer's latency (the fixed cost of a DCN step) */
    bool ici_faults;    /* an ICI link is down or degraded (faults:): no ICI pass coalesced */
};

/* The torus a collective runs on: the slice 'topo' itself, or for a
 * collective over mesh axes (groups) the group of slice chip 'chip'
 * (topology/mesh.h), written into 'group'. Returns the one to use. */
const struct topo *coll_topo(const struct op *op, const struct topo *topo, int chip,
                             struct topo *group);
/* Slice chip 'chip''s rank on that torus, and the slice chip of rank 'rank' there. */
int coll_rank(const struct op *op, const struct topo *topo, int chip);
int coll_chip(const struct op *op, const struct topo *topo, int chip, int rank);

/* The YAML names of the algorithms (enum coll_algo order), NULL-terminated. */
extern const char *const coll_algo_names[];

/* Checks a collective 'op' on 'topo': its algorithm applies to its kind, its axes exist,
 * none twice. Returns 0 or -1 with 'err'. */
int coll_check(const struct op *op, const struct chip_params *chip, const struct topo *topo,
               char *err, size_t n);
/* The chips of a collective_matmul's ring: its axis' length, or its group's size. */
int coll_matmul_ring(const struct op *op, const struct topo *topo);
/* The chip 'step' places after 'chip' on that ring (-1: before it). */
int coll_matmul_neighbour(const struct op *op, const struct topo *topo, int chip, int step);
/* Checks a collective_matmul: the axis exists (or its groups lie within a slice); m a
 * multiple of 8, k and n of 128. */
int coll_check_matmul(const struct op *op, const struct chip_params *chip,
                      const struct topo *topo, char *err, size_t n);
/* Checks a remote_copy: every device's target is inside the mesh and, on
 * chips that route only to power-of-2 offsets (v5e), one such offset away. */
int coll_check_remote_copy(const struct op *op, const struct chip_params *chip,
                           const struct topo *topo, char *err, size_t n);
/* The farthest its transfers go along each axis of 'topo' (hops), for SPMD
 * folding (topology/topo.h): ring and line neighbours are 1 hop, an
 * all-to-all reaches every chip of its axes. Returns 0. */
int coll_reach(const struct op *op, const struct topo *topo, int *hops, int *period);
int coll_reach_matmul(const struct op *op, const struct topo *topo, int *hops, int *period);
/* remote_copy: its shift's hops; -1 for absolute device ids (not the same on every chip). */
int coll_reach_remote_copy(const struct op *op, const struct topo *topo, int *hops,
                           int *period);
/* The chip a remote_copy on chip 'me' targets, or -1 outside the mesh. */
int coll_remote_target(const struct topo *t, const struct op_remote_copy *r, int me);
/* The per-chunk matmul of a collective_matmul 'op' on 'm' rows: the Pallas
 * blocked matmul with the largest blocks up to 512 x 1024 x 1024 that divide it. */
void coll_matmul_op(const struct op *op, int64_t m, struct op *mm);

/* The accumulate step of a reduction, acc += recv over 'bytes' of 'dt', as a
 * pipelined HBM->VMEM->HBM pallas_call over (512, 1024) blocks. 'r' holds the
 * call's shape (its body's user data) and must outlive 'call'. */
struct coll_reduce {
    int64_t rows, cols, block_rows;
};
void coll_reduce_call(struct coll_reduce *r, uint64_t bytes, enum dtype dt, struct pl_call *call);
/* The parts of 'plan' (on torus 't', across 'nslices' slices) run alike: phase
 * by phase the same kind, bytes, ring length and wraparound. Fast fidelity then
 * prices a coalesced pass's reductions in one go (collective.c, coalesced_pass). */
bool coll_parts_alike(const struct coll_plan *plan, const struct topo *t, int nslices);
/* The parts and phases of 'op' on 'topo'. */
void coll_plan(const struct op *op, const struct topo *topo, struct coll_plan *plan);
/* ... and across 'nslices' slices when the op spans them (op->u.coll.dcn), as
 * XLA runs it: each part reduce-scatters within the slice over ICI, reduces
 * its shard across the slices over the DCN (a ring over the slices,
 * reduce-scatter then all-gather; two slices swap halves), and all-gathers
 * it within the slice; a reduce_scatter stops after the DCN reduce-scatter;
 * an all_gather gathers the shards across the slices first, then within
 * the slice. */
void coll_plan_slices(const struct op *op, const struct topo *topo, int nslices,
                      struct coll_plan *plan);
/* True if a phase of 'plan' runs over the DCN. */
bool coll_plan_dcn(const struct coll_plan *plan);
/* Semaphore id of (part, phase, direction): DMA sems are even, REGULAR odd. */
int coll_sem_id(int part, int phase, int dir, bool regular);
/* Number of semaphore ids an op may use (ids are below this). */
int coll_max_sems(void);
/* Runs part c->part of the collective on device c->me. */
void coll_run_part(const struct coll_ctx *c, const struct coll_plan *plan);

#endif
