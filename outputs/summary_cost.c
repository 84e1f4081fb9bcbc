/* outputs/summary_cost.c -- summary.json's cost, energy and train blocks and
 * their console lines (figured by engine/cost.c). May use: libc, base/ and
 * outputs/summary.h only. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "outputs/summary.h"

/* A number, or null when 'v' is negative (not known). */
static const char *num_or_null(char *buf, size_t n, double v)
{
    if (v < 0)
        return "null";
    return json_fmt_num(buf, n, v, 'e', 9);
}

static void write_cost(FILE *f, const struct summary_cost *c)
{
    char b[40];
    fprintf(f, ",\n  \"cost\": {\"commitment\": \"%s\", \"usd_per_chip_hour\": %s, \"chips\": %d, "
               "\"usd_per_hour\": %s, \"usd_per_step\": %s, ",
            c->commitment, json_fmt_num((char[40]){""}, 40, c->usd_per_chip_hour, 'g', 9),
            c->chips, JSON_E9(c->usd_per_hour), JSON_E9(c->usd_per_step));
    fprintf(f, "\"usd_per_million_tokens\": %s}",
            num_or_null(b, sizeof b, c->usd_per_million_tokens));
}

static void write_energy(FILE *f, const struct summary_energy *e)
{
    char b[40];
    fprintf(f, ",\n  \"energy\": {\"tdp_w\": %s, \"idle_w\": %s, \"utilization\": %s, "
               "\"avg_power_w_per_chip\": %s, \"joules_per_step\": %s, ",
            json_fmt_num((char[40]){""}, 40, e->tdp_w, 'g', 9),
            json_fmt_num((char[40]){""}, 40, e->idle_w, 'g', 9), JSON_F6(e->utilization),
            JSON_E9(e->avg_power_w), JSON_E9(e->joules_per_step));
    fprintf(f, "\"joules_per_million_tokens\": %s}",
            num_or_null(b, sizeof b, e->joules_per_million_tokens));
}

static void write_train(FILE *f, const struct summary_train *t)
{
    char b1[40], b2[40];
    fprintf(f, ",\n  \"train\": {\"steps\": %lld, \"tokens\": %s, \"step_s\": %s,\n",
            (long long)t->steps, JSON_G17(t->tokens), JSON_E9(t->step_s));
    fprintf(f, "    \"eval_interval\": %lld, \"evals\": %lld, \"eval_steps\": %lld, "
               "\"eval_step_s\": %s, \"eval_s\": %s, \"eval_block_s\": %s,\n",
            (long long)t->eval_interval, (long long)t->evals, (long long)t->eval_steps,
            JSON_E9(t->eval_step_s), JSON_E9(t->eval_s), JSON_E9(t->eval_block_s));
    fprintf(f, "    \"checkpoints\": %lld, \"checkpoint_bytes_per_chip\": %s, "
               "\"checkpoint_s\": %s, \"compile_s\": %s,\n",
            (long long)t->checkpoints, JSON_G17(t->checkpoint_bytes_per_chip),
            JSON_E9(t->checkpoint_s), JSON_E9(t->compile_s));
    fprintf(f, "    \"time_to_train_s\": %s, \"usd_to_train\": %s, \"joules_to_train\": %s}",
            JSON_E9(t->time_to_train_s), num_or_null(b1, sizeof b1, t->usd_to_train),
            num_or_null(b2, sizeof b2, t->joules_to_train));
}

void summary_write_cost(FILE *f, const struct summary *s)
{
    if (s->cost.present)
        write_cost(f, &s->cost);
    if (s->energy.present)
        write_energy(f, &s->energy);
    if (s->train.present)
        write_train(f, &s->train);
}

/* "12.3 h" style: the largest unit under which 't' reads well. */
static void fmt_long(char *buf, size_t n, double t)
{
    if (t >= 86400)
        snprintf(buf, n, "%.2f days", t / 86400);
    else if (t >= 3600)
        snprintf(buf, n, "%.2f h", t / 3600);
    else if (t >= 60)
        snprintf(buf, n, "%.2f min", t / 60);
    else
        summary_format_time(buf, n, t);
}

void summary_print_cost(const struct summary *s, FILE *out)
{
    const struct summary_cost *c = &s->cost;
    if (c->present) {
        fprintf(out, "cost: $%.4g per step at $%.4g per chip-hour (%s) x %d chip%s",
                c->usd_per_step, c->usd_per_chip_hour, c->commitment, c->chips,
                c->chips == 1 ? "" : "s");
        if (c->usd_per_million_tokens >= 0)
            fprintf(out, ", $%.4g per million tokens", c->usd_per_million_tokens);
        fputc('\n', out);
    }
    const struct summary_energy *e = &s->energy;
    if (e->present)
        fprintf(out, "energy: %.4g kJ per step (%.0f W per chip: idle %.0f W + %.0f%% busy of "
                     "TDP %.0f W)\n",
                e->joules_per_step / 1e3, e->avg_power_w, e->idle_w, 100 * e->utilization,
                e->tdp_w);
    const struct summary_train *t = &s->train;
    if (!t->present)
        return;
    char tt[48], bl[48], ev[48];
    fmt_long(tt, sizeof tt, t->time_to_train_s);
    fprintf(out, "time to train: %s (%lld steps of %.4g s", tt, (long long)t->steps, t->step_s);
    if (t->evals) {
        fmt_long(bl, sizeof bl, t->eval_block_s);
        fmt_long(ev, sizeof ev, t->eval_s);
        fprintf(out, "; %lld evaluations of %lld forward steps, %s each; an evaluation block "
                     "(%lld steps and its evaluation) %s",
                (long long)t->evals, (long long)t->eval_steps, ev, (long long)t->eval_interval,
                bl);
    }
    if (t->checkpoints)
        fprintf(out, "; %lld checkpoints of %.4g s", (long long)t->checkpoints, t->checkpoint_s);
    if (t->compile_s > 0)
        fprintf(out, "; compile %.4g s", t->compile_s);
    fputc(')', out);
    if (t->usd_to_train >= 0)
        fprintf(out, ", $%.6g", t->usd_to_train);
    if (t->joules_to_train >= 0)
        fprintf(out, ", %.4g MWh", t->joules_to_train / 3.6e9);
    fputc('\n', out);
}
