/* config/cfg_pcall.c -- the loader of the generic pallas_call op
 * (kernels/pcall.h): grid, grid_names, dimension_semantics,
 * num_scalar_prefetch, in_specs, out_specs, scratch_shapes, and a body
 * (primitives) or a work (per-step counts). Every key is checked where it
 * is written: index maps and conditions are parsed as affine expressions of
 * the grid names, body names resolve to blocks, scratch or temporaries of
 * the right shapes. What needs the whole grid (block indices in range,
 * blocks that tile the arrays, the step count, the VMEM budget) is checked
 * by the kernel when the op is validated (kernels/pcall.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg_int.h"
#include "config/op_table.h"
#include "kernels/pcall.h"
#include "kernels/xla.h"

static const char *const default_grid_names[PL_MAX_GRID] = {"i", "j", "k", "l", "m"};
static const char *const space_names[] = {"vmem", "any", "smem", "hbm", NULL};
static const char *const sem_names[] = {"arbitrary", "parallel", NULL};

struct pload {
    struct walk *w;
    struct pc_spec *s;
    const char *names[PL_MAX_GRID];
};

static bool ident_ok(const char *v)
{
    if (!v[0] || strlen(v) >= PC_NAME_MAX || !(v[0] == '_' || (v[0] >= 'a' && v[0] <= 'z') ||
                                               (v[0] >= 'A' && v[0] <= 'Z')))
        return false;
    for (const char *c = v; *c; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9')))
            return false;
    return true;
}

/* A sequence of 1 to 'max' items at m[key]; NULL (reported) otherwise. */
static const struct cfg_node *seq_of(struct walk *w, const struct cfg_node *m, const char *p,
                                     const char *key, bool required, int max, const char *want)
{
    const struct cfg_node *l = walk_field(w, m, p, key, required);
    if (!l)
        return NULL;
    if (l->type != CFG_SEQ || l->n < 1 || l->n > max) {
        char *kp = walk_join(p, key);
        walk_type_error(w, l, kp, want);
        free(kp);
        return NULL;
    }
    return l;
}

/* ---- grid ---- */

static void load_grid(struct pload *L, const struct cfg_node *m, const char *p)
{
    struct pc_spec *s = L->s;
    const struct cfg_node *g =
        seq_of(L->w, m, p, "grid", true, PL_MAX_GRID, "a list of 1 to 5 grid dims, like [8, 8, 4]");
    s->ngrid = g ? g->n : 0;
    char *gp = walk_join(p, "grid");
    for (int i = 0; i < s->ngrid; i++) {
        s->grid[i] = 1;
        walk_item(L->w, g, gp, i, 1, PC_MAX_STEPS, &s->grid[i]);
        snprintf(s->grid_names[i], PC_NAME_MAX, "%s", default_grid_names[i]);
    }
    int64_t steps = 1;
    for (int i = 0; i < s->ngrid; i++)
        steps = steps > PC_MAX_STEPS ? steps : steps * s->grid[i];
    if (steps > PC_MAX_STEPS)
        walk_type_error(L->w, g, gp, "a grid of at most 2^30 steps in all (resource guard)");
    free(gp);
    const struct cfg_node *nm = seq_of(L->w, m, p, "grid_names", false, PL_MAX_GRID,
                                       "a list of names, one per grid dim");
    char *np = walk_join(p, "grid_names");
    if (nm && nm->n != s->ngrid)
        walk_type_error(L->w, nm, np, "one name per grid dim");
    for (int i = 0; nm && nm->n == s->ngrid && i < nm->n; i++) {
        const struct cfg_node *e = nm->kids[i];
        char *ip = xasprintf("%s.%d", np, i);
        bool dup = false;
        for (int j = 0; j < i && e->type == CFG_SCALAR; j++)
            dup |= strcmp(s->grid_names[j], e->value) == 0;
        if (e->type != CFG_SCALAR || !ident_ok(e->value) || dup)
            walk_type_error(L->w, e, ip, "a new identifier (letters, digits, '_')");
        else
            snprintf(s->grid_names[i], PC_NAME_MAX, "%s", e->value);
        free(ip);
    }
    free(np);
    for (int i = 0; i < s->ngrid; i++)
        L->names[i] = s->grid_names[i];
    const struct cfg_node *ds = seq_of(L->w, m, p, "dimension_semantics", false, PL_MAX_GRID,
                                       "a list of parallel | arbitrary, one per grid dim");
    char *dp = walk_join(p, "dimension_semantics");
    if (ds && ds->n != s->ngrid)
        walk_type_error(L->w, ds, dp, "one of parallel | arbitrary per grid dim");
    for (int i = 0; ds && ds->n == s->ngrid && i < ds->n; i++) {
        const struct cfg_node *e = ds->kids[i];
        char *ip = xasprintf("%s.%d", dp, i);
        if (e->type == CFG_SCALAR && !strcmp(e->value, "parallel"))
            s->sem[i] = PL_PARALLEL;
        else if (!(e->type == CFG_SCALAR && !strcmp(e->value, "arbitrary")))
            walk_type_error(L->w, e, ip, "parallel or arbitrary");
        free(ip);
    }
    free(dp);
    (void)sem_names;
}

/* ---- operands ---- */

/* A shape (rank 1 to 5) of dims in [1, 2^40]; block dims may be null (squeezed). */
static int load_dims(struct walk *w, const struct cfg_node *m, const char *p, const char *key,
                     bool nulls, int64_t *dims)
{
    const struct cfg_node *l = seq_of(w, m, p, key, false, PL_MAX_RANK,
                                      nulls ? "a list of 1 to 5 block dims (null: squeezed)"
                                            : "a list of 1 to 5 dims, like [1024, 512]");
    if (!l)
        return 0;
    char *kp = walk_join(p, key);
    for (int i = 0; i < l->n; i++) {
        const struct cfg_node *e = l->kids[i];
        if (nulls && e->type == CFG_SCALAR && !e->quoted &&
            (!strcmp(e->value, "null") || !strcmp(e->value, "~") || !e->value[0])) {
            dims[i] = PL_SQUEEZED;
            continue;
        }
        dims[i] = 1;
        walk_item(w, l, kp, i, 1, PC_EXPR_MAX, &dims[i]);
    }
    free(kp);
    return l->n;
}

static void load_index_map(struct pload *L, const struct cfg_node *e, const char *p,
                           struct pc_operand *o)
{
    const struct cfg_node *l = cfg_get(e, "index_map");
    if (!l)
        return;
    char *kp = walk_join(p, "index_map");
    if (l->type != CFG_SEQ || l->n != o->rank) {
        char want[80];
        snprintf(want, sizeof want, "a list of %d affine expressions of the grid indices",
                 o->rank);
        walk_type_error(L->w, l, kp, want);
        free(kp);
        return;
    }
    o->has_index = true;
    for (int d = 0; d < l->n; d++) {
        const struct cfg_node *x = l->kids[d];
        char *ip = xasprintf("%s.%d", kp, d), why[256], want[320];
        if (x->type != CFG_SCALAR) {
            walk_type_error(L->w, x, ip, "an affine expression of the grid indices");
        } else if (pc_parse_affine(x->value, L->names, L->s->ngrid, &o->index[d], why,
                                   sizeof why)) {
            snprintf(want, sizeof want, "an affine expression of the grid indices (%s)", why);
            walk_type_error(L->w, x, ip, want);
        }
        free(ip);
    }
    free(kp);
}

static void load_space(struct walk *w, const struct cfg_node *e, const char *p,
                       enum pl_space *space)
{
    int v = 0;
    if (!cfg_get(e, "memory_space"))
        return;
    if (walk_enum(w, e, p, "memory_space", space_names, &v) == 0)
        *space = v == 0 ? PL_VMEM : v == 2 ? PL_SMEM : PL_ANY;
}

static void load_operand(struct pload *L, const struct cfg_node *e, const char *p, int i,
                         enum pl_dir dir, bool prefetch)
{
    struct walk *w = L->w;
    struct pc_operand *o = &L->s->operands[L->s->noperands++];
    static const char *const keys[] = {"name", "shape", "dtype", "block_shape", "index_map",
                                       "memory_space", "buffers", NULL};
    static const char *const pkeys[] = {"name", "shape", "dtype", NULL};
    walk_check_keys(w, e, p, prefetch ? pkeys : keys);
    o->dir = dir, o->prefetch = prefetch, o->dt = prefetch ? DT_INT32 : DT_BF16;
    o->space = prefetch ? PL_SMEM : PL_VMEM;
    snprintf(o->name, sizeof o->name, "%s%d", dir == PL_IN ? "in" : "out", i);
    const struct cfg_node *nm = cfg_get(e, "name");
    if (nm) {
        char *np = walk_join(p, "name");
        if (nm->type != CFG_SCALAR || !ident_ok(nm->value))
            walk_type_error(w, nm, np, "an identifier (letters, digits, '_', under 32 bytes)");
        else
            snprintf(o->name, sizeof o->name, "%s", nm->value);
        free(np);
    }
    walk_dtype(w, e, p, "dtype", &o->dt);
    if (!walk_field(w, e, p, "shape", true))
        return;
    o->rank = load_dims(w, e, p, "shape", false, o->shape);
    memcpy(o->block, o->shape, sizeof o->block);
    if (prefetch || !o->rank)
        return;
    if (cfg_get(e, "block_shape")) {
        int64_t b[PL_MAX_RANK];
        int r = load_dims(w, e, p, "block_shape", true, b);
        char *bp = walk_join(p, "block_shape");
        if (r && r != o->rank)
            walk_type_error(w, cfg_get(e, "block_shape"), bp, "a block of the shape's rank");
        else if (r)
            memcpy(o->block, b, sizeof b);
        free(bp);
    }
    load_index_map(L, e, p, o);
    load_space(w, e, p, &o->space);
    walk_int32(w, e, p, "buffers", false, 1, 2, &o->buffers);
}

static void load_specs(struct pload *L, const struct cfg_node *m, const char *p, const char *key,
                       enum pl_dir dir, int nprefetch)
{
    const struct cfg_node *l = seq_of(L->w, m, p, key, dir == PL_OUT, PL_MAX_OPERANDS,
                                      "a list of 1 to 24 BlockSpecs {name, shape, dtype, "
                                      "block_shape, index_map, memory_space}");
    if (!l)
        return;
    char *lp = walk_join(p, key);
    for (int i = 0; i < l->n; i++) {
        char *ip = xasprintf("%s.%d", lp, i);
        if (L->s->noperands >= PL_MAX_OPERANDS)
            walk_type_error(L->w, l->kids[i], ip, "at most 24 operands in all");
        else if (walk_is_map(L->w, l->kids[i], ip))
            load_operand(L, l->kids[i], ip, i, dir, i < nprefetch);
        free(ip);
        if (L->s->noperands >= PL_MAX_OPERANDS && i + 1 < l->n)
            break;
    }
    free(lp);
}

static void load_scratch(struct pload *L, const struct cfg_node *m, const char *p)
{
    const struct cfg_node *l = seq_of(L->w, m, p, "scratch_shapes", false, PL_MAX_OPERANDS,
                                      "a list of 1 to 24 buffers {name, shape, dtype}");
    char *lp = walk_join(p, "scratch_shapes");
    for (int i = 0; l && i < l->n; i++) {
        char *ip = xasprintf("%s.%d", lp, i);
        const struct cfg_node *e = l->kids[i];
        if (walk_is_map(L->w, e, ip)) {
            static const char *const keys[] = {"name", "shape", "dtype", "memory_space", NULL};
            walk_check_keys(L->w, e, ip, keys);
            struct pc_scratch *sc = &L->s->scratch[L->s->nscratch++];
            sc->dt = DT_F32, sc->space = PL_VMEM;
            snprintf(sc->name, sizeof sc->name, "scratch%d", i);
            const struct cfg_node *nm = cfg_get(e, "name");
            char *np = walk_join(ip, "name");
            if (nm && (nm->type != CFG_SCALAR || !ident_ok(nm->value)))
                walk_type_error(L->w, nm, np, "an identifier (letters, digits, '_')");
            else if (nm)
                snprintf(sc->name, sizeof sc->name, "%s", nm->value);
            free(np);
            walk_dtype(L->w, e, ip, "dtype", &sc->dt);
            if (walk_field(L->w, e, ip, "shape", true))
                sc->rank = load_dims(L->w, e, ip, "shape", false, sc->shape);
            load_space(L->w, e, ip, &sc->space);
            if (sc->space == PL_ANY) {
                char *sp = walk_join(ip, "memory_space");
                walk_type_error(L->w, cfg_get(e, "memory_space"), sp, "vmem or smem for scratch");
                free(sp);
            }
        }
        free(ip);
    }
    free(lp);
}

/* ---- values: blocks, scratch and the body's temporaries ---- */

static int find_value(const struct pc_spec *s, const char *name)
{
    for (int i = 0; i < s->nvalues; i++)
        if (!strcmp(s->values[i].name, name))
            return i;
    return -1;
}

static void add_value(struct pc_spec *s, const char *name, int rank, const int64_t *dims,
                      enum dtype dt, bool ref)
{
    struct pc_value *v = &s->values[s->nvalues++];
    snprintf(v->name, sizeof v->name, "%s", name);
    pc_view(rank, dims, &v->rows, &v->cols);
    v->dt = dt, v->ref = ref;
}

/* Operands (not in ANY: the body cannot read those) and scratch, once loaded. */
static void init_values(struct walk *w, const struct cfg_node *m, const char *p,
                        struct pc_spec *s)
{
    for (int i = 0; i < s->noperands; i++) {
        const struct pc_operand *o = &s->operands[i];
        if (find_value(s, o->name) >= 0)
            walk_type_error(w, m, p, "operands and scratch of distinct names");
        add_value(s, o->name, o->rank, o->prefetch ? o->shape : o->block, o->dt,
                  o->space != PL_ANY);
        s->values[s->nvalues - 1].hbm = o->space == PL_ANY;
    }
    for (int i = 0; i < s->nscratch; i++) {
        const struct pc_scratch *sc = &s->scratch[i];
        if (find_value(s, sc->name) >= 0)
            walk_type_error(w, m, p, "operands and scratch of distinct names");
        add_value(s, sc->name, sc->rank, sc->shape, sc->dt, true);
    }
}

static void value_list(const struct pc_spec *s, bool refs_only, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < s->nvalues; i++) {
        if (refs_only && !s->values[i].ref)
            continue;
        size_t len = strlen(buf);
        if (len + PC_NAME_MAX + 8 >= n) {
            snprintf(buf + len, n - len, ", ...");
            return;
        }
        snprintf(buf + len, n - len, "%s%s", len ? ", " : "", s->values[i].name);
    }
}

/* The value node 'x' names (at 'p'); -1 reported. */
static int value_ref(struct walk *w, const struct pc_spec *s, const struct cfg_node *x,
                     const char *p, bool ref)
{
    int v = x->type == CFG_SCALAR ? find_value(s, x->value) : -1;
    if (v >= 0 && s->values[v].hbm) {
        walk_type_error(w, x, p, "a block the body can read (this operand is in memory space "
                                 "any: it stays in HBM, and the body has no DMA primitive)");
        return -1;
    }
    if (v >= 0 && (!ref || s->values[v].ref))
        return v;
    char list[400], want[480];
    value_list(s, ref, list, sizeof list);
    snprintf(want, sizeof want, "%s (%s)", ref ? "a VMEM or SMEM block or scratch buffer"
                                               : "a block, scratch buffer or value",
             list);
    walk_type_error(w, x, p, want);
    return -1;
}

/* ---- body items ---- */

static const char *const reduce_keys[] = {"reduce_sum", "reduce_max", "reduce_min", NULL};

static enum dtype promote(enum dtype a, enum dtype b)
{
    static const int rank[DT_COUNT] = {[DT_FP8] = 0, [DT_INT8] = 0, [DT_BF16] = 1,
                                       [DT_INT32] = 2, [DT_F32] = 2};
    if (a == b)
        return a == DT_INT32 ? DT_F32 : a;
    if (rank[a] == 0 && rank[b] == 0)
        return DT_BF16;
    return rank[a] >= rank[b] ? (a == DT_INT32 ? DT_F32 : a) : (b == DT_INT32 ? DT_F32 : b);
}

/* The primitive key of item map 'e' (exactly one); NULL reported. */
static const char *prim_key(struct walk *w, const struct cfg_node *e, const char *p, int *fn)
{
    const char *found = NULL;
    for (int k = 0; k < e->n; k++) {
        const char *key = e->keys[k];
        int f = -1;
        for (int i = 0; xla_fn_names[i]; i++)
            if (!strcmp(key, xla_fn_names[i]))
                f = i;
        for (int i = 0; reduce_keys[i]; i++)
            if (!strcmp(key, reduce_keys[i]))
                f = 100 + i;
        if (f < 0 && strcmp(key, "dot") && strcmp(key, "cast") && strcmp(key, "zero") &&
            strcmp(key, "work"))
            continue;
        if (found) {
            walk_type_error(w, e, p, "one primitive per body item");
            return NULL;
        }
        found = key, *fn = f;
    }
    if (!found)
        walk_type_error(w, e, p,
                        "a body item with one primitive: dot, an element-wise function (add, "
                        "mul, exp, gelu, ...), reduce_sum | reduce_max | reduce_min, cast, zero, "
                        "work; or sync");
    return found;
}

/* The arguments of the item's primitive: a name or a list of 'want' names. */
static int load_args(struct walk *w, struct pc_spec *s, const struct cfg_node *a, const char *p,
                     int want, struct pc_item *it)
{
    const struct cfg_node *one[1] = {a};
    const struct cfg_node *const *kids = a->type == CFG_SEQ ? (const struct cfg_node *const *)a->kids
                                                            : one;
    int n = a->type == CFG_SEQ ? a->n : 1;
    if (n != want || a->type == CFG_MAP) {
        char m[64];
        snprintf(m, sizeof m, want == 1 ? "a block or value name" : "a list of %d names", want);
        walk_type_error(w, a, p, m);
        return -1;
    }
    it->nargs = n;
    for (int i = 0; i < n; i++) {
        char *ip = a->type == CFG_SEQ ? xasprintf("%s.%d", p, i) : xstrdup(p);
        it->args[i] = value_ref(w, s, kids[i], ip, false);
        free(ip);
        if (it->args[i] < 0)
            return -1;
    }
    return 0;
}

/* (r, c) broadcasts to v's shape: each dim divides v's (1, or tiled as
 * pltpu.repeat tiles a lane-broadcast row statistic). */
static bool fits(int64_t r, int64_t c, const struct pc_value *v)
{
    return r >= 1 && c >= 1 && v->rows % r == 0 && v->cols % c == 0;
}

static void shape_error(struct walk *w, const struct cfg_node *n, const char *p, const char *what,
                        int64_t r, int64_t c, const struct pc_value *v)
{
    char want[256];
    snprintf(want, sizeof want, "%s: the result is (%lld, %lld), %s is (%lld, %lld)", what,
             (long long)r, (long long)c, v->name, (long long)v->rows, (long long)v->cols);
    walk_type_error(w, n, p, want);
}

/* The result's shape (r, c) and dtype for 'into', 'acc' and 'as'. */
static void load_outputs(struct walk *w, struct pc_spec *s, const struct cfg_node *e,
                         const char *p, struct pc_item *it, int64_t r, int64_t c, enum dtype dt)
{
    static const char *const keys[] = {"into", "acc"};
    int *slot[] = {&it->into, &it->acc};
    for (int k = 0; k < 2; k++) {
        const struct cfg_node *x = cfg_get(e, keys[k]);
        if (!x)
            continue;
        char *kp = walk_join(p, keys[k]);
        if (k == 1 && it->prim != PC_DOT)
            walk_type_error(w, x, kp, "acc only on a dot");
        else if ((*slot[k] = value_ref(w, s, x, kp, true)) >= 0 &&
                 !(k == 1 ? r == s->values[*slot[k]].rows && c == s->values[*slot[k]].cols
                          : fits(r, c, &s->values[*slot[k]])))
            shape_error(w, x, kp, k ? "an accumulator of the dot's shape"
                                    : "a ref the result broadcasts to",
                        r, c, &s->values[*slot[k]]);
        free(kp);
    }
    const struct cfg_node *x = cfg_get(e, "as");
    if (!x)
        return;
    char *kp = walk_join(p, "as");
    if (x->type != CFG_SCALAR || !ident_ok(x->value) || find_value(s, x->value) >= 0 ||
        s->nvalues >= PC_MAX_VALUES) {
        walk_type_error(w, x, kp, "a new name for the result (at most 96 names in all)");
    } else {
        struct pc_value *v = &s->values[s->nvalues];
        add_value(s, x->value, 2, (int64_t[]){r, c}, dt, false);
        it->as = (int)(v - s->values);
    }
    free(kp);
}

static void load_dot(struct walk *w, struct pc_spec *s, const struct cfg_node *e, const char *p,
                     struct pc_item *it)
{
    it->prim = PC_DOT;
    char *ap = walk_join(p, "dot");
    if (load_args(w, s, cfg_get(e, "dot"), ap, 2, it) == 0) {
        walk_bool(w, e, p, "transpose_b", &it->transpose_b);
        const struct pc_value *a = &s->values[it->args[0]], *b = &s->values[it->args[1]];
        int64_t kb = it->transpose_b ? b->cols : b->rows, n = it->transpose_b ? b->rows : b->cols;
        if (a->cols != kb) {
            char want[256];
            snprintf(want, sizeof want,
                     "blocks whose contracting dims agree: %s is (%lld, %lld), %s%s is "
                     "(%lld, %lld)",
                     a->name, (long long)a->rows, (long long)a->cols, b->name,
                     it->transpose_b ? " transposed" : "", (long long)kb, (long long)n);
            walk_type_error(w, cfg_get(e, "dot"), ap, want);
        } else {
            it->dt = promote(a->dt, b->dt);
            if (cfg_get(e, "dtype"))
                walk_mxu_dtype(w, e, p, "dtype", &it->dt);
            load_outputs(w, s, e, p, it, a->rows, n, it->dt == DT_INT8 ? DT_INT32 : DT_F32);
        }
    }
    free(ap);
}

static void load_prim(struct walk *w, struct pc_spec *s, const struct cfg_node *e, const char *p,
                      const char *key, int fn, struct pc_item *it)
{
    char *ap = walk_join(p, key);
    const struct cfg_node *a = cfg_get(e, key);
    if (fn >= 100) {
        it->prim = PC_REDUCE, it->fn = fn - 100, it->axis = 1;
        int64_t ax = -1;
        walk_int(w, e, p, "axis", false, -2, 1, &ax);
        it->axis = ax == 0 || ax == -2 ? 0 : 1;
    } else if (fn >= 0) {
        it->prim = PC_FN, it->fn = fn;
    } else if (!strcmp(key, "cast")) {
        it->prim = PC_CAST;
        if (walk_field(w, e, p, "to", true))
            walk_dtype(w, e, p, "to", &it->dt);
    }
    int want = it->prim == PC_FN ? xla_fn_arity((enum xla_fn)fn) : 1;
    if (load_args(w, s, a, ap, want, it) == 0) {
        int64_t r = 1, c = 1;
        for (int i = 0; i < it->nargs; i++) {
            const struct pc_value *v = &s->values[it->args[i]];
            r = v->rows > r ? v->rows : r, c = v->cols > c ? v->cols : c;
        }
        for (int i = 0; i < it->nargs; i++)
            if (!fits(s->values[it->args[i]].rows, s->values[it->args[i]].cols,
                      &(struct pc_value){.rows = r, .cols = c}))
                shape_error(w, a, ap, "arguments that broadcast together", r, c,
                            &s->values[it->args[i]]);
        if (it->prim == PC_REDUCE && it->axis == 1)
            c = 1;
        else if (it->prim == PC_REDUCE)
            r = 1;
        load_outputs(w, s, e, p, it, r, c, it->prim == PC_CAST ? it->dt : DT_F32);
    }
    free(ap);
}

static void load_work(struct walk *w, const struct cfg_node *x, const char *p, struct pc_item *it)
{
    it->prim = PC_WORK;
    if (!walk_is_map(w, x, p))
        return;
    static const char *const keys[] = {"mxu_flops", "vpu_ops", "transcendentals", "xlu_ops",
                                       NULL};
    walk_check_keys(w, x, p, keys);
    const struct cfg_node *f = cfg_get(x, "mxu_flops");
    char *fp = walk_join(p, "mxu_flops");
    if (f && walk_is_map(w, f, fp)) {
        for (int k = 0; k < f->n; k++) {
            enum dtype dt;
            char *kp = walk_join(fp, f->keys[k]);
            struct cfg_node key = {.type = CFG_SCALAR, .value = f->keys[k], .file = f->file,
                                   .line = f->key_line[k], .col = f->key_col[k]};
            if (dtype_parse(f->keys[k], &dt) != 0 || dt == DT_INT32)
                walk_type_error(w, &key, kp, "an MXU dtype (bf16, f32, int8, fp8)");
            else
                walk_real(w, f, fp, f->keys[k], true, 0, 1e18, "MXU flops per step in [0, 1e18]",
                          &it->mxu_flops[dt]);
            free(kp);
        }
    }
    free(fp);
    walk_real(w, x, p, "vpu_ops", false, 0, 1e15, "element ops per step in [0, 1e15]",
              &it->vpu_ops);
    walk_real(w, x, p, "transcendentals", false, 0, 1e15,
              "transcendentals per step in [0, 1e15]", &it->transcendentals);
    walk_real(w, x, p, "xlu_ops", false, 0, 1e15, "cross-lane ops per step in [0, 1e15]",
              &it->xlu_ops);
}

static void load_when(struct pload *L, const struct cfg_node *e, const char *p, struct pc_item *it)
{
    const struct cfg_node *x = cfg_get(e, "when");
    if (!x)
        return;
    char *kp = walk_join(p, "when"), why[256], want[320];
    if (x->type != CFG_SCALAR) {
        walk_type_error(L->w, x, kp, "a comparison of affine expressions, like 'k == 0'");
    } else if (pc_parse_cond(x->value, L->names, L->s->ngrid, &it->when, why, sizeof why)) {
        snprintf(want, sizeof want, "a comparison of affine expressions of the grid indices (%s)",
                 why);
        walk_type_error(L->w, x, kp, want);
    } else {
        it->has_when = true;
    }
    free(kp);
}

static void load_item(struct pload *L, const struct cfg_node *e, const char *p)
{
    struct walk *w = L->w;
    struct pc_spec *s = L->s;
    struct pc_item *it = &s->items[s->nitems++];
    it->acc = it->into = it->as = -1, it->repeat = 1;
    if (e->type == CFG_SCALAR && !strcmp(e->value, "sync")) {
        it->prim = PC_SYNC;
        return;
    }
    if (!walk_is_map(w, e, p))
        return;
    int fn = -1;
    const char *key = prim_key(w, e, p, &fn);
    if (!key)
        return;
    static const char *const common[] = {"when", "repeat", "into", "as", NULL};
    const char *allowed[16] = {key};
    int na = 1;
    for (int i = 0; common[i]; i++)
        allowed[na++] = common[i];
    if (!strcmp(key, "dot"))
        allowed[na++] = "transpose_b", allowed[na++] = "dtype", allowed[na++] = "acc";
    if (!strcmp(key, "cast"))
        allowed[na++] = "to";
    if (fn >= 100)
        allowed[na++] = "axis";
    walk_check_keys(w, e, p, allowed);
    load_when(L, e, p, it);
    walk_int(w, e, p, "repeat", false, 1, 1 << 20, &it->repeat);
    if (!strcmp(key, "dot")) {
        load_dot(w, s, e, p, it);
    } else if (!strcmp(key, "work")) {
        char *kp = walk_join(p, "work");
        load_work(w, cfg_get(e, "work"), kp, it);
        free(kp);
    } else if (!strcmp(key, "zero")) {
        it->prim = PC_ZERO;
        char *kp = walk_join(p, "zero");
        it->into = value_ref(w, s, cfg_get(e, "zero"), kp, true);
        free(kp);
    } else {
        load_prim(w, s, e, p, key, fn, it);
    }
}

static void load_body(struct pload *L, const struct cfg_node *m, const char *p)
{
    const struct cfg_node *b = cfg_get(m, "body"), *wk = cfg_get(m, "work");
    if (!b == !wk) {
        walk_type_error(L->w, m, p, "exactly one of body: [primitives] or work: {counts}");
        return;
    }
    if (wk) {
        struct pc_item *it = &L->s->items[L->s->nitems++];
        it->acc = it->into = it->as = -1, it->repeat = 1;
        char *kp = walk_join(p, "work");
        load_work(L->w, wk, kp, it);
        free(kp);
        return;
    }
    b = seq_of(L->w, m, p, "body", true, PC_MAX_ITEMS, "a list of 1 to 64 body primitives");
    char *bp = walk_join(p, "body");
    for (int i = 0; b && i < b->n; i++) {
        char *ip = xasprintf("%s.%d", bp, i);
        load_item(L, b->kids[i], ip);
        free(ip);
    }
    free(bp);
}

void cfg_load_pallas_call(struct walk *w, const struct cfg_node *m, const char *p, struct op *op)
{
    static const char *const keys[] = {CFG_OP_COMMON_KEYS, "grid", "grid_names",
                                       "dimension_semantics", "num_scalar_prefetch", "in_specs",
                                       "out_specs", "scratch_shapes", "body", "work", NULL};
    walk_check_keys(w, m, p, keys);
    if (op->functional) {
        char *fp = walk_join(p, "functional");
        walk_type_error(w, cfg_get(m, "functional"), fp,
                        "false for a pallas_call (its body describes cost, not values)");
        free(fp);
    }
    struct pc_spec *s = xcalloc(1, sizeof *s);
    op->u.pcall.spec = s;
    struct pload L = {.w = w, .s = s};
    load_grid(&L, m, p);
    int nprefetch = 0;
    walk_int32(w, m, p, "num_scalar_prefetch", false, 0, PL_MAX_OPERANDS, &nprefetch);
    const struct cfg_node *in = cfg_get(m, "in_specs");
    if (nprefetch && (!in || in->type != CFG_SEQ || in->n < nprefetch)) {
        char *np = walk_join(p, "num_scalar_prefetch");
        walk_type_error(w, cfg_get(m, "num_scalar_prefetch"), np,
                        "at most as many as in_specs (the prefetch operands come first)");
        free(np);
        nprefetch = 0;
    }
    s->num_scalar_prefetch = nprefetch;
    load_specs(&L, m, p, "in_specs", PL_IN, nprefetch);
    load_specs(&L, m, p, "out_specs", PL_OUT, 0);
    load_scratch(&L, m, p);
    init_values(w, m, p, s);
    load_body(&L, m, p);
}
