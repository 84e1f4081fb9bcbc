/* sim/cfg_schema.c -- checks a scenario tree and fills struct cfg_scenario.
 * Each section lists its keys; unknown keys are errors with a did-you-mean;
 * values are type-, unit- and range-checked with the node's mark. All errors
 * are collected before the caller gives up. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cfg.h"
#include "sim/cfg_node.h"
#include "sim/units.h"
#include "sim/xalloc.h"

struct walk {
    struct diag *d;
};

static void where(const struct cfg_node *n, struct diag_loc *loc)
{
    loc->file = n->file;
    loc->line = n->line;
    loc->col = n->col;
}

static char *join(const char *path, const char *key)
{
    return *path ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            prev = cur;
        }
    }
    return row[lb];
}

/* Reports every key of map 'm' that is not in 'allowed'. */
static void check_keys(struct walk *w, const struct cfg_node *m, const char *path,
                       const char *const *allowed)
{
    for (int i = 0; i < m->n; i++) {
        const char *best = NULL;
        int best_d = 3, found = 0;
        for (const char *const *a = allowed; *a && !found; a++) {
            found = strcmp(*a, m->keys[i]) == 0;
            int dist = edit_distance(*a, m->keys[i]);
            if (dist < best_d)
                best_d = dist, best = *a;
        }
        if (found)
            continue;
        struct diag_loc loc = {m->file, m->key_line[i], m->key_col[i]};
        if (best)
            diag_error(w->d, &loc, path, "unknown key '%s' (did you mean '%s'?)", m->keys[i], best);
        else
            diag_error(w->d, &loc, path, "unknown key '%s'", m->keys[i]);
    }
}

static const char *got(const struct cfg_node *n)
{
    return n->type == CFG_SEQ ? "a sequence" : n->type == CFG_MAP ? "a mapping" : n->value;
}

static void type_err(struct walk *w, const struct cfg_node *n, const char *path, const char *what)
{
    struct diag_loc loc;
    where(n, &loc);
    if (n->type == CFG_SCALAR)
        diag_error(w->d, &loc, path, "expected %s, got '%s'", what, n->value);
    else
        diag_error(w->d, &loc, path, "expected %s, got %s", what, got(n));
}

static bool is_map(struct walk *w, const struct cfg_node *n, const char *path)
{
    if (n->type == CFG_MAP)
        return true;
    type_err(w, n, path, "a mapping");
    return false;
}

/* Fetches map[key]; reports it missing when 'required'. */
static const struct cfg_node *field(struct walk *w, const struct cfg_node *m, const char *path,
                                    const char *key, bool required)
{
    const struct cfg_node *n = cfg_get(m, key);
    if (!n && required) {
        struct diag_loc loc;
        where(m, &loc);
        diag_error(w->d, &loc, path, "missing required key '%s'", key);
    }
    return n;
}

static int get_int(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   bool required, int64_t min, int64_t max, int64_t *out)
{
    const struct cfg_node *n = field(w, m, path, key, required);
    if (!n)
        return required ? -1 : 0;
    char *p = join(path, key);
    char *end = NULL;
    long long v = 0;
    int rc = -1;
    if (n->type == CFG_SCALAR && !n->quoted) {
        errno = 0;
        v = strtoll(n->value, &end, 10);
    }
    if (!end || end == n->value || *end || errno) {
        char what[64];
        snprintf(what, sizeof what, min > 0 ? "a positive integer" : "an integer");
        type_err(w, n, p, what);
    } else if (v < min || v > max) {
        char want[96];
        if (max == INT64_MAX)
            snprintf(want, sizeof want, "an integer >= %lld", (long long)min);
        else
            snprintf(want, sizeof want, "an integer in [%lld, %lld]", (long long)min,
                     (long long)max);
        type_err(w, n, p, want);
    } else {
        *out = v;
        rc = 0;
    }
    free(p);
    return rc;
}

static int get_i(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                 bool required, int64_t min, int64_t max, int *out)
{
    int64_t v = *out;
    int rc = get_int(w, m, path, key, required, min, max, &v);
    *out = (int)v;
    return rc;
}

static int get_bool(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                    bool *out)
{
    const struct cfg_node *n = field(w, m, path, key, false);
    if (!n)
        return 0;
    static const char *const t[] = {"true", "True", "yes", "on", NULL};
    static const char *const f[] = {"false", "False", "no", "off", NULL};
    if (n->type == CFG_SCALAR && !n->quoted) {
        for (int i = 0; t[i]; i++) {
            if (strcmp(n->value, t[i]) == 0) {
                *out = true;
                return 0;
            }
            if (strcmp(n->value, f[i]) == 0) {
                *out = false;
                return 0;
            }
        }
    }
    char *p = join(path, key);
    type_err(w, n, p, "true or false");
    free(p);
    return -1;
}

/* A quantity with a unit, > 0 unless 'zero_ok'. */
static int get_qty(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                   bool required, enum units_kind kind, bool zero_ok, double *out)
{
    const struct cfg_node *n = field(w, m, path, key, required);
    if (!n)
        return required ? -1 : 0;
    char *p = join(path, key);
    double v;
    int rc = -1;
    if (n->type != CFG_SCALAR || units_parse(n->value, kind, &v) != 0) {
        type_err(w, n, p, units_expect(kind));
    } else if (v < 0 || (v == 0 && !zero_ok)) {
        char want[96];
        snprintf(want, sizeof want, "%s greater than 0", units_expect(kind));
        type_err(w, n, p, want);
    } else if (kind == UNITS_BYTES && (v != floor(v) || v > 1e18)) {
        type_err(w, n, p, "a whole number of bytes below 1EB");
    } else {
        *out = v;
        rc = 0;
    }
    free(p);
    return rc;
}

static int get_bytes(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                     bool required, uint64_t *out)
{
    double v = (double)*out;
    int rc = get_qty(w, m, path, key, required, UNITS_BYTES, false, &v);
    *out = (uint64_t)v;
    return rc;
}

static int get_dtype(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                     enum dtype *out)
{
    const struct cfg_node *n = field(w, m, path, key, false);
    if (!n)
        return 0;
    if (n->type == CFG_SCALAR && dtype_parse(n->value, out) == 0)
        return 0;
    char *p = join(path, key);
    type_err(w, n, p, "a dtype (bf16, f32, int8, fp8)");
    free(p);
    return -1;
}

/* ---------------- chip ---------------- */

static void load_peak(struct walk *w, const struct cfg_node *tc, const char *path,
                      struct chip_params *c)
{
    const struct cfg_node *pk = field(w, tc, path, "peak", true);
    char *p = join(path, "peak");
    if (pk && is_map(w, pk, p)) {
        static const char *const keys[] = {"bf16", "f32", "int8", "fp8", NULL};
        check_keys(w, pk, p, keys);
        get_qty(w, pk, p, "bf16", true, UNITS_FLOPS, false, &c->peak_flops[DT_BF16]);
        c->peak_flops[DT_F32] = c->peak_flops[DT_BF16] / 3.0;
        c->peak_flops[DT_INT8] = c->peak_flops[DT_BF16];
        c->peak_flops[DT_FP8] = c->peak_flops[DT_BF16];
        get_qty(w, pk, p, "f32", false, UNITS_FLOPS, false, &c->peak_flops[DT_F32]);
        get_qty(w, pk, p, "int8", false, UNITS_FLOPS, false, &c->peak_flops[DT_INT8]);
        get_qty(w, pk, p, "fp8", false, UNITS_FLOPS, false, &c->peak_flops[DT_FP8]);
        c->peak_flops[DT_INT32] = c->peak_flops[DT_F32];
    }
    free(p);
}

static void load_vpu(struct walk *w, const struct cfg_node *tc, const char *path,
                     struct chip_params *c)
{
    const struct cfg_node *v = field(w, tc, path, "vpu", true);
    char *p = join(path, "vpu");
    if (v && is_map(w, v, p)) {
        static const char *const keys[] = {"sublanes",        "lanes",          "alu_per_cycle",
                                           "load_per_cycle",  "store_per_cycle", "eup_per_cycle",
                                           "xlu_per_cycle",   NULL};
        check_keys(w, v, p, keys);
        get_i(w, v, p, "sublanes", true, 1, 64, &c->vpu_sublanes);
        get_i(w, v, p, "lanes", true, 1, 1024, &c->vpu_lanes);
        int64_t tmp;
        struct {
            const char *key;
            double *dst;
        } rates[] = {{"alu_per_cycle", &c->vpu_alu_per_cycle},
                     {"load_per_cycle", &c->vpu_load_per_cycle},
                     {"store_per_cycle", &c->vpu_store_per_cycle},
                     {"eup_per_cycle", &c->eup_per_cycle},
                     {"xlu_per_cycle", &c->xlu_per_cycle}};
        for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
            const struct cfg_node *n = field(w, v, p, rates[i].key, true);
            char *q = join(p, rates[i].key);
            char *end = NULL;
            double x = n && n->type == CFG_SCALAR ? strtod(n->value, &end) : 0;
            if (n && (!end || *end || x <= 0 || x > 64))
                type_err(w, n, q, "a rate per cycle in (0, 64]");
            else if (n)
                *rates[i].dst = x;
            free(q);
        }
        (void)tmp;
    }
    free(p);
}

static void load_mxu(struct walk *w, const struct cfg_node *tc, const char *path,
                     struct chip_params *c)
{
    char *p = join(path, "mxu");
    const struct cfg_node *mxu = field(w, tc, path, "mxu", true);
    if (mxu && is_map(w, mxu, p)) {
        static const char *const mk[] = {"count", "size", NULL};
        check_keys(w, mxu, p, mk);
        get_i(w, mxu, p, "count", true, 1, 64, &c->mxu_count);
        get_i(w, mxu, p, "size", true, 8, 1024, &c->mxu_dim);
    }
    free(p);
}

static void load_tc(struct walk *w, const struct cfg_node *root, const char *pre,
                    struct chip_params *c)
{
    char *path = join(pre, "tensorcore");
    const struct cfg_node *tc = field(w, root, pre, "tensorcore", true);
    if (!tc || !is_map(w, tc, path)) {
        free(path);
        return;
    }
    static const char *const keys[] = {"count", "megacore", "mxu", "peak", "clock", "vpu",
                                       "vmem", "smem", "vmem_limit", "step_overhead",
                                       "dma_latency", NULL};
    check_keys(w, tc, path, keys);
    get_i(w, tc, path, "count", true, 1, 8, &c->cores);
    get_bool(w, tc, path, "megacore", &c->megacore);
    load_mxu(w, tc, path, c);
    load_peak(w, tc, path, c);
    get_qty(w, tc, path, "clock", true, UNITS_FREQ, false, &c->clock_hz);
    load_vpu(w, tc, path, c);
    get_bytes(w, tc, path, "vmem", true, &c->vmem_bytes);
    get_bytes(w, tc, path, "smem", true, &c->smem_bytes);
    get_bytes(w, tc, path, "vmem_limit", true, &c->vmem_limit_bytes);
    get_qty(w, tc, path, "step_overhead", true, UNITS_TIME, true, &c->step_overhead_s);
    get_qty(w, tc, path, "dma_latency", true, UNITS_TIME, true, &c->dma_issue_s);
    free(path);
}

static int get_enum(struct walk *w, const struct cfg_node *m, const char *path, const char *key,
                    const char *const *names, int *out)
{
    const struct cfg_node *n = field(w, m, path, key, false);
    if (!n)
        return 0;
    for (int i = 0; n->type == CFG_SCALAR && names[i]; i++) {
        if (strcmp(n->value, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    char want[160] = "one of";
    for (int i = 0; names[i]; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s %s", i ? "," : "", names[i]);
    char *p = join(path, key);
    type_err(w, n, p, want);
    free(p);
    return -1;
}

static void load_hbm(struct walk *w, const struct cfg_node *root, const char *pre,
                     struct chip_params *c)
{
    char *p = join(pre, "hbm");
    const struct cfg_node *h = field(w, root, pre, "hbm", true);
    if (h && is_map(w, h, p)) {
        static const char *const keys[] = {"capacity", "bandwidth", NULL};
        check_keys(w, h, p, keys);
        get_bytes(w, h, p, "capacity", true, &c->hbm_bytes);
        get_qty(w, h, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->hbm_bw_Bps);
    }
    free(p);
}

static void load_ici(struct walk *w, const struct cfg_node *root, const char *pre,
                     struct chip_params *c)
{
    char *p = join(pre, "ici");
    const struct cfg_node *ici = field(w, root, pre, "ici", true);
    if (!ici || !is_map(w, ici, p)) {
        free(p);
        return;
    }
    static const char *const keys[] = {"links",        "bandwidth",   "hop_latency",
                                       "collective_latency", "step_latency", "routing",
                                       "wraparound",   NULL};
    check_keys(w, ici, p, keys);
    get_i(w, ici, p, "links", true, 0, 12, &c->ici_links);
    get_qty(w, ici, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->ici_bw_Bps);
    get_qty(w, ici, p, "hop_latency", true, UNITS_TIME, true, &c->ici_hop_lat_s);
    get_qty(w, ici, p, "collective_latency", true, UNITS_TIME, true, &c->ici_collective_lat_s);
    get_qty(w, ici, p, "step_latency", true, UNITS_TIME, true, &c->ici_step_lat_s);
    static const char *const routes[] = {"any", "pow2", NULL};
    static const char *const wraps[] = {"axis16", "cube4", "always", "never", NULL};
    int r = (int)c->routing, wr = (int)c->wrap;
    get_enum(w, ici, p, "routing", routes, &r);
    get_enum(w, ici, p, "wraparound", wraps, &wr);
    c->routing = (enum ici_routing)r;
    c->wrap = (enum wrap_rule)wr;
    free(p);
}

static void load_chip_tree(struct walk *w, const struct cfg_node *root, const char *pre,
                           struct chip_params *c)
{
    if (!is_map(w, root, *pre ? pre : "chip"))
        return;
    static const char *const keys[] = {"name", "generation", "tensorcore", "hbm", "ici",
                                       "base", NULL};
    check_keys(w, root, pre, keys);
    const struct cfg_node *name = cfg_get(root, "name");
    if (name && name->type == CFG_SCALAR)
        snprintf(c->name, sizeof c->name, "%s", name->value);
    get_i(w, root, pre, "generation", true, 2, 99, &c->generation);
    load_tc(w, root, pre, c);
    load_hbm(w, root, pre, c);
    load_ici(w, root, pre, c);
}

static const char *const chip_names[] = {"v4", "v5e", "v5p", "v6e", "v7", NULL};

const char *const *cfg_chip_names(void)
{
    return chip_names;
}

static struct cfg_node *load_preset(const char *name, const struct cfg_node *at, struct diag *d)
{
    char *path = xasprintf("configs/chips/%s.yaml", name);
    struct cfg_node *n = NULL;
    bool known = false;
    for (int i = 0; chip_names[i]; i++)
        known |= strcmp(chip_names[i], name) == 0;
    if (known || strchr(name, '/'))
        n = cfg_parse_file(known ? path : name, d);
    else if (at) {
        struct diag_loc loc = {at->file, at->line, at->col};
        diag_error(d, &loc, "chip", "expected a chip preset (v4, v5e, v5p, v6e, v7) or a "
                                    "path to a preset file, got '%s'", name);
    }
    free(path);
    return n;
}

int cfg_load_chip(const char *name, struct chip_params *chip, struct diag *d)
{
    int before = diag_count(d);
    struct cfg_node *n = load_preset(name, NULL, d);
    if (!n) {
        if (diag_count(d) == before)
            diag_error(d, NULL, "chip", "unknown chip preset '%s'", name);
        return -1;
    }
    struct walk w = {d};
    memset(chip, 0, sizeof *chip);
    load_chip_tree(&w, n, "", chip);
    cfg_node_free(n);
    return diag_count(d) > before ? -1 : 0;
}

/* The scenario's chip: a preset name, or {base: name, key: override...}. */
static void load_chip(struct walk *w, const struct cfg_node *root, struct chip_params *c)
{
    const struct cfg_node *ch = field(w, root, "", "chip", true);
    if (!ch)
        return;
    const struct cfg_node *base = ch;
    if (ch->type == CFG_MAP) {
        base = field(w, ch, "chip", "base", true);
        if (!base)
            return;
    }
    if (base->type != CFG_SCALAR) {
        type_err(w, base, "chip", "a chip preset name");
        return;
    }
    struct cfg_node *preset = load_preset(base->value, base, w->d);
    if (!preset)
        return;
    if (ch->type == CFG_MAP) {
        static const char *const skip[] = {"base", NULL};
        cfg_merge(preset, ch, skip);
    }
    load_chip_tree(w, preset, "chip", c);
    cfg_node_free(preset);
}

/* ---------------- topology ---------------- */

/* The generation's default wraparound (tpu-specs.md: v5e/v6e wrap an axis
 * only when it is 16 long; v4/v5p are full tori when every axis of the 3D
 * shape is a multiple of 4, i.e. one 4x4x4 cube or more). */
static void default_wrap(enum wrap_rule rule, int nd, const int *shape, bool *wrap)
{
    bool cube = true;
    for (int i = 0; i < TOPO_MAX_DIMS; i++)
        cube &= (i < nd ? shape[i] : 1) % 4 == 0;
    for (int i = 0; i < nd; i++) {
        switch (rule) {
        case WRAP_AXIS16:
            wrap[i] = shape[i] == 16;
            break;
        case WRAP_CUBE4:
            wrap[i] = cube;
            break;
        case WRAP_ALWAYS:
            wrap[i] = shape[i] > 2;
            break;
        case WRAP_NEVER:
            wrap[i] = false;
            break;
        }
    }
}

static void load_wrap(struct walk *w, const struct cfg_node *wr, int nd, bool *wrap)
{
    if (wr->type == CFG_SCALAR) {
        struct cfg_node tmp = {0};
        (void)tmp;
        bool v;
        if (strcmp(wr->value, "true") == 0 || strcmp(wr->value, "false") == 0) {
            v = wr->value[0] == 't';
            for (int i = 0; i < nd; i++)
                wrap[i] = v;
            return;
        }
    }
    if (wr->type != CFG_SEQ || wr->n != nd) {
        char want[96];
        snprintf(want, sizeof want, "true, false or a list of %d booleans (one per axis)", nd);
        type_err(w, wr, "topology.wraparound", want);
        return;
    }
    for (int i = 0; i < nd; i++) {
        const struct cfg_node *x = wr->kids[i];
        char *p = xasprintf("topology.wraparound.%d", i);
        if (x->type == CFG_SCALAR && (!strcmp(x->value, "true") || !strcmp(x->value, "false")))
            wrap[i] = x->value[0] == 't';
        else if (!(x->type == CFG_SCALAR && !strcmp(x->value, "default")))
            type_err(w, x, p, "true, false or default");
        free(p);
    }
}

static void load_topology(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    int shape[TOPO_MAX_DIMS] = {1, 1, 1}, nd = 1;
    bool wrap[TOPO_MAX_DIMS] = {false, false, false};
    const struct cfg_node *t = field(w, root, "", "topology", false);
    const struct cfg_node *sh = NULL;
    if (t && is_map(w, t, "topology")) {
        static const char *const keys[] = {"shape", "wraparound", NULL};
        check_keys(w, t, "topology", keys);
        sh = field(w, t, "topology", "shape", true);
    }
    if (sh && (sh->type != CFG_SEQ || sh->n < 1 || sh->n > TOPO_MAX_DIMS)) {
        type_err(w, sh, "topology.shape", "a list of 1 to 3 axis lengths, like [16, 16]");
        sh = NULL;
    }
    for (int i = 0; sh && i < sh->n; i++) {
        struct cfg_node holder = {.type = CFG_MAP};
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        char *keys[1] = {key};
        struct cfg_node *kids[1] = {sh->kids[i]};
        holder.n = 1, holder.keys = keys, holder.kids = kids, holder.file = sh->file;
        get_i(w, &holder, "topology.shape", key, true, 1, 4096, &shape[i]);
        nd = sh->n;
    }
    default_wrap(sc->chip.wrap, nd, shape, wrap);
    const struct cfg_node *wr = t ? cfg_get(t, "wraparound") : NULL;
    if (wr)
        load_wrap(w, wr, nd, wrap);
    if (topo_init(&sc->topo, nd, shape, wrap) != 0 || sc->topo.nchips > 65536) {
        if (t)
            type_err(w, t, "topology", "at most 65536 chips");
    }
}

/* ---------------- options ---------------- */

static void load_options(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *o = field(w, root, "", "options", false);
    sc->fidelity = CFG_FIDELITY_FAST;
    sc->seed = 1;
    sc->max_steps = 2000000000;
    if (!o || !is_map(w, o, "options"))
        return;
    static const char *const keys[] = {"fidelity", "seed", "max_steps", NULL};
    check_keys(w, o, "options", keys);
    static const char *const fid[] = {"fast", "exact", NULL};
    int f = 0;
    get_enum(w, o, "options", "fidelity", fid, &f);
    sc->fidelity = (enum cfg_fidelity)f;
    int64_t seed = 1, ms = sc->max_steps;
    get_int(w, o, "options", "seed", false, 0, INT64_MAX, &seed);
    get_int(w, o, "options", "max_steps", false, 1, INT64_MAX, &ms);
    sc->seed = (uint64_t)seed;
    sc->max_steps = ms;
}

/* ---------------- workload ---------------- */

static void load_hbm_copy(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {"op", "name", "overlap", "functional", "vmem_limit_bytes",
                                       "bytes", "chunk", NULL};
    check_keys(w, m, p, keys);
    get_bytes(w, m, p, "bytes", true, &op->u.hbm_copy.bytes);
    get_bytes(w, m, p, "chunk", false, &op->u.hbm_copy.chunk_bytes);
}

static void load_ppermute(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {"op", "name", "overlap", "functional", "vmem_limit_bytes",
                                       "bytes", "axis", "shift", NULL};
    check_keys(w, m, p, keys);
    get_bytes(w, m, p, "bytes", true, &op->u.ppermute.bytes);
    op->u.ppermute.shift = 1;
    get_i(w, m, p, "axis", false, 0, TOPO_MAX_DIMS - 1, &op->u.ppermute.axis);
    get_i(w, m, p, "shift", false, -4096, 4096, &op->u.ppermute.shift);
}

static void load_matmul(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {"op", "name", "overlap", "functional", "vmem_limit_bytes",
                                       "m", "k", "n", "dtype", "block", NULL};
    check_keys(w, m, p, keys);
    struct op_matmul *mm = &op->u.matmul;
    mm->dt = DT_BF16;
    get_int(w, m, p, "m", true, 1, 1 << 24, &mm->m);
    get_int(w, m, p, "k", true, 1, 1 << 24, &mm->k);
    get_int(w, m, p, "n", true, 1, 1 << 24, &mm->n);
    get_dtype(w, m, p, "dtype", &mm->dt);
    mm->bm = mm->bk = mm->bn = 128;
    const struct cfg_node *b = field(w, m, p, "block", false);
    char *bp = join(p, "block");
    if (b && is_map(w, b, bp)) {
        static const char *const bk[] = {"bm", "bk", "bn", NULL};
        check_keys(w, b, bp, bk);
        get_int(w, b, bp, "bm", false, 1, 1 << 24, &mm->bm);
        get_int(w, b, bp, "bk", false, 1, 1 << 24, &mm->bk);
        get_int(w, b, bp, "bn", false, 1, 1 << 24, &mm->bn);
    }
    free(bp);
}

typedef void op_loader(struct walk *w, const struct cfg_node *m, const char *p, struct op *op);

static op_loader *const op_loaders[OP_KIND_COUNT] = {load_hbm_copy, load_ppermute, load_matmul};

static void load_op(struct walk *w, const struct cfg_node *m, int i, struct op *op)
{
    char *p = xasprintf("workload.%d", i);
    if (!is_map(w, m, p)) {
        free(p);
        return;
    }
    const struct cfg_node *k = field(w, m, p, "op", true);
    char *kp = join(p, "op");
    if (k && (k->type != CFG_SCALAR || op_kind_parse(k->value, &op->kind) != 0)) {
        char want[160] = "an op kind (";
        for (int j = 0; j < OP_KIND_COUNT; j++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", j ? ", " : "",
                     op_kind_name((enum op_kind)j));
        strcat(want, ")");
        type_err(w, k, kp, want);
        k = NULL;
    }
    free(kp);
    if (k) {
        get_bool(w, m, p, "overlap", &op->overlap);
        get_bool(w, m, p, "functional", &op->functional);
        get_bytes(w, m, p, "vmem_limit_bytes", false, &op->vmem_limit_bytes);
        const struct cfg_node *nm = cfg_get(m, "name");
        op->name = nm && nm->type == CFG_SCALAR ? xstrdup(nm->value)
                                                 : xasprintf("%d:%s", i, op_kind_name(op->kind));
        op_loaders[op->kind](w, m, p, op);
    }
    free(p);
}

static void load_workload(struct walk *w, const struct cfg_node *root, struct cfg_scenario *sc)
{
    const struct cfg_node *wl = field(w, root, "", "workload", true);
    if (!wl)
        return;
    if (wl->type != CFG_SEQ || wl->n == 0) {
        type_err(w, wl, "workload", "a non-empty list of ops");
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
            char *ap = join(p, "axis");
            type_err(w, a ? a : wl->kids[i], ap, want);
            free(ap);
        }
        if (op->vmem_limit_bytes > sc->chip.vmem_bytes) {
            const struct cfg_node *a = cfg_get(wl->kids[i], "vmem_limit_bytes");
            char *ap = join(p, "vmem_limit_bytes");
            char want[96];
            snprintf(want, sizeof want, "at most the chip's VMEM (%llu bytes)",
                     (unsigned long long)sc->chip.vmem_bytes);
            type_err(w, a, ap, want);
            free(ap);
        }
        free(p);
    }
}

static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = xstrdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

/* "chip: v5e" means "chip: {base: v5e}"; make it so, so --set can add overrides. */
static void normalize_chip(struct cfg_node *root)
{
    struct cfg_node *ch = cfg_get(root, "chip");
    if (!ch || ch->type != CFG_SCALAR)
        return;
    struct cfg_node *base = cfg_copy(ch);
    ch->type = CFG_MAP;
    free(ch->value);
    ch->value = NULL;
    cfg_put(ch, "base", base);
}

#define DEFAULT_SCENARIO "configs/scenarios/default.yaml"

int cfg_load_scenario(const char *path, const char *const *sets, int nsets,
                      struct cfg_scenario *sc, struct diag *d)
{
    memset(sc, 0, sizeof *sc);
    if (!path || strcmp(path, "-") == 0)
        path = DEFAULT_SCENARIO;
    sc->file = xstrdup(path);
    struct cfg_node *root = cfg_parse_file(path, d);
    if (!root) {
        cfg_scenario_fini(sc);
        return -1;
    }
    normalize_chip(root);
    for (int i = 0; i < nsets; i++)
        cfg_apply_set(root, sets[i], d);
    struct walk w = {d};
    if (diag_count(d) == 0 && is_map(&w, root, "scenario")) {
        static const char *const keys[] = {"name", "chip", "topology", "options", "workload",
                                           NULL};
        check_keys(&w, root, "", keys);
        const struct cfg_node *nm = cfg_get(root, "name");
        sc->name = nm && nm->type == CFG_SCALAR ? xstrdup(nm->value) : base_name(path);
        load_chip(&w, root, &sc->chip);
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

void cfg_scenario_fini(struct cfg_scenario *sc)
{
    for (int i = 0; i < sc->nops; i++)
        free(sc->ops[i].name);
    free(sc->ops);
    free(sc->name);
    free(sc->file);
    memset(sc, 0, sizeof *sc);
}
