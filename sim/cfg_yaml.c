/* sim/cfg_yaml.c -- stage 1 of the config loader: YAML text -> cfg_node tree.
 * The only file that includes <yaml.h>. libyaml's loader gives a node graph
 * whose marks are 0-based; it is copied into our own tree (1-based marks) so
 * overrides and preset merging can edit it before the typed walk
 * (sim/cfg_walk.h). Uses base/ and sim/cfg_tree.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/xalloc.h"
#include "sim/cfg_tree.h"

static struct cfg_node *convert(yaml_document_t *doc, yaml_node_t *yn, const char *file,
                                int depth, struct diag *d)
{
    int line = (int)yn->start_mark.line + 1, col = (int)yn->start_mark.column + 1;
    struct diag_loc loc = {file, line, col};
    if (depth > 64) {
        diag_error(d, &loc, NULL, "document nested too deeply");
        return NULL;
    }
    if (yn->type == YAML_SCALAR_NODE) {
        struct cfg_node *n = cfg_node_new(CFG_SCALAR, file, line, col);
        n->value = xstrdup((const char *)yn->data.scalar.value);
        n->quoted = yn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    yn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return n;
    }
    if (yn->type == YAML_SEQUENCE_NODE) {
        struct cfg_node *n = cfg_node_new(CFG_SEQ, file, line, col);
        for (yaml_node_item_t *it = yn->data.sequence.items.start;
             it < yn->data.sequence.items.top; it++) {
            struct cfg_node *k = convert(doc, yaml_document_get_node(doc, *it), file, depth + 1, d);
            if (!k) {
                cfg_node_free(n);
                return NULL;
            }
            cfg_node_add(n, NULL, 0, 0, k);
        }
        return n;
    }
    struct cfg_node *n = cfg_node_new(CFG_MAP, file, line, col);
    for (yaml_node_pair_t *p = yn->data.mapping.pairs.start; p < yn->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        struct diag_loc kl = {file, (int)kn->start_mark.line + 1, (int)kn->start_mark.column + 1};
        if (kn->type != YAML_SCALAR_NODE) {
            diag_error(d, &kl, NULL, "expected a key (a plain word), got a %s",
                       kn->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
            cfg_node_free(n);
            return NULL;
        }
        const char *key = (const char *)kn->data.scalar.value;
        if (cfg_get(n, key))
            diag_error(d, &kl, key, "duplicate key");
        struct cfg_node *v = convert(doc, yaml_document_get_node(doc, p->value), file, depth + 1, d);
        if (!v) {
            cfg_node_free(n);
            return NULL;
        }
        cfg_node_add(n, key, kl.line, kl.col, v);
    }
    return n;
}

struct cfg_node *cfg_parse(const char *text, size_t len, const char *file, struct diag *d)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        struct diag_loc loc = {file, (int)parser.problem_mark.line + 1,
                               (int)parser.problem_mark.column + 1};
        if (parser.context)
            diag_error(d, &loc, NULL, "%s %s", parser.problem ? parser.problem : "syntax error",
                       parser.context);
        else
            diag_error(d, &loc, NULL, "%s", parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    struct cfg_node *n = root ? convert(&doc, root, file, 0, d) : cfg_node_new(CFG_MAP, file, 1, 1);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (n && n->type == CFG_SCALAR && n->value[0] == '\0') {
        n->type = CFG_MAP; /* an empty document */
    }
    return n;
}

