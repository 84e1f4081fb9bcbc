/* workload/hlo_report.c -- what an HLO module held and what it was lowered
 * to (summary.json's program: block), and the source names XLA keeps in an
 * instruction's metadata (op_name="jit(f)/.../dot_general"). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "workload/hlo.h"
#include "workload/hlo_int.h"

const char *hlo_metadata_op_name(const struct hlo_instr *in, char *buf, size_t n)
{
    const struct hlo_attr *a = hlo_attr(in, "metadata");
    const char *s = a ? strstr(a->value, "op_name=\"") : NULL;
    if (!s || n < 2)
        return NULL;
    s += strlen("op_name=\"");
    size_t k = 0;
    for (; *s && *s != '"' && k + 1 < n; s++) {
        if (*s == '\\' && s[1])
            s++;
        buf[k++] = (unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s;
    }
    buf[k] = '\0';
    return k ? buf : NULL;
}

/* Computations a fusion calls (their instructions are the fusion's body) or
 * an instruction applies (to_apply of a reduce or all-reduce: the reducer);
 * a call's to_apply is code of its own. */
static bool *fused_comps(const struct hlo_module *m)
{
    bool *fused = xcalloc((size_t)m->ncomp + 1, sizeof *fused);
    for (int c = 0; c < m->ncomp; c++)
        for (int i = 0; i < m->comp[c].nins; i++) {
            const struct hlo_instr *in = &m->comp[c].ins[i];
            const struct hlo_attr *a = in->opcode == HLO_OP_FUSION ? hlo_attr(in, "calls")
                                       : in->opcode != HLO_OP_CALL ? hlo_attr(in, "to_apply")
                                                                   : NULL;
            int fc = a ? hlo_find_comp(m, a->value) : -1;
            if (fc >= 0)
                fused[fc] = true;
        }
    return fused;
}

struct kind_count {
    const char *kind;
    int64_t n;
};

static void count_kind(struct kind_count *k, int *nk, int max, const char *kind)
{
    for (int i = 0; i < *nk; i++)
        if (strcmp(k[i].kind, kind) == 0) {
            k[i].n++;
            return;
        }
    if (*nk < max)
        k[(*nk)++] = (struct kind_count){kind, 1};
}

static void count_block(const struct prog_block *b, struct kind_count *k, int *nk, int max)
{
    for (int i = 0; i < b->nops; i++) {
        const struct prog_op *o = &b->op[i];
        count_kind(k, nk, max, o->loop ? "loop" : o->kind);
        if (o->loop)
            count_block(o->loop, k, nk, max);
    }
}

static void write_counts(FILE *f, const char *key, const struct kind_count *k, int nk)
{
    fprintf(f, ",\n    \"%s\": {", key);
    for (int i = 0; i < nk; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_write_string(f, k[i].kind);
        fprintf(f, ": %lld", (long long)k[i].n);
    }
    fputc('}', f);
}

/* One line of the ignored list: 'n' instructions of 'what', for 'why'. */
static void write_ignored(FILE *f, bool *first, int64_t n, const char *what, const char *why)
{
    if (n == 0)
        return;
    fprintf(f, "%s\n      {\"what\": \"%s\", \"count\": %lld, \"why\": \"%s\"}", *first ? "" : ",",
            what, (long long)n, why);
    *first = false;
}

static void write_module_counts(FILE *f, const struct hlo_module *m, const struct hlo_report *r)
{
    bool *fused = fused_comps(m);
    int64_t by[HLO_OP_COUNT] = {0}, total = 0, in_fusions = 0, by_class[HLO_C_REFUSED + 1] = {0};
    for (int c = 0; c < m->ncomp; c++)
        for (int i = 0; i < m->comp[c].nins; i++) {
            int op = m->comp[c].ins[i].opcode;
            if (fused[c]) {
                in_fusions++;
                continue;
            }
            total++, by[op]++, by_class[hlo_class_of(op)]++;
        }
    free(fused);
    fprintf(f, ",\n    \"computations\": %d, \"instructions\": %lld, \"fused_instructions\": %lld",
            m->ncomp, (long long)total, (long long)in_fusions);
    fprintf(f, ",\n    \"fusions\": %lld, \"collectives\": %lld, \"while_loops\": %lld, "
               "\"unknown_custom_calls\": %lld, \"estimated_custom_calls\": %lld",
            (long long)by[HLO_OP_FUSION],
            (long long)(by_class[HLO_C_COLL] + by_class[HLO_C_START]), (long long)by[HLO_OP_WHILE],
            (long long)r->custom_calls, (long long)r->estimated_calls);
    fprintf(f, ",\n    \"by_opcode\": {");
    bool first = true;
    for (int op = 0; op < HLO_OP_COUNT; op++)
        if (by[op]) {
            fprintf(f, "%s\"%s\": %lld", first ? "" : ", ", hlo_opcode_name(op), (long long)by[op]);
            first = false;
        }
    fputc('}', f);
    fprintf(f, ",\n    \"ignored\": [");
    first = true;
    write_ignored(f, &first, by_class[HLO_C_PARAM] + by_class[HLO_C_CONST],
                  "parameter, constant", "inputs: no work");
    write_ignored(f, &first, by_class[HLO_C_FREE] + by_class[HLO_C_DONE],
                  "bitcast, tuple, get-tuple-element, *-done, ...",
                  "alias their operand: no work (a done ends its start)");
    write_ignored(f, &first, r->idle_collectives, "collective over one-device groups",
                  "moves nothing");
    write_ignored(f, &first, r->branches_skipped, "conditional branch",
                  "only the most expensive branch runs");
    write_ignored(f, &first, r->custom_calls, "custom-call body",
                  "priced by the bytes it reads and writes only");
    write_ignored(f, &first, r->estimated_calls, "custom-call body (Mosaic)",
                  "priced from its cost_estimate as a streaming pallas_call");
    fputs(first ? "]" : "\n    ]", f);
}

char *hlo_report_json(const struct hlo_module *m, const struct program *p,
                      const struct hlo_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "{\"source\": ");
    json_write_string(f, m->file);
    fprintf(f, ", \"module\": ");
    json_write_string(f, m->name ? m->name : "");
    fprintf(f, ",\n    \"num_partitions\": %lld, \"replica_count\": %lld, \"is_scheduled\": %s",
            (long long)m->num_partitions, (long long)m->replica_count,
            m->scheduled ? "true" : "false");
    write_module_counts(f, m, r);
    fprintf(f, ",\n    \"trip_counts_from_condition\": %lld", (long long)r->trips_from_condition);
    fprintf(f, ",\n    \"routed_collectives\": %lld", (long long)r->routed_collectives);
    char b[3][32];
    fprintf(f, ",\n    \"peak_memory_bytes\": %s, \"parameter_bytes\": %s, "
               "\"peak_temporary_bytes\": %s, \"peak_at\": ",
            json_fmt_num(b[0], sizeof b[0], r->peak_bytes, 'f', 0),
            json_fmt_num(b[1], sizeof b[1], r->parameter_bytes, 'f', 0),
            json_fmt_num(b[2], sizeof b[2], r->temp_peak_bytes, 'f', 0));
    json_write_string(f, r->peak_at ? r->peak_at->name : "");
    struct kind_count k[32];
    int nk = 0;
    count_block(&p->top, k, &nk, 32);
    write_counts(f, "lowered", k, nk);
    fputc('}', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
