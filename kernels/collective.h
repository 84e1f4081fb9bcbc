/* kernels/collective.h -- collectives written on Pallas' distributed primitives.
 * Each device runs the algorithm with push-only remote DMAs (a DMA into a
 * neighbour's HBM increments a DMA semaphore there as bytes land; the sender
 * waits on its own send), REGULAR semaphores for capacity handshakes, and
 * HBM<->VMEM pipelines for reductions (pallas-semantics.md 5). Rings follow
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
 * single part (one ring through the group). The engine (sim/) implements
 * struct coll_exec; tests can fake it. */
#ifndef TPUSIM_KERNELS_COLLECTIVE_H
#define TPUSIM_KERNELS_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "models/chip.h"
#include "topology/topo.h"

#define COLL_MAX_PHASES 6
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

/* How a device acts; sim/ implements it with SimGrid. Semaphore ids are small
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
     * pipelined HBM->VMEM->HBM kernel with a VPU add. */
    void (*reduce)(void *ex, uint64_t bytes, enum dtype dt);
    /* Copies 'bytes' within this device's HBM. */
    void (*local_copy)(void *ex, uint64_t bytes);
    /* Fixed costs: the sem handshake of a ring step. */
    void (*delay)(void *ex, double seconds);
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
};

/* Checks 'op' (axes exist, enough bytes to split) on 'topo'. Returns 0 or -1 with 'err'. */
int coll_check(const struct op *op, const struct topo *topo, char *err, size_t n);
/* The parts and phases of 'op' on 'topo'. */
void coll_plan(const struct op *op, const struct topo *topo, struct coll_plan *plan);
/* Semaphore id of (part, phase, direction): DMA sems are even, REGULAR odd. */
int coll_sem_id(int part, int phase, int dir, bool regular);
/* Number of semaphore ids an op may use (ids are below this). */
int coll_max_sems(void);
/* Runs part c->part of the collective on device c->me. */
void coll_run_part(const struct coll_ctx *c, const struct coll_plan *plan);

#endif
