/* config/cfg_int.h -- the sections of the scenario loader, shared by config/cfg*.c
 * only: the chip section (config/cfg_chip.c) and the keys every op takes. */
#ifndef TPUSIM_CONFIG_CFG_INT_H
#define TPUSIM_CONFIG_CFG_INT_H

#include "models/chip.h"
#include "topology/mesh.h"
#include "config/cfg_walk.h"

/* Keys every op of a workload takes, whatever its kind. */
#define CFG_OP_COMMON_KEYS "op", "name", "after", "overlap", "functional", "vmem_limit_bytes", "op_name"

/* Reads a mesh: {name: size, ...} or {name: {size: N, on: [[axis, chips], ...]}}
 * (config/cfg_ops.c). Returns 0 or -1 after reporting. */
int cfg_load_mesh(struct walk *w, const struct cfg_node *m, const char *p, struct mesh *mesh);

/* A collective's replica_groups: [[chip, ...], ...] at node 'g' of op 'p'
 * (config/cfg_groups.c): read into 'c' (groups of one size), then checked
 * against the slice's 'nchips' (chips of it, each in one group once, all
 * covered; fills c->replica_pos). The check returns 0 or -1 after reporting. */
struct op_collective;
/* program.device_order at node 'n' (NULL: absent) for 'chip' and 'slices' of
 * 't' (config/cfg_device_order.c): '*chip_of' the chip of each device (new
 * array; chip s·N + c is chip c of slice s; NULL for the default, device d on
 * chip d). Returns 0 or -1 after reporting. */
int cfg_load_device_order(struct walk *w, const struct cfg_node *n,
                          const struct chip_params *chip, const struct topo *t, int slices,
                          int **chip_of);
void cfg_load_replica_groups(struct walk *w, const struct cfg_node *g, const char *p,
                             struct op_collective *c);
int cfg_check_replica_groups(struct walk *w, const struct cfg_node *g, const char *p,
                             struct op_collective *c, int nchips);

/* Reads a scenario's model: section (config/cfg_model.c). Returns 0 or -1 after reporting. */
struct model;
int cfg_load_model(struct walk *w, const struct cfg_node *node, struct model *m);
/* RPA v3's d_block_sizes / m_block_sizes under 'key' of 'm' (path 'p'):
 * [bq_sz, bkv_sz, bq_csz, bkv_csz], each in [1, 2^20]. config/cfg_ops.c. */
void cfg_read_rpa3_blocks(struct walk *w, const struct cfg_node *m, const char *p,
                          const char *key, int64_t *out);

/* Reads a scenario's serve: section but its model and mesh (config/cfg_serve.c).
 * Returns 0 or -1 after reporting. */
struct serve_cfg;
/* 'file': the scenario's path (requests.trace is relative to it). */
int cfg_load_serve(struct walk *w, const struct cfg_node *node, const char *file,
                   struct serve_cfg *c);

/* Reads the keys of op 'op' (its kind set) from map 'm' at 'p': the common
 * keys are the caller's; this reads the kind's key table and its loader. */
struct op;
void cfg_load_op_kind(struct walk *w, const struct cfg_node *m, const char *p, struct op *op);

/* The scenario's chip: a preset name, or {base: name, key: override...}. */
void cfg_chip_load(struct walk *w, const struct cfg_node *root, struct chip_params *c);

/* A chip preset's price: and power: sections (config/cfg_cost.c). */
void cfg_chip_load_cost(struct walk *w, const struct cfg_node *root, const char *pre,
                        struct chip_params *c);
/* A scenario's cost: and train: sections (config/cfg_cost.c), after its model. */
struct cfg_scenario;
void cfg_load_cost(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc);
void cfg_load_train(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc);
/* A scenario's xla_flags: (config/cfg_xla_flags.c), after its chip (whose
 * scoped VMEM limit xla_tpu_scoped_vmem_limit_kib sets). */
struct cfg_xla_flags;
void cfg_load_xla_flags(struct walk *w, const struct cfg_node *root, struct chip_params *chip,
                        struct cfg_xla_flags *x);
/* Reads the faults: and goodput: sections (config/cfg_faults.c) once the
 * topology is known. */
struct cfg_faults;
void cfg_load_faults(struct walk *w, const struct cfg_node *root, const struct topo *topo,
                     int slices, struct cfg_faults *out);
/* goodput:'s checkpoint keys it leaves out, from train: (after cfg_load_train). */
void cfg_goodput_from_train(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc);

#endif
