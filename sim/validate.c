/* sim/validate.c -- op rules and resource guards (see sim/validate.h). */
#include "sim/validate.h"

#include <stdio.h>

#include "kernels/copy.h"
#include "kernels/kernel.h"
#include "sim/op_table.h"

static void op_error(struct diag *d, const struct cfg_scenario *sc, int i, const char *msg)
{
    struct diag_loc loc = {sc->file, 0, 0};
    char path[32];
    snprintf(path, sizeof path, "workload.%d", i);
    diag_error(d, &loc, path, "%s: %s", op_kind_name(sc->ops[i].kind), msg);
}

/* Checks one op: a Pallas kind by building its calls, others by their rules. */
static int check_op(const struct cfg_scenario *sc, const struct op *op, char *err, size_t n)
{
    const struct op_row *row = op_row(op->kind);
    if (row->kern) {
        struct kern k;
        int rc = kern_init(&k, row->kern, op, &sc->chip, false, err, n);
        kern_fini(&k);
        return rc;
    }
    return row->check ? row->check(op, &sc->chip, &sc->topo, err, n) : 0;
}

int validate_ops(const struct cfg_scenario *sc, struct diag *d)
{
    int before = diag_count(d);
    for (int i = 0; i < sc->nops; i++) {
        char err[1024] = "";
        if (check_op(sc, &sc->ops[i], err, sizeof err) != 0)
            op_error(d, sc, i, err);
    }
    return diag_count(d) > before ? -1 : 0;
}

/* a + b * c, saturating at INT64_MAX (all non-negative). */
static int64_t sat_madd(int64_t a, int64_t b, int64_t c)
{
    int64_t p, r;
    if (__builtin_mul_overflow(b, c, &p) || __builtin_add_overflow(a, p, &r))
        return INT64_MAX;
    return r;
}

void validate_estimate(const struct cfg_scenario *sc, struct validate_estimate *e)
{
    e->grid_steps = e->copy_chunks = 0;
    int64_t chips = sc->topo.nchips;
    for (int i = 0; i < sc->nops; i++) {
        const struct op *op = &sc->ops[i];
        if (op->kind == OP_HBM_COPY) { /* every TensorCore copies */
            uint64_t n = copy_chunks(op, &sc->chip);
            int64_t per = n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
            e->copy_chunks = sat_madd(e->copy_chunks, per, sat_madd(0, chips, sc->chip.cores));
            continue;
        }
        const struct kern_kind *kind = op_row(op->kind)->kern;
        if (!kind)
            continue;
        char err[512];
        struct kern k;
        if (kern_init(&k, kind, op, &sc->chip, false, err, sizeof err) == 0) {
            int cores = sc->chip.megacore ? 1 : sc->chip.cores;
            e->grid_steps = sat_madd(e->grid_steps, kern_steps(&k), chips * cores);
        }
        kern_fini(&k);
    }
}

int64_t validate_estimate_steps(const struct cfg_scenario *sc)
{
    struct validate_estimate e;
    validate_estimate(sc, &e);
    return sat_madd(e.grid_steps, e.copy_chunks, 1);
}

double validate_estimate_memory(const struct cfg_scenario *sc)
{
    double actors = (double)sc->topo.nchips * (2.0 * sc->chip.cores + 3.0);
    double steps = (double)validate_estimate_steps(sc);
    double events = 6.0 * (sc->fidelity == CFG_FIDELITY_EXACT ? steps : steps / 16.0);
    return actors * 131072.0 + (events < 2e6 ? events : 2e6) * 200.0 + 64e6;
}

int validate_guards(const struct cfg_scenario *sc, const struct validate_limits *lim,
                    struct diag *d)
{
    int64_t max = lim->max_steps ? lim->max_steps : sc->max_steps;
    struct validate_estimate e;
    validate_estimate(sc, &e);
    int64_t est = sat_madd(e.grid_steps, e.copy_chunks, 1);
    if (est > max) {
        diag_error(d, NULL, NULL, "the run would simulate %lld steps (%lld grid steps, %lld copy "
                                  "chunks), above the limit of %lld; raise it with --max-steps N "
                                  "(or options.max_steps)",
                   (long long)est, (long long)e.grid_steps, (long long)e.copy_chunks,
                   (long long)max);
        return -1;
    }
    double mem = validate_estimate_memory(sc);
    double mem_max = lim->max_memory_bytes ? lim->max_memory_bytes : 16.0 * 1073741824.0;
    if (mem > mem_max) {
        diag_error(d, NULL, NULL, "the run would need about %.1f GiB of memory, above the limit "
                                  "of %.1f GiB; raise it with --max-memory SIZE",
                   mem / 1073741824.0, mem_max / 1073741824.0);
        return -1;
    }
    return 0;
}

int validate_scenario(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d)
{
    if (validate_ops(sc, d) != 0)
        return -1;
    return validate_guards(sc, lim, d);
}
