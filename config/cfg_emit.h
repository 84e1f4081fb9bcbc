/* config/cfg_emit.h -- the one YAML writer: a tree (config/cfg_tree.h) back
 * to text that reads back as the same tree, in flow style (one value on one
 * line: sweep values, --set overrides, `expand`'s leaves) or in block style
 * with a line map (a sweep's inline base, so that messages about the
 * written file point back into the spec). Uses config/cfg_tree.h. */
#ifndef TPUSIM_CONFIG_CFG_EMIT_H
#define TPUSIM_CONFIG_CFG_EMIT_H

#include <stdio.h>

#include "config/cfg_tree.h"

/* Per line of a written file: where its key and value came from. */
struct cfg_linemap {
    int n;
    int *key_line, *key_col;      /* per line of the generated file: the source position of its key */
    int *val_col;                 /* column of the value in the generated file (0: none) */
    int *val_line, *val_spec_col; /* source position of the value */
};

/* 'n' in flow style ("{a: 1, b: [x, y]}"; a scalar as itself, quoted when
 * it must be). Caller frees. */
char *cfg_node_text(const struct cfg_node *n);
/* 's' as a double-quoted YAML scalar. Caller frees. */
char *cfg_quote(const char *s);
/* Writes the mapping or sequence 'n' to 'f' in block style, its first line
 * numbered 'first_line', recording each line's source in 'm' (grown). */
void cfg_emit_block(FILE *f, const struct cfg_node *n, int first_line, struct cfg_linemap *m);
void cfg_linemap_fini(struct cfg_linemap *m);

#endif
