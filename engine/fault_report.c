/* engine/fault_report.c -- the reference run without faults, what moved, goodput. */
#include "engine/fault_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"

void fault_ref_fini(struct fault_ref *ref)
{
    free(ref->op_s);
    memset(ref, 0, sizeof *ref);
}

void fault_goodput(const struct cfg_goodput *g, int chips, double step_s, struct fault_goodput *o)
{
    double lambda = (double)chips / g->mtbf_chip_s;
    double tau = (double)g->checkpoint_period * step_s, w = g->checkpoint_bytes / g->checkpoint_Bps;
    double lost = (tau + w) / 2 + g->restart_s;
    double useful = tau + w > 0 ? tau / (tau + w) * (1 - lambda * lost) : 0;
    *o = (struct fault_goodput){.failures_per_s = lambda,
                                .interval_s = tau,
                                .write_s = w,
                                .lost_per_failure_s = lost,
                                .goodput = useful > 0 ? useful : 0,
                                .young_interval_s = sqrt(2 * w / lambda)};
}

static const char *kind_name(const struct cfg_fault *f)
{
    if (f->kind == CFG_FAULT_LINK)
        return f->bw_factor > 0 ? "link_degraded" : "link_down";
    if (f->kind == CFG_FAULT_SLICE)
        return f->dead ? "dead_chip" : "slice_lost";
    return "slow_chip";
}

static void write_fault(FILE *j, FILE *t, const struct topo *t_slice, const struct cfg_fault *f)
{
    fprintf(j, "{\"kind\": \"%s\"", kind_name(f));
    fprintf(t, "fault: %s", kind_name(f));
    if (f->kind == CFG_FAULT_SLICE && !f->dead) {
        fprintf(j, ", \"slice\": %d}", f->slice);
        fprintf(t, " slice %d (the DCN collectives run over the others)\n", f->slice);
        return;
    }
    int co[TOPO_MAX_DIMS];
    topo_coords(t_slice, f->chip, co);
    fprintf(j, ", \"slice\": %d, \"chip\": %d, \"coords\": [", f->slice, f->chip);
    fprintf(t, " chip %d [", f->chip);
    for (int a = 0; a < t_slice->ndims; a++) {
        fprintf(j, "%s%d", a ? ", " : "", co[a]);
        fprintf(t, "%s%d", a ? ", " : "", co[a]);
    }
    fprintf(j, "], \"at_s\": %s", JSON_E9(f->at_s));
    fprintf(t, "] of slice %d", f->slice);
    if (f->kind == CFG_FAULT_LINK) {
        fprintf(j, ", \"axis\": %d, \"direction\": %d, \"bandwidth_factor\": %s", f->axis, f->dir,
                JSON_G17(f->bw_factor));
        fprintf(t, ", axis %d direction %+d, bandwidth x %g", f->axis, f->dir, f->bw_factor);
    } else if (f->kind == CFG_FAULT_CHIP) {
        fprintf(j, ", \"compute_factor\": %s, \"hbm_factor\": %s", JSON_G17(f->compute_factor),
                JSON_G17(f->hbm_factor));
        fprintf(t, ", compute x %g, HBM x %g", f->compute_factor, f->hbm_factor);
    }
    fputc('}', j);
    fprintf(t, f->at_s > 0 ? " from %g s\n" : " from the start\n", f->at_s);
}

/* The ops whose time moved by more than 1 ppm against the reference. */
static void write_moved(FILE *j, FILE *t, const struct fault_ref *ref, const struct summary *s)
{
    double d = s->total_time_s - ref->total_s;
    fprintf(j, ",\n    \"reference_total_time_s\": %s, \"total_time_delta_s\": %s, \"moved\": [",
            JSON_E9(ref->total_s), JSON_E9(d));
    char a[32], b[32];
    summary_format_time(a, sizeof a, ref->total_s);
    summary_format_time(b, sizeof b, fabs(d));
    fprintf(t, "faults: total %s without them, %s%s with (x%.3f)\n", a, d < 0 ? "-" : "+", b,
            ref->total_s > 0 ? s->total_time_s / ref->total_s : 0.0);
    int n = 0;
    for (int i = 0; i < s->nops && i < ref->nops; i++) {
        double r = ref->op_s[i], now = s->ops[i].time_s;
        if (!(fabs(now - r) > 1e-6 * (r > 0 ? r : 1e-12)))
            continue;
        fprintf(j, "%s\n      {\"name\": ", n++ ? "," : "");
        json_write_string(j, s->ops[i].name);
        fprintf(j, ", \"kind\": \"%s\", \"time_s\": %s, \"reference_time_s\": %s, "
                   "\"delta_s\": %s, \"ratio\": %s}",
                s->ops[i].kind, JSON_E9(now), JSON_E9(r), JSON_E9(now - r),
                JSON_E9(r > 0 ? now / r : 0));
        summary_format_time(a, sizeof a, r);
        summary_format_time(b, sizeof b, fabs(now - r));
        fprintf(t, "  moved: %-20.20s %-16s %s %s%s (x%.3f)\n", s->ops[i].name, s->ops[i].kind,
                a, now < r ? "-" : "+", b, r > 0 ? now / r : 0.0);
    }
    fputs(n ? "\n    ]" : "]", j);
}

static void write_goodput(FILE *j, FILE *t, const struct cfg_scenario *sc, const struct summary *s)
{
    const struct cfg_goodput *g = &sc->faults.goodput;
    int slices = sc->dcn.slices > 1 ? sc->dcn.slices : 1;
    int chips = sc->topo.nchips * (slices - sc->faults.slices_lost);
    struct fault_goodput o;
    fault_goodput(g, chips, s->total_time_s, &o);
    fprintf(j, ",\n  \"goodput\": {\"chips\": %d, \"step_time_s\": %s, \"mtbf_per_chip_s\": %s, "
               "\"failures_per_s\": %s, \"checkpoint_period\": %lld, "
               "\"checkpoint_interval_s\": %s, \"checkpoint_write_s\": %s, \"restart_s\": %s, "
               "\"lost_per_failure_s\": %s, \"goodput\": %s, \"young_interval_s\": %s}",
            chips, JSON_E9(s->total_time_s), JSON_E9(g->mtbf_chip_s), JSON_E9(o.failures_per_s),
            (long long)g->checkpoint_period, JSON_E9(o.interval_s), JSON_E9(o.write_s),
            JSON_E9(g->restart_s), JSON_E9(o.lost_per_failure_s), JSON_E9(o.goodput),
            JSON_E9(o.young_interval_s));
    fprintf(t, "goodput: %.2f%% of the time is useful (%d chips: a failure every %.3g s; a "
               "checkpoint every %.3g s written in %.3g s; %.3g s lost per failure; Young's "
               "interval %.3g s)\n",
            100 * o.goodput, chips, 1 / o.failures_per_s, o.interval_s, o.write_s,
            o.lost_per_failure_s, o.young_interval_s);
}

void fault_report(const struct cfg_scenario *sc, const struct fault_ref *ref, struct summary *s)
{
    if (!sc->faults.n && !sc->faults.goodput.present)
        return;
    size_t jn = 0, tn = 0;
    char *js = NULL, *ts = NULL;
    FILE *j = open_memstream(&js, &jn), *t = open_memstream(&ts, &tn);
    if (!j || !t)
        abort();
    if (sc->faults.n) {
        fputs(",\n  \"faults\": {\"applied\": [", j);
        for (int i = 0; i < sc->faults.n; i++) {
            fputs(i ? ", " : "", j);
            write_fault(j, t, &sc->topo, &sc->faults.f[i]);
        }
        fputc(']', j);
        if (ref && ref->present)
            write_moved(j, t, ref, s);
        else if (ref)
            fprintf(t, "faults: no reference run (%s)\n", ref->err);
        fputc('}', j);
    }
    if (sc->faults.goodput.present)
        write_goodput(j, t, sc, s);
    fclose(j);
    fclose(t);
    s->faults_json = js;
    s->faults_text = ts;
}
