/* config/cfg_chip.c -- the chip section: presets (configs/chips/, embedded) and
 * a scenario's overrides, walked into struct chip_params. Uses base/, models/
 * and the config stages (config/cfg_tree.h, config/cfg_walk.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_int.h"
#include "config/embedded.h"

#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)
#define GiB(x) ((uint64_t)(x) << 30)


static void load_peak(struct walk *w, const struct cfg_node *tc, const char *path,
                      struct chip_params *c)
{
    const struct cfg_node *pk = walk_field(w, tc, path, "peak", true);
    char *p = walk_join(path, "peak");
    if (pk && walk_is_map(w, pk, p)) {
        static const char *const keys[] = {"bf16", "f32", "int8", "fp8", NULL};
        walk_check_keys(w, pk, p, keys);
        walk_qty(w, pk, p, "bf16", true, UNITS_FLOPS, false, &c->peak_flops[DT_BF16]);
        c->peak_flops[DT_F32] = c->peak_flops[DT_BF16] / 3.0;
        c->peak_flops[DT_INT8] = c->peak_flops[DT_BF16];
        c->peak_flops[DT_FP8] = c->peak_flops[DT_BF16];
        walk_qty(w, pk, p, "f32", false, UNITS_FLOPS, false, &c->peak_flops[DT_F32]);
        walk_qty(w, pk, p, "int8", false, UNITS_FLOPS, false, &c->peak_flops[DT_INT8]);
        walk_qty(w, pk, p, "fp8", false, UNITS_FLOPS, false, &c->peak_flops[DT_FP8]);
        c->peak_flops[DT_INT32] = c->peak_flops[DT_F32];
        /* a rate listed is a dtype the MXU takes; f32 is rounded to bf16 passes */
        c->mxu_dtype[DT_BF16] = c->mxu_dtype[DT_F32] = c->mxu_dtype[DT_INT32] = true;
        c->mxu_dtype[DT_INT8] = cfg_get(pk, "int8") != NULL;
        c->mxu_dtype[DT_FP8] = cfg_get(pk, "fp8") != NULL;
    }
    free(p);
}

static void load_vpu(struct walk *w, const struct cfg_node *tc, const char *path,
                     struct chip_params *c)
{
    const struct cfg_node *v = walk_field(w, tc, path, "vpu", true);
    char *p = walk_join(path, "vpu");
    if (v && walk_is_map(w, v, p)) {
        static const char *const keys[] = {"sublanes",        "lanes",          "alu_per_cycle",
                                           "load_per_cycle",  "store_per_cycle", "eup_per_cycle",
                                           "xlu_per_cycle",   "packing_below_bits", NULL};
        walk_check_keys(w, v, p, keys);
        walk_int32(w, v, p, "sublanes", true, 1, 64, &c->vpu_sublanes);
        c->vpu_packing_below_bits = 16;
        walk_int32(w, v, p, "packing_below_bits", false, 16, 32, &c->vpu_packing_below_bits);
        walk_int32(w, v, p, "lanes", true, 1, 1024, &c->vpu_lanes);
        struct {
            const char *key;
            double *dst;
        } rates[] = {{"alu_per_cycle", &c->vpu_alu_per_cycle},
                     {"load_per_cycle", &c->vpu_load_per_cycle},
                     {"store_per_cycle", &c->vpu_store_per_cycle},
                     {"eup_per_cycle", &c->eup_per_cycle},
                     {"xlu_per_cycle", &c->xlu_per_cycle}};
        for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
            walk_real(w, v, p, rates[i].key, true, 0.01, 64, "a rate per cycle in [0.01, 64]",
                      rates[i].dst);
    }
    free(p);
}

static void load_mxu(struct walk *w, const struct cfg_node *tc, const char *path,
                     struct chip_params *c)
{
    char *p = walk_join(path, "mxu");
    const struct cfg_node *mxu = walk_field(w, tc, path, "mxu", true);
    if (mxu && walk_is_map(w, mxu, p)) {
        static const char *const mk[] = {"count", "size", NULL};
        walk_check_keys(w, mxu, p, mk);
        walk_int32(w, mxu, p, "count", true, 1, 64, &c->mxu_count);
        walk_int32(w, mxu, p, "size", true, 8, 1024, &c->mxu_dim);
    }
    free(p);
}

static void load_tc(struct walk *w, const struct cfg_node *root, const char *pre,
                    struct chip_params *c)
{
    char *path = walk_join(pre, "tensorcore");
    const struct cfg_node *tc = walk_field(w, root, pre, "tensorcore", true);
    if (!tc || !walk_is_map(w, tc, path)) {
        free(path);
        return;
    }
    static const char *const keys[] = {"count", "megacore", "mxu", "peak", "clock", "vpu",
                                       "vmem", "smem", "vmem_limit", "step_overhead",
                                       "dma_latency", "launch_overhead", "copy_overhead",
                                       "rpa_kv_pages_per_block", NULL};
    walk_check_keys(w, tc, path, keys);
    walk_int32(w, tc, path, "count", true, 1, 8, &c->cores);
    walk_bool(w, tc, path, "megacore", &c->megacore);
    load_mxu(w, tc, path, c);
    load_peak(w, tc, path, c);
    walk_qty(w, tc, path, "clock", true, UNITS_FREQ, false, &c->clock_hz);
    load_vpu(w, tc, path, c);
    walk_size(w, tc, path, "vmem", true, KiB(64), GiB(16), "from 64KiB to 16GiB", &c->vmem_bytes);
    walk_size(w, tc, path, "smem", true, KiB(1), GiB(1), "from 1KiB to 1GiB", &c->smem_bytes);
    if (walk_size(w, tc, path, "vmem_limit", true, KiB(64), GiB(16), "from 64KiB to 16GiB",
                  &c->vmem_limit_bytes) == 0 &&
        c->vmem_limit_bytes > c->vmem_bytes) {
        /* blame the one the scenario set: the other may come from the preset */
        const struct cfg_node *lim = cfg_get(tc, "vmem_limit"), *vm = cfg_get(tc, "vmem");
        bool at_vmem = vm && strcmp(vm->file, lim->file) != 0 &&
                       strncmp(vm->file, "configs/chips/", 14) != 0;
        char want[96], *p = walk_join(path, at_vmem ? "vmem" : "vmem_limit");
        if (at_vmem)
            snprintf(want, sizeof want, "at least the scoped VMEM limit vmem_limit (%llu bytes)",
                     (unsigned long long)c->vmem_limit_bytes);
        else
            snprintf(want, sizeof want, "at most the VMEM (%llu bytes)",
                     (unsigned long long)c->vmem_bytes);
        walk_type_error(w, at_vmem ? vm : lim, p, want);
        free(p);
    }
    walk_qty(w, tc, path, "step_overhead", true, UNITS_TIME, true, &c->step_overhead_s);
    walk_qty(w, tc, path, "dma_latency", true, UNITS_TIME, true, &c->dma_issue_s);
    walk_qty(w, tc, path, "launch_overhead", false, UNITS_TIME, true, &c->launch_s);
    c->copy_s = c->launch_s;
    walk_qty(w, tc, path, "copy_overhead", false, UNITS_TIME, true, &c->copy_s);
    c->rpa_kv_pages_per_block = 128;
    walk_int32(w, tc, path, "rpa_kv_pages_per_block", false, 1, 4096, &c->rpa_kv_pages_per_block);
    free(path);
}

/* hbm.usable: the bytes XLA may allocate, at most the capacity. A scenario
 * that overrides the capacity alone drops its preset's usable figure (it
 * was for the preset's capacity): the nodes then come from different files. */
static void load_hbm_usable(struct walk *w, const struct cfg_node *h, const char *p,
                            struct chip_params *c)
{
    const struct cfg_node *u = walk_field(w, h, p, "usable", false);
    const struct cfg_node *cap = walk_field(w, h, p, "capacity", false);
    c->hbm_usable_bytes = 0;
    if (!u || (cap && cap->file && u->file && strcmp(cap->file, u->file) != 0))
        return;
    uint64_t v = 0;
    if (walk_size(w, h, p, "usable", false, MiB(1), (uint64_t)1e18, "from 1MiB to 1EB", &v) != 0)
        return;
    if (c->hbm_bytes > 0 && v > c->hbm_bytes) {
        char *kp = walk_join(p, "usable");
        walk_type_error(w, u, kp, "at most hbm.capacity");
        free(kp);
        return;
    }
    c->hbm_usable_bytes = v;
}

static void load_hbm(struct walk *w, const struct cfg_node *root, const char *pre,
                     struct chip_params *c)
{
    char *p = walk_join(pre, "hbm");
    const struct cfg_node *h = walk_field(w, root, pre, "hbm", true);
    if (h && walk_is_map(w, h, p)) {
        static const char *const keys[] = {"capacity", "usable", "bandwidth", "efficiency",
                                           NULL};
        walk_check_keys(w, h, p, keys);
        walk_size(w, h, p, "capacity", true, MiB(1), (uint64_t)1e18, "from 1MiB to 1EB",
                  &c->hbm_bytes);
        load_hbm_usable(w, h, p, c);
        walk_qty(w, h, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->hbm_bw_Bps);
        walk_fraction(w, h, p, "efficiency", &c->hbm_efficiency);
    }
    free(p);
}

/* pcie: the host link of one chip (optional: a chip without it has no host_copy). */
static void load_pcie(struct walk *w, const struct cfg_node *root, const char *pre,
                      struct chip_params *c)
{
    char *p = walk_join(pre, "pcie");
    const struct cfg_node *h = walk_field(w, root, pre, "pcie", false);
    if (h && walk_is_map(w, h, p)) {
        static const char *const keys[] = {"bandwidth", NULL};
        walk_check_keys(w, h, p, keys);
        walk_qty(w, h, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->pcie_bw_Bps);
    }
    free(p);
}

static void load_ici(struct walk *w, const struct cfg_node *root, const char *pre,
                     struct chip_params *c)
{
    char *p = walk_join(pre, "ici");
    const struct cfg_node *ici = walk_field(w, root, pre, "ici", true);
    if (!ici || !walk_is_map(w, ici, p)) {
        free(p);
        return;
    }
    static const char *const keys[] = {"links",        "bandwidth",   "efficiency", "hop_latency",
                                       "collective_latency", "step_latency", "routing",
                                       "wraparound",   NULL};
    walk_check_keys(w, ici, p, keys);
    walk_int32(w, ici, p, "links", true, 0, 12, &c->ici_links);
    walk_qty(w, ici, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->ici_bw_Bps);
    walk_fraction(w, ici, p, "efficiency", &c->ici_efficiency);
    walk_qty(w, ici, p, "hop_latency", true, UNITS_TIME, true, &c->ici_hop_lat_s);
    walk_qty(w, ici, p, "collective_latency", true, UNITS_TIME, true, &c->ici_collective_lat_s);
    walk_qty(w, ici, p, "step_latency", true, UNITS_TIME, true, &c->ici_step_lat_s);
    static const char *const routes[] = {"any", "pow2", NULL};
    static const char *const wraps[] = {"axis16", "cube4", "always", "never", "axis32", NULL};
    int r = (int)c->routing, wr = (int)c->wrap;
    walk_enum(w, ici, p, "routing", routes, &r);
    walk_enum(w, ici, p, "wraparound", wraps, &wr);
    c->routing = (enum ici_routing)r;
    c->wrap = (enum topo_wrap_rule)wr;
    free(p);
}

/* dcn: {host_shape, bandwidth, latency}: optional (a preset without it has no multislice). */
static void load_dcn(struct walk *w, const struct cfg_node *root, const char *pre,
                     struct chip_params *c)
{
    char *p = walk_join(pre, "dcn");
    const struct cfg_node *d = walk_field(w, root, pre, "dcn", false);
    if (d && walk_is_map(w, d, p)) {
        static const char *const keys[] = {"host_shape", "bandwidth", "latency", NULL};
        walk_check_keys(w, d, p, keys);
        const struct cfg_node *hs = walk_field(w, d, p, "host_shape", true);
        char *hp = walk_join(p, "host_shape");
        if (hs && (hs->type != CFG_SEQ || hs->n < 1 || hs->n > TOPO_MAX_DIMS)) {
            walk_type_error(w, hs, hp, "a list of 1 to 3 lengths, like [2, 4]");
        } else if (hs) {
            c->dcn_host_ndims = hs->n;
            for (int i = 0; i < TOPO_MAX_DIMS; i++) {
                int64_t v = 1;
                if (i < hs->n)
                    walk_item(w, hs, hp, i, 1, 64, &v);
                c->dcn_host_shape[i] = (int)v;
            }
        }
        free(hp);
        walk_qty(w, d, p, "bandwidth", true, UNITS_BANDWIDTH, false, &c->dcn_bw_Bps);
        walk_qty(w, d, p, "latency", true, UNITS_TIME, true, &c->dcn_lat_s);
    }
    free(p);
}

/* slice: {dims, max_shape, max_chips}: the slices this generation has. */
static void load_slice(struct walk *w, const struct cfg_node *root, const char *pre,
                       struct chip_params *c)
{
    char *p = walk_join(pre, "slice");
    const struct cfg_node *s = walk_field(w, root, pre, "slice", false);
    if (s && walk_is_map(w, s, p)) {
        static const char *const keys[] = {"dims", "max_shape", "max_chips", NULL};
        walk_check_keys(w, s, p, keys);
        walk_int32(w, s, p, "dims", true, 1, TOPO_MAX_DIMS, &c->slice_dims);
        walk_int(w, s, p, "max_chips", false, 1, 65536, &c->slice_max_chips);
        const struct cfg_node *ms = walk_field(w, s, p, "max_shape", false);
        char *mp = walk_join(p, "max_shape");
        if (ms && (ms->type != CFG_SEQ || ms->n != c->slice_dims)) {
            char want[64];
            snprintf(want, sizeof want, "a list of %d axis lengths", c->slice_dims);
            walk_type_error(w, ms, mp, want);
        } else {
            for (int i = 0; ms && i < ms->n; i++) {
                int64_t v = 0;
                walk_item(w, ms, mp, i, 1, 4096, &v);
                c->slice_max[i] = (int)v;
            }
            for (int i = 1; i < c->slice_dims; i++) /* ascending, to compare sorted shapes */
                for (int j = i; j > 0 && c->slice_max[j] < c->slice_max[j - 1]; j--) {
                    int t = c->slice_max[j];
                    c->slice_max[j] = c->slice_max[j - 1];
                    c->slice_max[j - 1] = t;
                }
        }
        free(mp);
    }
    free(p);
}


static void load_chip_tree(struct walk *w, const struct cfg_node *root, const char *pre,
                           struct chip_params *c)
{
    if (!walk_is_map(w, root, *pre ? pre : "chip"))
        return;
    static const char *const keys[] = {"name", "generation", "tensorcore", "hbm", "ici",
                                       "pcie", "dcn",  "slice",      "hypothetical", "base",
                                       "price", "power", NULL};
    walk_check_keys(w, root, pre, keys);
    const struct cfg_node *name = cfg_get(root, "name");
    if (name && name->type == CFG_SCALAR)
        snprintf(c->name, sizeof c->name, "%s", name->value);
    walk_int32(w, root, pre, "generation", true, 2, 99, &c->generation);
    load_tc(w, root, pre, c);
    load_hbm(w, root, pre, c);
    load_ici(w, root, pre, c);
    load_pcie(w, root, pre, c);
    load_dcn(w, root, pre, c);
    load_slice(w, root, pre, c);
    cfg_chip_load_cost(w, root, pre, c);
    walk_bool(w, root, pre, "hypothetical", &c->hypothetical);
}

const char *const *cfg_chip_names(void)
{
    return embedded_chip_names;
}

static struct cfg_node *load_preset(const char *name, const struct cfg_node *at, struct diag *d)
{
    char *path = xasprintf("configs/chips/%s.yaml", name);
    struct cfg_node *n = NULL;
    bool known = false;
    for (int i = 0; embedded_chip_names[i]; i++)
        known |= strcmp(embedded_chip_names[i], name) == 0;
    if (known) {
        n = cfg_parse_file(path, d);
    } else if (strchr(name, '/')) {
        n = cfg_parse_file_at(name, at, "chip", d);
        if (n && n->type != CFG_MAP) {
            struct diag_loc loc = {at ? at->file : name, at ? at->line : 0, at ? at->col : 0};
            diag_error(d, &loc, "chip", "expected a chip preset file (a YAML mapping), got '%s' "
                                        "(a %s)", name, n->type == CFG_SEQ ? "list" : "scalar");
            cfg_node_free(n);
            n = NULL;
        }
    } else if (at) {
        char list[256] = "";
        for (int i = 0; embedded_chip_names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     embedded_chip_names[i]);
        struct diag_loc loc = {at->file, at->line, at->col};
        diag_error(d, &loc, "chip", "expected a chip preset (%s) or a path to a preset file, "
                                    "got '%s'", list, name);
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
    struct walk w = {.d = d};
    memset(chip, 0, sizeof *chip);
    load_chip_tree(&w, n, "", chip);
    cfg_node_free(n);
    return diag_count(d) > before ? -1 : 0;
}

/* The scenario's chip: a preset name, or {base: name, key: override...}. */
void cfg_chip_load(struct walk *w, const struct cfg_node *root, struct chip_params *c)
{
    const struct cfg_node *ch = walk_field(w, root, "", "chip", true);
    if (!ch)
        return;
    const struct cfg_node *base = ch;
    if (ch->type == CFG_MAP) {
        base = walk_field(w, ch, "chip", "base", true);
        if (!base)
            return;
    }
    if (base->type != CFG_SCALAR) {
        walk_type_error(w, base, "chip", "a chip preset name");
        return;
    }
    struct cfg_node *preset = load_preset(base->value, base, w->d);
    if (!preset)
        return;
    if (ch->type == CFG_MAP) {
        static const char *const skip[] = {"base", NULL};
        cfg_merge(preset, ch, skip);
    }
    cfg_forget_reads(preset);
    load_chip_tree(w, preset, "chip", c);
    if (diag_count(w->d) == 0)
        walk_check_unread(w, preset, "chip");
    cfg_node_free(preset);
}

