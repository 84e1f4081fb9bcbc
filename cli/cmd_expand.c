/* cli/cmd_expand.c -- `tpusim expand SCENARIO [--set key.path=value]...`:
 * prints a model scenario as the plain scenario it expands into (its mesh
 * placed explicitly, its workload written out), which runs to the same
 * result. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_tree.h"
#include "cli/cli.h"
#include "workload/model.h"
#include "config/cfg_emit.h"

struct expand_args {
    const char *scenario;
    const char **sets;
    int nsets;
};

static int parse(int argc, char **argv, struct expand_args *a)
{
    static const struct option longs[] = {{"set", required_argument, 0, 's'}, {0, 0, 0, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "s:", longs, NULL)) != -1) {
        if (ch != 's')
            return cli_usage_error("expand takes SCENARIO.yaml [--set key.path=value]...");
        a->sets = xrealloc(a->sets, sizeof *a->sets * (size_t)(a->nsets + 1));
        a->sets[a->nsets++] = optarg;
    }
    if (optind + 1 != argc)
        return cli_usage_error("expand takes one SCENARIO.yaml");
    a->scenario = argv[optind];
    return 0;
}

/* "key: <its value as flow YAML>" for a top-level key of the document. */
static void print_key(const struct cfg_node *root, const char *key)
{
    const struct cfg_node *n = cfg_get(root, key);
    if (!n)
        return;
    char *t = cfg_node_text(n);
    printf("%s: %s\n", key, t);
    free(t);
}

/* The mesh with every axis placed, so the expansion lays it out the same way. */
static void print_mesh(const struct mesh *m)
{
    printf("mesh:\n");
    for (int i = 0; i < m->naxes; i++) {
        const struct mesh_axis *a = &m->axis[i];
        printf("  %s: {size: %d", a->name, a->size);
        if (a->dcn > 1)
            printf(", dcn: %d", a->dcn);
        if (a->nfactors) {
            printf(", on: [");
            for (int k = 0; k < a->nfactors; k++)
                printf("%s[%d, %d]", k ? ", " : "", a->f[k].phys, a->f[k].extent);
            printf("]");
        }
        printf("}\n");
    }
}

static int print_expansion(const struct expand_args *a, const struct cfg_scenario *sc,
                           struct diag *d)
{
    struct cfg_node *root = cfg_parse_file(a->scenario, d);
    if (!root)
        return 2;
    cfg_normalize_chip(root);
    for (int i = 0; i < a->nsets; i++)
        cfg_apply_set(root, a->sets[i], d);
    printf("# %s expanded by tpusim expand: the model's step, per chip\n", a->scenario);
    printf("name: %s\n", sc->name);
    print_key(root, "chip");
    print_key(root, "topology");
    print_key(root, "options");
    print_mesh(&sc->mesh);
    if (sc->xla.scoped_vmem_limit_bytes) /* chip: is printed as written */
        printf("# xla_flags: xla_tpu_scoped_vmem_limit_kib: %llu (the chip's "
               "tensorcore.vmem_limit)\n",
               (unsigned long long)(sc->xla.scoped_vmem_limit_bytes / 1024));
    char *yaml = cfg_model_workload_yaml(sc, d); /* xla_flags' async flags baked in */
    printf("workload:\n%s", yaml);
    free(yaml);
    cfg_node_free(root);
    return 0;
}

int cmd_expand(int argc, char **argv)
{
    struct expand_args a = {0};
    int rc = parse(argc, argv, &a);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (rc == 0 && cfg_load_scenario(a.scenario, a.sets, a.nsets, &sc, d) != 0) {
        rc = 2;
    } else if (rc == 0) {
        if (sc.serve) {
            diag_error(d, NULL, NULL, "%s: a serve: scenario runs a step per batch; expand takes "
                       "a scenario with a model:", a.scenario);
            rc = 2;
        } else if (!sc.model) {
            diag_error(d, NULL, NULL, "%s: expand needs a scenario with a model:", a.scenario);
            rc = 2;
        } else {
            rc = print_expansion(&a, &sc, d);
        }
        cfg_scenario_fini(&sc);
    }
    diag_print(d, stderr);
    diag_free(d);
    free(a.sets);
    return rc;
}
