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
#include "kernels/kernel.h"
#include "kernels/maskinfo.h"
#include "sim/cfg_node.h"
#include "base/units.h"
#include "base/xalloc.h"

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

const char *cfg_suggest(const char *word, const char *const *candidates, bool *known)
{
    const char *best = NULL;
    int best_d = 3;
    *known = false;
    for (const char *const *a = candidates; *a; a++) {
        if (strcmp(*a, word) == 0) {
            *known = true;
            return NULL;
        }
        int dist = edit_distance(*a, word);
        if (dist < best_d)
            best_d = dist, best = *a;
    }
    return best;
}

/* Reports every key of map 'm' that is not in 'allowed'. */
static void check_keys(struct walk *w, const struct cfg_node *m, const char *path,
                       const char *const *allowed)
{
    for (int i = 0; i < m->n; i++) {
        bool found;
        const char *best = cfg_suggest(m->keys[i], allowed, &found);
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

/* Item 'i' of sequence 'seq' (path 'p') as an integer in [min, max]. */
static int get_item(struct walk *w, const struct cfg_node *seq, const char *p, int i, int64_t min,
                    int64_t max, int64_t *out)
{
    char key[16];
    snprintf(key, sizeof key, "%d", i);
    char *keys[1] = {key};
    struct cfg_node *kids[1] = {seq->kids[i]};
    struct cfg_node holder = {.type = CFG_MAP, .n = 1, .keys = keys, .kids = kids,
                              .file = seq->file};
    return get_int(w, &holder, p, key, true, min, max, out);
}

/* A real number (no unit) in (0, max] described by 'want'; leaves '*out' if
 * absent (an error when 'required'). Returns 0 or -1. */
static int get_real(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                    bool required, double max, const char *want, double *out)
{
    const struct cfg_node *n = field(w, m, p, key, required);
    if (!n)
        return required ? -1 : 0;
    char *end = NULL;
    double v = n->type == CFG_SCALAR ? strtod(n->value, &end) : 0;
    char *q = join(p, key);
    int rc = -1;
    if (!end || *end || !(v > 0 && v <= max))
        type_err(w, n, q, want);
    else
        *out = v, rc = 0;
    free(q);
    return rc;
}

/* A positive real number, like sm_scale. */
static void get_positive(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                         double *out)
{
    get_real(w, m, p, key, false, HUGE_VAL / 2, "a positive number", out);
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

/* A fraction in (0, 1], default 1. */
static void get_fraction(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                         double *out)
{
    *out = 1.0;
    get_real(w, m, p, key, false, 1.0, "a fraction in (0, 1]", out);
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
        struct {
            const char *key;
            double *dst;
        } rates[] = {{"alu_per_cycle", &c->vpu_alu_per_cycle},
                     {"load_per_cycle", &c->vpu_load_per_cycle},
                     {"store_per_cycle", &c->vpu_store_per_cycle},
                     {"eup_per_cycle", &c->eup_per_cycle},
                     {"xlu_per_cycle", &c->xlu_per_cycle}};
        for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
            get_real(w, v, p, rates[i].key, true, 64, "a rate per cycle in (0, 64]", rates[i].dst);
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
                                       "dma_latency", "launch_overhead", NULL};
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
    get_qty(w, tc, path, "launch_overhead", false, UNITS_TIME, true, &c->launch_s);
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
        static const char *const keys[] = {"capacity", "bandwidth", "efficiency", NULL};
        check_keys(w, h, p, keys);
        get_bytes(w, h, p, "capacity", true, &c->hbm_bytes);
        get_qty(w, h, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->hbm_bw_Bps);
        get_fraction(w, h, p, "efficiency", &c->hbm_efficiency);
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
    static const char *const keys[] = {"links",        "bandwidth",   "efficiency", "hop_latency",
                                       "collective_latency", "step_latency", "routing",
                                       "wraparound",   NULL};
    check_keys(w, ici, p, keys);
    get_i(w, ici, p, "links", true, 0, 12, &c->ici_links);
    get_qty(w, ici, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->ici_bw_Bps);
    get_fraction(w, ici, p, "efficiency", &c->ici_efficiency);
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
    if (wr->type == CFG_SCALAR &&
        (strcmp(wr->value, "true") == 0 || strcmp(wr->value, "false") == 0)) {
        for (int i = 0; i < nd; i++)
            wrap[i] = wr->value[0] == 't';
        return;
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
        int64_t v = 1;
        get_item(w, sh, "topology.shape", i, 1, 4096, &v);
        shape[i] = (int)v;
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

#define COMMON_KEYS "op", "name", "overlap", "functional", "vmem_limit_bytes"

static int get_mode(struct walk *w, const struct cfg_node *m, const char *p, enum attn_mode *mode)
{
    static const char *const modes[] = {"fwd", "bwd", "fwd_bwd", NULL};
    int v = (int)*mode;
    int rc = get_enum(w, m, p, "mode", modes, &v);
    *mode = (enum attn_mode)v;
    return rc;
}

/* A list of positive integers (segment lengths) into 'out'; returns the count. */
static int get_lengths(struct walk *w, const struct cfg_node *n, const char *p, int64_t *out,
                       int max, int64_t total)
{
    if (n->type != CFG_SEQ || n->n < 1 || n->n > max) {
        char want[96];
        snprintf(want, sizeof want, "a list of 1 to %d segment lengths", max);
        type_err(w, n, p, want);
        return 0;
    }
    int64_t sum = 0;
    for (int i = 0; i < n->n; i++) {
        if (get_item(w, n, p, i, 1, INT64_MAX, &out[i]) != 0)
            return 0;
        sum += out[i];
    }
    if (total && sum != total) {
        char want[96];
        snprintf(want, sizeof want, "segment lengths adding up to %lld", (long long)total);
        char got_s[32];
        snprintf(got_s, sizeof got_s, "%lld", (long long)sum);
        struct diag_loc loc;
        where(n, &loc);
        diag_error(w->d, &loc, p, "expected %s, got a total of %s", want, got_s);
        return 0;
    }
    return n->n;
}

static void load_flash_blocks(struct walk *w, const struct cfg_node *m, const char *p,
                              struct flash_block_sizes *bs)
{
    *bs = (struct flash_block_sizes){128, 128, 128, 1, 128, 128, 128, 128, 128, 128, 128};
    const struct cfg_node *b = field(w, m, p, "block_sizes", false);
    char *bp = join(p, "block_sizes");
    if (b && is_map(w, b, bp)) {
        static const char *const keys[] = {
            "block_q",     "block_k_major",     "block_k",     "block_b",
            "block_q_major_dkv", "block_k_major_dkv", "block_k_dkv", "block_q_dkv",
            "block_k_major_dq",  "block_k_dq",  "block_q_dq",  NULL};
        check_keys(w, b, bp, keys);
        int64_t *dst[] = {&bs->block_q,           &bs->block_k_major,     &bs->block_k,
                          &bs->block_b,           &bs->block_q_major_dkv, &bs->block_k_major_dkv,
                          &bs->block_k_dkv,       &bs->block_q_dkv,       &bs->block_k_major_dq,
                          &bs->block_k_dq,        &bs->block_q_dq};
        for (int i = 0; keys[i]; i++) {
            const struct cfg_node *v = cfg_get(b, keys[i]);
            if (v && v->type == CFG_SCALAR && !strcmp(v->value, "null"))
                *dst[i] = 0; /* None */
            else
                get_int(w, b, bp, keys[i], false, 1, 1 << 24, dst[i]);
        }
    }
    free(bp);
}

static void load_flash(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "batch", "heads", "q_seq_len", "kv_seq_len",
                                       "head_dim", "dtype", "causal", "sm_scale", "mode", "bias",
                                       "segment_ids", "block_sizes", NULL};
    check_keys(w, m, p, keys);
    struct op_flash *f = &op->u.flash;
    f->dt = DT_BF16;
    f->sm_scale = 1.0;
    get_int(w, m, p, "batch", true, 1, 1 << 20, &f->batch);
    get_int(w, m, p, "heads", true, 1, 1 << 16, &f->heads);
    get_int(w, m, p, "q_seq_len", true, 1, 1 << 24, &f->q_seq_len);
    f->kv_seq_len = f->q_seq_len;
    get_int(w, m, p, "kv_seq_len", false, 1, 1 << 24, &f->kv_seq_len);
    get_int(w, m, p, "head_dim", true, 1, 1 << 16, &f->head_dim);
    get_dtype(w, m, p, "dtype", &f->dt);
    get_bool(w, m, p, "causal", &f->causal);
    get_bool(w, m, p, "bias", &f->bias);
    get_mode(w, m, p, &f->mode);
    get_positive(w, m, p, "sm_scale", &f->sm_scale);
    const struct cfg_node *seg = field(w, m, p, "segment_ids", false);
    char *sp = join(p, "segment_ids");
    if (seg && is_map(w, seg, sp)) {
        static const char *const sk[] = {"q", "kv", NULL};
        check_keys(w, seg, sp, sk);
        const struct cfg_node *q = field(w, seg, sp, "q", true);
        const struct cfg_node *kv = cfg_get(seg, "kv");
        char *qp = join(sp, "q"), *kp = join(sp, "kv");
        if (q)
            f->nseg_q = get_lengths(w, q, qp, f->seg_q, OP_MAX_SEGMENTS, f->q_seq_len);
        if (kv)
            f->nseg_kv = get_lengths(w, kv, kp, f->seg_kv, OP_MAX_SEGMENTS, f->kv_seq_len);
        else if (q && f->q_seq_len == f->kv_seq_len) {
            f->nseg_kv = f->nseg_q;
            memcpy(f->seg_kv, f->seg_q, sizeof f->seg_kv);
        } else if (q) {
            type_err(w, seg, sp, "a kv list when kv_seq_len differs from q_seq_len");
        }
        free(qp);
        free(kp);
    }
    free(sp);
    load_flash_blocks(w, m, p, &f->bs);
}

/* A splash mask: {type: causal|local|chunked|full|file, ...}, {and: [..]}, {or: [..]}. */
static struct mask *load_mask(struct walk *w, const struct cfg_node *n, const char *p, int64_t q,
                              int64_t kv, int depth)
{
    if (!is_map(w, n, p) || depth > 16)
        return NULL;
    const struct cfg_node *a = cfg_get(n, "and"), *o = cfg_get(n, "or");
    if (a || o) {
        const struct cfg_node *l = a ? a : o;
        static const char *const lk[] = {"and", "or", NULL};
        check_keys(w, n, p, lk);
        char *lp = join(p, a ? "and" : "or");
        struct mask *acc = NULL;
        if (l->type != CFG_SEQ || l->n < 2)
            type_err(w, l, lp, "a list of at least 2 masks");
        for (int i = 0; l->type == CFG_SEQ && i < l->n; i++) {
            char *ip = xasprintf("%s.%d", lp, i);
            struct mask *m = load_mask(w, l->kids[i], ip, q, kv, depth + 1);
            free(ip);
            char err[256];
            if (m && acc)
                acc = mask_new_logical(a ? MASK_AND : MASK_OR, acc, m, err, sizeof err);
            else if (m)
                acc = m;
        }
        free(lp);
        return acc;
    }
    static const char *const keys[] = {"type", "offset", "left", "right", "chunk", "path", NULL};
    check_keys(w, n, p, keys);
    static const char *const types[] = {"causal", "local", "chunked", "full", "file", NULL};
    int t = -1;
    if (!field(w, n, p, "type", true) || get_enum(w, n, p, "type", types, &t) != 0 || t < 0)
        return NULL;
    int64_t off = 0, left = -1, right = -1, chunk = 0;
    get_int(w, n, p, "offset", false, -(1 << 24), 1 << 24, &off);
    const struct cfg_node *ln = cfg_get(n, "left"), *rn = cfg_get(n, "right");
    if (ln && !(ln->type == CFG_SCALAR && !strcmp(ln->value, "null")))
        get_int(w, n, p, "left", false, 0, 1 << 24, &left);
    if (rn && !(rn->type == CFG_SCALAR && !strcmp(rn->value, "null")))
        get_int(w, n, p, "right", false, 0, 1 << 24, &right);
    switch (t) {
    case 0:
        return mask_new_causal(q, kv, off);
    case 1:
        return mask_new_local(q, kv, left, right, off);
    case 2:
        if (get_int(w, n, p, "chunk", true, 1, 1 << 24, &chunk) != 0)
            return NULL;
        return mask_new_chunked(q, kv, chunk);
    case 3:
        return mask_new_full(q, kv);
    default: {
        const struct cfg_node *pn = field(w, n, p, "path", true);
        if (!pn || pn->type != CFG_SCALAR)
            return NULL;
        char err[512];
        struct mask *m = mask_load_file(pn->value, err, sizeof err);
        char *pp = join(p, "path");
        if (!m)
            type_err(w, pn, pp, err);
        else if (m->q_len != q || m->kv_len != kv) {
            char want[96];
            snprintf(want, sizeof want, "a %lldx%lld mask file", (long long)q, (long long)kv);
            type_err(w, pn, pp, want);
            mask_free(m);
            m = NULL;
        }
        free(pp);
        return m;
    }
    }
}

static void load_splash_masks(struct walk *w, const struct cfg_node *m, const char *p,
                              struct op_splash *s)
{
    const struct cfg_node *mk = field(w, m, p, "mask", true);
    if (!mk)
        return;
    char *mp = join(p, "mask");
    const struct cfg_node *heads = mk->type == CFG_MAP ? cfg_get(mk, "heads") : NULL;
    bool dense = false;
    if (mk->type == CFG_MAP) {
        get_bool(w, mk, mp, "dense", &dense);
        get_bool(w, mk, mp, "dynamic", &s->dynamic);
    }
    if (heads) {
        static const char *const hk[] = {"heads", "dense", "dynamic", NULL};
        check_keys(w, mk, mp, hk);
        char *hp = join(mp, "heads");
        if (heads->type != CFG_SEQ || heads->n != s->q_heads) {
            char want[64];
            snprintf(want, sizeof want, "a list of %lld masks (one per q head)",
                     (long long)s->q_heads);
            type_err(w, heads, hp, want);
        } else {
            s->nmasks = heads->n;
            s->masks = xcalloc((size_t)heads->n, sizeof *s->masks);
            for (int i = 0; i < heads->n; i++) {
                char *ip = xasprintf("%s.%d", hp, i);
                s->masks[i] = load_mask(w, heads->kids[i], ip, s->q_seq_len, s->kv_seq_len, 0);
                free(ip);
            }
        }
        free(hp);
    } else {
        struct cfg_node *copy = cfg_copy(mk);
        for (int i = 0; copy->type == CFG_MAP && i < copy->n; i++) {
            if (!strcmp(copy->keys[i], "dense") || !strcmp(copy->keys[i], "dynamic")) {
                cfg_node_free(copy->kids[i]);
                free(copy->keys[i]);
                memmove(&copy->keys[i], &copy->keys[i + 1], sizeof(char *) * (size_t)(copy->n - i - 1));
                memmove(&copy->kids[i], &copy->kids[i + 1], sizeof(void *) * (size_t)(copy->n - i - 1));
                memmove(&copy->key_line[i], &copy->key_line[i + 1], sizeof(int) * (size_t)(copy->n - i - 1));
                memmove(&copy->key_col[i], &copy->key_col[i + 1], sizeof(int) * (size_t)(copy->n - i - 1));
                copy->n--, i--;
            }
        }
        s->nmasks = 1;
        s->masks = xcalloc(1, sizeof *s->masks);
        s->masks[0] = load_mask(w, copy, mp, s->q_seq_len, s->kv_seq_len, 0);
        cfg_node_free(copy);
    }
    for (int i = 0; dense && i < s->nmasks; i++) {
        if (s->masks[i] && s->masks[i]->kind != MASK_DENSE) {
            struct mask *d = mask_dense_from(s->masks[i]);
            mask_free(s->masks[i]);
            s->masks[i] = d;
        }
    }
    free(mp);
}

static void load_splash(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "batch", "q_heads", "kv_heads", "q_seq_len",
                                       "kv_seq_len", "head_dim", "dtype", "mask", "mode",
                                       "segment_ids", "block_sizes", NULL};
    check_keys(w, m, p, keys);
    struct op_splash *s = &op->u.splash;
    s->dt = DT_BF16;
    s->batch = 1;
    get_int(w, m, p, "batch", false, 1, 1 << 20, &s->batch);
    get_int(w, m, p, "q_heads", true, 1, 1 << 16, &s->q_heads);
    s->kv_heads = s->q_heads;
    get_int(w, m, p, "kv_heads", false, 1, 1 << 16, &s->kv_heads);
    get_int(w, m, p, "q_seq_len", true, 1, 1 << 24, &s->q_seq_len);
    s->kv_seq_len = s->q_seq_len;
    get_int(w, m, p, "kv_seq_len", false, 1, 1 << 24, &s->kv_seq_len);
    get_int(w, m, p, "head_dim", true, 1, 1 << 16, &s->head_dim);
    get_dtype(w, m, p, "dtype", &s->dt);
    get_mode(w, m, p, &s->mode);
    const struct cfg_node *seg = cfg_get(m, "segment_ids");
    if (seg) {
        char *sp = join(p, "segment_ids");
        s->nseg = get_lengths(w, seg, sp, s->seg, OP_MAX_SEGMENTS, s->q_seq_len);
        free(sp);
    }
    if (diag_count(w->d) == 0)
        load_splash_masks(w, m, p, s);
    struct splash_block_sizes *bs = &s->bs;
    *bs = (struct splash_block_sizes){128, 128, 0, 128, 128, 0, 128, 128, false};
    const struct cfg_node *b = field(w, m, p, "block_sizes", false);
    char *bp = join(p, "block_sizes");
    if (b && is_map(w, b, bp)) {
        static const char *const bk[] = {"block_q", "block_kv", "block_kv_compute", "block_q_dkv",
                                         "block_kv_dkv", "block_kv_dkv_compute", "block_q_dq",
                                         "block_kv_dq", "use_fused_bwd_kernel", NULL};
        check_keys(w, b, bp, bk);
        int64_t *dst[] = {&bs->block_q,     &bs->block_kv,     &bs->block_kv_compute,
                          &bs->block_q_dkv, &bs->block_kv_dkv, &bs->block_kv_dkv_compute,
                          &bs->block_q_dq,  &bs->block_kv_dq};
        for (int i = 0; i < 8; i++) {
            const struct cfg_node *v = cfg_get(b, bk[i]);
            if (v && v->type == CFG_SCALAR && !strcmp(v->value, "null"))
                *dst[i] = 0;
            else
                get_int(w, b, bp, bk[i], false, 1, 1 << 24, dst[i]);
        }
        get_bool(w, b, bp, "use_fused_bwd_kernel", &bs->use_fused_bwd_kernel);
        if (bs->use_fused_bwd_kernel && !cfg_get(b, "block_q_dq") && !cfg_get(b, "block_kv_dq"))
            bs->block_q_dq = bs->block_kv_dq = 0;
    }
    free(bp);
}

/* Sequence-length generators: {batch, kv_len: N | {min, max}, seed}. */
static int64_t gen_len(struct walk *w, const struct cfg_node *g, const char *p, const char *key,
                       uint64_t seed, int i, int64_t dflt)
{
    const struct cfg_node *n = cfg_get(g, key);
    if (!n)
        return dflt;
    char *kp = join(p, key);
    int64_t v = dflt;
    if (n->type == CFG_MAP) {
        static const char *const k[] = {"min", "max", NULL};
        check_keys(w, n, kp, k);
        int64_t lo = 1, hi = 1;
        get_int(w, n, kp, "min", true, 0, 1 << 24, &lo);
        get_int(w, n, kp, "max", true, 0, 1 << 24, &hi);
        if (hi < lo)
            type_err(w, n, kp, "min <= max");
        else
            v = lo + (int64_t)(((double)kern_rand(seed, (uint64_t)i) + 1.0) / 2.0 *
                               (double)(hi - lo + 1));
        if (v > hi)
            v = hi;
    } else {
        get_int(w, g, p, key, false, 0, 1 << 24, &v);
    }
    free(kp);
    return v;
}

static void load_paged(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "batch", "q_heads", "kv_heads", "head_dim",
                                       "dtype", "kv_dtype", "page_size", "pages_per_seq",
                                       "pages_per_compute_block", "megacore_mode",
                                       "inline_seq_dim", "lengths", "decode", "pages", "seed",
                                       NULL};
    check_keys(w, m, p, keys);
    struct op_paged *g = &op->u.paged;
    g->dt = g->kv_dt = DT_BF16;
    g->inline_seq_dim = true;
    g->page_size = 16;
    get_int(w, m, p, "q_heads", true, 1, 1 << 16, &g->q_heads);
    get_int(w, m, p, "kv_heads", true, 1, 1 << 16, &g->kv_heads);
    get_int(w, m, p, "head_dim", true, 1, 1 << 16, &g->head_dim);
    get_dtype(w, m, p, "dtype", &g->dt);
    get_dtype(w, m, p, "kv_dtype", &g->kv_dt);
    get_int(w, m, p, "page_size", false, 1, 1 << 16, &g->page_size);
    get_int(w, m, p, "pages_per_seq", true, 1, 1 << 20, &g->pages_per_seq);
    get_int(w, m, p, "pages_per_compute_block", true, 1, 1 << 20, &g->pages_per_compute_block);
    static const char *const mm[] = {"none", "kv_head", "batch", NULL};
    int mode = 0;
    get_enum(w, m, p, "megacore_mode", mm, &mode);
    g->megacore_mode = (enum megacore_mode)mode;
    get_bool(w, m, p, "inline_seq_dim", &g->inline_seq_dim);
    static const char *const pg[] = {"contiguous", "shuffled", NULL};
    int sh = 0;
    get_enum(w, m, p, "pages", pg, &sh);
    g->shuffled_pages = sh == 1;
    int64_t seed = 0;
    get_int(w, m, p, "seed", false, 0, INT64_MAX, &seed);
    g->seed = (uint64_t)seed;
    int64_t max_len = g->page_size * g->pages_per_seq;
    const struct cfg_node *ln = cfg_get(m, "lengths"), *dec = cfg_get(m, "decode");
    if ((ln != NULL) == (dec != NULL)) {
        type_err(w, m, p, "exactly one of lengths: [...] or decode: {...}");
        return;
    }
    if (ln) {
        char *lp = join(p, "lengths");
        if (ln->type != CFG_SEQ || ln->n < 1) {
            type_err(w, ln, lp, "a list of sequence lengths");
        } else {
            g->batch = ln->n;
            g->lengths = xcalloc((size_t)ln->n, sizeof *g->lengths);
            for (int i = 0; i < ln->n; i++)
                get_item(w, ln, lp, i, 0, max_len, &g->lengths[i]);
        }
        free(lp);
        return;
    }
    char *dp = join(p, "decode");
    if (is_map(w, dec, dp)) {
        static const char *const dk[] = {"batch", "kv_len", "seed", NULL};
        check_keys(w, dec, dp, dk);
        int64_t b = 1, ds = (int64_t)g->seed;
        get_int(w, dec, dp, "batch", true, 1, 1 << 20, &b);
        get_int(w, dec, dp, "seed", false, 0, INT64_MAX, &ds);
        g->batch = b;
        g->lengths = xcalloc((size_t)b, sizeof *g->lengths);
        for (int i = 0; i < b; i++) {
            g->lengths[i] = gen_len(w, dec, dp, "kv_len", (uint64_t)ds, i, max_len);
            if (g->lengths[i] > max_len) {
                char want[96];
                snprintf(want, sizeof want, "kv_len at most page_size x pages_per_seq = %lld",
                         (long long)max_len);
                type_err(w, dec, dp, want);
                break;
            }
        }
    }
    free(dp);
}

/* ragged: sequences: [{q_len, kv_len}], or decode/prefill/mixed generators. */
static void ragged_gen(struct walk *w, const struct cfg_node *g, const char *p, const char *kind,
                       struct op_ragged *r)
{
    static const char *const gk[] = {"batch", "kv_len", "q_len", "seed", "prefill", "decode",
                                     NULL};
    check_keys(w, g, p, gk);
    int64_t seed = 0, nd = 0, np = 0;
    get_int(w, g, p, "seed", false, 0, INT64_MAX, &seed);
    if (!strcmp(kind, "mixed")) {
        get_int(w, g, p, "decode", true, 0, 1 << 16, &nd);
        get_int(w, g, p, "prefill", true, 0, 1 << 16, &np);
    } else {
        int64_t b = 1;
        get_int(w, g, p, "batch", true, 1, 1 << 16, &b);
        if (!strcmp(kind, "decode"))
            nd = b;
        else
            np = b;
    }
    r->nseqs = (int)(nd + np);
    if (r->nseqs < 1) {
        type_err(w, g, p, "at least one sequence");
        return;
    }
    r->q_lens = xcalloc((size_t)r->nseqs, sizeof *r->q_lens);
    r->kv_lens = xcalloc((size_t)r->nseqs, sizeof *r->kv_lens);
    for (int i = 0; i < r->nseqs; i++) {
        r->kv_lens[i] = gen_len(w, g, p, "kv_len", (uint64_t)seed, i, 1024);
        if (r->kv_lens[i] < 1)
            r->kv_lens[i] = 1;
        int64_t q = i < nd ? 1 : gen_len(w, g, p, "q_len", (uint64_t)seed + 7, i, r->kv_lens[i]);
        r->q_lens[i] = q < 1 ? 1 : q > r->kv_lens[i] ? r->kv_lens[i] : q;
    }
}

static void load_ragged_seqs(struct walk *w, const struct cfg_node *m, const char *p,
                             struct op_ragged *r)
{
    static const char *const srcs[] = {"sequences", "decode", "prefill", "mixed"};
    const struct cfg_node *src = NULL;
    int which = -1, count = 0;
    for (int i = 0; i < 4; i++)
        if (cfg_get(m, srcs[i]))
            src = cfg_get(m, srcs[i]), which = i, count++;
    if (count != 1) {
        type_err(w, m, p, "exactly one of sequences, decode, prefill or mixed");
        return;
    }
    char *sp = join(p, srcs[which]);
    if (which > 0) {
        if (is_map(w, src, sp))
            ragged_gen(w, src, sp, srcs[which], r);
    } else if (src->type != CFG_SEQ || src->n < 1) {
        type_err(w, src, sp, "a list of {q_len, kv_len}");
    } else {
        r->nseqs = src->n;
        r->q_lens = xcalloc((size_t)src->n, sizeof *r->q_lens);
        r->kv_lens = xcalloc((size_t)src->n, sizeof *r->kv_lens);
        for (int i = 0; i < src->n; i++) {
            char *ip = xasprintf("%s.%d", sp, i);
            if (is_map(w, src->kids[i], ip)) {
                static const char *const k[] = {"q_len", "kv_len", NULL};
                check_keys(w, src->kids[i], ip, k);
                get_int(w, src->kids[i], ip, "q_len", true, 1, 1 << 24, &r->q_lens[i]);
                get_int(w, src->kids[i], ip, "kv_len", true, 1, 1 << 24, &r->kv_lens[i]);
                if (r->q_lens[i] > r->kv_lens[i])
                    type_err(w, src->kids[i], ip, "q_len <= kv_len");
            }
            free(ip);
        }
    }
    free(sp);
}

static void load_ragged(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {
        COMMON_KEYS,    "q_heads",        "kv_heads",      "head_dim",
        "dtype",        "kv_dtype",       "page_size",     "max_model_len",
        "num_kv_pages_per_block",         "num_queries_per_block", "sliding_window",
        "soft_cap",     "sequences",      "decode",        "prefill",
        "mixed",        "pages",          "seed",          "sm_scale",
        "max_num_batched_tokens",         NULL};
    check_keys(w, m, p, keys);
    struct op_ragged *r = &op->u.ragged;
    r->dt = r->kv_dt = DT_BF16;
    r->page_size = 16;
    get_int(w, m, p, "q_heads", true, 1, 1 << 16, &r->q_heads);
    get_int(w, m, p, "kv_heads", true, 1, 1 << 16, &r->kv_heads);
    get_int(w, m, p, "head_dim", true, 1, 1 << 16, &r->head_dim);
    get_dtype(w, m, p, "dtype", &r->dt);
    get_dtype(w, m, p, "kv_dtype", &r->kv_dt);
    get_int(w, m, p, "page_size", false, 1, 1 << 16, &r->page_size);
    get_int(w, m, p, "max_model_len", true, 1, 1 << 24, &r->max_model_len);
    get_int(w, m, p, "num_kv_pages_per_block", false, 1, 1 << 16, &r->num_kv_pages_per_block);
    get_int(w, m, p, "num_queries_per_block", false, 1, 1 << 16, &r->num_queries_per_block);
    get_int(w, m, p, "sliding_window", false, 1, 1 << 24, &r->sliding_window);
    get_positive(w, m, p, "soft_cap", &r->soft_cap);
    r->sm_scale = 1.0;
    get_positive(w, m, p, "sm_scale", &r->sm_scale);
    get_int(w, m, p, "max_num_batched_tokens", false, 1, 1 << 24, &r->max_num_batched_tokens);
    static const char *const pg[] = {"contiguous", "shuffled", NULL};
    int sh = 0;
    get_enum(w, m, p, "pages", pg, &sh);
    r->shuffled_pages = sh == 1;
    int64_t seed = 0;
    get_int(w, m, p, "seed", false, 0, INT64_MAX, &seed);
    r->seed = (uint64_t)seed;
    load_ragged_seqs(w, m, p, r);
    for (int i = 0; i < r->nseqs && r->kv_lens; i++) {
        if (r->kv_lens[i] > r->max_model_len) {
            char want[96];
            snprintf(want, sizeof want, "kv_len at most max_model_len = %lld",
                     (long long)r->max_model_len);
            type_err(w, m, p, want);
            break;
        }
    }
}

static void load_axes(struct walk *w, const struct cfg_node *m, const char *p,
                      struct op_collective *c)
{
    const struct cfg_node *ax = cfg_get(m, "axes");
    char *ap = join(p, "axes");
    c->naxes = 1;
    c->axes[0] = 0;
    if (ax && (ax->type != CFG_SEQ || ax->n < 1 || ax->n > 3)) {
        type_err(w, ax, ap, "a list of 1 to 3 axes, like [0] or [0, 1]");
    } else if (ax) {
        c->naxes = ax->n;
        for (int i = 0; i < ax->n; i++) {
            int64_t v = 0;
            get_item(w, ax, ap, i, 0, TOPO_MAX_DIMS - 1, &v);
            c->axes[i] = (int)v;
        }
    }
    free(ap);
}

static void load_collective(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "bytes", "axes", "algorithm", "dtype", NULL};
    check_keys(w, m, p, keys);
    struct op_collective *c = &op->u.coll;
    c->dt = DT_BF16;
    get_bytes(w, m, p, "bytes", true, &c->bytes);
    load_axes(w, m, p, c);
    get_dtype(w, m, p, "dtype", &c->dt);
    static const char *const algos[] = {"default", "unidirectional", "bidirectional", "ring_psum",
                                        "reduce_scatter_all_gather", NULL};
    int a = 0;
    get_enum(w, m, p, "algorithm", algos, &a);
    c->algo = (enum coll_algo)a;
}

static void load_cmm(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "m", "k", "n", "dtype", "axis",
                                       "overlapped", NULL};
    check_keys(w, m, p, keys);
    struct op_collective_matmul *c = &op->u.cmm;
    c->dt = DT_BF16;
    c->overlap = true;
    get_int(w, m, p, "m", true, 1, 1 << 24, &c->m);
    get_int(w, m, p, "k", true, 1, 1 << 24, &c->k);
    get_int(w, m, p, "n", true, 1, 1 << 24, &c->n);
    get_dtype(w, m, p, "dtype", &c->dt);
    get_i(w, m, p, "axis", false, 0, TOPO_MAX_DIMS - 1, &c->axis);
    get_bool(w, m, p, "overlapped", &c->overlap);
}

static void load_remote_copy(struct walk *w, const struct cfg_node *m, const char *p,
                             struct op *op)
{
    static const char *const keys[] = {COMMON_KEYS, "bytes", "shift", "device_id", "recv_bytes",
                                       NULL};
    check_keys(w, m, p, keys);
    struct op_remote_copy *r = &op->u.rc;
    get_bytes(w, m, p, "bytes", true, &r->bytes);
    r->recv_bytes = r->bytes;
    const struct cfg_node *rb = cfg_get(m, "recv_bytes");
    if (rb && rb->type == CFG_SCALAR && !strcmp(rb->value, "0"))
        r->recv_bytes = 0;
    else
        get_bytes(w, m, p, "recv_bytes", false, &r->recv_bytes);
    const struct cfg_node *sh = cfg_get(m, "shift"), *id = cfg_get(m, "device_id");
    if ((sh != NULL) == (id != NULL)) {
        type_err(w, m, p, "exactly one of shift: [..] or device_id: N | [x, y, z]");
        return;
    }
    const struct cfg_node *t = sh ? sh : id;
    char *tp = join(p, sh ? "shift" : "device_id");
    if (id && id->type == CFG_SCALAR) {
        r->id_kind = 2;
        get_int(w, m, p, "device_id", true, INT32_MIN, INT32_MAX, &r->logical);
    } else if (t->type != CFG_SEQ || t->n < 1 || t->n > 3) {
        type_err(w, t, tp, "a list of 1 to 3 coordinates");
    } else {
        r->id_kind = sh ? 0 : 1;
        r->ncoords = t->n;
        for (int i = 0; i < t->n; i++) {
            int64_t v = 0;
            get_item(w, t, tp, i, INT32_MIN / 2, INT32_MAX / 2, &v);
            r->coords[i] = (int)v;
        }
    }
    free(tp);
}

typedef void op_loader(struct walk *w, const struct cfg_node *m, const char *p, struct op *op);

static op_loader *const op_loaders[OP_KIND_COUNT] = {
    load_hbm_copy, load_ppermute,   load_matmul,     load_flash,      load_splash,
    load_paged,    load_ragged,     load_collective, load_collective, load_collective,
    load_collective, load_cmm,    load_remote_copy};

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
        char want[400] = "an op kind (";
        const char *names[OP_KIND_COUNT + 1];
        for (int j = 0; j < OP_KIND_COUNT; j++) {
            names[j] = op_kind_name((enum op_kind)j);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", j ? ", " : "",
                     names[j]);
        }
        names[OP_KIND_COUNT] = NULL;
        bool known;
        const char *best = k->type == CFG_SCALAR ? cfg_suggest(k->value, names, &known) : NULL;
        strcat(want, ")");
        if (best) {
            struct diag_loc loc;
            where(k, &loc);
            diag_error(w->d, &loc, kp, "unknown op '%s' (did you mean '%s'?)", k->value, best);
        } else {
            type_err(w, k, kp, want);
        }
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

/* Checks the tree 'root' (consumed) of the scenario at 'path' into '*sc'. */
static int load_tree(struct cfg_node *root, const char *path, const char *const *sets, int nsets,
                     struct cfg_scenario *sc, struct diag *d)
{
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
