/* outputs/table_serve.c -- the serving columns of the sweep table. */
#include "outputs/table_serve.h"

#include <string.h>


static const char *const pct_names[3] = {"p50", "p90", "p99"};

static void read_pcts(const struct json *o, double v[3])
{
    for (int i = 0; i < 3; i++)
        v[i] = json_num(o, pct_names[i], 0);
}

static bool json_true(const struct json *o, const char *key)
{
    const struct json *b = json_get(o, key);
    return b && b->type == JSON_BOOL && b->b;
}

/* The figures summary.json's serving object and sweep.json's share. */
static void read_common(struct table_serving *v, const struct json *s)
{
    v->request_throughput = json_num(s, "request_throughput", 0);
    v->output_tokens_per_s = json_num(s, "output_tokens_per_s", 0);
    read_pcts(json_get(s, "ttft_s"), v->ttft_s);
    read_pcts(json_get(s, "tpot_s"), v->tpot_s);
    read_pcts(json_get(s, "itl_s"), v->itl_s);
    v->overloaded = json_true(s, "overloaded");
}

bool table_serve_from_summary(struct table_serving *v, const struct json *j)
{
    const struct json *s = json_get(j, "serving");
    if (!s || s->type != JSON_OBJ)
        return false;
    read_common(v, s);
    const struct json *g = json_get(s, "goodput");
    v->goodput_rps = json_num(g, "requests_per_s", 0);
    v->slo_ttft_s = json_num(g, "slo_ttft_s", 0);
    v->slo_tpot_s = json_num(g, "slo_tpot_s", 0);
    return true;
}

void table_serve_csv_head(FILE *f)
{
    fputs(",request_throughput,output_tokens_per_s", f);
    static const char *const m[3] = {"ttft", "tpot", "itl"};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            fprintf(f, ",%s_%s_s", m[k], pct_names[i]);
    fputs(",goodput_requests_per_s,slo_ttft_s,slo_tpot_s,overloaded", f);
}

void table_serve_csv_row(FILE *f, const struct table_serving *v)
{
    if (!v) {
        fputs(",,,,,,,,,,,,,,,", f);
        return;
    }
    fprintf(f, ",%.9e,%.9e", v->request_throughput, v->output_tokens_per_s);
    const double *m[3] = {v->ttft_s, v->tpot_s, v->itl_s};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            fprintf(f, ",%.9e", m[k][i]);
    fprintf(f, ",%.9e,%.9e,%.9e,%s", v->goodput_rps, v->slo_ttft_s, v->slo_tpot_s,
            v->overloaded ? "true" : "false");
}

static void json_pcts(FILE *f, const char *name, const double v[3])
{
    fprintf(f, ", \"%s\": {", name);
    for (int i = 0; i < 3; i++)
        fprintf(f, "%s\"%s\": %s", i ? ", " : "", pct_names[i], JSON_E9(v[i]));
    fputc('}', f);
}

void table_serve_json_row(FILE *f, const struct table_serving *v)
{
    if (!v)
        return;
    fprintf(f, ",\n     \"serving\": {\"request_throughput\": %s, \"output_tokens_per_s\": %s",
            JSON_E9(v->request_throughput), JSON_E9(v->output_tokens_per_s));
    json_pcts(f, "ttft_s", v->ttft_s);
    json_pcts(f, "tpot_s", v->tpot_s);
    json_pcts(f, "itl_s", v->itl_s);
    fprintf(f, ",\n       \"goodput_requests_per_s\": %s, \"slo_ttft_s\": %s, \"slo_tpot_s\": %s, "
               "\"overloaded\": %s}",
            JSON_E9(v->goodput_rps), JSON_E9(v->slo_ttft_s), JSON_E9(v->slo_tpot_s),
            v->overloaded ? "true" : "false");
}

bool table_serve_from_json(struct table_serving *v, const struct json *p)
{
    const struct json *s = json_get(p, "serving");
    if (!s || s->type != JSON_OBJ)
        return false;
    read_common(v, s);
    v->goodput_rps = json_num(s, "goodput_requests_per_s", 0);
    v->slo_ttft_s = json_num(s, "slo_ttft_s", 0);
    v->slo_tpot_s = json_num(s, "slo_tpot_s", 0);
    return true;
}
