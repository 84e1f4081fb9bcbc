/* study/plan.c -- `tpusim plan` (study/plan.h): the spec, the legal slices,
 * the search space and its candidates checked without simulating, then the
 * generated sweep. */
#include "study/plan_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_tree.h"
#include "config/cfg_walk.h"
#include "study/sweep.h"
#include "topology/mesh.h"

static const char *const axis_names[] = {"data",     "fsdp",   "tensor", "sequence",
                                         "pipeline", "expert", NULL};
static const char *const rank_names[] = {"step_time", "mfu", "usd_per_million_tokens",
                                         "time_to_train", NULL};

const char *plan_rank_name(enum plan_rank r)
{
    return rank_names[r];
}

/* ---------------- legal slices ---------------- */

/* Offered slices (https://cloud.google.com/tpu/docs/v5e, /v6e, /v4, /v5p):
 * a 2D chip's are 1x1 and AxA or Ax2A for A a power of two from 2 (1x1 2x2
 * 2x4 4x4 4x8 8x8 8x16 16x16); a 3D chip's are 2x2x1 2x2x2 2x2x4 2x4x4 below
 * a cube, then every shape of whole 4x4x4 cubes... in multiples of 4 on each
 * axis; both within the pod (chip slice.max_shape, any order) and its largest
 * slice (slice.max_chips). */
static bool fits_pod(const struct chip_params *c, const int *s)
{
    long chips = (long)s[0] * s[1] * s[2];
    if (c->slice_max_chips && chips > c->slice_max_chips)
        return false;
    if (!c->slice_max[0])
        return true;
    int dims = c->slice_dims; /* s ascending against the pod's ascending axes */
    for (int i = 0; i < dims; i++)
        if (s[3 - dims + i] > c->slice_max[i])
            return false;
    return true;
}

static int add_shape(const struct chip_params *chip, long chips, int a, int b, int c,
                     int (*out)[3], int n, int max)
{
    int s[3] = {a, b, c};
    if ((long)a * b * c != chips || !fits_pod(chip, s))
        return n;
    if (n < max) {
        out[n][0] = a;
        out[n][1] = b;
        out[n][2] = c;
    }
    return n + 1;
}

int plan_shapes(const struct chip_params *chip, long chips, int (*out)[3], int max)
{
    int n = 0;
    if (chip->slice_dims == 2) {
        if (chips == 1)
            return add_shape(chip, chips, 1, 1, 1, out, n, max);
        for (int a = 2; a <= 4096; a *= 2)
            for (int b = a; b <= 2 * a; b += a)
                n = add_shape(chip, chips, 1, a, b, out, n, max);
        return n;
    }
    static const int small[][3] = {{1, 2, 2}, {2, 2, 2}, {2, 2, 4}, {2, 4, 4}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        n = add_shape(chip, chips, small[i][0], small[i][1], small[i][2], out, n, max);
    for (int a = 4; a <= 64; a += 4)
        for (int b = a; b <= 64 && (long)a * b * b <= chips; b += 4)
            if (chips % ((long)a * b) == 0 && chips / ((long)a * b) % 4 == 0 &&
                chips / ((long)a * b) >= b)
                n = add_shape(chip, chips, a, b, (int)(chips / ((long)a * b)), out, n, max);
    return n;
}

double plan_factorizations(long n, int k)
{
    double ways = 1;
    for (long p = 2; n > 1; p++) {
        if (p * p > n)
            p = n;
        int e = 0;
        while (n % p == 0) {
            n /= p;
            e++;
        }
        for (int i = 1; i <= e; i++) /* C(e + k - 1, k - 1) */
            ways = ways * (k - 1 + i) / i;
    }
    return ways;
}

/* ---------------- the spec ---------------- */

static void load_list(struct walk *w, const struct cfg_node *pl, const char *base, const char *key,
                      const char *const *names, const char **outn, double *outr, int *count,
                      double lo, double hi, const char *want)
{
    char *p = walk_join(base, key);
    const struct cfg_node *l = walk_field(w, pl, base, key, false);
    if (!l) {
        free(p);
        return;
    }
    if (l->type != CFG_SEQ || l->n < 1 || l->n > PLAN_MAX_LIST) {
        walk_type_error(w, l, p, "a list of 1 to 64 values");
        free(p);
        return;
    }
    for (int i = 0; i < l->n; i++) {
        const struct cfg_node *it = l->kids[i];
        char *ip = xasprintf("%s.%d", p, i);
        if (names) {
            int k = -1;
            for (int j = 0; it->type == CFG_SCALAR && names[j]; j++)
                if (!strcmp(it->value, names[j]))
                    k = j;
            if (k < 0)
                walk_type_error(w, it, ip, want);
            else
                outn[(*count)++] = names[k];
        } else {
            char *end = NULL;
            double v = it->type == CFG_SCALAR ? strtod(it->value, &end) : NAN;
            if (!end || *end || !(v >= lo && v <= hi))
                walk_type_error(w, it, ip, want);
            else
                outr[(*count)++] = v;
        }
        free(ip);
    }
    free(p);
}

/* 'rel' relative to the directory of file 'spec', made absolute (the generated sweep
 * spec lives elsewhere). */
static char *resolve(const char *spec, const char *rel)
{
    const char *slash = strrchr(spec, '/');
    char *p = rel[0] == '/' || !slash ? xstrdup(rel)
                                      : xasprintf("%.*s/%s", (int)(slash - spec), spec, rel);
    char *abs = realpath(p, NULL);
    if (!abs)
        return p;
    free(p);
    return abs;
}

static char *spec_name(const char *path)
{
    const char *b = strrchr(path, '/');
    char *s = xstrdup(b ? b + 1 : path);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

/* plan.axis_sizes: {axis: [sizes]}: the sizes a searched axis may take. */
static void load_axis_sizes(struct walk *w, const struct cfg_node *pl, struct plan_spec *sp)
{
    const struct cfg_node *m = walk_field(w, pl, "plan", "axis_sizes", false);
    if (!m || !walk_is_map(w, m, "plan.axis_sizes"))
        return;
    for (int i = 0; i < m->n; i++) {
        char *p = walk_join("plan.axis_sizes", m->keys[i]);
        int a = -1;
        for (int k = 0; k < sp->naxes; k++)
            if (!strcmp(sp->axes[k], m->keys[i]))
                a = k;
        double v[PLAN_MAX_LIST];
        int nv = 0;
        if (a < 0) {
            walk_type_error(w, m->kids[i], p, "sizes of an axis in plan.axes");
        } else {
            load_list(w, m, "plan.axis_sizes", m->keys[i], NULL, NULL, v, &nv, 1, 1 << 20,
                      "an axis size from 1 to 1048576");
            for (int k = 0; k < nv; k++)
                sp->sizes[a][k] = (int)v[k];
            sp->nsizes[a] = nv;
        }
        free(p);
    }
}

static void load_plan_section(struct walk *w, const struct cfg_node *pl, struct plan_spec *sp)
{
    static const char *const keys[] = {"chips",  "budget_usd_per_hour", "slices", "axes",
                                       "axis_sizes", "remat", "batch_per_chip", "rank_by",
                                       "max_points", NULL};
    walk_check_keys(w, pl, "plan", keys);
    int64_t v = 0;
    if (walk_int(w, pl, "plan", "chips", false, 1, 1 << 20, &v) == 0)
        sp->chips = (long)v;
    walk_real(w, pl, "plan", "budget_usd_per_hour", false, 1e-6, 1e12,
              "a budget in USD per hour from 0.000001 to 1e12", &sp->budget);
    if (cfg_get(pl, "chips") && cfg_get(pl, "budget_usd_per_hour"))
        walk_type_error(w, cfg_get(pl, "budget_usd_per_hour"), "plan.budget_usd_per_hour",
                        "either plan.chips or a budget, not both");
    double sl[PLAN_MAX_LIST];
    int nsl = 0;
    load_list(w, pl, "plan", "slices", NULL, NULL, sl, &nsl, 1, 1024, "a slice count from 1 to 1024");
    for (int i = 0; i < nsl; i++)
        sp->slices[i] = (int)sl[i];
    if (nsl)
        sp->nslices = nsl;
    const char *ax[PLAN_MAX_LIST];
    int nax = 0;
    load_list(w, pl, "plan", "axes", axis_names, ax, NULL, &nax, 0, 0,
              "one of data, fsdp, tensor, sequence, pipeline, expert");
    if (nax > PLAN_MAX_AXES)
        walk_type_error(w, cfg_get(pl, "axes"), "plan.axes", "at most 6 axes");
    for (int i = 0; i < nax && i < PLAN_MAX_AXES; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(ax[i], ax[j]))
                walk_type_error(w, cfg_get(pl, "axes")->kids[i], "plan.axes",
                                "each axis once");
        sp->axes[i] = ax[i];
    }
    if (nax)
        sp->naxes = nax < PLAN_MAX_AXES ? nax : PLAN_MAX_AXES;
    load_axis_sizes(w, pl, sp);
    load_list(w, pl, "plan", "remat", model_remat_names(), sp->remat, NULL, &sp->nremat, 0, 0,
              "a remat policy (tpusim's model.remat names)");
    load_list(w, pl, "plan", "batch_per_chip", NULL, NULL, sp->batch_per_chip, &sp->nbatch, 1.0 / 4096,
              4096, "sequences per chip from 1/4096 to 4096");
    int r = 0;
    if (walk_enum(w, pl, "plan", "rank_by", rank_names, &r) == 0 && cfg_get(pl, "rank_by"))
        sp->rank_by = (enum plan_rank)r;
    if (walk_int(w, pl, "plan", "max_points", false, 1, PLAN_MAX_POINTS, &v) == 0 &&
        cfg_get(pl, "max_points"))
        sp->max_points = (long)v;
}

static int apply_opts(const struct plan_opts *o, struct plan_spec *sp, struct diag *d)
{
    if (o->chips) {
        sp->chips = o->chips;
        sp->budget = 0;
    }
    if (o->budget > 0) {
        sp->budget = o->budget;
        sp->budget_cli = true;
        sp->chips = 0;
    }
    if (o->rank_by) {
        int k = -1;
        for (int i = 0; rank_names[i]; i++)
            if (!strcmp(o->rank_by, rank_names[i]))
                k = i;
        if (k < 0) {
            diag_error(d, NULL, "--rank-by", "expected one of step_time, mfu, "
                       "usd_per_million_tokens, time_to_train, got '%s'", o->rank_by);
            return -1;
        }
        sp->rank_by = (enum plan_rank)k;
    }
    if (o->generation) {
        struct chip_params chip;
        struct diag *cd = diag_new();
        int rc = cfg_load_chip(o->generation, &chip, cd);
        diag_free(cd);
        if (rc != 0) {
            diag_error(d, NULL, "--generation", "expected a chip preset (tpusim chips lists "
                       "them), got '%s'", o->generation);
            return -1;
        }
        sp->gen_set = xasprintf("chip=%s", o->generation);
    }
    return 0;
}

/* What the base scenario makes of the spec: the chip's slice rule, the price a budget
 * and a cost ranking need, a train: section for time to train. */
static void check_base(const struct cfg_node *root, struct plan_spec *sp, struct diag *d)
{
    const struct chip_params *c = &sp->base.chip;
    struct diag_loc loc = {sp->file, 0, 0};
    const struct cfg_node *pl = cfg_get(root, "plan");
    if (pl)
        walk_loc(pl, &loc);
    if (c->slice_dims != 2 && c->slice_dims != 3)
        diag_error(d, &loc, "plan", "expected a chip with a 2D or 3D slice rule (slice.dims), "
                   "got %s without one", c->name);
    if (!sp->chips && !(sp->budget > 0))
        diag_error(d, &loc, "plan", "expected plan.chips or plan.budget_usd_per_hour "
                   "(or --chips, --budget-usd-per-hour), got neither");
    double price = sp->base.price_usd_per_chip_hour;
    struct diag_loc bloc = loc;
    if (pl && cfg_get(pl, "budget_usd_per_hour"))
        walk_loc(cfg_get(pl, "budget_usd_per_hour"), &bloc);
    if (sp->budget > 0 && !(price > 0))
        diag_error(d, &loc, "plan.budget_usd_per_hour", "expected a chip with a price "
                   "(cost.price_usd_per_chip_hour), got %s without one", c->name);
    else if (sp->budget > 0 && sp->budget < price)
        diag_error(d, sp->budget_cli ? NULL : &bloc,
                   sp->budget_cli ? "--budget-usd-per-hour" : "plan.budget_usd_per_hour",
                   "expected at least the price of one %s chip-hour (%g USD), got %g", c->name,
                   price, sp->budget);
    if (sp->rank_by == PLAN_RANK_COST && !(price > 0))
        diag_error(d, &loc, "plan.rank_by", "usd_per_million_tokens needs a chip price "
                   "(cost.price_usd_per_chip_hour); %s has none", c->name);
    if (sp->rank_by == PLAN_RANK_TRAIN && !sp->base.has_train)
        diag_error(d, &loc, "plan.rank_by", "time_to_train needs a train: section in the "
                   "base scenario, got none");
    if (sp->base.model.mode != MODEL_TRAIN)
        diag_error(d, &loc, "base", "expected a training model step (model.mode: train)");
}

int plan_spec_load(const char *path, const struct plan_opts *o, struct plan_spec *sp,
                   struct diag *d)
{
    memset(sp, 0, sizeof *sp);
    sp->file = xstrdup(path);
    sp->nslices = 1;
    sp->slices[0] = 1;
    sp->naxes = 2;
    sp->axes[0] = "fsdp";
    sp->axes[1] = "tensor";
    sp->max_points = PLAN_DEFAULT_MAX_POINTS;
    struct cfg_node *root = cfg_parse_file(path, d);
    if (!root)
        return -1;
    struct walk w = {.d = d};
    if (walk_is_map(&w, root, "plan spec")) {
        static const char *const keys[] = {"name", "base", "plan", NULL};
        walk_check_keys(&w, root, "", keys);
        const struct cfg_node *nm = cfg_get(root, "name");
        if (nm && (nm->type != CFG_SCALAR || !walk_name_ok(nm->value)))
            walk_type_error(&w, nm, "name", WALK_NAME_RULE);
        else
            sp->name = nm ? xstrdup(nm->value) : spec_name(path);
        const struct cfg_node *b = walk_field(&w, root, "", "base", true);
        if (b && b->type != CFG_SCALAR)
            walk_type_error(&w, b, "base", "a model scenario file (relative to the spec)");
        else if (b)
            sp->base_path = resolve(path, b->value);
        const struct cfg_node *pl = walk_field(&w, root, "", "plan", true);
        if (pl && walk_is_map(&w, pl, "plan"))
            load_plan_section(&w, pl, sp);
    }
    if (diag_count(d) == 0 && apply_opts(o, sp, d) == 0) {
        const char *sets[1] = {sp->gen_set};
        if (cfg_load_model_base(sp->base_path, sets, sp->gen_set ? 1 : 0, &sp->base, d) == 0)
            check_base(root, sp, d);
    }
    if (diag_count(d) == 0 && !cfg_get(cfg_get(root, "plan"), "rank_by") && !o->rank_by &&
        sp->base.has_train)
        sp->rank_by = PLAN_RANK_TRAIN;
    cfg_node_free(root);
    return diag_count(d) ? -1 : 0;
}

void plan_spec_fini(struct plan_spec *sp)
{
    free(sp->file);
    free(sp->name);
    free(sp->base_path);
    free(sp->gen_set);
}

/* ---------------- the candidates ---------------- */

/* The global batches of the spec for 'chips' chips (the base's own when it names none). */
static int batches(const struct plan_spec *sp, long chips, int64_t *out)
{
    if (!sp->nbatch) {
        out[0] = sp->base.model.batch;
        return 1;
    }
    int n = 0;
    for (int i = 0; i < sp->nbatch; i++) {
        double b = sp->batch_per_chip[i] * (double)chips;
        out[n++] = b == floor(b) && b >= 1 ? (int64_t)b : -1; /* -1: not a whole batch */
    }
    return n;
}

struct slice_list {
    int n;
    int shape[2048][3];
    int slices[2048];
};

/* Every (shape, slices) of the spec: its chip count, or every count the budget pays for. */
static void slice_list(const struct plan_spec *sp, struct slice_list *L)
{
    L->n = 0;
    long most = sp->chips ? sp->chips
                          : (long)floor(sp->budget / sp->base.price_usd_per_chip_hour + 1e-9);
    for (int s = 0; s < sp->nslices; s++) {
        int S = sp->slices[s];
        for (long per = 1; per * S <= most && per <= TOPO_MAX_CHIPS; per++) {
            if (sp->chips && per * S != sp->chips)
                continue;
            int sh[64][3];
            int k = plan_shapes(&sp->base.chip, per, sh, 64);
            for (int i = 0; i < k && i < 64 && L->n < 2048; i++) {
                memcpy(L->shape[L->n], sh[i], sizeof sh[i]);
                L->slices[L->n++] = S;
            }
        }
    }
}

/* The mesh of candidate 'c' as the loader builds it (config/cfg.c mesh_setup). */
static int cand_mesh(const struct plan *p, const struct plan_cand *c, const struct topo *t,
                     struct mesh *m, char *err, size_t n)
{
    memset(m, 0, sizeof *m);
    for (int a = 0; a < p->sp.naxes; a++)
        if (c->mesh[a] > 1) {
            snprintf(m->axis[m->naxes].name, MESH_NAME_MAX, "%s", p->sp.axes[a]);
            m->axis[m->naxes++].size = c->mesh[a];
        }
    if (!m->naxes) {
        snprintf(m->axis[0].name, MESH_NAME_MAX, "%s", p->sp.axes[0]);
        m->axis[m->naxes++].size = 1;
    }
    const struct chip_params *ch = &p->sp.base.chip;
    int dpc = ch->megacore ? 1 : ch->cores;
    if (mesh_fold_devices(m, t->nchips * c->slices, dpc, err, n) != 0 ||
        mesh_place_slices(m, t->nchips, c->slices, err, n) != 0)
        return -1;
    return mesh_layout(m, t, err, n);
}

/* Checks candidate 'c' without simulating: illegal, pruned (HBM) or to simulate. */
static void check_cand(const struct plan *p, struct plan_cand *c)
{
    char err[512];
    const struct plan_spec *sp = &p->sp;
    if (c->batch < 1) {
        c->status = PLAN_ILLEGAL;
        c->reason = xstrdup("the batch per chip times the chips is not a whole batch");
        return;
    }
    struct topo t;
    bool wrap[3];
    topo_default_wrap(sp->base.chip.wrap, c->nd, c->shape, wrap);
    struct mesh m;
    struct model md = sp->base.model;
    md.batch = c->batch;
    if (c->remat >= 0)
        model_remat_policy(sp->remat[c->remat], &md.remat);
    struct model_shard sh;
    if (topo_init(&t, c->nd, c->shape, wrap) != 0) {
        c->status = PLAN_ILLEGAL;
        c->reason = xstrdup("not a slice tpusim can build");
    } else if (cand_mesh(p, c, &t, &m, err, sizeof err) != 0 ||
               model_shard(&md, &m, &t, &sp->base.chip, &sh, err, sizeof err) != 0) {
        c->status = PLAN_ILLEGAL;
        c->reason = xstrdup(err);
    } else {
        struct model_memory mem;
        model_memory(&md, &sh, &sp->base.chip, &mem);
        c->mem_bytes = mem.total;
        c->capacity_bytes = mem.capacity;
        if (mem.total > mem.capacity) {
            model_oom_message(&mem, err, sizeof err);
            c->status = PLAN_PRUNED;
            c->reason = xstrdup(err);
        } else {
            c->status = PLAN_SIM;
        }
    }
}

/* Every mesh over the spec's axes with sizes multiplying to 'chips': calls 'add'. */
static bool size_ok(const struct plan_spec *sp, int a, long d)
{
    for (int k = 0; k < sp->nsizes[a]; k++)
        if (sp->sizes[a][k] == d)
            return true;
    return sp->nsizes[a] == 0;
}

static void meshes(struct plan *p, long chips, int a, int *sizes, struct plan_cand *proto)
{
    if (a == p->sp.naxes - 1) {
        if (!size_ok(&p->sp, a, chips))
            return;
        sizes[a] = (int)chips;
        memcpy(proto->mesh, sizes, sizeof proto->mesh);
        int nr = p->sp.nremat ? p->sp.nremat : 1;
        int64_t b[PLAN_MAX_LIST];
        long total = (long)proto->shape[0] * proto->shape[1] * proto->shape[2] * proto->slices;
        int nb = batches(&p->sp, total, b);
        for (int r = 0; r < nr; r++)
            for (int i = 0; i < nb; i++) {
                struct plan_cand *c = &p->c[p->n++];
                *c = *proto;
                c->remat = p->sp.nremat ? r : -1;
                c->batch = b[i];
                c->point = -1;
                check_cand(p, c);
                p->count[c->status]++;
            }
        return;
    }
    for (long d = 1; d <= chips; d++)
        if (chips % d == 0 && size_ok(&p->sp, a, d)) {
            sizes[a] = (int)d;
            meshes(p, chips / d, a + 1, sizes, proto);
        }
}

int plan_enumerate(struct plan *p, struct diag *d)
{
    const struct plan_spec *sp = &p->sp;
    struct slice_list L;
    slice_list(sp, &L);
    int per = (sp->nremat ? sp->nremat : 1) * (sp->nbatch ? sp->nbatch : 1);
    p->space = 0;
    for (int i = 0; i < L.n; i++) {
        long chips = (long)L.shape[i][0] * L.shape[i][1] * L.shape[i][2] * L.slices[i];
        p->space += plan_factorizations(chips, sp->naxes) * per;
    }
    struct diag_loc loc = {sp->file, 0, 0};
    if (L.n == 0) {
        diag_error(d, &loc, "plan", "expected %s that %s slices of a legal %s shape "
                   "(docs/user-guide.md, \"Plan a slice\"), got none",
                   sp->chips ? "a chip count" : "a budget", sp->chips ? "makes" : "pays for",
                   sp->base.chip.name);
        return -1;
    }
    if (p->space > (double)sp->max_points) {
        diag_error(d, &loc, "plan", "expected a search space of at most plan.max_points = %ld "
                   "candidates, got %.0f (%d slices x meshes over %d axes x %d remat x %d "
                   "batch): fewer axes, policies or batches", sp->max_points, p->space, L.n,
                   sp->naxes, sp->nremat ? sp->nremat : 1, sp->nbatch ? sp->nbatch : 1);
        return -1;
    }
    p->c = xcalloc((size_t)p->space, sizeof *p->c);
    for (int i = 0; i < L.n; i++) {
        struct plan_cand proto = {.slices = L.slices[i]};
        memcpy(proto.shape, L.shape[i], sizeof proto.shape);
        proto.nd = sp->base.chip.slice_dims;
        if (proto.nd == 2) { /* (1, a, b) -> (a, b) */
            proto.shape[0] = L.shape[i][1];
            proto.shape[1] = L.shape[i][2];
            proto.shape[2] = 1;
        }
        int sizes[PLAN_MAX_AXES] = {0};
        long chips = (long)L.shape[i][0] * L.shape[i][1] * L.shape[i][2] * L.slices[i];
        meshes(p, chips, 0, sizes, &proto);
    }
    return 0;
}

char *plan_shape_text(const struct plan_cand *c)
{
    if (c->nd == 2)
        return xasprintf("%dx%d", c->shape[0], c->shape[1]);
    return xasprintf("%dx%dx%d", c->shape[0], c->shape[1], c->shape[2]);
}

char *plan_mesh_text(const struct plan *p, const struct plan_cand *c)
{
    char buf[256] = "";
    size_t k = 0;
    for (int a = 0; a < p->sp.naxes; a++)
        if (c->mesh[a] > 1)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s %d", k ? " x " : "",
                                  p->sp.axes[a], c->mesh[a]);
    return xstrdup(k ? buf : "1 chip");
}

char **plan_cand_sets(const struct plan *p, const struct plan_cand *c, int *n)
{
    char **s = xcalloc(6, sizeof *s);
    int k = 0;
    if (c->nd == 2)
        s[k++] = xasprintf("topology.shape=[%d, %d]", c->shape[0], c->shape[1]);
    else
        s[k++] = xasprintf("topology.shape=[%d, %d, %d]", c->shape[0], c->shape[1],
                           c->shape[2]);
    s[k++] = xasprintf("topology.slices=%d", c->slices);
    char mesh[256] = "";
    size_t m = 0;
    for (int a = 0; a < p->sp.naxes; a++)
        if (c->mesh[a] > 1 || (a == 0 && c->slices * c->shape[0] * c->shape[1] * c->shape[2] == 1))
            m += (size_t)snprintf(mesh + m, sizeof mesh - m, "%s%s: %d", m ? ", " : "",
                                  p->sp.axes[a], c->mesh[a]);
    s[k++] = xasprintf("mesh={%s}", mesh);
    s[k++] = xasprintf("model.remat=%s", c->remat >= 0 ? p->sp.remat[c->remat]
                                                        : p->sp.base.model.remat.name);
    s[k++] = xasprintf("model.batch=%lld", (long long)c->batch);
    *n = k;
    return s;
}

void plan_fini(struct plan *p)
{
    for (int i = 0; i < p->n; i++) {
        struct plan_cand *c = &p->c[i];
        free(c->reason);
        free(c->sim_status);
        free(c->bound);
        free(c->op);
        free(c->dir);
    }
    free(p->c);
    plan_spec_fini(&p->sp);
}
