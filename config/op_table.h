/* config/op_table.h -- one row per op kind. Everything tpusim knows about a kind
 * that is not its parameters (kernels/ops.h) or its kernel (kernels/<kind>.c)
 * is its row: the YAML name and keys, the loader for what a key table cannot
 * say, the rules it is checked against, its Pallas builder, and its
 * category in the outputs (how the engine runs a kind that is not a Pallas
 * kernel is its row in engine/eng_runners.c). Rows are designated initialisers
 * indexed by enum op_kind, and the table's length is checked at compile time,
 * so a new kernel is: its parameters and enum entry (kernels/ops.h), its file
 * (kernels/<kind>.c), and its row (config/op_table.c). */
#ifndef TPUSIM_CONFIG_OP_TABLE_H
#define TPUSIM_CONFIG_OP_TABLE_H

#include <stddef.h>

#include "kernels/ops.h"
#include "models/chip.h"
#include "config/cfg_walk.h"
#include "topology/topo.h"

struct kern_tune; /* kernels/tune.h: how its blocks are searched */

/* Reads what the key table cannot (lists, generators, masks) into 'op'. */
typedef void op_load_fn(struct walk *w, const struct cfg_node *m, const char *path, struct op *op);
/* Checks 'op' on its chip and topology; 0, or -1 with the reason in 'err'. */
typedef int op_check_fn(const struct op *op, const struct chip_params *chip,
                        const struct topo *topo, char *err, size_t n);
/* How far the op's ICI transfers go along each axis (raises hops[axis]) and
 * the period its chips' roles repeat with along it (period[axis] becomes a
 * common multiple; 1: every chip alike); -1 if they differ from chip to chip
 * (absolute targets). For SPMD folding (engine/spmd.h). */
typedef int op_reach_fn(const struct op *op, const struct topo *topo, int *hops, int *period);

struct op_row {
    const char *name;              /* the YAML name */
    const char *category;          /* matmul, attention, fusion, collective, copy */
    bool async;                    /* runs beside the compute stream (start/done), not on it */
    bool core0;                    /* async, and only core 0 of a chip does the work: the
                                      other cores' instances finish at once, without an actor */
    const struct walk_key *keys;   /* plain keys read into struct op (NULL: 'load' reads all) */
    const char *const *extra_keys; /* further keys 'load' reads (with 'keys') */
    op_load_fn *load;              /* may be NULL */
    op_check_fn *check;            /* rules of non-Pallas kinds (Pallas: the builder checks) */
    const struct kern_kind *kern;  /* Pallas kinds: built into pallas_calls by kern_init */
    const struct kern_tune *tune;  /* its blocks can be searched: `<tune->key>: auto` */
    op_reach_fn *reach;            /* ICI reach, for SPMD folding (NULL: no ICI traffic) */
};

/* The row of 'kind'. */
const struct op_row *op_row(enum op_kind kind);
/* YAML name of 'kind': "hbm_copy", "matmul", ... */
const char *op_kind_name(enum op_kind kind);
/* The dtype 'op' feeds the MXU (its % of peak is of that dtype's peak);
 * bf16 for ops that do not use the MXU. */
enum dtype op_mxu_dtype(const struct op *op);
/* Sets '*kind' from a YAML name; 0, or -1 if there is no such kind. */
int op_kind_parse(const char *s, enum op_kind *kind);
/* Fills 'names' (room for OP_KIND_COUNT + 1) with every kind's name in enum
 * order and a NULL (for did-you-mean hints). */
void op_kind_names(const char **names);
/* Frees what 'op' owns (its name and its kind's owned parameters). */
void op_fini(struct op *op);

/* --- the functions rows point to --- */
/* config/cfg_ops.c: loaders */
op_load_fn cfg_load_flash, cfg_load_splash, cfg_load_paged, cfg_load_ragged, cfg_load_ragged3, cfg_load_axes,
    cfg_load_remote_copy, cfg_load_fusion, cfg_load_xla, cfg_load_cmm_groups;
/* config/cfg_pcall.c: the generic pallas_call */
op_load_fn cfg_load_pallas_call;

#endif
