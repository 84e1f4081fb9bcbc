/* workload/hlo_trip.c -- a while loop's trip count read from its code, as
 * XLA's own while-loop analysis does when the backend config does not carry
 * it: the condition compares a counter (element k of the loop's tuple)
 * against a constant, the body adds a constant to that element, and the
 * loop's operand starts it at a constant. Values are followed through
 * copies, converts, bitcasts, reshapes, tuples, get-tuple-elements and the
 * fusions and calls that wrap an add or a compare (as CPU and TPU dumps
 * write them). */
#include <stdlib.h>
#include <string.h>

#include "workload/hlo.h"
#include "workload/hlo_int.h"

#define TRIP_MAX_DEPTH 16 /* fusions within fusions followed */

enum sym_kind { S_UNKNOWN, S_CONST, S_ELEM, S_LOOP, S_CMP };

/* What an instruction holds: a constant, element k of the loop's tuple plus
 * 'v', the loop's tuple itself, or a comparison a 'dir' b. */
struct sym {
    enum sym_kind kind;
    int64_t v;
    int k;
    char dir[3];
    int64_t cmp_v;        /* S_CMP: the constant side */
    int cmp_k;            /* S_CMP: the counter side, element cmp_k + v */
    bool swapped;         /* S_CMP: the constant was on the left */
};

struct env {
    const struct sym *param; /* the computation's parameters */
    int nparam;
};

static struct sym eval(const struct hlo_module *m, const struct hlo_comp *c, int i,
                       const struct env *env, int depth);

static struct sym unknown(void)
{
    return (struct sym){.kind = S_UNKNOWN};
}

static bool scalar_int(const struct hlo_instr *in)
{
    if (in->shape.type == HLO_TUPLE || in->shape.rank != 0)
        return false;
    const char *t = hlo_type_name(in->shape.type);
    return t[0] == 's' || t[0] == 'u';
}

static struct sym constant(const struct hlo_instr *in)
{
    if (!scalar_int(in) || !in->raw)
        return unknown();
    char *e;
    long long v = strtoll(in->raw, &e, 10);
    if (e == in->raw || *e)
        return unknown();
    return (struct sym){.kind = S_CONST, .v = v};
}

/* add / subtract of a counter and a constant. */
static struct sym arith(const struct sym *a, const struct sym *b, bool sub)
{
    if (a->kind == S_CONST && b->kind == S_CONST)
        return (struct sym){.kind = S_CONST, .v = sub ? a->v - b->v : a->v + b->v};
    if (a->kind == S_ELEM && b->kind == S_CONST && llabs(b->v) < ((int64_t)1 << 40))
        return (struct sym){.kind = S_ELEM, .k = a->k, .v = sub ? a->v - b->v : a->v + b->v};
    if (!sub && a->kind == S_CONST && b->kind == S_ELEM && llabs(a->v) < ((int64_t)1 << 40))
        return (struct sym){.kind = S_ELEM, .k = b->k, .v = a->v + b->v};
    return unknown();
}

static struct sym compare(const struct hlo_instr *in, const struct sym *a, const struct sym *b)
{
    const struct hlo_attr *d = hlo_attr(in, "direction");
    if (!d || strlen(d->value) != 2)
        return unknown();
    struct sym s = {.kind = S_CMP};
    memcpy(s.dir, d->value, 3);
    if (a->kind == S_ELEM && b->kind == S_CONST)
        s.cmp_k = a->k, s.v = a->v, s.cmp_v = b->v;
    else if (a->kind == S_CONST && b->kind == S_ELEM)
        s.cmp_k = b->k, s.v = b->v, s.cmp_v = a->v, s.swapped = true;
    else
        return unknown();
    return s;
}

/* A fusion's or call's computation, evaluated with its operands as parameters. */
static struct sym called_root(const struct hlo_module *m, const struct hlo_comp *c,
                              const struct hlo_instr *in, const struct env *env, int depth)
{
    const struct hlo_attr *a = hlo_attr(in, in->opcode == HLO_OP_CALL ? "to_apply" : "calls");
    int ci = a ? hlo_find_comp(m, a->value) : -1;
    if (ci < 0 || in->nops > 8)
        return unknown();
    struct sym args[8];
    for (int k = 0; k < in->nops; k++)
        args[k] = eval(m, c, in->operand[k], env, depth + 1);
    struct env inner = {args, in->nops};
    return eval(m, &m->comp[ci], m->comp[ci].root, &inner, depth + 1);
}

static struct sym tuple_elem(const struct hlo_module *m, const struct hlo_comp *c,
                             const struct hlo_instr *in, const struct env *env, int depth)
{
    const struct hlo_attr *ix = hlo_attr(in, "index");
    long k = ix ? strtol(ix->value, NULL, 10) : -1;
    if (in->nops != 1 || k < 0)
        return unknown();
    const struct hlo_instr *src = &c->ins[in->operand[0]];
    if (src->opcode == HLO_OP_TUPLE)
        return k < src->nops ? eval(m, c, src->operand[k], env, depth + 1) : unknown();
    struct sym t = eval(m, c, in->operand[0], env, depth + 1);
    return t.kind == S_LOOP ? (struct sym){.kind = S_ELEM, .k = (int)k} : unknown();
}

static struct sym eval(const struct hlo_module *m, const struct hlo_comp *c, int i,
                       const struct env *env, int depth)
{
    if (depth > TRIP_MAX_DEPTH || i < 0 || i >= c->nins)
        return unknown();
    const struct hlo_instr *in = &c->ins[i];
    switch (in->opcode) {
    case HLO_OP_CONSTANT:
        return constant(in);
    case HLO_OP_PARAMETER: {
        long k = strtol(in->raw ? in->raw : "", NULL, 10);
        return k >= 0 && k < env->nparam ? env->param[k] : unknown();
    }
    case HLO_OP_GET_TUPLE_ELEMENT:
        return tuple_elem(m, c, in, env, depth);
    case HLO_OP_COPY:
    case HLO_OP_CONVERT:
    case HLO_OP_BITCAST:
    case HLO_OP_RESHAPE:
        return in->nops == 1 ? eval(m, c, in->operand[0], env, depth + 1) : unknown();
    case HLO_OP_FUSION:
    case HLO_OP_CALL:
        return called_root(m, c, in, env, depth);
    default:
        break;
    }
    if (in->nops != 2)
        return unknown();
    struct sym a = eval(m, c, in->operand[0], env, depth + 1);
    struct sym b = eval(m, c, in->operand[1], env, depth + 1);
    if (in->opcode == HLO_OP_ADD || in->opcode == HLO_OP_SUBTRACT)
        return arith(&a, &b, in->opcode == HLO_OP_SUBTRACT);
    if (in->opcode == HLO_OP_COMPARE)
        return compare(in, &a, &b);
    return unknown();
}

/* "LT" read from the counter's side: the constant on the left flips it. */
static const char *counter_dir(const struct sym *s)
{
    static const char *const pairs[][2] = {{"LT", "GT"}, {"LE", "GE"}, {"GT", "LT"},
                                           {"GE", "LE"}, {"NE", "NE"}, {"EQ", "EQ"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (strcmp(s->dir, pairs[i][0]) == 0)
            return s->swapped ? pairs[i][1] : pairs[i][0];
    return "";
}

/* Iterations of 'for (i = i0; i DIR bound; i += step)'; -1 if it does not end. */
static int64_t iterations(const char *dir, int64_t i0, int64_t bound, int64_t step)
{
    int64_t gap = bound - i0;
    if (strcmp(dir, "LT") == 0)
        return step <= 0 ? (gap > 0 ? -1 : 0) : gap <= 0 ? 0 : (gap + step - 1) / step;
    if (strcmp(dir, "LE") == 0)
        return step <= 0 ? (gap >= 0 ? -1 : 0) : gap < 0 ? 0 : gap / step + 1;
    if (strcmp(dir, "GT") == 0)
        return step >= 0 ? (gap < 0 ? -1 : 0) : gap >= 0 ? 0 : (-gap - step - 1) / -step;
    if (strcmp(dir, "GE") == 0)
        return step >= 0 ? (gap <= 0 ? -1 : 0) : gap > 0 ? 0 : -gap / -step + 1;
    if (strcmp(dir, "NE") == 0)
        return step != 0 && gap % step == 0 && gap / step >= 0 ? gap / step : -1;
    return -1;
}

int hlo_trip_from_condition(const struct hlo_module *m, const struct hlo_comp *caller,
                            const struct hlo_instr *w, int cond, int body, int64_t *n)
{
    struct sym loop = {.kind = S_LOOP}, none = unknown();
    struct env lenv = {&loop, 1}, cenv = {&none, 0};
    const struct hlo_comp *cc = &m->comp[cond], *bc = &m->comp[body];
    struct sym cmp = eval(m, cc, cc->root, &lenv, 0);
    if (cmp.kind != S_CMP || w->nops != 1)
        return -1;
    const struct hlo_instr *broot = &bc->ins[bc->root];
    if (broot->opcode != HLO_OP_TUPLE || cmp.cmp_k >= broot->nops)
        return -1;
    struct sym next = eval(m, bc, broot->operand[cmp.cmp_k], &lenv, 0);
    if (next.kind != S_ELEM || next.k != cmp.cmp_k || next.v == 0)
        return -1;
    /* the counter at the start: element k of the while's operand */
    const struct hlo_instr *init = &caller->ins[w->operand[0]];
    if (init->opcode != HLO_OP_TUPLE || cmp.cmp_k >= init->nops)
        return -1;
    struct sym i0 = eval(m, caller, init->operand[cmp.cmp_k], &cenv, 0);
    if (i0.kind != S_CONST || llabs(i0.v) > ((int64_t)1 << 62) / 4 ||
        llabs(cmp.cmp_v) > ((int64_t)1 << 62) / 4)
        return -1;
    /* the condition reads the counter plus cmp.v */
    *n = iterations(counter_dir(&cmp), i0.v + cmp.v, cmp.cmp_v, next.v);
    return *n >= 0 ? 0 : -2;
}
