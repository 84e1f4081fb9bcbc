/* workload/hlo.c -- HLO text into a module (workload/hlo.h): one pass over
 * the text, instruction names looked up in a hash table, so time and memory
 * are linear in the file. The lowering to a program is workload/hlo_lower.c. */
#include "workload/hlo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "workload/hlo_int.h"

/* ---------------- tables ---------------- */

static const struct hlo_op_row op_rows[] = {
#define X(e, n, c) {n, c},
    HLO_OPCODES(X)
#undef X
};

const char *hlo_opcode_name(int opcode)
{
    return op_rows[opcode].name;
}

enum hlo_class hlo_class_of(int opcode)
{
    return op_rows[opcode].cls;
}

static int opcode_of(const char *s, size_t n)
{
    for (int i = 0; i < HLO_OP_COUNT; i++)
        if (strlen(op_rows[i].name) == n && memcmp(op_rows[i].name, s, n) == 0)
            return i;
    return -1;
}

static const struct {
    const char *name;
    int bits;
} types[] = {{"pred", 8},   {"s2", 8},    {"s4", 8},    {"s8", 8},     {"s16", 16},
             {"s32", 32},   {"s64", 64},  {"u2", 8},    {"u4", 8},     {"u8", 8},
             {"u16", 16},   {"u32", 32},  {"u64", 64},  {"f16", 16},   {"bf16", 16},
             {"f32", 32},   {"f64", 64},  {"c64", 64},  {"c128", 128}, {"f8e5m2", 8},
             {"f8e4m3fn", 8}, {"f8e4m3b11fnuz", 8}, {"f8e5m2fnuz", 8}, {"f8e4m3fnuz", 8},
             {"f8e4m3", 8}, {"f8e3m4", 8}, {"f4e2m1fn", 8}, {"f8e8m0fnu", 8},
             {"token", 0},  {"opaque", 0}};

#define NTYPES ((int)(sizeof types / sizeof types[0]))

const char *hlo_type_name(int type)
{
    return type >= 0 && type < NTYPES ? types[type].name : "tuple";
}

static int type_of(const char *s, size_t n)
{
    for (int i = 0; i < NTYPES; i++)
        if (strlen(types[i].name) == n && memcmp(types[i].name, s, n) == 0)
            return i;
    return -1;
}

int hlo_type_bytes(int type)
{
    return type >= 0 && type < NTYPES ? types[type].bits / 8 : 0;
}

int64_t hlo_shape_elems(const struct hlo_shape *s)
{
    int64_t e = 1;
    for (int i = 0; i < s->rank; i++)
        e *= s->dims[i];
    return e;
}

double hlo_shape_bytes(const struct hlo_shape *s)
{
    if (s->type == HLO_TUPLE) {
        double b = 0;
        for (int i = 0; i < s->nelem; i++)
            b += hlo_shape_bytes(&s->elem[i]);
        return b;
    }
    return (double)hlo_shape_elems(s) * hlo_type_bytes(s->type);
}

/* ---------------- a name table: open addressing, linear in the names ---------------- */

struct hlo_names {
    const char **key;
    int *val;
    size_t cap, n;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void names_grow(struct hlo_names *t);

/* Adds 'key' (borrowed) -> 'val'; returns the old value if 'key' was there, else -1. */
int hlo_names_put(struct hlo_names *t, const char *key, int val)
{
    if (2 * (t->n + 1) > t->cap)
        names_grow(t);
    size_t i = hash(key) & (t->cap - 1);
    for (; t->key[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->key[i], key) == 0)
            return t->val[i];
    t->key[i] = key;
    t->val[i] = val;
    t->n++;
    return -1;
}

void hlo_names_set(struct hlo_names *t, const char *key, int val)
{
    for (size_t i = hash(key) & (t->cap - 1); t->key[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->key[i], key) == 0)
            t->val[i] = val;
}

int hlo_names_get(const struct hlo_names *t, const char *key)
{
    if (!t->cap)
        return -1;
    for (size_t i = hash(key) & (t->cap - 1); t->key[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->key[i], key) == 0)
            return t->val[i];
    return -1;
}

static void names_grow(struct hlo_names *t)
{
    struct hlo_names old = *t;
    t->cap = old.cap ? 2 * old.cap : 64;
    t->key = xcalloc(t->cap, sizeof *t->key);
    t->val = xcalloc(t->cap, sizeof *t->val);
    t->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i])
            hlo_names_put(t, old.key[i], old.val[i]);
    free(old.key);
    free(old.val);
}

struct hlo_names *hlo_names_new(void)
{
    return xcalloc(1, sizeof(struct hlo_names));
}

void hlo_names_free(struct hlo_names *t)
{
    if (!t)
        return;
    free(t->key);
    free(t->val);
    free(t);
}

/* ---------------- the scanner ---------------- */

struct ps {
    const char *s, *end;
    int line, col;
    const char *file;
    struct diag *d;
    int64_t ninstr;
    bool failed;
    struct hlo_module *m;
};

static int peek(const struct ps *p)
{
    return p->s < p->end ? (unsigned char)*p->s : -1;
}

static void adv(struct ps *p)
{
    if (p->s >= p->end)
        return;
    if (*p->s == '\n')
        p->line++, p->col = 1;
    else
        p->col++;
    p->s++;
}

static void fail(struct ps *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct ps *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    struct diag_loc loc = {p->file, p->line, p->col};
    diag_error(p->d, &loc, "", "%s", msg);
    free(msg);
}

/* What is at the cursor, for "got ...". */
static const char *got(const struct ps *p, char *buf, size_t n)
{
    if (p->s >= p->end)
        return "the end of the file";
    if (*p->s == '\n')
        return "the end of the line";
    size_t k = 0;
    while (p->s + k < p->end && k + 1 < n && k < 16 && p->s[k] != '\n')
        k++;
    snprintf(buf, n, "'%.*s'", (int)k, p->s);
    return buf;
}

static void expect_fail(struct ps *p, const char *what)
{
    char b[40];
    fail(p, "expected %s, got %s", what, got(p, b, sizeof b));
}

/* Skips blanks and comments within a line (or across lines when 'nl'). */
static void blank(struct ps *p, bool nl)
{
    for (;;) {
        int c = peek(p);
        if (c == ' ' || c == '\t' || c == '\r' || (nl && c == '\n')) {
            adv(p);
        } else if (c == '/' && p->s + 1 < p->end && p->s[1] == '*') {
            while (p->s < p->end && !(p->s[0] == '*' && p->s + 1 < p->end && p->s[1] == '/'))
                adv(p);
            adv(p), adv(p);
        } else if (c == '/' && p->s + 1 < p->end && p->s[1] == '/') {
            while (peek(p) != '\n' && peek(p) >= 0)
                adv(p);
        } else {
            return;
        }
    }
}

static bool accept(struct ps *p, char c)
{
    blank(p, false);
    if (peek(p) != c)
        return false;
    adv(p);
    return true;
}

static bool expect(struct ps *p, char c, const char *what)
{
    if (accept(p, c))
        return true;
    expect_fail(p, what);
    return false;
}

static bool ident_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* An identifier (a leading '%' dropped); NULL when none. */
static char *ident(struct ps *p, int *line, int *col)
{
    blank(p, false);
    if (peek(p) == '%')
        adv(p);
    if (line)
        *line = p->line, *col = p->col;
    const char *b = p->s;
    while (ident_char(peek(p)))
        adv(p);
    if (p->s == b)
        return NULL;
    char *s = xmalloc((size_t)(p->s - b) + 1);
    memcpy(s, b, (size_t)(p->s - b));
    s[p->s - b] = '\0';
    return s;
}

static bool word_is(const struct ps *p, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(p->end - p->s) >= n && memcmp(p->s, w, n) == 0 &&
           (p->s + n == p->end || !ident_char((unsigned char)p->s[n]));
}

/* Skips a string literal at the cursor. */
static void skip_string(struct ps *p)
{
    adv(p);
    while (peek(p) >= 0 && peek(p) != '"' && peek(p) != '\n') {
        if (peek(p) == '\\')
            adv(p);
        adv(p);
    }
    if (peek(p) != '"')
        expect_fail(p, "the end of a string ('\"')");
    adv(p);
}

/* Skips balanced text up to (not past) a top-level character of 'stop' or the line's end. */
static void skip_balanced(struct ps *p, const char *stop)
{
    char st[64];
    int depth = 0;
    for (;;) {
        int c = peek(p);
        if (c < 0 || (c == '\n' && depth == 0) || (depth == 0 && c && strchr(stop, c)))
            break;
        if (c == '"') {
            skip_string(p);
            if (p->failed)
                return;
            continue;
        }
        if (c == '(' || c == '{' || c == '[') {
            if (depth == (int)sizeof st) {
                fail(p, "expected at most %d nested brackets", (int)sizeof st);
                return;
            }
            st[depth++] = c == '(' ? ')' : c == '{' ? '}' : ']';
        } else if (c == ')' || c == '}' || c == ']') {
            if (depth == 0 || st[depth - 1] != c) {
                char w[40];
                snprintf(w, sizeof w, depth ? "'%c'" : "a value", depth ? st[depth - 1] : ' ');
                expect_fail(p, w);
                return;
            }
            depth--;
        }
        adv(p);
    }
    if (depth > 0 && !p->failed) {
        char w[40];
        snprintf(w, sizeof w, "'%c'", st[depth - 1]);
        expect_fail(p, w);
    }
}

static char *copy_span(const char *b, const char *e)
{
    char *s = xmalloc((size_t)(e - b) + 1);
    memcpy(s, b, (size_t)(e - b));
    s[e - b] = '\0';
    return s;
}

/* ---------------- shapes ---------------- */

static void shape_fini(struct hlo_shape *s)
{
    for (int i = 0; i < s->nelem; i++)
        shape_fini(&s->elem[i]);
    free(s->elem);
    s->elem = NULL;
    s->nelem = 0;
}

static bool parse_shape(struct ps *p, struct hlo_shape *s, int depth);

static bool parse_tuple(struct ps *p, struct hlo_shape *s, int depth)
{
    adv(p);
    s->type = HLO_TUPLE;
    size_t cap = 0;
    if (accept(p, ')'))
        return true;
    do {
        xgrow(&s->elem, &cap, (size_t)s->nelem + 1, sizeof *s->elem);
        memset(&s->elem[s->nelem], 0, sizeof *s->elem);
        if (!parse_shape(p, &s->elem[s->nelem++], depth + 1))
            return false;
    } while (accept(p, ','));
    return expect(p, ')', "',' or ')' in a tuple shape");
}

static bool parse_dims(struct ps *p, struct hlo_shape *s)
{
    if (accept(p, ']'))
        return true;
    do {
        blank(p, false);
        if (peek(p) == '<' && p->s + 1 < p->end && p->s[1] == '=')
            adv(p), adv(p); /* a dynamic dimension's bound */
        if (peek(p) == '?') {
            fail(p, "expected a static dimension, got '?' (an unbounded dynamic shape)");
            return false;
        }
        char *e;
        errno = 0;
        long long v = strtoll(p->s, &e, 10);
        if (e == p->s || e > p->end || v < 0 || v > ((int64_t)1 << 40) || errno) {
            expect_fail(p, "a dimension (0 to 2^40)");
            return false;
        }
        if (s->rank == HLO_MAX_RANK) {
            fail(p, "expected at most %d dimensions", HLO_MAX_RANK);
            return false;
        }
        while (p->s < e)
            adv(p);
        s->dims[s->rank++] = v;
    } while (accept(p, ','));
    return expect(p, ']', "',' or ']' in a shape's dimensions");
}

static bool parse_shape(struct ps *p, struct hlo_shape *s, int depth)
{
    blank(p, false);
    if (depth > 16) {
        fail(p, "expected tuple shapes nested at most 16 deep");
        return false;
    }
    if (peek(p) == '(')
        return parse_tuple(p, s, depth);
    const char *b = p->s;
    int col = p->col;
    while ((peek(p) >= 'a' && peek(p) <= 'z') || (peek(p) >= '0' && peek(p) <= '9'))
        adv(p);
    s->type = type_of(b, (size_t)(p->s - b));
    if (s->type < 0) {
        p->s = b, p->col = col;
        expect_fail(p, "a shape (an element type such as f32 or bf16, or a tuple)");
        return false;
    }
    if (peek(p) == '[') {
        adv(p);
        if (!parse_dims(p, s))
            return false;
    } else if (s->type != type_of("token", 5)) {
        expect_fail(p, "'[' and the shape's dimensions");
        return false;
    }
    if (peek(p) == '{') { /* the layout: {1,0} or {1,0:T(8,128)} */
        skip_balanced(p, " ,)\n");
    }
    return !p->failed;
}

/* ---------------- instructions ---------------- */

static void add_operand(struct hlo_instr *in, size_t *cap, char *name, int line, int col)
{
    size_t c = *cap;
    xgrow(&in->opname, &c, (size_t)in->nops + 1, sizeof *in->opname);
    c = *cap;
    xgrow(&in->op_line, &c, (size_t)in->nops + 1, sizeof *in->op_line);
    xgrow(&in->op_col, cap, (size_t)in->nops + 1, sizeof *in->op_col);
    in->opname[in->nops] = name;
    in->op_line[in->nops] = line;
    in->op_col[in->nops] = col;
    in->nops++;
}

/* One operand: [shape] %name. */
static bool parse_operand(struct ps *p, struct hlo_instr *in, size_t *cap)
{
    blank(p, false);
    struct ps at = *p;
    int line, col;
    char *n = peek(p) == '(' ? NULL : ident(p, &line, &col);
    blank(p, false);
    if (!n || peek(p) == '[' || peek(p) == '%' || ident_char(peek(p))) { /* a shape first */
        free(n);
        *p = at;
        struct hlo_shape s = {0};
        bool ok = parse_shape(p, &s, 0);
        shape_fini(&s);
        if (!ok)
            return false;
        n = ident(p, &line, &col);
        if (!n) {
            expect_fail(p, "an operand's name after its shape");
            return false;
        }
    }
    add_operand(in, cap, n, line, col);
    return true;
}

static bool parse_operands(struct ps *p, struct hlo_instr *in)
{
    if (!expect(p, '(', "'(' and the operands"))
        return false;
    if (hlo_class_of(in->opcode) == HLO_C_PARAM || hlo_class_of(in->opcode) == HLO_C_CONST ||
        in->opcode == HLO_OP_IOTA || in->opcode == HLO_OP_PARTITION_ID ||
        in->opcode == HLO_OP_REPLICA_ID || in->opcode == HLO_OP_AFTER_ALL) {
        const char *b = p->s;
        skip_balanced(p, ")");
        in->raw = copy_span(b, p->s);
        return !p->failed && expect(p, ')', "')'");
    }
    size_t cap = 0;
    if (accept(p, ')'))
        return true;
    do {
        if (!parse_operand(p, in, &cap))
            return false;
    } while (accept(p, ','));
    return expect(p, ')', "',' or ')' after an operand");
}

static bool parse_attr(struct ps *p, struct hlo_instr *in, size_t *cap)
{
    char *key = ident(p, NULL, NULL);
    if (!key) {
        expect_fail(p, "an attribute (key=value)");
        return false;
    }
    if (!expect(p, '=', "'=' after an attribute's name")) {
        free(key);
        return false;
    }
    blank(p, false);
    xgrow(&in->attr, cap, (size_t)in->nattr + 1, sizeof *in->attr);
    struct hlo_attr *a = &in->attr[in->nattr++];
    a->key = key;
    a->line = p->line, a->col = p->col;
    const char *b = p->s;
    skip_balanced(p, ",");
    a->value = copy_span(b, p->s);
    return !p->failed;
}

static void instr_fini(struct hlo_instr *in)
{
    free(in->name);
    shape_fini(&in->shape);
    free(in->raw);
    for (int i = 0; i < in->nops; i++)
        free(in->opname ? in->opname[i] : NULL);
    free(in->opname);
    free(in->op_line);
    free(in->op_col);
    free(in->operand);
    for (int i = 0; i < in->nattr; i++)
        free(in->attr[i].key), free(in->attr[i].value);
    free(in->attr);
}

static bool parse_instr(struct ps *p, struct hlo_comp *c, bool *root)
{
    blank(p, false);
    *root = false;
    if (word_is(p, "ROOT")) {
        *root = true;
        for (int i = 0; i < 4; i++)
            adv(p);
    }
    if (++p->ninstr > HLO_MAX_INSTRUCTIONS) {
        fail(p, "expected at most %d instructions in a module", HLO_MAX_INSTRUCTIONS);
        return false;
    }
    xgrow(&c->ins, &c->cap, (size_t)c->nins + 1, sizeof *c->ins);
    struct hlo_instr *in = &c->ins[c->nins++];
    memset(in, 0, sizeof *in);
    in->name = ident(p, &in->line, &in->col);
    if (!in->name) {
        expect_fail(p, "an instruction (name = shape opcode(operands)) or '}'");
        return false;
    }
    if (!expect(p, '=', "'=' after the instruction's name") || !parse_shape(p, &in->shape, 0))
        return false;
    blank(p, false);
    const char *b = p->s;
    int col = p->col;
    while (ident_char(peek(p)))
        adv(p);
    in->opcode = opcode_of(b, (size_t)(p->s - b));
    if (in->opcode < 0) {
        p->col = col;
        fail(p, "expected an HLO opcode, got '%.*s'", (int)(p->s - b > 40 ? 40 : p->s - b), b);
        return false;
    }
    if (!parse_operands(p, in))
        return false;
    size_t cap = 0;
    while (accept(p, ','))
        if (!parse_attr(p, in, &cap))
            return false;
    blank(p, false);
    if (peek(p) != '\n' && peek(p) >= 0) {
        expect_fail(p, "',' and an attribute, or the end of the line");
        return false;
    }
    return true;
}

/* ---------------- computations ---------------- */

/* Resolves the operands' names in computation 'c' (names defined before their use). */
static bool resolve(struct ps *p, struct hlo_comp *c)
{
    struct hlo_names *t = hlo_names_new();
    bool ok = true;
    for (int i = 0; ok && i < c->nins; i++) {
        struct hlo_instr *in = &c->ins[i];
        in->operand = xcalloc((size_t)in->nops + 1, sizeof *in->operand);
        for (int k = 0; k < in->nops; k++) {
            int j = hlo_names_get(t, in->opname[k]);
            if (j < 0) {
                p->line = in->op_line[k], p->col = in->op_col[k];
                fail(p, "expected an instruction defined before this one in computation '%s', "
                        "got '%s'", c->name, in->opname[k]);
                ok = false;
                break;
            }
            in->operand[k] = j;
        }
        if (ok && hlo_names_put(t, in->name, i) >= 0) {
            p->line = in->line, p->col = in->col;
            fail(p, "expected a new instruction name, got '%s' again", in->name);
            ok = false;
        }
    }
    hlo_names_free(t);
    return ok;
}

static bool skip_signature(struct ps *p)
{
    blank(p, false);
    if (peek(p) == '(') {
        skip_balanced(p, "{"); /* (a: f32[2]{0}, ...) -> f32[2]{0} */
        if (p->failed)
            return false;
    }
    return true;
}

static bool parse_comp(struct ps *p, struct hlo_module *m)
{
    blank(p, true);
    bool entry = false;
    if (word_is(p, "ENTRY")) {
        entry = true;
        for (int i = 0; i < 5; i++)
            adv(p);
    }
    xgrow(&m->comp, &m->cap, (size_t)m->ncomp + 1, sizeof *m->comp);
    struct hlo_comp *c = &m->comp[m->ncomp++];
    memset(c, 0, sizeof *c);
    c->entry = entry;
    c->root = -1;
    c->name = ident(p, &c->line, &c->col);
    if (!c->name) {
        expect_fail(p, "a computation (NAME {, or ENTRY NAME {)");
        return false;
    }
    if (!skip_signature(p) || !expect(p, '{', "'{' and the computation's instructions"))
        return false;
    for (;;) {
        blank(p, true);
        if (peek(p) < 0) {
            expect_fail(p, "'}' closing the computation");
            return false;
        }
        if (accept(p, '}'))
            break;
        bool root;
        if (!parse_instr(p, c, &root))
            return false;
        if (root)
            c->root = c->nins - 1;
    }
    if (c->nins == 0) {
        fail(p, "expected at least one instruction in computation '%s'", c->name);
        return false;
    }
    if (c->root < 0)
        c->root = c->nins - 1;
    return resolve(p, c);
}

/* ---------------- the module header ---------------- */

static bool header_int(struct ps *p, const char *v, const char *key, int64_t *out)
{
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (e == v || *e || x < 1 || x > (1 << 20) || errno) {
        fail(p, "expected %s to be 1 to 2^20, got '%s'", key, v);
        return false;
    }
    *out = x;
    return true;
}

static bool parse_header(struct ps *p, struct hlo_module *m)
{
    blank(p, true);
    if (!word_is(p, "HloModule")) {
        expect_fail(p, "'HloModule' (HLO text starts with it)");
        return false;
    }
    for (int i = 0; i < 9; i++)
        adv(p);
    m->name = ident(p, NULL, NULL);
    if (!m->name) {
        expect_fail(p, "the module's name");
        return false;
    }
    while (accept(p, ',')) {
        char *key = ident(p, NULL, NULL);
        if (!key || !expect(p, '=', "'=' after a module attribute")) {
            if (!key)
                expect_fail(p, "a module attribute (key=value)");
            free(key);
            return false;
        }
        blank(p, false);
        int line = p->line, col = p->col;
        const char *b = p->s;
        skip_balanced(p, ",");
        char *v = copy_span(b, p->s);
        int sl = p->line, sc = p->col;
        p->line = line, p->col = col;
        bool ok = !p->failed;
        if (ok && strcmp(key, "is_scheduled") == 0)
            m->scheduled = strcmp(v, "true") == 0;
        else if (ok && strcmp(key, "num_partitions") == 0)
            ok = header_int(p, v, key, &m->num_partitions);
        else if (ok && strcmp(key, "replica_count") == 0)
            ok = header_int(p, v, key, &m->replica_count);
        p->line = sl, p->col = sc;
        free(key);
        free(v);
        if (!ok)
            return false;
    }
    return true;
}

/* The debug tables jax writes after the header (FileNames, FunctionNames,
 * FileLocations, StackFrames): skipped up to the blank line that ends each. */
static bool skip_table(struct ps *p)
{
    static const char *const tables[] = {"FileNames", "FunctionNames", "FileLocations",
                                         "StackFrames", NULL};
    for (int i = 0; tables[i]; i++)
        if (word_is(p, tables[i])) {
            for (;;) {
                while (peek(p) >= 0 && peek(p) != '\n')
                    adv(p);
                adv(p);
                if (peek(p) < 0 || peek(p) == '\n')
                    return true;
            }
        }
    return false;
}

static bool find_entry(struct ps *p, struct hlo_module *m)
{
    m->entry = -1;
    struct hlo_names *t = hlo_names_new();
    bool ok = true;
    for (int i = 0; ok && i < m->ncomp; i++) {
        if (hlo_names_put(t, m->comp[i].name, i) >= 0) {
            p->line = m->comp[i].line, p->col = m->comp[i].col;
            fail(p, "expected a new computation name, got '%s' again", m->comp[i].name);
            ok = false;
        }
        if (m->comp[i].entry)
            m->entry = i;
    }
    m->cnames = t;
    if (ok && m->entry < 0) {
        fail(p, "expected an ENTRY computation, got none");
        ok = false;
    }
    return ok;
}

struct hlo_module *hlo_parse(const char *in, size_t len, const char *file, struct diag *d)
{
    /* the text ends with a NUL the caller's need not have: strtoll and strtod
     * read digits up to one (a text ending in "f32[" read past its end) */
    char *text = xmalloc(len + 1);
    memcpy(text, in, len);
    text[len] = '\0';
    struct hlo_module *m = xcalloc(1, sizeof *m);
    m->file = xstrdup(file);
    m->num_partitions = m->replica_count = 1;
    struct ps p = {.s = text, .end = text + len, .line = 1, .col = 1, .file = m->file, .d = d,
                   .m = m};
    if (memchr(text, '\0', len)) {
        fail(&p, "expected HLO text, got a NUL byte");
    } else if (parse_header(&p, m)) {
        for (;;) {
            blank(&p, true);
            if (skip_table(&p))
                continue;
            if (peek(&p) < 0 || !parse_comp(&p, m))
                break;
        }
        if (!p.failed)
            find_entry(&p, m);
    }
    free(text);
    if (p.failed) {
        hlo_free(m);
        return NULL;
    }
    return m;
}

struct hlo_module *hlo_parse_file(const char *path, size_t max_bytes, struct diag *d)
{
    size_t len = 0;
    char *text = fs_read_all(path, max_bytes, &len);
    if (!text) {
        char why[160];
        fs_read_error(errno, max_bytes, why, sizeof why);
        diag_error(d, NULL, "", "%s: %s", path, why);
        return NULL;
    }
    struct hlo_module *m = hlo_parse(text, len, path, d);
    free(text);
    return m;
}

void hlo_free(struct hlo_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->ncomp; i++) {
        for (int k = 0; k < m->comp[i].nins; k++)
            instr_fini(&m->comp[i].ins[k]);
        free(m->comp[i].ins);
        free(m->comp[i].name);
    }
    free(m->comp);
    hlo_names_free(m->cnames);
    free(m->name);
    free(m->file);
    free(m);
}

int64_t hlo_devices(const struct hlo_module *m)
{
    return m->num_partitions * m->replica_count;
}

int hlo_find_comp(const struct hlo_module *m, const char *name)
{
    if (name[0] == '%')
        name++;
    return m->cnames ? hlo_names_get(m->cnames, name) : -1;
}

const struct hlo_attr *hlo_attr(const struct hlo_instr *in, const char *key)
{
    for (int i = 0; i < in->nattr; i++)
        if (strcmp(in->attr[i].key, key) == 0)
            return &in->attr[i];
    return NULL;
}
