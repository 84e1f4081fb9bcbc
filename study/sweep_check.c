/* study/sweep_check.c -- `tpusim check SWEEP.yaml`: a sweep spec validated
 * without running anything: the spec itself (keys, vars, the base), then
 * every point loaded and checked as `tpusim check` checks a scenario (units,
 * ranges, block-size rules, VMEM budgets, resource guards). A point that
 * breaks a rule is listed as the sweep would list it (an infeasible row). */
#include "study/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "study/autotune.h"
#include "study/sweep_int.h"
#include "engine/validate.h"
#include "engine/spmd.h"

/* "k=v, k2=v2" of point 'i', as the report shows it. New string. */
static char *point_label(const struct sweep_spec *sp, int i)
{
    char *s = xstrdup("");
    for (int k = 0; k < sp->nkeys; k++) {
        const char *dot = strrchr(sp->keys[k].path, '.');
        const char *v = sp->points[i].shown[k];
        char *n = xasprintf("%s%s%s=%s", s, k ? ", " : "", dot ? dot + 1 : sp->keys[k].path,
                            *v ? v : "(unset)");
        free(s);
        s = n;
    }
    return s;
}

/* Loads and checks point 'i'; returns NULL when feasible, else its messages (new string). */
static char *check_point(const struct sweep_spec *sp, int i, const struct validate_limits *lim,
                         struct autotune_cache *cache)
{
    int n;
    char **sets = sweep_point_sets(sp, i, &n);
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (cfg_load_scenario(sp->base_path, (const char *const *)sets, n, &sc, d) == 0) {
        spmd_fold(&sc, sc.all_chips);
        /* blocks: auto is searched as the run would (points share the cache) */
        if (autotune_resolve(&sc, cache, NULL, d) == 0)
            validate_scenario(&sc, lim, d);
        cfg_scenario_fini(&sc);
    }
    char *msgs = sweep_diag_text(sp, d);
    diag_free(d);
    sweep_sets_free(sets);
    return msgs;
}

/* Checks every point, printing the infeasible ones; returns how many are feasible. */
static int check_points(const struct sweep_spec *sp, const struct validate_limits *lim)
{
    int ok = 0;
    struct autotune_cache *cache = autotune_cache_new();
    for (int i = 0; i < sp->npoints; i++) {
        char *msgs = check_point(sp, i, lim, cache);
        if (!msgs) {
            ok++;
            continue;
        }
        char *label = point_label(sp, i);
        printf("point %d (%s): infeasible: %s\n", i, label, msgs);
        free(label);
        free(msgs);
    }
    autotune_cache_free(cache);
    return ok;
}

/* Writes an inline base to a temporary file for the points to load. Returns 0 or -1. */
static int write_temp_base(struct sweep_spec *sp, char *tmpl)
{
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return -1;
    close(fd);
    if (sweep_spec_write_base(sp, tmpl) == 0)
        return 0;
    unlink(tmpl);
    return -1;
}

int sweep_check(const char *spec, const char *const *sets, int nsets,
                const struct validate_limits *lim)
{
    struct sweep_spec sp;
    struct diag *d = diag_new();
    int rc = 2;
    char tmpl[] = "/tmp/tpusim-check-base-XXXXXX";
    bool temp = false;
    if (sweep_spec_load(spec, sets, nsets, &sp, d) != 0) {
        diag_print(d, stderr);
    } else if (sp.base_inline && !(temp = write_temp_base(&sp, tmpl) == 0)) {
        fprintf(stderr, "tpusim check: cannot write a temporary file: %s\n", strerror(errno));
        rc = 1;
    } else {
        int ok = check_points(&sp, lim);
        fflush(stdout);
        fprintf(ok ? stdout : stderr,
                "%s%s: %s (sweep %s, %d points: %d feasible, %d infeasible; default point %d%s)\n",
                ok ? "" : "tpusim check: ", sp.file, ok ? "ok" : "no feasible point", sp.name,
                sp.npoints, ok, sp.npoints - ok, sp.default_point,
                sp.default_added ? ", added: the base's own values" : "");
        rc = ok ? 0 : 2;
    }
    if (temp)
        unlink(tmpl);
    sweep_spec_fini(&sp);
    diag_free(d);
    return rc;
}
