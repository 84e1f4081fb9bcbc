/* config/cfg_faults.h -- a scenario's faults: (ICI links down or degraded,
 * slow or dead chips, lost slices) and goodput: (the expected share of
 * useful time given failures and checkpoints). Read by config/cfg_faults.c;
 * the engine applies them (engine/eng_fault.c), spmd.c stops folding on
 * them, the summary reports what moved (docs/reference.md, "Faults"). */
#ifndef TPUSIM_CONFIG_CFG_FAULTS_H
#define TPUSIM_CONFIG_CFG_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

#define CFG_MAX_FAULTS 64 /* faults: entries at most (the resource guard) */

enum cfg_fault_kind { CFG_FAULT_LINK, CFG_FAULT_CHIP, CFG_FAULT_SLICE };

struct cfg_fault {
    enum cfg_fault_kind kind;
    double at_s;           /* when it starts (0: from the start) */
    int slice;             /* link, chip: the slice it is in; slice: the slice lost */
    int chip;              /* link, chip: the chip's rank in its slice */
    int axis, dir;         /* link: the link from 'chip' along 'axis' in 'dir' (+1/-1) */
    double bw_factor;      /* link: of the link's bandwidth, 0 = down */
    double compute_factor; /* chip: of its compute rate (1: nominal) */
    double hbm_factor;     /* chip: of its HBM bandwidth (1: nominal) */
    bool dead;             /* chip: dead */
};

/* goodput: the inputs of the expected useful-time fraction (all given, or absent). */
struct cfg_goodput {
    bool present;
    double mtbf_chip_s;        /* mean time between failures of one chip */
    int64_t checkpoint_period; /* steps between checkpoints (MaxText's checkpoint_period) */
    double checkpoint_bytes;   /* one checkpoint's size (all chips) */
    double checkpoint_Bps;     /* the rate it is written at */
    double restart_s;          /* from a failure to training again (reschedule, restore) */
};

struct cfg_faults {
    int n;
    struct cfg_fault f[CFG_MAX_FAULTS];
    int slices_lost;           /* faults of kind slice */
    struct cfg_goodput goodput;
};

/* True when some link or chip fault breaks the chips' SPMD symmetry. */
bool cfg_faults_asymmetric(const struct cfg_faults *f);
/* True when some ICI link is down or degraded (from the start or later). */
bool cfg_faults_links(const struct cfg_faults *f);
/* True when slice 's' is lost. */
bool cfg_slice_lost(const struct cfg_faults *f, int s);

#endif
