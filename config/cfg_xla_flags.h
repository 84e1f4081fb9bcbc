/* config/cfg_xla_flags.h -- a scenario's xla_flags: (XLA's TPU compiler
 * flags as what-ifs, named as libtpu names them; docs/reference.md,
 * "Compiler flags as what-ifs"). Uses libc only. */
#ifndef TPUSIM_CONFIG_CFG_XLA_FLAGS_H
#define TPUSIM_CONFIG_CFG_XLA_FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#define CFG_XLA_SYNC_MAX 8

struct cfg_xla_flags {
    bool present;
    /* the program's collectives of these kinds run synchronously (static
     * names, NULL-terminated): an async flag set to false */
    const char *sync[CFG_XLA_SYNC_MAX + 1];
    int nsync;
    uint64_t scoped_vmem_limit_bytes; /* xla_tpu_scoped_vmem_limit_kib x 1024; 0: not given */
};

#endif
