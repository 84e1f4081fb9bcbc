/* study/train_eval.c -- the forward-only evaluation step (study/train_eval.h). */
#include "study/train_eval.h"

#include <stdio.h>
#include <string.h>

#include "engine/sim.h"
#include "engine/sim_child.h"
#include "engine/spmd.h"
#include "study/autotune.h"
#include "workload/model.h"

struct eval_result {
    int rc;
    double time_s;
    char err[512];
};

struct eval_args {
    const struct cfg_scenario *sc;
    const struct sim_opts *o;
};

static void eval_body(void *arg, void *out)
{
    const struct eval_args *a = arg;
    struct eval_result *res = out;
    struct diag *d = diag_new();
    struct sim_opts so = {.sg_argc = a->o->sg_argc, .sg_argv = a->o->sg_argv,
                          .max_trace_events = 1, .max_steps = a->o->max_steps,
                          .max_memory_bytes = a->o->max_memory_bytes};
    struct summary s = {0};
    res->rc = sim_run(a->sc, &so, &s, d);
    res->time_s = s.total_time_s;
    summary_fini(&s);
    if (diag_count(d))
        snprintf(res->err, sizeof res->err, "%s", diag_message(d, 0));
    diag_free(d);
}

int train_eval_step(struct cfg_scenario *sc, const struct sim_opts *o, struct diag *d)
{
    if (!sc->train.present || sc->train.eval_interval <= 0 || !sc->model)
        return 0;
    struct model m = sc->model->m;
    m.mode = MODEL_PREFILL; /* the same model and batch, forward only */
    struct cfg_scenario ev;
    if (cfg_serve_step(sc, &m, &ev, d) != 0)
        return 2;
    ev.train.present = false;
    spmd_fold(&ev, ev.all_chips);
    struct autotune_cache *cache = autotune_cache_new();
    struct autotune_opts ao = {.sg_argc = o->sg_argc, .sg_argv = o->sg_argv};
    int rc = autotune_resolve(&ev, cache, &ao, d);
    autotune_cache_free(cache);
    struct eval_result res = {.rc = rc};
    if (rc == 0) {
        struct eval_args a = {&ev, o};
        int crc = sim_child_run(eval_body, &a, &res, sizeof res, "evaluation step's run",
                                res.err, sizeof res.err);
        if (crc != 0)
            res.rc = crc;
        if (res.rc != 0 && res.err[0])
            diag_error(d, NULL, "train", "the evaluation step: %s", res.err);
    }
    cfg_scenario_fini(&ev);
    if (res.rc == 0)
        sc->plan.eval_step_s = res.time_s;
    return res.rc;
}
