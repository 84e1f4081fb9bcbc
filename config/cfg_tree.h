/* config/cfg_tree.h -- the config tree: a parsed YAML document with source marks.
 * Stage 1 (config/cfg_yaml.c, the only file that sees libyaml) builds it; --set
 * overrides and chip presets edit it (config/cfg_tree.c); the typed walk
 * (config/cfg_walk.h) reads it. Nodes own their strings and children; marks are
 * 1-based. Used by the scenario loader and the sweep-spec loader. */
#ifndef TPUSIM_CONFIG_CFG_TREE_H
#define TPUSIM_CONFIG_CFG_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/diag.h"

enum cfg_type { CFG_SCALAR, CFG_SEQ, CFG_MAP };

struct cfg_node {
    enum cfg_type type;
    char *value;  /* scalar text */
    bool quoted;  /* scalar was quoted: never a number or bool */
    int n;
    char **keys;  /* map keys (n) */
    struct cfg_node **kids; /* map values or sequence items (n) */
    int *key_line, *key_col;
    int cap;      /* room in keys, kids, key_line, key_col (cfg_node_add) */
    int *index;   /* a map of many keys: open-addressed slots of key indices (-1: empty),
                     index_cap of them, so that cfg_get takes constant time; NULL until
                     then (a struct copied by value must not keep it) */
    int index_cap;
    char *file;   /* owned */
    int line, col;
    bool read;    /* cfg_get returned it since cfg_forget_reads (issue 18.11) */
    bool checked; /* a map whose keys walk_check_keys held against a list */
    const struct cfg_node *alias; /* stage 1 only: an alias of this anchored node, expanded
                                     once the whole document is within the limits */
};

/* --- stage 1: YAML text -> tree (config/cfg_yaml.c) --- */
/* Limits of one document, checked while it is parsed: nesting depth, and
 * nodes and bytes after alias expansion (a node costs its struct, its text
 * and its file name). Aliases are counted as they come but copied only after
 * the last event, so a document past a limit is refused before anything is
 * expanded. A real scenario is a few hundred nodes. */
#define CFG_MAX_DEPTH 64
#define CFG_MAX_NODES 1000000
#define CFG_MAX_EXPANDED_BYTES ((size_t)256 << 20)

/* Parses YAML text 'text' named 'file' into a tree; NULL + messages on error.
 * One document only; no tags but !!str; aliases are expanded into copies. */
struct cfg_node *cfg_parse(const char *text, size_t len, const char *file, struct diag *d);

/* --- the tree (config/cfg_tree.c) --- */
/* Reads and parses the file 'path' (or the embedded file of that path; "-"
 * is standard input, named CFG_STDIN_NAME in messages). Files are capped at
 * CFG_MAX_FILE_BYTES; directories and devices are refused. */
struct cfg_node *cfg_parse_file(const char *path, struct diag *d);
/* The same, reporting a file that cannot be read at node 'at' (the key that
 * names the file, 'key' its path), e.g. "x.yaml:1:7: chip: cannot read ...". */
struct cfg_node *cfg_parse_file_at(const char *path, const struct cfg_node *at, const char *key,
                                   struct diag *d);
#define CFG_STDIN_NAME "<stdin>"
/* Largest scenario, chip or sweep file read (a guard against /dev/zero). */
#define CFG_MAX_FILE_BYTES ((size_t)16 << 20)
struct cfg_node *cfg_node_new(enum cfg_type t, const char *file, int line, int col);
/* Appends 'kid' to 'p' (with 'key' and its mark when 'p' is a map). */
void cfg_node_add(struct cfg_node *p, const char *key, int key_line, int key_col,
                  struct cfg_node *kid);
void cfg_node_free(struct cfg_node *n);
/* Value of 'key' in map 'm', or NULL. */
struct cfg_node *cfg_get(const struct cfg_node *m, const char *key);
/* Clears 'read' and 'checked' in the tree 'n' (before the walk: merging and
 * --set look keys up too). */
void cfg_forget_reads(struct cfg_node *n);
/* Marks read every node of map tree 'dst' whose counterpart by key in 'src'
 * (a merged copy that was walked instead) was read. */
void cfg_copy_reads(const struct cfg_node *dst, const struct cfg_node *src);
/* Sets map 'm'[key] = 'v' (replacing and freeing an old value); takes 'v'. */
void cfg_put(struct cfg_node *m, const char *key, struct cfg_node *v);
/* Overlays 'over' onto 'base': maps merge key by key, anything else replaces.
 * Keys listed in 'skip' (NULL-terminated) at the top level are not copied. */
void cfg_merge(struct cfg_node *base, const struct cfg_node *over, const char *const *skip);
struct cfg_node *cfg_copy(const struct cfg_node *n);
/* Applies "key.path=value" to 'root'. Returns 0 or -1 with a message. */
int cfg_apply_set(struct cfg_node *root, const char *set, struct diag *d);
/* "chip: v5e" means "chip: {base: v5e}": makes it so, so key paths like
 * chip.base and chip.hbm.bandwidth work in --set and sweeps. */
void cfg_normalize_chip(struct cfg_node *root);

#endif
