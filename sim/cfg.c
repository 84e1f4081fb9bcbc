/* sim/cfg.c -- a scenario assembled from its sections: name, chip
 * (sim/cfg_chip.c), topology, options and workload (each op through its row
 * of the op table), then the checks that need several sections. Uses base/,
 * topology/, kernels/ops.h and the config stages. */
#include "sim/cfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "sim/cfg_int.h"
#include "sim/cfg_tree.h"
#include "sim/op_table.h"


static void load_wrap(struct walk *w, const struct cfg_node *wr, int nd, bool *wrap)
{
    if (wr->type == CFG_SCALAR &&
        (strcmp(wr->value, "true") == 0 || strcmp(wr->value, "false") == 0)) {
        for (int i = 0; i < nd; i++)
            wrap[i] = wr->value[0] == 't';
        return;
    }
    if (wr->type != CFG_SEQ || wr->n != nd) {
        char want[96];
        snprintf(want, sizeof want, "true, false or a list of %d booleans (one per axis)", nd);
        walk_type_error(w, wr, "topology.wraparound", want);
        return;
    }
    for (int i = 0; i < nd; i++) {
        const struct cfg_node *x = wr->kids[i];
        char *p = xasprintf("topology.wraparound.%d", i);
        if (x->type == CFG_SCALAR && (!strcmp(x->value, "true") || !strcmp(x->value, "false")))
            wrap[i] = x->value[0] == 't';
        else if (!(x->type == CFG_SCALAR && !strcmp(x->value, "default")))
            walk_type_error(w, x, p, "true, false or default");
        free(p);
    }
}

static void load_topology(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    int shape[TOPO_MAX_DIMS] = {1, 1, 1}, nd = 1;
    bool wrap[TOPO_MAX_DIMS] = {false, false, false};
    const struct cfg_node *t = walk_field(w, root, "", "topology", false);
    const struct cfg_node *sh = NULL;
    if (t && walk_is_map(w, t, "topology")) {
        static const char *const keys[] = {"shape", "wraparound", NULL};
        walk_check_keys(w, t, "topology", keys);
        sh = walk_field(w, t, "topology", "shape", true);
    }
    if (sh && (sh->type != CFG_SEQ || sh->n < 1 || sh->n > TOPO_MAX_DIMS)) {
        walk_type_error(w, sh, "topology.shape", "a list of 1 to 3 axis lengths, like [16, 16]");
        sh = NULL;
    }
    for (int i = 0; sh && i < sh->n; i++) {
        int64_t v = 1;
        walk_item(w, sh, "topology.shape", i, 1, 4096, &v);
        shape[i] = (int)v;
        nd = sh->n;
    }
    topo_default_wrap(sc->chip.wrap, nd, shape, wrap);
    const struct cfg_node *wr = t ? cfg_get(t, "wraparound") : NULL;
    if (wr)
        load_wrap(w, wr, nd, wrap);
    if (topo_init(&sc->topo, nd, shape, wrap) != 0 || sc->topo.nchips > 65536) {
        if (t)
            walk_type_error(w, t, "topology", "at most 65536 chips");
    }
}

/* ---------------- options ---------------- */

static void load_options(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *o = walk_field(w, root, "", "options", false);
    sc->fidelity = CFG_FIDELITY_FAST;
    sc->seed = 1;
    sc->max_steps = 2000000000;
    if (!o || !walk_is_map(w, o, "options"))
        return;
    static const char *const keys[] = {"fidelity", "seed", "max_steps", NULL};
    walk_check_keys(w, o, "options", keys);
    static const char *const fid[] = {"fast", "exact", NULL};
    int f = 0;
    walk_enum(w, o, "options", "fidelity", fid, &f);
    sc->fidelity = (enum cfg_fidelity)f;
    int64_t seed = 1, ms = sc->max_steps;
    walk_int(w, o, "options", "seed", false, 0, INT64_MAX, &seed);
    walk_int(w, o, "options", "max_steps", false, 1, INT64_MAX, &ms);
    sc->seed = (uint64_t)seed;
    sc->max_steps = ms;
}

/* ---------------- workload ---------------- */

static void unknown_kind(struct walk *w, const struct cfg_node *k, const char *kp)
{
    const char *names[OP_KIND_COUNT + 1];
    op_kind_names(names);
    bool known;
    const char *best = k->type == CFG_SCALAR ? walk_suggest(k->value, names, &known) : NULL;
    if (best) {
        struct diag_loc loc;
        walk_loc(k, &loc);
        diag_error(w->d, &loc, kp, "unknown op '%s' (did you mean '%s'?)", k->value, best);
        return;
    }
    char want[400] = "an op kind (";
    for (int j = 0; j < OP_KIND_COUNT; j++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", j ? ", " : "",
                 names[j]);
    strcat(want, ")");
    walk_type_error(w, k, kp, want);
}

/* The kind's own keys: its key table, then its loader. */
static void load_kind(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    const struct op_row *row = op_row(op->kind);
    if (row->keys) {
        const char *extra[32] = {CFG_OP_COMMON_KEYS};
        int n = 0;
        while (extra[n])
            n++;
        for (int i = 0; row->extra_keys && row->extra_keys[i] && n < 31; i++)
            extra[n++] = row->extra_keys[i];
        walk_fields(w, m, p, row->keys, extra, op);
    }
    if (row->load)
        row->load(w, m, p, op);
}

static void load_op(struct walk *w, const struct cfg_node *m, int i, struct op *op)
{
    char *p = xasprintf("workload.%d", i);
    if (!walk_is_map(w, m, p)) {
        free(p);
        return;
    }
    const struct cfg_node *k = walk_field(w, m, p, "op", true);
    char *kp = walk_join(p, "op");
    if (k && (k->type != CFG_SCALAR || op_kind_parse(k->value, &op->kind) != 0)) {
        unknown_kind(w, k, kp);
        k = NULL;
    }
    free(kp);
    if (k) {
        walk_bool(w, m, p, "overlap", &op->overlap);
        walk_bool(w, m, p, "functional", &op->functional);
        walk_size(w, m, p, "vmem_limit_bytes", false, (uint64_t)64 << 10, (uint64_t)16 << 30,
                  "from 64KiB to 16GiB", &op->vmem_limit_bytes);
        const struct cfg_node *nm = cfg_get(m, "name");
        op->name = nm && nm->type == CFG_SCALAR ? xstrdup(nm->value)
                                                 : xasprintf("%d:%s", i, op_kind_name(op->kind));
        load_kind(w, m, p, op);
    }
    free(p);
}

static void load_workload(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *wl = walk_field(w, root, "", "workload", true);
    if (!wl)
        return;
    if (wl->type != CFG_SEQ || wl->n == 0) {
        walk_type_error(w, wl, "workload", "a non-empty list of ops");
        return;
    }
    sc->ops = xcalloc((size_t)wl->n, sizeof *sc->ops);
    sc->nops = wl->n;
    for (int i = 0; i < wl->n; i++)
        load_op(w, wl->kids[i], i, &sc->ops[i]);
}

static void check_semantics(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *wl = cfg_get(root, "workload");
    for (int i = 0; i < sc->nops && wl && wl->type == CFG_SEQ; i++) {
        const struct op *op = &sc->ops[i];
        char *p = xasprintf("workload.%d", i);
        if (op->kind == OP_PPERMUTE && op->u.ppermute.axis >= sc->topo.ndims) {
            char want[96];
            snprintf(want, sizeof want, "an axis below %d (the topology has %d)", sc->topo.ndims,
                     sc->topo.ndims);
            const struct cfg_node *a = cfg_get(wl->kids[i], "axis");
            char *ap = walk_join(p, "axis");
            walk_type_error(w, a ? a : wl->kids[i], ap, want);
            free(ap);
        }
        if (op->vmem_limit_bytes > sc->chip.vmem_bytes) {
            const struct cfg_node *a = cfg_get(wl->kids[i], "vmem_limit_bytes");
            char *ap = walk_join(p, "vmem_limit_bytes");
            char want[96];
            snprintf(want, sizeof want, "at most the chip's VMEM (%llu bytes)",
                     (unsigned long long)sc->chip.vmem_bytes);
            walk_type_error(w, a, ap, want);
            free(ap);
        }
        free(p);
    }
}

static char *base_name(const char *path)
{
    if (strcmp(path, "-") == 0)
        return xstrdup("stdin");
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = xstrdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    for (char *c = s; *c; c++) /* a file name may hold what a name may not */
        if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '=')
            *c = '_';
    if (!walk_name_ok(s)) {
        free(s);
        s = xstrdup("scenario");
    }
    return s;
}

#define DEFAULT_SCENARIO "configs/scenarios/default.yaml"

/* Checks the tree 'root' (consumed) of the scenario at 'path' into '*sc'. */
static int load_tree(struct cfg_node *root, const char *path, const char *const *sets, int nsets,
                     struct cfg_scenario *sc, struct diag *d)
{
    cfg_normalize_chip(root);
    for (int i = 0; i < nsets; i++)
        cfg_apply_set(root, sets[i], d);
    struct walk w = {d};
    if (diag_count(d) == 0 && walk_is_map(&w, root, "scenario")) {
        static const char *const keys[] = {"name", "chip", "topology", "options", "workload",
                                           NULL};
        walk_check_keys(&w, root, "", keys);
        const struct cfg_node *nm = cfg_get(root, "name");
        bool named = nm && nm->type == CFG_SCALAR && walk_name_ok(nm->value);
        if (nm && !named) /* it names a directory under out/ */
            walk_type_error(&w, nm, "name", WALK_NAME_RULE);
        sc->name = named ? xstrdup(nm->value) : base_name(path);
        cfg_chip_load(&w, root, &sc->chip);
        load_topology(&w, root, sc);
        load_options(&w, root, sc);
        load_workload(&w, root, sc);
        if (diag_count(d) == 0)
            check_semantics(&w, root, sc);
    }
    cfg_node_free(root);
    if (diag_count(d) == 0)
        return 0;
    cfg_scenario_fini(sc);
    return -1;
}

int cfg_load_scenario(const char *path, const char *const *sets, int nsets,
                      struct cfg_scenario *sc, struct diag *d)
{
    memset(sc, 0, sizeof *sc);
    if (!path)
        path = DEFAULT_SCENARIO;
    sc->file = xstrdup(strcmp(path, "-") ? path : CFG_STDIN_NAME);
    struct cfg_node *root = cfg_parse_file(path, d);
    if (!root) {
        cfg_scenario_fini(sc);
        return -1;
    }
    return load_tree(root, path, sets, nsets, sc, d);
}

int cfg_load_scenario_text(const char *text, size_t len, const char *file,
                           const char *const *sets, int nsets, struct cfg_scenario *sc,
                           struct diag *d)
{
    memset(sc, 0, sizeof *sc);
    sc->file = xstrdup(file);
    struct cfg_node *root = cfg_parse(text, len, file, d);
    if (!root) {
        cfg_scenario_fini(sc);
        return -1;
    }
    return load_tree(root, file, sets, nsets, sc, d);
}

void cfg_scenario_fini(struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        op_fini(&sc->ops[i]);
    free(sc->ops);
    free(sc->name);
    free(sc->file);
    memset(sc, 0, sizeof *sc);
}
