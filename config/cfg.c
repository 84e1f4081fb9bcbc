/* config/cfg.c -- a scenario assembled from its sections: name, chip
 * (config/cfg_chip.c), topology, options and workload (each op through its row
 * of the op table), then the checks that need several sections. Uses base/,
 * topology/, kernels/ops.h and the config stages. */
#include "config/cfg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/xalloc.h"
#include "kernels/tune.h"
#include "config/cfg_int.h"
#include "config/cfg_serve.h"
#include "config/cfg_tree.h"
#include "kernels/collective.h"
#include "workload/hlo.h"
#include "workload/model.h"
#include "workload/schedule.h"
#include "config/op_table.h"

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

/* topology.slices and topology.dcn: N copies of the slice joined by the DCN. */
static void load_slices(struct walk *w, const struct cfg_node *t, struct cfg_scenario *sc)
{
    int64_t slices = 1;
    double bisection = 0;
    const struct cfg_node *dn = t ? cfg_get(t, "dcn") : NULL;
    if (t)
        walk_int(w, t, "topology", "slices", false, 1, DCN_MAX_SLICES, &slices);
    if (dn && walk_is_map(w, dn, "topology.dcn")) {
        static const char *const keys[] = {"bisection", NULL};
        walk_check_keys(w, dn, "topology.dcn", keys);
        walk_qty(w, dn, "topology.dcn", "bisection", false, UNITS_BANDWIDTH, false, &bisection);
    }
    const struct chip_params *ch = &sc->chip;
    sc->dcn.slices = (int)slices;
    if (slices == 1 || diag_count(w->d) > 0)
        return;
    const struct cfg_node *sl = cfg_get(t, "slices");
    char err[256];
    if (ch->dcn_host_ndims == 0) {
        walk_type_error(w, sl, "topology.slices", "1 for a chip without a dcn: section "
                        "(host_shape, bandwidth, latency)");
    } else if ((int64_t)sc->topo.nchips * slices > (1 << 20)) {
        walk_type_error(w, sl, "topology.slices", "at most 1048576 chips in all slices");
    } else if (dcn_init(&sc->dcn, &sc->topo, (int)slices, ch->dcn_host_shape, ch->dcn_host_ndims,
                        ch->dcn_bw_Bps, ch->dcn_lat_s, bisection, err, sizeof err) != 0) {
        struct diag_loc loc;
        walk_loc(sl, &loc);
        diag_error(w->d, &loc, "topology.slices", "%s", err);
    }
}

/* True when a slice of 'shape' fits the chip's pod (its axes sorted against
 * the pod's) within its largest slice, or the chip is hypothetical. */
static bool slice_exists(const struct chip_params *c, int nd, const int *shape)
{
    if (c->hypothetical || !c->slice_dims)
        return true;
    int s[TOPO_MAX_DIMS] = {1, 1, 1};
    int64_t chips = 1;
    for (int i = 0; i < nd; i++) {
        s[i] = shape[i];
        chips *= shape[i];
    }
    int used = 0;
    for (int i = 0; i < nd; i++)
        used += shape[i] > 1;
    if (used > c->slice_dims || (c->slice_max_chips && chips > c->slice_max_chips))
        return false;
    for (int i = 1; i < TOPO_MAX_DIMS; i++) /* descending: axes of 1 fall off the end */
        for (int j = i; j > 0 && s[j] > s[j - 1]; j--) {
            int t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    for (int i = 0; i < c->slice_dims; i++) /* largest against largest */
        if (c->slice_max[0] && s[i] > c->slice_max[c->slice_dims - 1 - i])
            return false;
    return true;
}

/* Appends to 'buf' (size 'n', NUL-terminated), cutting what does not fit. */
static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...)
{
    size_t k = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, n - k, fmt, ap);
    va_end(ap);
}

/* What slice_exists wants, for the message. */
static void slice_rule(const struct chip_params *c, char *buf, size_t n)
{
    buf[0] = '\0';
    append(buf, n, "a %s slice (at most %d axes", c->name, c->slice_dims);
    if (c->slice_max[0]) {
        append(buf, n, ", fitting the ");
        for (int i = c->slice_dims - 1; i >= 0; i--)
            append(buf, n, "%d%s", c->slice_max[i], i ? "x" : "");
        append(buf, n, " pod in any order");
    }
    if (c->slice_max_chips)
        append(buf, n, ", at most %lld chips", (long long)c->slice_max_chips);
    append(buf, n, "; chip: {base: %s, hypothetical: true} allows others)", c->name);
}

/* A slice of more than TOPO_MAX_CHIPS chips: the product, in 64 bits. */
static void chips_error(struct walk *w, const struct cfg_node *sh, int nd, const int *shape)
{
    char got[96] = "";
    int64_t chips = 1;
    for (int i = 0; i < nd; i++) {
        chips *= shape[i]; /* lengths <= 4096: fits */
        append(got, sizeof got, "%s%d", i ? "x" : "", shape[i]);
    }
    struct diag_loc loc;
    walk_loc(sh, &loc);
    diag_error(w->d, &loc, "topology.shape",
               "expected at most %d chips in a slice, got %s = %lld chips", TOPO_MAX_CHIPS, got,
               (long long)chips);
}

static void load_topology(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    int shape[TOPO_MAX_DIMS] = {1, 1, 1}, nd = 1;
    bool wrap[TOPO_MAX_DIMS] = {false, false, false};
    const struct cfg_node *t = walk_field(w, root, "", "topology", false);
    const struct cfg_node *sh = NULL;
    if (t && walk_is_map(w, t, "topology")) {
        static const char *const keys[] = {"shape", "wraparound", "slices", "dcn", NULL};
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
    if (topo_init(&sc->topo, nd, shape, wrap) != 0) {
        if (sh)
            chips_error(w, sh, nd, shape);
    } else if (sh && !slice_exists(&sc->chip, nd, shape)) {
        char want[256];
        slice_rule(&sc->chip, want, sizeof want);
        walk_type_error(w, sh, "topology.shape", want);
    }
    load_slices(w, t && t->type == CFG_MAP ? t : NULL, sc);
}

/* ---------------- options ---------------- */

static void load_options(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *o = walk_field(w, root, "", "options", false);
    sc->fidelity = CFG_FIDELITY_FAST;
    sc->seed = 1;
    sc->max_steps = CFG_DEFAULT_MAX_STEPS;
    sc->trace_level = 2; /* units, as --trace */
    sc->kernel_memo = true;
    if (!o || !walk_is_map(w, o, "options"))
        return;
    static const char *const keys[] = {"fidelity",  "seed",        "max_steps",
                                       "all_chips", "kernel_memo", "trace", NULL};
    static const char *const levels[] = {"none", "ops", "units", "steps", NULL}; /* trace.h */
    walk_enum(w, o, "options", "trace", levels, &sc->trace_level);
    sc->trace_level_set = walk_field(w, o, "options", "trace", false) != NULL;
    walk_check_keys(w, o, "options", keys);
    walk_bool(w, o, "options", "all_chips", &sc->all_chips);
    walk_bool(w, o, "options", "kernel_memo", &sc->kernel_memo);
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
    size_t len = sizeof "an op kind ()";
    for (int j = 0; j < OP_KIND_COUNT; j++)
        len += strlen(names[j]) + 2;
    char *want = xmalloc(len);
    strcpy(want, "an op kind (");
    for (int j = 0; j < OP_KIND_COUNT; j++)
        strcat(strcat(want, j ? ", " : ""), names[j]);
    strcat(want, ")");
    walk_type_error(w, k, kp, want);
    free(want);
}

/* `<key>: auto` for a kind whose blocks can be searched (its row's 'tune'):
 * marks the op and returns 'view', the map without that key, so that its
 * blocks keep their defaults until study/autotune.h sets them; else 'm'. */
static const struct cfg_node *auto_view(const struct cfg_node *m, const struct op_row *row,
                                        struct op *op, struct cfg_node *view)
{
    const struct cfg_node *a = row->tune ? cfg_get(m, row->tune->key) : NULL;
    if (!a || a->type != CFG_SCALAR || strcmp(a->value, "auto") != 0)
        return m;
    op->autotune = true;
    *view = *m;
    view->n = 0;
    view->cap = m->n, view->index = NULL, view->index_cap = 0; /* (m's index is of m's keys) */
    view->keys = xcalloc((size_t)m->n, sizeof *view->keys);
    view->kids = xcalloc((size_t)m->n, sizeof *view->kids);
    view->key_line = xcalloc((size_t)m->n, sizeof *view->key_line);
    view->key_col = xcalloc((size_t)m->n, sizeof *view->key_col);
    for (int i = 0; i < m->n; i++) {
        if (m->kids[i] == a)
            continue;
        view->keys[view->n] = m->keys[i], view->kids[view->n] = m->kids[i];
        view->key_line[view->n] = m->key_line[i], view->key_col[view->n++] = m->key_col[i];
    }
    return view;
}

/* The kind's own keys: its key table, then its loader. */
void cfg_load_op_kind(struct walk *w, const struct cfg_node *mo, const char *p, struct op *op)
{
    const struct op_row *row = op_row(op->kind);
    struct cfg_node view;
    const struct cfg_node *m = auto_view(mo, row, op, &view);
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
    if (m == &view) {
        ((struct cfg_node *)mo)->checked = view.checked;
        free(view.keys);
        free(view.kids);
        free(view.key_line);
        free(view.key_col);
        free(view.index);
    }
}

/* op_name: the source program's name for the op (XLA's OpMetadata.op_name,
 * as an HLO program's metadata carries it): any printable text. */
static void load_op_name(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    const struct cfg_node *n = cfg_get(m, "op_name");
    if (!n)
        return;
    bool ok = n->type == CFG_SCALAR && n->value[0] && strlen(n->value) <= OP_MAX_OP_NAME;
    for (const char *c = ok ? n->value : ""; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            ok = false;
    if (!ok) {
        char *np = walk_join(p, "op_name");
        walk_type_error(w, n, np, "a source name of 1 to 512 printable characters");
        free(np);
        return;
    }
    op->op_name = xstrdup(n->value);
}

static void load_op(struct walk *w, const struct cfg_node *m, const char *p, int i, struct op *op)
{
    if (!walk_is_map(w, m, p))
        return;
    const struct cfg_node *k = walk_field(w, m, p, "op", true);
    char *kp = walk_join(p, "op");
    if (k && (k->type != CFG_SCALAR || op_kind_parse(k->value, &op->kind) != 0)) {
        unknown_kind(w, k, kp);
        k = NULL;
    }
    free(kp);
    const struct cfg_node *nm = cfg_get(m, "name");
    if (nm && (nm->type != CFG_SCALAR || !cfg_name_ok(nm->value))) {
        char *np = walk_join(p, "name");
        walk_type_error(w, nm, np,
                        "a name of letters, digits, '_' and '-' (no dots: they "
                        "separate block and op names in after:)");
        free(np);
        nm = NULL;
    }
    op->name = nm ? xstrdup(nm->value) : xasprintf("%d:%s", i, k ? op_kind_name(op->kind) : "op");
    if (!k)
        return;
    walk_bool(w, m, p, "overlap", &op->overlap);
    walk_bool(w, m, p, "functional", &op->functional);
    walk_size(w, m, p, "vmem_limit_bytes", false, (uint64_t)64 << 10, (uint64_t)16 << 30,
              "from 64KiB to 16GiB", &op->vmem_limit_bytes);
    load_op_name(w, m, p, op);
    cfg_load_op_kind(w, m, p, op);
}

/* What the loader keeps of each op while it reads the workload (document order). */
struct op_load {
    struct walk *w;
    struct cfg_scenario *sc;
    struct graph_draft draft;
    struct op *ops;               /* document order */
    const struct cfg_node **node; /* the op's mapping */
    int cap;
    int nblocks;
};

static void read_after(struct op_load *L, int op, const struct cfg_node *m, const char *p)
{
    const struct cfg_node *a = cfg_get(m, "after");
    if (!a)
        return;
    char *ap = walk_join(p, "after");
    graph_draft_has_after(&L->draft, op);
    const struct cfg_node *one[1] = {a};
    const struct cfg_node *const *items =
        a->type == CFG_SEQ ? (const struct cfg_node *const *)a->kids : one;
    int n = a->type == CFG_SEQ ? a->n : 1;
    if (a->type == CFG_MAP)
        walk_type_error(L->w, a, ap, "a list of op names, like [qkv, prev.wgather]");
    for (int i = 0; a->type != CFG_MAP && i < n; i++) {
        char *ip = a->type == CFG_SEQ ? xasprintf("%s.%d", ap, i) : xstrdup(ap);
        struct diag_loc loc;
        walk_loc(items[i], &loc);
        if (items[i]->type != CFG_SCALAR || !items[i]->value[0])
            walk_type_error(L->w, items[i], ip, "an op name");
        else
            graph_draft_after(&L->draft, op, items[i]->value, &loc, ip);
        free(ip);
    }
    free(ap);
}

static void add_op(struct op_load *L, const struct cfg_node *m, const char *p, int block)
{
    int i = L->draft.nops;
    if (i == L->cap) {
        L->cap = L->cap ? 2 * L->cap : 16;
        L->ops = xrealloc(L->ops, sizeof *L->ops * (size_t)L->cap);
        L->node = xrealloc(L->node, sizeof *L->node * (size_t)L->cap);
    }
    struct op *op = &L->ops[i];
    memset(op, 0, sizeof *op);
    L->node[i] = m;
    load_op(L->w, m, p, i, op);
    const struct cfg_node *nm = cfg_get(m, "name");
    struct diag_loc loc;
    walk_loc(nm ? nm : m, &loc);
    graph_draft_op(&L->draft, block, op->name ? op->name : "?", nm != NULL, &loc, p, op->overlap);
    read_after(L, i, m, p);
}

static void load_items(struct op_load *L, const struct cfg_node *list, const char *p, int block);

static const char *const repeat_keys[] = {"count", "ops", "name", NULL};

/* `- repeat: {count: N, ops: [...], name: NAME}` */
static void load_repeat(struct op_load *L, const struct cfg_node *item, const char *p, int block)
{
    char *rp = walk_join(p, "repeat");
    const struct cfg_node *r = cfg_get(item, "repeat");
    static const char *const outer[] = {"repeat", NULL};
    walk_check_keys(L->w, item, p, outer);
    if (walk_is_map(L->w, r, rp)) {
        walk_check_keys(L->w, r, rp, repeat_keys);
        int64_t count = 1;
        walk_int(L->w, r, rp, "count", true, 1, GRAPH_MAX_INSTANCES, &count);
        const struct cfg_node *nm = cfg_get(r, "name"), *ops = walk_field(L->w, r, rp, "ops", true);
        char *name =
            nm && nm->type == CFG_SCALAR ? xstrdup(nm->value) : xasprintf("repeat%d", L->nblocks);
        struct diag_loc loc;
        walk_loc(nm ? nm : r, &loc);
        L->nblocks++;
        int b = graph_draft_block(&L->draft, block, name, count, &loc);
        free(name);
        char *op = walk_join(rp, "ops");
        if (ops)
            load_items(L, ops, op, b);
        free(op);
    }
    free(rp);
}

static void load_items(struct op_load *L, const struct cfg_node *list, const char *p, int block)
{
    if (list->type != CFG_SEQ || list->n == 0) {
        walk_type_error(L->w, list, p, "a non-empty list of ops");
        return;
    }
    for (int i = 0; i < list->n; i++) {
        char *ip = xasprintf("%s.%d", p, i);
        const struct cfg_node *m = list->kids[i];
        if (m->type == CFG_MAP && cfg_get(m, "repeat") && !cfg_get(m, "op"))
            load_repeat(L, m, ip, block);
        else
            add_op(L, m, ip, block);
        free(ip);
    }
}

/* Puts the ops in program order, with their qualified names and sources. */
static void install_program(struct op_load *L, const int *order)
{
    struct cfg_scenario *sc = L->sc;
    int n = L->draft.nops;
    sc->ops = xcalloc((size_t)n + 1, sizeof *sc->ops);
    sc->src = xcalloc((size_t)n + 1, sizeof *sc->src);
    sc->nops = n;
    for (int p = 0; p < n; p++) {
        int d = order[p];
        sc->ops[p] = L->ops[d];
        free(sc->ops[p].name);
        sc->ops[p].name = xstrdup(sc->graph.node[p].qname);
        walk_loc(L->node[d], &sc->src[p].loc);
        sc->src[p].loc.file = xstrdup(sc->src[p].loc.file ? sc->src[p].loc.file : "");
        sc->src[p].path = xstrdup(L->draft.op[d].path);
        sc->src[p].node = L->node[d];
    }
    free(L->ops);
    L->ops = NULL;
}

static void load_workload(struct walk *w, const struct cfg_node *wl, struct cfg_scenario *sc)
{
    struct op_load L = {.w = w, .sc = sc};
    int before = diag_count(w->d);
    load_items(&L, wl, "workload", -1);
    int *order = xcalloc((size_t)L.draft.nops + 1, sizeof *order);
    if (diag_count(w->d) == before && graph_finish(&L.draft, &sc->graph, order, w->d) == 0)
        install_program(&L, order);
    for (int i = 0; L.ops && i < L.draft.nops; i++)
        op_fini(&L.ops[i]);
    free(L.ops);
    free(L.node);
    free(order);
    graph_draft_fini(&L.draft);
}

/* A mesh's devices folded into chips, its slices given to an axis, its axes
 * laid out on the slice. */
static int mesh_setup(const struct cfg_scenario *sc, struct mesh *m, char *err, size_t n)
{
    int dpc = sc->chip.megacore ? 1 : sc->chip.cores;
    if (mesh_fold_devices(m, cfg_total_chips(sc), dpc, err, n) != 0 ||
        mesh_place_slices(m, sc->topo.nchips, sc->dcn.slices, err, n) != 0)
        return -1;
    for (int i = 0; sc->dcn.slices <= 1 && i < m->naxes; i++)
        if (m->axis[i].dcn > 1) {
            return diag_fail(err, n,
                             "expected no axis over the DCN without topology.slices, got '%s' "
                             "with dcn: %d", m->axis[i].name, m->axis[i].dcn);
        }
    return mesh_layout(m, &sc->topo, err, n);
}

/* The top-level mesh: its axes laid out on the topology. */
static void load_mesh(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *m = cfg_get(root, "mesh");
    if (!m || cfg_load_mesh(w, m, "mesh", &sc->mesh) != 0)
        return;
    char err[256];
    if (mesh_setup(sc, &sc->mesh, err, sizeof err) != 0) {
        struct diag_loc loc;
        walk_loc(m, &loc);
        diag_error(w->d, &loc, "mesh", "%s", err);
        return;
    }
    sc->has_mesh = true;
}

/* A collective's groups: the mesh it uses, its axes by index, the group torus's dimensions. */
static void resolve_groups(struct walk *w, struct cfg_scenario *sc, int i)
{
    struct op_collective *c = &sc->ops[i].u.coll;
    const struct cfg_op_src *src = &sc->src[i];
    char err[256];
    if (!c->own_mesh && !sc->has_mesh) {
        diag_error(w->d, &src->loc, src->path, "groups: needs a mesh: a top-level mesh: or "
                   "groups: {mesh: {...}, axes: [...]}");
        return;
    }
    if (!c->own_mesh)
        c->mesh = sc->mesh;
    else if (mesh_setup(sc, &c->mesh, err, sizeof err) != 0) {
        diag_error(w->d, &src->loc, src->path, "groups.mesh: %s", err);
        return;
    }
    for (int k = 0; k < c->ngroup; k++) {
        c->group_axes[k] = mesh_axis_index(&c->mesh, c->group_names[k]);
        if (c->group_axes[k] < 0) {
            diag_error(w->d, &src->loc, src->path, "groups: the mesh has no axis '%s'",
                       c->group_names[k]);
            return;
        }
    }
    struct topo g;
    if (mesh_group(&c->mesh, &sc->topo, c->group_axes, c->ngroup, &g) != 0) {
        diag_error(w->d, &src->loc, src->path, "groups: the axes span more than %d physical "
                   "factors", TOPO_MAX_DIMS);
        return;
    }
    c->naxes = g.ndims;
    for (int a = 0; a < g.ndims; a++)
        c->axes[a] = a;
    c->dcn = mesh_axes_dcn(&c->mesh, c->group_axes, c->ngroup);
}

/* A collective across the slices (axes: [dcn, ...] or a group axis on the
 * DCN) needs slices, and runs hierarchically only as a reduction or a gather. */
static void check_dcn(struct walk *w, struct cfg_scenario *sc, int i)
{
    const struct op *op = &sc->ops[i];
    const struct cfg_op_src *src = &sc->src[i];
    const struct cfg_node *ax = cfg_get(src->node, "axes");
    const struct cfg_node *at = ax ? ax : src->node;
    char *p = walk_join(src->path, ax ? "axes" : "groups");
    if (sc->dcn.slices <= 1 && !op->u.coll.grouped)
        walk_type_error(w, at, p, "physical axes without dcn (dcn needs topology.slices > 1)");
    else if (op->kind == OP_ALL_TO_ALL)
        walk_type_error(w, at, p, "axes within a slice (an all_to_all does not run over the DCN)");
    free(p);
}

static void check_semantics(struct walk *w, struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        if ((op_row(sc->ops[i].kind)->reach == coll_reach ||
             sc->ops[i].kind == OP_COLLECTIVE_MATMUL) && sc->ops[i].u.coll.grouped)
            resolve_groups(w, sc, i);
    for (int i = 0; i < sc->nops; i++)
        if (op_row(sc->ops[i].kind)->reach == coll_reach && sc->ops[i].u.coll.dcn)
            check_dcn(w, sc, i);
    for (int i = 0; i < sc->nops; i++)
        if (op_row(sc->ops[i].kind)->reach == coll_reach && sc->ops[i].u.coll.nreplica)
            cfg_check_replica_groups(w, cfg_get(sc->src[i].node, "replica_groups"),
                                     sc->src[i].path, &sc->ops[i].u.coll, sc->topo.nchips);
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        const struct cfg_node *m = sc->src[i].node;
        const char *p = sc->src[i].path;
        if (op->kind == OP_PPERMUTE && op->u.ppermute.axis >= sc->topo.ndims) {
            char want[96];
            snprintf(want, sizeof want, "an axis below %d (the topology has %d)", sc->topo.ndims,
                     sc->topo.ndims);
            const struct cfg_node *a = cfg_get(m, "axis");
            char *ap = walk_join(p, "axis");
            walk_type_error(w, a ? a : m, ap, want);
            free(ap);
        }
        if (op->vmem_limit_bytes > sc->chip.vmem_bytes) {
            const struct cfg_node *a = cfg_get(m, "vmem_limit_bytes");
            char *ap = walk_join(p, "vmem_limit_bytes");
            char want[96];
            snprintf(want, sizeof want, "at most the chip's VMEM (%llu bytes)",
                     (unsigned long long)sc->chip.vmem_bytes);
            walk_type_error(w, a, ap, want);
            free(ap);
        }
    }
}

/* ---------------- xla_flags: what reaches the program ---------------- */

/* The async flags set to false act on a program's collectives: those of a
 * model: or program: run, whose schedule tpusim derives (workload/schedule.h);
 * a workload: states its own waits (after:), a serve: run is refused. */
static void check_xla_sync(struct walk *w, const struct cfg_node *root,
                           const struct cfg_scenario *sc)
{
    if (!sc->xla.nsync || cfg_get(root, "model") || cfg_get(root, "program"))
        return;
    struct diag_loc loc;
    walk_loc(cfg_get(root, "xla_flags"), &loc);
    diag_error(w->d, &loc, "xla_flags",
               "expected a model: or program: run for an async flag set to false (%s "
               "synchronous), got a %s: run (%s)",
               sc->xla.sync[0], cfg_get(root, "serve") ? "serve" : "workload",
               cfg_get(root, "serve") ? "its engine steps keep the model's schedule"
                                      : "its ops' after: waits say what overlaps");
}

/* Makes the collectives xla_flags: turned synchronous so and schedules 'p' again. */
static int sync_program(struct walk *w, const struct diag_loc *loc, struct program *p,
                        const struct cfg_scenario *sc)
{
    char err[256];
    if (sc->xla.nsync && sched_sync_kinds(p, sc->xla.sync, err, sizeof err) < 0) {
        diag_error(w->d, loc, "xla_flags", "%s", err);
        return -1;
    }
    return 0;
}

/* The model's program as workload YAML, with xla_flags: applied. */
static char *model_yaml(struct walk *w, const struct diag_loc *loc, const struct model_step *ms,
                        const struct cfg_scenario *sc)
{
    if (!sc->xla.nsync)
        return model_workload_yaml(&ms->m, &ms->shard, &sc->chip);
    struct program *p = model_program(&ms->m, &ms->shard, &sc->chip);
    char *yaml = sync_program(w, loc, p, sc) == 0 ? prog_yaml(p) : xstrdup("[]");
    prog_free(p);
    return yaml;
}

char *cfg_model_workload_yaml(const struct cfg_scenario *sc, struct diag *d)
{
    struct walk w = {.d = d, .chip = &sc->chip};
    return model_yaml(&w, NULL, sc->model, sc);
}

/* model: -> the workload it expands into (a tree of the generated YAML),
 * after the mesh (default: fsdp over every chip, as MaxText's -1) and the HBM
 * are checked. */
static struct cfg_node *expand_model(struct walk *w, const struct cfg_node *root,
                                     const struct cfg_node *mn, struct cfg_scenario *sc)
{
    struct diag_loc loc;
    walk_loc(mn, &loc);
    if (cfg_get(root, "workload")) {
        diag_error(w->d, &loc, "model", "a scenario has a model: or a workload:, not both");
        return NULL;
    }
    struct model_step *ms = sc->model = xcalloc(1, sizeof *sc->model);
    if (cfg_load_model(w, mn, &ms->m) != 0)
        return NULL;
    if (!sc->has_mesh) { /* MaxText's defaults: ici_fsdp -1, dcn_data -1 */
        sc->mesh = (struct mesh){.naxes = 1};
        snprintf(sc->mesh.axis[0].name, MESH_NAME_MAX, "fsdp");
        sc->mesh.axis[0].size = sc->topo.nchips;
        if (sc->dcn.slices > 1) {
            sc->mesh.naxes = 2;
            sc->mesh.axis[1] = sc->mesh.axis[0];
            sc->mesh.axis[0] = (struct mesh_axis){.size = sc->dcn.slices, .dcn = sc->dcn.slices};
            snprintf(sc->mesh.axis[0].name, MESH_NAME_MAX, "data");
        }
        char err[256];
        if (mesh_layout(&sc->mesh, &sc->topo, err, sizeof err) != 0)
            diag_error(w->d, &loc, "mesh", "%s", err);
        sc->has_mesh = true;
    }
    char err[512];
    if (model_shard(&ms->m, &sc->mesh, &sc->topo, &sc->chip, &ms->shard, err, sizeof err) != 0) {
        diag_error(w->d, &loc, "model", "%s", err);
        return NULL;
    }
    model_memory(&ms->m, &ms->shard, &sc->chip, &ms->mem);
    if (ms->mem.total > ms->mem.capacity) {
        model_oom_message(&ms->mem, err, sizeof err);
        diag_error(w->d, &loc, "model", "%s", err);
        return NULL;
    }
    ms->flops_per_device = model_flops_per_device(&ms->m, &ms->shard);
    int cores = sc->chip.megacore ? sc->chip.cores : 1;
    /* an int8 model's MFU against the int8 peak; a quantized one's against its matmuls' */
    ms->peak_dtype = model_dense_dtype(&ms->m);
    ms->peak_per_device = sc->chip.peak_flops[ms->peak_dtype] * cores;
    char *yaml = model_yaml(w, &loc, ms, sc);
    char *file = xasprintf("%s (model expansion)", loc.file ? loc.file : "model");
    struct cfg_node *wl = cfg_parse(yaml, strlen(yaml), file, w->d);
    free(file);
    free(yaml);
    return wl;
}

/* ---------------- serve: ---------------- */

static void serve_put_int(struct cfg_node *t, const struct cfg_node *at, const char *key,
                          int64_t v)
{
    struct cfg_node *n = cfg_node_new(CFG_SCALAR, at->file, at->line, at->col);
    n->value = xasprintf("%lld", (long long)v);
    cfg_put(t, key, n);
}

/* The model of serve.model as a decode step of engine.max_num_seqs sequences
 * (the base scenario every engine step is built from). */
static struct cfg_node *serve_model_tree(struct walk *w, const struct cfg_node *sv,
                                         const struct cfg_node *mn, const struct serve_cfg *c,
                                         const char *path)
{
    static const char *const engine_keys[] = {"mode", "batch", "seq_len", "kv_len", "page_size",
                                              NULL};
    for (int i = 0; engine_keys[i]; i++)
        if (cfg_get(mn, engine_keys[i])) {
            char *p = xasprintf("%s.%s", path, engine_keys[i]);
            walk_type_error(w, cfg_get(mn, engine_keys[i]), p,
                            "no step shape (the engine forms each step's batch)");
            free(p);
        }
    static const char *const by_engine[] = {"attention_kernel", "kv_cache_dtype", NULL};
    for (int i = 0; by_engine[i]; i++)
        if (cfg_get(mn, by_engine[i])) {
            char *p = xasprintf("%s.%s", path, by_engine[i]), *want = xasprintf(
                "no %s (serve.engine.%s chooses it)", by_engine[i], by_engine[i]);
            walk_type_error(w, cfg_get(mn, by_engine[i]), p, want);
            free(p);
            free(want);
        }
    struct cfg_node *t = cfg_copy(mn);
    const struct cfg_node *e = c->kv_int8 ? cfg_get(sv, "engine") : NULL;
    const struct cfg_node *at = e && cfg_get(e, "kv_cache_dtype") ? cfg_get(e, "kv_cache_dtype")
                                                                   : mn;
    struct cfg_node *ak = cfg_node_new(CFG_SCALAR, mn->file, mn->line, mn->col);
    ak->value = xstrdup(c->rpa_v3 ? "rpa_v3" : "rpa_v2");
    cfg_put(t, "attention_kernel", ak);
    if (c->kv_int8) { /* errors point at serve.engine.kv_cache_dtype */
        struct cfg_node *kd = cfg_node_new(CFG_SCALAR, at->file, at->line, at->col);
        kd->value = xstrdup("int8");
        cfg_put(t, "kv_cache_dtype", kd);
    }
    char buf[32];
    static const char *const keys[] = {"mode", "batch", "kv_len", "page_size"};
    int64_t vals[] = {0, c->max_num_seqs, c->page_size, c->page_size};
    for (int i = 0; i < 4; i++) {
        struct cfg_node *v = cfg_node_new(CFG_SCALAR, mn->file, mn->line, mn->col);
        snprintf(buf, sizeof buf, "%lld", (long long)vals[i]);
        v->value = xstrdup(i == 0 ? "decode" : buf);
        cfg_put(t, keys[i], v);
    }
    return t;
}

/* The KV cache: what hbm_fraction of the usable HBM leaves after the weights,
 * in pages; at least one request of input_len + output_len tokens. */
static void serve_kv_pages(struct walk *w, const struct cfg_node *sv, struct cfg_scenario *sc)
{
    struct serve_cfg *c = sc->serve;
    const struct model_step *ms = sc->model;
    const struct model *m = &ms->m;
    c->kv_bytes_per_token = 2.0 * (double)m->layers * (double)ms->shard.kv_heads *
                            (double)m->head_dim * (double)dtype_bytes(model_kv_dtype(m)) *
                            ms->shard.dev_per_chip;
    double free_b = ms->mem.capacity * c->hbm_fraction - ms->mem.params;
    if (c->draft) { /* its weights beside the target's, its KV cache beside each sequence's */
        struct model_shard dsh;
        struct model_memory dmem;
        char err[256];
        if (model_shard(c->draft, &sc->mesh, &sc->topo, &sc->chip, &dsh, err, sizeof err) != 0) {
            walk_type_error(w, cfg_get(cfg_get(cfg_get(sv, "engine"), "speculative_config"),
                                       "model"), "serve.engine.speculative_config.model", err);
            return;
        }
        model_memory(c->draft, &dsh, &sc->chip, &dmem);
        free_b -= dmem.params;
        c->kv_bytes_per_token += 2.0 * (double)c->draft->layers * (double)dsh.kv_heads *
                                 (double)c->draft->head_dim *
                                 (double)dtype_bytes(model_kv_dtype(c->draft)) * dsh.dev_per_chip;
    }
    double pages = free_b > 0 ? floor(free_b / (c->kv_bytes_per_token * (double)c->page_size)) : 0;
    c->kv_pages = pages > 1e12 ? (int64_t)1e12 : (int64_t)pages;
    int64_t need = (c->input_len + c->output_len + c->page_size - 1) / c->page_size;
    if (c->jetstream) { /* a dense cache: every slot of a data group holds max_model_len */
        int64_t slot = (c->max_model_len + c->page_size - 1) / c->page_size;
        if (c->kv_pages >= slot * (c->max_num_seqs / c->replicas)) {
            c->kv_pages = slot * c->max_num_seqs; /* the engine's, over the groups */
            return;
        }
        const struct cfg_node *e = cfg_get(sv, "engine");
        char want[256];
        snprintf(want, sizeof want, "a dense KV cache of %lld slots x %lld tokens that fits (%.3g "
                 "GiB a chip with scheduler: jetstream; %.3g GiB of HBM after the weights)",
                 (long long)(c->max_num_seqs / c->replicas), (long long)c->max_model_len,
                 c->kv_bytes_per_token * (double)(c->max_num_seqs / c->replicas) *
                     (double)c->max_model_len / 1073741824.0,
                 free_b / 1073741824.0);
        walk_type_error(w, e ? e : sv, "serve.engine", want);
        return;
    }
    if (c->kv_pages < need) {
        const struct cfg_node *e = cfg_get(sv, "engine");
        const struct cfg_node *kv = e ? cfg_get(e, "kv_cache") : NULL;
        char want[256];
        snprintf(want, sizeof want,
                 "a KV cache of at least %lld pages of %lld tokens (one request of %lld tokens); "
                 "%.3g GiB of HBM after the weights holds %lld",
                 (long long)need, (long long)c->page_size,
                 (long long)(c->input_len + c->output_len), free_b / 1073741824.0,
                 (long long)c->kv_pages);
        walk_type_error(w, kv ? kv : e ? e : sv, kv ? "serve.engine.kv_cache" : "serve.engine",
                        want);
    }
}

/* serve.engine.speculative_config.model: the draft, read as serve.model is;
 * it shares the target's tokenizer (the same vocabulary, as vLLM requires). */
static void serve_draft(struct walk *w, const struct cfg_node *sv, struct cfg_scenario *sc)
{
    struct serve_cfg *c = sc->serve;
    const char *path = "serve.engine.speculative_config.model";
    const struct cfg_node *dn = cfg_get(cfg_get(cfg_get(sv, "engine"), "speculative_config"),
                                        "model");
    struct cfg_node *t = serve_model_tree(w, sv, dn, c, path);
    c->draft = xcalloc(1, sizeof *c->draft);
    int rc = diag_count(w->d) ? -1 : cfg_load_model(w, t, c->draft);
    cfg_copy_reads(dn, t);
    cfg_node_free(t);
    if (rc == 0 && c->draft->vocab != sc->model->m.vocab) {
        char want[160];
        snprintf(want, sizeof want, "a draft model with the target's vocabulary (%lld tokens; "
                 "this one has %lld)", (long long)sc->model->m.vocab, (long long)c->draft->vocab);
        walk_type_error(w, dn, path, want);
    }
}

/* serve.disaggregation over the DCN: two slices, the prefill engines on one. */
static bool serve_disagg_dcn(const struct serve_cfg *c)
{
    return c->prefill_engines && c->kv_transfer == SERVE_KV_DCN;
}

/* serve.disaggregation: its engines are serve.mesh's data replicas; over the
 * ICI one slice, over the DCN two, the prefill engines filling one. */
static void serve_disagg_check(struct walk *w, const struct cfg_node *sv, struct cfg_scenario *sc)
{
    const struct serve_cfg *c = sc->serve;
    const struct cfg_node *dg = cfg_get(sv, "disaggregation");
    if (!c->prefill_engines)
        return;
    char want[96];
    if (c->prefill_engines + c->decode_engines != c->replicas) {
        snprintf(want, sizeof want, "prefill + decode = %d engines (serve.mesh's data "
                 "replicas)", c->replicas);
        walk_type_error(w, dg, "serve.disaggregation", want);
    } else if (c->kv_transfer == SERVE_KV_DCN && sc->dcn.slices != 2) {
        walk_type_error(w, cfg_get(dg, "kv_transfer"), "serve.disaggregation.kv_transfer",
                        "ici on one slice (dcn needs topology.slices: 2, the prefill engines on "
                        "one, the decode engines on the other)");
    } else if (c->kv_transfer == SERVE_KV_DCN && c->prefill_engines != c->decode_engines) {
        walk_type_error(w, dg, "serve.disaggregation",
                        "as many prefill as decode engines over the DCN (one slice each)");
    } /* ici over two slices: refused as any serve: over slices */
}

/* The KV transfer's link (docs/reference.md, "Prefill/decode disaggregation"):
 * over the ICI each chip of a prefill engine sends its share to its
 * counterpart in a decode engine over one link (the chip's ICI bandwidth one
 * direction, at the achieved efficiency), after a collective's fixed cost and
 * a hop; over the DCN a host's chips share its NICs and the transfer pays the
 * DCN's one-way latency. */
static void serve_disagg_link(struct cfg_scenario *sc)
{
    struct serve_cfg *c = sc->serve;
    const struct chip_params *ch = &sc->chip;
    if (c->kv_transfer == SERVE_KV_ICI) {
        c->kv_transfer_lat_s = ch->ici_collective_lat_s + ch->ici_hop_lat_s;
        c->kv_transfer_Bps = ch->ici_bw_Bps * ch->ici_efficiency;
        return;
    }
    int engine_chips = cfg_total_chips(sc) / c->replicas;
    int sharing = engine_chips < sc->dcn.chips_per_host ? engine_chips : sc->dcn.chips_per_host;
    c->kv_transfer_lat_s = sc->dcn.lat_s;
    c->kv_transfer_Bps = sc->dcn.nic_Bps / (sharing > 0 ? sharing : 1);
}

/* serve: the engine's section, its model expanded as a decode step (the base
 * every engine step is built from), its mesh, its KV cache. */
static struct cfg_node *serve_section(struct walk *w, const struct cfg_node *root,
                                      struct cfg_scenario *sc)
{
    const struct cfg_node *sv = cfg_get(root, "serve");
    static const char *const top[] = {"model", "mesh", "workload"};
    for (int i = 0; i < 3; i++)
        if (cfg_get(root, top[i]))
            walk_type_error(w, cfg_get(root, top[i]), top[i],
                            "no top-level model, mesh or workload beside serve: (serve.model and "
                            "serve.mesh)");
    sc->serve = xcalloc(1, sizeof *sc->serve);
    if (cfg_load_serve(w, sv, sc->file, sc->serve) != 0 || diag_count(w->d))
        return NULL;
    const struct cfg_node *mesh = cfg_get(sv, "mesh"), *mn = cfg_get(sv, "model");
    char err[256];
    if (sc->dcn.slices > 1 && !serve_disagg_dcn(sc->serve))
        walk_type_error(w, cfg_get(cfg_get(root, "topology"), "slices"), "topology.slices",
                        "one slice under serve: (replicas over slices are not modelled yet)");
    if (!mesh) { /* vLLM TPU's tensor_parallel_size over the slice */
        sc->mesh = (struct mesh){.naxes = 1};
        snprintf(sc->mesh.axis[0].name, MESH_NAME_MAX, "tensor");
        sc->mesh.axis[0].size = sc->topo.nchips;
        if (mesh_layout(&sc->mesh, &sc->topo, err, sizeof err) != 0) {
            struct diag_loc loc;
            walk_loc(sv, &loc);
            diag_error(w->d, &loc, "serve.mesh", "%s", err);
        }
        sc->has_mesh = true;
    } else if (cfg_load_mesh(w, mesh, "serve.mesh", &sc->mesh) == 0) {
        for (int i = 0; i < sc->mesh.naxes; i++) {
            const struct mesh_axis *a = &sc->mesh.axis[i];
            if (strcmp(a->name, "tensor") && strcmp(a->name, "data") && a->size > 1) {
                /* each step's batch would be split over the axis: the run failed after
                 * `check` said ok (a decode of one sequence is not divisible by 2) */
                char want[200];
                snprintf(want, sizeof want, "replicas over data and each engine's tensor "
                         "parallelism, {data: N, tensor: T} (%s: %d would split each step's "
                         "batch)", a->name, a->size);
                walk_type_error(w, mesh, "serve.mesh", want);
                return NULL;
            }
            if (strcmp(a->name, "data") == 0) /* engines behind the router */
                sc->serve->replicas = a->size;
        }
        if (mesh_setup(sc, &sc->mesh, err, sizeof err) != 0) {
            struct diag_loc loc;
            walk_loc(mesh, &loc);
            diag_error(w->d, &loc, "serve.mesh", "%s", err);
        }
        sc->has_mesh = true;
    }
    if (diag_count(w->d) == 0)
        serve_disagg_check(w, sv, sc);
    if (diag_count(w->d))
        return NULL;
    struct cfg_node *mt = serve_model_tree(w, sv, mn, sc->serve, "serve.model");
    if (sc->serve->replicas > 1 && !sc->serve->jetstream) /* each data group steps a batch */
        serve_put_int(mt, mn, "batch", sc->serve->max_num_seqs * sc->serve->replicas);
    if (sc->serve->jetstream && sc->serve->max_num_seqs % sc->serve->replicas) {
        char want[128]; /* shard_on_batch: the slots split evenly over the data groups */
        snprintf(want, sizeof want, "a multiple of serve.mesh data = %d with scheduler: "
                 "jetstream (its slots are sharded on the batch)", sc->serve->replicas);
        walk_type_error(w, cfg_get(cfg_get(sv, "engine"), "max_num_seqs"),
                        "serve.engine.max_num_seqs", want);
    }
    struct cfg_node *wl = diag_count(w->d) ? NULL : expand_model(w, root, mt, sc);
    cfg_copy_reads(mn, mt);
    cfg_node_free(mt);
    const struct model_shard *sh = wl ? &sc->model->shard : NULL;
    if (wl && diag_count(w->d) == 0 && sh->dev_per_chip > sh->tensor_dev) {
        char want[200];
        snprintf(want, sizeof want, "a chip that is one JAX device (a %s chip is %d: each would "
                 "run its own engine), or serve.mesh tensor over the devices (tensor: %d on "
                 "%d chips)", sc->chip.name, sh->dev_per_chip,
                 sh->dev_per_chip * sc->topo.nchips, sc->topo.nchips);
        walk_type_error(w, cfg_get(root, "chip"), "chip", want);
    }
    if (wl && sc->serve->jetstream) /* JetStream-PyTorch shards a tied table on its hidden axis */
        sc->model->m.logits_hidden_sharded = sc->model->m.tied_embeddings;
    if (wl && diag_count(w->d) == 0 && sc->serve->spec_tokens)
        serve_draft(w, sv, sc);
    if (wl && diag_count(w->d) == 0)
        serve_kv_pages(w, sv, sc);
    if (wl && diag_count(w->d) == 0 && sc->serve->prefill_engines)
        serve_disagg_link(sc);
    return wl;
}

int cfg_serve_step(const struct cfg_scenario *base, const struct model *m,
                   struct cfg_scenario *sc, struct diag *d)
{
    *sc = *base;
    sc->name = xstrdup(base->name);
    sc->file = xstrdup(base->file ? base->file : "");
    sc->ops = NULL, sc->src = NULL, sc->nops = 0, sc->plan.tuned = NULL, sc->serve = NULL;
    memset(&sc->graph, 0, sizeof sc->graph);
    struct model_step *ms = sc->model = xcalloc(1, sizeof *sc->model);
    ms->m = *m;
    char err[512];
    if (model_shard(&ms->m, &sc->mesh, &sc->topo, &sc->chip, &ms->shard, err, sizeof err) != 0) {
        diag_error(d, NULL, "serve", "%s", err);
        cfg_scenario_fini(sc);
        return -1;
    }
    model_memory(&ms->m, &ms->shard, &sc->chip, &ms->mem);
    ms->flops_per_device = model_flops_per_device(&ms->m, &ms->shard);
    int cores = sc->chip.megacore ? sc->chip.cores : 1;
    ms->peak_per_device = sc->chip.peak_flops[DT_BF16] * cores;
    char *yaml = model_workload_yaml(&ms->m, &ms->shard, &sc->chip);
    struct cfg_node *wl = cfg_parse(yaml, strlen(yaml), "serve (engine step)", d);
    free(yaml);
    struct walk w = {.d = d, .chip = &sc->chip};
    if (wl)
        load_workload(&w, wl, sc);
    if (diag_count(d) == 0)
        check_semantics(&w, sc);
    cfg_node_free(wl);
    if (diag_count(d) == 0)
        return 0;
    cfg_scenario_fini(sc);
    return -1;
}


/* program.hlo's path: relative to the scenario's directory. */
static char *hlo_path(const struct cfg_scenario *sc, const char *path)
{
    const char *slash = sc->file ? strrchr(sc->file, '/') : NULL;
    if (path[0] == '/' || !slash || strcmp(sc->file, CFG_STDIN_NAME) == 0)
        return xstrdup(path);
    return xasprintf("%.*s/%s", (int)(slash - sc->file), sc->file, path);
}

/* The HLO module's devices against the slice's chips. */
static bool hlo_fits(struct walk *w, const struct diag_loc *loc, const struct hlo_module *m,
                     const struct cfg_scenario *sc)
{
    int64_t chips = (int64_t)sc->topo.nchips * (sc->dcn.slices > 1 ? sc->dcn.slices : 1);
    if (hlo_devices(m) != chips && sc->dcn.slices > 1) {
        diag_error(w->d, loc, "program.hlo", "expected a program for the %lld chips of %d "
                   "slices of %d, got %lld devices (num_partitions=%lld x replica_count=%lld)",
                   (long long)chips, sc->dcn.slices, sc->topo.nchips, (long long)hlo_devices(m),
                   (long long)m->num_partitions, (long long)m->replica_count);
        return false;
    }
    if (hlo_devices(m) != chips) {
        diag_error(w->d, loc, "program.hlo", "expected a program for the slice's %d chips, got "
                   "%lld devices (num_partitions=%lld x replica_count=%lld)", sc->topo.nchips,
                   (long long)hlo_devices(m), (long long)m->num_partitions,
                   (long long)m->replica_count);
        return false;
    }
    return true;
}

/* The program's peak memory per device against the chip's usable HBM (as
 * model: decides it, workload/model.c: hbm.usable, else 96.75 % of the HBM);
 * refused above it with XLA's words. */
static bool hlo_fits_memory(struct walk *w, const struct diag_loc *loc,
                            const struct hlo_module *m, const struct cfg_scenario *sc,
                            struct hlo_report *rep)
{
    hlo_memory(m, rep);
    double cap = sc->chip.hbm_usable_bytes > 0 ? (double)sc->chip.hbm_usable_bytes
                                               : (double)sc->chip.hbm_bytes * 0.9675;
    if (rep->peak_bytes <= cap)
        return true;
    const double g = 1073741824.0;
    const struct hlo_instr *at = rep->peak_at;
    diag_error(w->d, loc, "program.hlo", "Ran out of memory in memory space hbm. Used %.2fG "
               "of %.2fG hbm. Exceeded hbm capacity by %.2fG (parameters %.2fG, the most "
               "temporaries live at once %.2fG, at %s, %s:%d)", rep->peak_bytes / g, cap / g,
               (rep->peak_bytes - cap) / g, rep->parameter_bytes / g, rep->temp_peak_bytes / g,
               at ? at->name : "?", m->file, at ? at->line : 0);
    return false;
}

/* program: {hlo: PATH, device_order: ...} -> the workload the HLO module
 * lowers to (workload/hlo.h); device d runs on chip d of the slices, or on
 * the chip device_order gives it (config/cfg_device_order.c). */
static struct cfg_node *expand_program(struct walk *w, const struct cfg_node *root,
                                       struct cfg_scenario *sc)
{
    const struct cfg_node *pn = cfg_get(root, "program");
    struct diag_loc loc;
    walk_loc(pn, &loc);
    if (cfg_get(root, "workload") || cfg_get(root, "model") || cfg_get(root, "serve")) {
        diag_error(w->d, &loc, "program",
                   "a scenario has one of program:, model:, serve: or workload:");
        return NULL;
    }
    if (!walk_is_map(w, pn, "program"))
        return NULL;
    static const char *const keys[] = {"hlo", "device_order", NULL};
    walk_check_keys(w, pn, "program", keys);
    const struct cfg_node *hn = walk_field(w, pn, "program", "hlo", true);
    if (!hn || hn->type != CFG_SCALAR || !hn->value[0]) {
        if (hn)
            walk_type_error(w, hn, "program.hlo", "the path of an HLO text file");
        return NULL;
    }
    char *path = hlo_path(sc, hn->value);
    struct hlo_module *m = hlo_parse_file(path, HLO_MAX_FILE_BYTES, w->d);
    struct cfg_node *wl = NULL;
    struct hlo_report rep;
    int *chip_of = NULL;
    const struct cfg_node *order = walk_field(w, pn, "program", "device_order", false);
    struct program *p =
        m && hlo_fits(w, &loc, m, sc) &&
                cfg_load_device_order(w, order, &sc->chip, &sc->topo, sc->dcn.slices, &chip_of) == 0
            ? hlo_program_ordered(m, &sc->topo, chip_of, w->d, stderr, &rep)
            : NULL;
    free(chip_of);
    if (p && (!hlo_fits_memory(w, &loc, m, sc, &rep) || sync_program(w, &loc, p, sc) != 0)) {
        prog_free(p);
        p = NULL;
    }
    if (p) {
        free(sc->program_json);
        sc->program_json = hlo_report_json(m, p, &rep);
        char *yaml = prog_yaml(p);
        char *file = xasprintf("%s (HLO program)", path);
        wl = cfg_parse(yaml, strlen(yaml), file, w->d);
        free(file);
        free(yaml);
        prog_free(p);
    }
    hlo_free(m);
    free(path);
    return wl;
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
    cfg_forget_reads(root);
    struct walk w = {.d = d};
    if (diag_count(d) == 0 && walk_is_map(&w, root, "scenario")) {
        static const char *const keys[] = {"name", "chip",     "topology", "options",
                                           "mesh", "workload", "model",    "serve",
                                           "program", "cost", "train", "faults", "goodput",
                                           "xla_flags", NULL};
        walk_check_keys(&w, root, "", keys);
        const struct cfg_node *nm = cfg_get(root, "name");
        bool named = nm && nm->type == CFG_SCALAR && walk_name_ok(nm->value);
        if (nm && !named) /* it names a directory under out/ */
            walk_type_error(&w, nm, "name", WALK_NAME_RULE);
        sc->name = named ? xstrdup(nm->value) : base_name(path);
        cfg_chip_load(&w, root, &sc->chip);
        w.chip = &sc->chip;
        cfg_load_xla_flags(&w, root, &sc->chip, &sc->xla);
        w.xla = &sc->xla;
        check_xla_sync(&w, root, sc);
        load_topology(&w, root, sc);
        load_options(&w, root, sc);
        cfg_load_faults(&w, root, &sc->topo, sc->dcn.slices, &sc->faults);
        load_mesh(&w, root, sc);
        struct cfg_node *expanded = NULL;
        const struct cfg_node *wl = NULL;
        if (cfg_get(root, "program") && diag_count(d) == 0)
            wl = expanded = expand_program(&w, root, sc);
        else if (cfg_get(root, "serve"))
            wl = expanded = serve_section(&w, root, sc);
        else if (cfg_get(root, "model") && diag_count(d) == 0)
            wl = expanded = expand_model(&w, root, cfg_get(root, "model"), sc);
        else if (!cfg_get(root, "model") && !cfg_get(root, "program"))
            wl = walk_field(&w, root, "", "workload", true);
        if (wl)
            load_workload(&w, wl, sc);
        if (diag_count(d) == 0) /* its checks point into the ops' nodes: before the free */
            check_semantics(&w, sc);
        if (diag_count(d) == 0) {
            cfg_load_cost(&w, root, sc);
            cfg_load_train(&w, root, sc);
            cfg_goodput_from_train(&w, root, sc);
        }
        cfg_node_free(expanded);
        if (diag_count(d) == 0)
            walk_check_unread(&w, root, "");
        sc->plan.sim = sc->topo; /* every chip, until the engine folds it (engine/spmd.h) */
        sc->plan.sim_mult = 1;
        sc->plan.sim_dirs = 0;
        sc->plan.sim_slices = 0; /* every slice, likewise */
    }
    cfg_node_free(root);
    if (diag_count(d) == 0)
        return 0;
    cfg_scenario_fini(sc);
    return -1;
}

int cfg_load_scenario(const char *path, const char *const *sets, int nsets, struct cfg_scenario *sc,
                      struct diag *d)
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

int cfg_load_scenario_text(const char *text, size_t len, const char *file, const char *const *sets,
                           int nsets, struct cfg_scenario *sc, struct diag *d)
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

bool cfg_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n >= 1 && n <= 64 &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:") == n;
}

void cfg_scenario_fini(struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++) {
        op_fini(&sc->ops[i]);
        free((char *)sc->src[i].loc.file);
        free(sc->src[i].path);
    }
    free(sc->ops);
    free(sc->src);
    free(sc->plan.tuned);
    free(sc->model);
    if (sc->serve)
        cfg_serve_fini(sc->serve);
    free(sc->serve);
    graph_fini(&sc->graph);
    free(sc->name);
    free(sc->program_json);
    free(sc->file);
    memset(sc, 0, sizeof *sc);
}

bool cfg_uses_kind(const struct cfg_scenario *sc, enum op_kind kind)
{
    for (int i = 0; i < sc->nops; i++)
        if (sc->ops[i].kind == kind)
            return true;
    return false;
}
