/* config/cfg_xla_flags.c -- xla_flags: {NAME: value, ...}, XLA's TPU compiler
 * flags that tpusim has a mechanism for (see config/cfg_xla_flags.h). A flag
 * it has no mechanism for is refused, with the ones it knows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg_int.h"
#include "config/cfg_tree.h"
#include "config/cfg_xla_flags.h"

enum xf_type { XF_BOOL, XF_TRISTATE, XF_KIB, XF_WINDOWED_AG, XF_WINDOWED_RS, XF_MIB, XF_DP_AR,
                   XF_SC_RS, XF_SC_AR };

static const char *const all_colls[] = {"all_gather", "reduce_scatter", "all_reduce",
                                        "all_to_all", "ppermute",       "remote_copy", NULL};
static const char *const ag[] = {"all_gather", NULL};
static const char *const rs[] = {"reduce_scatter", NULL};
static const char *const ar[] = {"all_reduce", NULL};
static const char *const a2a[] = {"all_to_all", NULL};
static const char *const cp[] = {"ppermute", "remote_copy", NULL};

/* One flag: its name as libtpu takes it, its values and, for an async flag,
 * the collectives that run synchronously when it is false. Where each is
 * documented: docs/reference.md, "Compiler flags as what-ifs". */
struct xla_flag {
    const char *name;
    enum xf_type type;
    const char *const *sync;
};

static const struct xla_flag flags[] = {
    {"xla_tpu_enable_async_collective_fusion", XF_BOOL, all_colls},
    {"xla_tpu_overlap_compute_collective_tc", XF_BOOL, all_colls},
    {"xla_tpu_enable_async_collective_fusion_fuse_all_gather", XF_TRISTATE, ag},
    {"xla_tpu_enable_async_collective_fusion_fuse_reduce_scatter", XF_TRISTATE, rs},
    {"xla_tpu_enable_async_collective_fusion_fuse_all_reduce", XF_TRISTATE, ar},
    {"xla_enable_async_all_gather", XF_TRISTATE, ag},
    {"xla_enable_async_all_reduce", XF_TRISTATE, ar},
    {"xla_enable_async_collective_permute", XF_TRISTATE, cp},
    {"xla_tpu_enable_async_all_to_all", XF_BOOL, a2a},
    {"xla_tpu_scoped_vmem_limit_kib", XF_KIB, NULL},
    {"xla_tpu_enable_windowed_einsum_for_all_gather", XF_WINDOWED_AG, NULL},
    {"xla_tpu_enable_windowed_einsum_for_reduce_scatter", XF_WINDOWED_RS, NULL},
    {"xla_jf_spmd_threshold_for_windowed_einsum_mib", XF_MIB, NULL},
    {"xla_tpu_enable_data_parallel_all_reduce_opt", XF_DP_AR, NULL},
    {"xla_tpu_enable_sparse_core_collective_offload_reduce_scatter", XF_SC_RS, NULL},
    {"xla_tpu_enable_sparse_core_collective_offload_all_reduce", XF_SC_AR, NULL},
};
#define NFLAGS ((int)(sizeof flags / sizeof flags[0]))

static const struct xla_flag *find(const char *name)
{
    for (int i = 0; i < NFLAGS; i++)
        if (strcmp(flags[i].name, name) == 0)
            return &flags[i];
    return NULL;
}

static void unknown(struct walk *w, const struct cfg_node *m, int i)
{
    const char *names[NFLAGS + 1];
    for (int k = 0; k < NFLAGS; k++)
        names[k] = flags[k].name;
    names[NFLAGS] = NULL;
    bool known;
    const char *best = walk_suggest(m->keys[i], names, &known);
    char list[1024] = "";
    for (int k = 0, n = 0; k < NFLAGS; k++)
        n += snprintf(list + n, sizeof list - (size_t)n, "%s%s", k ? ", " : "", names[k]);
    struct diag_loc loc = {m->file, m->key_line[i], m->key_col[i]};
    char hint[160] = "";
    if (best)
        snprintf(hint, sizeof hint, " (did you mean '%s'?)", best);
    diag_error(w->d, &loc, "xla_flags", "expected an XLA TPU flag tpusim models, got '%s'%s; "
                                        "it models: %s",
               m->keys[i], hint, list);
}

/* Adds the kinds of 'f' to the synchronous ones (each once). */
static void add_sync(struct cfg_xla_flags *x, const struct xla_flag *f)
{
    for (int k = 0; f->sync[k]; k++) {
        bool have = false;
        for (int j = 0; j < x->nsync; j++)
            have |= strcmp(x->sync[j], f->sync[k]) == 0;
        if (!have && x->nsync < CFG_XLA_SYNC_MAX)
            x->sync[x->nsync++] = f->sync[k];
    }
}

/* An async flag's value: 1 true or auto (tpusim's schedule as it is), 0 false. */
static int async_value(struct walk *w, const struct cfg_node *m, const struct xla_flag *f)
{
    const struct cfg_node *n = cfg_get(m, f->name);
    if (f->type == XF_TRISTATE && n && n->type == CFG_SCALAR && !n->quoted &&
        strcmp(n->value, "auto") == 0)
        return 1;
    bool v = true;
    if (f->type == XF_BOOL)
        return walk_bool(w, m, "xla_flags", f->name, &v) == 0 ? v : -1;
    if (n && n->type == CFG_SCALAR && !n->quoted &&
        (!strcmp(n->value, "true") || !strcmp(n->value, "false")))
        return walk_bool(w, m, "xla_flags", f->name, &v) == 0 ? v : -1;
    char *p = walk_join("xla_flags", f->name);
    walk_type_error(w, n, p, "true, false or auto");
    free(p);
    return -1;
}

/* The windowed-einsum flags (a model's collective matmuls, workload/model_cmm.c). */
static void windowed(struct walk *w, const struct cfg_node *m, const struct xla_flag *f,
                     struct cfg_xla_flags *x)
{
    if (f->type == XF_MIB) {
        x->set_windowed_threshold =
            walk_int(w, m, "xla_flags", f->name, false, 0, (int64_t)1 << 40,
                     &x->windowed_threshold_mib) == 0;
        return;
    }
    bool *set = f->type == XF_WINDOWED_AG ? &x->set_windowed_ag : &x->set_windowed_rs;
    bool *v = f->type == XF_WINDOWED_AG ? &x->windowed_ag : &x->windowed_rs;
    *v = true;
    *set = walk_bool(w, m, "xla_flags", f->name, v) == 0;
}

void cfg_load_xla_flags(struct walk *w, const struct cfg_node *root, struct chip_params *chip,
                        struct cfg_xla_flags *x)
{
    const struct cfg_node *m = cfg_get(root, "xla_flags");
    if (!m)
        return;
    if (m->type != CFG_MAP) {
        walk_type_error(w, m, "xla_flags", "a map of XLA TPU flag names to values");
        return;
    }
    ((struct cfg_node *)m)->checked = true;
    x->present = true;
    for (int i = 0; i < m->n; i++) {
        const struct xla_flag *f = find(m->keys[i]);
        if (!f) {
            unknown(w, m, i);
            continue;
        }
        if (f->type == XF_WINDOWED_AG || f->type == XF_WINDOWED_RS || f->type == XF_MIB) {
            windowed(w, m, f, x);
            continue;
        }
        if (f->type == XF_DP_AR) { /* a model's gradient sums (workload/model.c) */
            x->dp_all_reduce_opt = true;
            x->set_dp_all_reduce_opt =
                walk_bool(w, m, "xla_flags", f->name, &x->dp_all_reduce_opt) == 0;
            continue;
        }
        if (f->type == XF_SC_RS || f->type == XF_SC_AR) { /* engine/eng_coll.c, cx_reduce */
            bool is_rs = f->type == XF_SC_RS;
            bool *v = is_rs ? &x->sc_offload_rs : &x->sc_offload_ar;
            *v = false;
            *(is_rs ? &x->set_sc_offload_rs : &x->set_sc_offload_ar) =
                walk_bool(w, m, "xla_flags", f->name, v) == 0;
            continue;
        }
        if (f->type != XF_KIB) {
            if (async_value(w, m, f) == 0)
                add_sync(x, f);
            continue;
        }
        int64_t kib = 0, max = (int64_t)(chip->vmem_bytes / 1024);
        if (max < 64)
            max = 64;
        if (walk_int(w, m, "xla_flags", f->name, false, 64, max > (1 << 24) ? (1 << 24) : max,
                     &kib) == 0 && kib > 0) {
            x->scoped_vmem_limit_bytes = (uint64_t)kib * 1024;
            chip->vmem_limit_bytes = x->scoped_vmem_limit_bytes;
        }
    }
}

bool cfg_xla_sc_offload(const struct cfg_xla_flags *x, int generation, const char *kind)
{
    bool is_rs = strcmp(kind, "reduce_scatter") == 0;
    if (!is_rs && strcmp(kind, "all_reduce") != 0)
        return false;
    if (is_rs ? x->set_sc_offload_rs : x->set_sc_offload_ar)
        return is_rs ? x->sc_offload_rs : x->sc_offload_ar;
    return generation >= 7;
}
