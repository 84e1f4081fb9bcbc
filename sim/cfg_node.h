/* sim/cfg_node.h -- the YAML tree with source marks, internal to sim/cfg*.c.
 * Nodes own their strings and children; marks are 1-based. */
#ifndef TPUSIM_SIM_CFG_NODE_H
#define TPUSIM_SIM_CFG_NODE_H

#include <stdbool.h>

#include "sim/cfg.h"

enum cfg_type { CFG_SCALAR, CFG_SEQ, CFG_MAP };

struct cfg_node {
    enum cfg_type type;
    char *value;  /* scalar text */
    bool quoted;  /* scalar was quoted: never a number or bool */
    int n;
    char **keys;  /* map keys (n) */
    struct cfg_node **kids; /* map values or sequence items (n) */
    int *key_line, *key_col;
    char *file;   /* owned */
    int line, col;
};

/* Value of 'key' in map 'm', or NULL. */
struct cfg_node *cfg_get(const struct cfg_node *m, const char *key);
/* Sets map 'm'[key] = 'v' (replacing and freeing an old value); takes 'v'. */
void cfg_put(struct cfg_node *m, const char *key, struct cfg_node *v);
/* Overlays 'over' onto 'base': maps merge key by key, anything else replaces.
 * Keys listed in 'skip' (NULL-terminated) at the top level are not copied. */
void cfg_merge(struct cfg_node *base, const struct cfg_node *over, const char *const *skip);
struct cfg_node *cfg_copy(const struct cfg_node *n);


#endif
