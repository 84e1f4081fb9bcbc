/* workload/program.h -- a step's program as data: blocks of ops, each op
 * with its kind, its parameters (typed: integers, byte counts, words, mesh
 * axis names, nested maps) and the tensors it reads and writes; loops with
 * a trip count and their loop-carried tensors. A front end fills one (the
 * model builder, workload/model.c; an XLA program importer: an instruction is an
 * op, its operands the tensors it reads; an async start/done pair is one op
 * flagged PROG_ASYNC; a while loop is a loop op whose body carries tensors
 * from one iteration to the next), workload/schedule.h derives the waits,
 * and prog_yaml() writes it as the workload YAML the loader reads.
 * Uses base/ only. */
#ifndef TPUSIM_WORKLOAD_PROGRAM_H
#define TPUSIM_WORKLOAD_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prog_val {
    PV_INT,   /* 'i[0]' */
    PV_INTS,  /* 'i[0..ni)', a flow list: [16384, 1024] */
    PV_BYTES, /* 'x', a byte count, written without decimals */
    PV_WORD,  /* 's', a bare word: bf16, auto, silu */
    PV_AXES,  /* 's', a mesh axis name, written as a list: [tensor] */
    PV_MAP,   /* 'sub', a flow map */
    PV_RAW    /* 's', flow YAML written as it is: [[0, 4], [1, 2]] */
};

struct prog_params {
    struct prog_param *p;
    int n;
    size_t cap;
    bool wrap_next; /* prog_wrap() */
};

struct prog_param {
    char *key;
    enum prog_val kind;
    bool wrap; /* starts a continuation line (a long op) */
    int64_t i[4];
    int ni;
    double x;
    char *s;
    struct prog_params sub;
};

enum prog_flag {
    PROG_ASYNC = 1,  /* a start/done pair: runs beside the compute stream */
    PROG_REMAT = 2,  /* a recomputation (XLA's .remat clones) */
    PROG_BESIDE = 4, /* set by the schedule: a compute op moved beside a collective */
    PROG_DATA_WAIT = 8, /* waits for what it reads, never for what the op before left
                           running: its waits are always written */
    PROG_SYNC = 16,     /* set by sched_sync_kinds: an async op made synchronous (an XLA
                           flag's what-if): the next stream op waits for it */
};

struct prog_block;

/* A wait: op 'op' of block 'in', in the previous iteration of 'in' when 'prev'. */
struct prog_ref {
    const struct prog_op *op;
    const struct prog_block *in;
    bool prev;
};

struct prog_op {
    char *name;
    char *kind;                /* the workload's op name: matmul, all_gather, ...; NULL for a loop */
    struct prog_params params; /* in the order they are written */
    int *reads, nreads;        /* tensor ids, in the order the op names them */
    int *writes, nwrites;
    unsigned flags;            /* enum prog_flag */
    struct prog_block *loop;   /* owned; a loop's body, NULL for an op */
    /* the schedule's result (workload/schedule.h) */
    struct prog_ref *wait;     /* owned: what the op waits for */
    int nwait;
    bool has_wait;             /* written as after: (else it waits for the op before) */
    int issue;                 /* a moved async op: the index of the op it is issued behind, or -1 */
};

/* A tensor carried by a loop: 'param' read in the body is 'init' (written
 * before the loop) in the first iteration and 'next' (written in the body)
 * of the previous iteration after. */
struct prog_carry {
    int param, init, next;
};

struct prog_block {
    char *name;          /* a loop's name (NULL: the program's top block) */
    int64_t count;       /* a loop's trip count */
    struct prog_op *op;  /* owned */
    int nops;
    size_t cap;
    struct prog_carry *carry;
    int ncarry;
    size_t ccap;
    struct prog_block *parent; /* NULL for the top block */
    int at;                    /* the loop op's index in 'parent' */
};

struct prog_tensor {
    char *name;
    bool output;           /* read after the program (prog_output) */
    struct prog_block *by; /* the block of the op that writes it, NULL: an input */
    int op;                /* that op's index in 'by' */
};

struct program {
    char *comment; /* the first line, written as a comment */
    struct prog_block top;
    struct prog_tensor *t;
    int nt;
    size_t cap;
};

struct program *prog_new(const char *comment);
void prog_free(struct program *p);

/* A new tensor (an input until an op writes it); returns its id. */
int prog_tensor(struct program *p, const char *name);
/* A new op at the end of 'b'; returns its index in 'b'. */
int prog_op(struct prog_block *b, const char *kind, const char *name, unsigned flags);
/* A new loop at the end of 'b'; returns its body. */
struct prog_block *prog_loop(struct prog_block *b, const char *name, int64_t count);
/* Loop 'body' carries 'param': 'init' before the loop; returns the carry's index. */
int prog_carry(struct prog_block *body, int param, int init);
void prog_carry_next(struct prog_block *body, int param, int next);

void prog_read(struct prog_block *b, int op, int tensor);
void prog_write(struct program *p, struct prog_block *b, int op, int tensor);

/* Parameters, appended to 'ps' (an op's params, or a map's sub). */
void prog_int(struct prog_params *ps, const char *key, int64_t v);
void prog_ints(struct prog_params *ps, const char *key, int64_t a, int64_t b);
void prog_bytes(struct prog_params *ps, const char *key, double bytes);
void prog_word(struct prog_params *ps, const char *key, const char *word);
void prog_axes(struct prog_params *ps, const char *key, const char *axis);
/* A value written as it is (flow YAML, such as a list of lists). */
void prog_raw(struct prog_params *ps, const char *key, const char *yaml);
/* A map parameter; its sub-parameters go into the returned list (valid
 * until the next parameter is added to 'ps'). */
struct prog_params *prog_map(struct prog_params *ps, const char *key);
/* The next parameter added to 'ps' starts a continuation line. */
void prog_wrap(struct prog_params *ps);

/* Marks 'tensor' an output of the program (read after the step). */
void prog_output(struct program *p, int tensor);
/* Whether 'kind' moves data (a collective or a copy) rather than computes. */
bool prog_is_transfer(const char *kind);

/* How 'r' is named from block 'from': "x", "prev.x", "fwd.x"; caller frees. */
char *prog_ref_text(const struct prog_ref *r, const struct prog_block *from);
/* Whether 'a' is 'b' or encloses it. */
bool prog_encloses(const struct prog_block *a, const struct prog_block *b);

/* The program as workload YAML (a list of ops, each line indented by two
 * spaces), with each op's schedule (after:); caller frees. */
char *prog_yaml(const struct program *p);

#endif
