/* workload/schedule.c -- a program's waits from its tensors, and XLA's
 * overlap rules (see workload/schedule.h). Uses base/ and
 * workload/program.h. */
#include "workload/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define MAXREF 32

struct refs {
    struct prog_ref r[MAXREF];
    int n;
};

struct ctx {
    struct program *p;
    char *err;
    size_t n;
    int rc;
    const struct prog_block *cur; /* the block of the op whose waits are gathered */
    const char *waiter;           /* that op's name */
};

static void compact(struct refs *rs, const struct prog_block *b);

/* Records the first error; takes 'msg'. */
static void fail(struct ctx *c, char *msg)
{
    if (c->rc == 0)
        snprintf(c->err, c->n, "%s", msg);
    c->rc = -1;
    free(msg);
}

/* ---------------- op classes ---------------- */

static bool is_stream(const struct prog_op *o)
{
    return !(o->flags & (PROG_ASYNC | PROG_BESIDE));
}

static bool is_compute(const struct prog_op *o)
{
    return !o->loop && !prog_is_transfer(o->kind) && !(o->flags & PROG_ASYNC);
}

static int index_of(const struct prog_block *b, const struct prog_op *o)
{
    return (int)(o - b->op);
}

static bool ref_eq(const struct prog_ref *a, const struct prog_ref *b)
{
    return a->op == b->op && a->prev == b->prev;
}

static void add(struct ctx *c, struct refs *rs, const struct prog_op *op,
                const struct prog_block *in, bool prev)
{
    if (rs->n == MAXREF && c->cur)
        compact(rs, c->cur);
    if (rs->n == MAXREF) {
        fail(c, xasprintf("op '%s' waits for more than %d ops", c->waiter ? c->waiter : op->name,
                          MAXREF));
        return;
    }
    rs->r[rs->n++] = (struct prog_ref){.op = op, .in = in, .prev = prev};
}

/* The last stream op of 'b' before index 'before', or -1. */
static int last_stream(const struct prog_block *b, int before)
{
    for (int i = before - 1; i >= 0; i--)
        if (is_stream(&b->op[i]))
            return i;
    return -1;
}

/* Op 'i' of 'b' as a wait: a loop stands for its body's last stream op. */
static void add_op(struct ctx *c, struct refs *rs, const struct prog_block *b, int i, bool prev)
{
    if (i < 0)
        return;
    const struct prog_op *o = &b->op[i];
    if (!o->loop) {
        add(c, rs, o, b, prev);
        return;
    }
    add_op(c, rs, o->loop, last_stream(o->loop, o->loop->nops), prev);
}

/* ---------------- closures ---------------- */

static bool reaches_from(const struct prog_ref *s, const struct prog_ref *r,
                         const struct prog_block *b, bool *seen)
{
    if (ref_eq(s, r))
        return true;
    if (s->prev || s->in != b || seen[index_of(b, s->op)])
        return false;
    seen[index_of(b, s->op)] = true; /* each op once: a wide graph has many paths */
    for (int i = 0; i < s->op->nwait; i++)
        if (reaches_from(&s->op->wait[i], r, b, seen))
            return true;
    return false;
}

/* Whether waiting for 's' (seen from 'b') implies 'r' done, through the waits. */
static bool reaches(const struct prog_ref *s, const struct prog_ref *r, const struct prog_block *b)
{
    if (ref_eq(s, r) || s->prev || s->in != b)
        return ref_eq(s, r);
    bool *seen = xcalloc((size_t)b->nops + 1, sizeof *seen);
    bool found = reaches_from(s, r, b, seen);
    free(seen);
    return found;
}

/* The index in 'a' of the op whose loop body holds (or is) 'in', or -1. */
static int index_within(const struct prog_block *a, const struct prog_block *in)
{
    for (; in && in->parent; in = in->parent)
        if (in->parent == a)
            return in->at;
    return -1;
}

/* Whether 'r' is a stream op of a loop of 'b' before index 'pos' (the
 * stream ran it before reaching 'pos'). */
static bool ran_before(const struct prog_ref *r, const struct prog_block *b, int pos)
{
    if (r->prev || !is_stream(r->op) || prog_encloses(r->in, b))
        return false;
    int at = index_within(b, r->in);
    return at >= 0 && at < pos;
}

static bool implied(const struct prog_ref *s, const struct prog_ref *r, const struct prog_block *b)
{
    if (reaches(s, r, b))
        return true;
    return !s->prev && s->in == b && is_stream(s->op) && ran_before(r, b, index_of(b, s->op));
}

/* Keeps the last of equal refs, then drops those another one implies. */
static void reduce(struct refs *rs, const struct prog_block *b)
{
    struct refs out = {.n = 0};
    for (int i = 0; i < rs->n; i++) {
        bool keep = true;
        for (int j = i + 1; j < rs->n && keep; j++)
            keep = !ref_eq(&rs->r[i], &rs->r[j]);
        for (int j = 0; j < rs->n && keep; j++)
            keep = ref_eq(&rs->r[i], &rs->r[j]) || !implied(&rs->r[j], &rs->r[i], b);
        if (keep)
            out.r[out.n++] = rs->r[i];
    }
    *rs = out;
}

/* As reaches_from, and an op that waits for the op before (no after:) implies
 * what that op implies: the stream's order. */
static bool chain_from(const struct prog_ref *s, const struct prog_ref *r,
                       const struct prog_block *b, bool *seen)
{
    struct prog_ref cur = *s;
    for (;;) {
        if (ref_eq(&cur, r))
            return true;
        int at = cur.in == b ? index_of(b, cur.op) : -1;
        if (cur.prev || at < 0 || seen[at])
            return false;
        seen[at] = true;
        for (int i = 0; i < cur.op->nwait; i++)
            if (chain_from(&cur.op->wait[i], r, b, seen))
                return true;
        if (cur.op->has_wait || at == 0 || b->op[at - 1].loop)
            return false;
        cur = (struct prog_ref){.op = &b->op[at - 1], .in = b, .prev = false};
    }
}

/* An op reading more tensors than it can wait for (an instruction of
 * hundreds of operands): the refs another implies through the stream's
 * order dropped. */
static void compact(struct refs *rs, const struct prog_block *b)
{
    struct refs out = {.n = 0};
    bool *seen = xcalloc((size_t)b->nops + 1, sizeof *seen);
    for (int i = 0; i < rs->n; i++) {
        bool keep = true;
        for (int j = 0; j < rs->n && keep; j++) {
            if (j == i || ref_eq(&rs->r[i], &rs->r[j])) {
                keep = j <= i; /* the last of equal refs stays */
                continue;
            }
            memset(seen, 0, sizeof *seen * ((size_t)b->nops + 1));
            keep = !chain_from(&rs->r[j], &rs->r[i], b, seen);
        }
        if (keep)
            out.r[out.n++] = rs->r[i];
    }
    free(seen);
    *rs = out;
}

/* ---------------- reads ---------------- */

static const struct prog_carry *carry_of(const struct prog_block *b, int tensor)
{
    for (int i = 0; i < b->ncarry; i++)
        if (b->carry[i].param == tensor)
            return &b->carry[i];
    return NULL;
}

/* The lowest block enclosing both. */
static const struct prog_block *common(const struct prog_block *a, const struct prog_block *b)
{
    for (; a; a = a->parent)
        if (prog_encloses(a, b))
            return a;
    return NULL;
}

/* Whether the writer 'w' (in 'in') is a stream op of a loop that ran before
 * the loop that holds 'b'. */
static bool ran_before_loop(const struct prog_op *w, const struct prog_block *in,
                            const struct prog_block *b)
{
    const struct prog_block *a = common(in, b);
    if (!a || a == b || a == in || !is_stream(w))
        return false;
    return index_within(a, in) < index_within(a, b);
}

static void resolve(struct ctx *c, const struct prog_block *b, int k, int tensor, struct refs *rs);

static void resolve_carry(struct ctx *c, const struct prog_block *b, const struct prog_carry *cy,
                          struct refs *rs)
{
    const struct prog_tensor *next = cy->next >= 0 ? &c->p->t[cy->next] : NULL;
    if (next && next->by == b)
        add(c, rs, &b->op[next->op], b, true);
    if (cy->init >= 0)
        resolve(c, b, -1, cy->init, rs);
}

/* The waits a read of 'tensor' by op 'k' of 'b' needs (k < 0: from before the body). */
static void resolve(struct ctx *c, const struct prog_block *b, int k, int tensor, struct refs *rs)
{
    const struct prog_carry *cy = k >= 0 ? carry_of(b, tensor) : NULL;
    if (cy) {
        resolve_carry(c, b, cy, rs);
        return;
    }
    const struct prog_tensor *t = &c->p->t[tensor];
    if (!t->by)
        return;
    const struct prog_op *w = &t->by->op[t->op];
    if (t->by == b && (k < 0 || t->op >= k)) {
        fail(c, xasprintf("op '%s' reads '%s', written after it by '%s' (a cycle)",
                          k >= 0 ? b->op[k].name : b->name, t->name, w->name));
        return;
    }
    if (!ran_before_loop(w, t->by, b))
        add(c, rs, w, t->by, false);
}

/* ---------------- the waits of one op ---------------- */

static bool writes_carry(const struct prog_block *b, const struct prog_op *o)
{
    for (int i = 0; i < o->nwrites; i++)
        for (int j = 0; j < b->ncarry; j++)
            if (b->carry[j].next == o->writes[i])
                return true;
    return false;
}

/* The stream before the loop 'b' is the body of (none for the top block). */
static void add_frame_init(struct ctx *c, struct refs *rs, const struct prog_block *b)
{
    if (!b->parent)
        return;
    int i = last_stream(b->parent, b->at);
    if (i >= 0)
        add_op(c, rs, b->parent, i, false);
}

/* What op 'k' of 'b' waits for, in the order it names them. */
static void candidates(struct ctx *c, const struct prog_block *b, int k, struct refs *rs)
{
    const struct prog_op *o = &b->op[k];
    bool loop = b->parent != NULL, async = (o->flags & PROG_ASYNC) != 0;
    int last = last_stream(b, b->nops);
    bool frame = loop && is_stream(o) && last_stream(b, k) < 0;
    if (frame)
        add_op(c, rs, b, last, true);
    if (loop && async && writes_carry(b, o)) { /* a prefetch, one iteration ahead */
        add(c, rs, o, b, true);
        add_op(c, rs, b, last, true);
    } else if (loop && async && last < k) { /* issued as the iteration ends */
        add_op(c, rs, b, last, false);
    } else if (loop && async && last >= 0 && last_stream(b, k) < 0) {
        /* issued as the iteration starts: a while loop's body runs once the
         * previous iteration's is done (XLA's async start and done are both in
         * the body), the first once the stream before the loop is done */
        add_op(c, rs, b, last, true);
        add_frame_init(c, rs, b);
    }
    if (o->issue >= 0)
        add_op(c, rs, b, o->issue, false);
    int before = is_stream(o) ? last_stream(b, k) : -1;
    if (before >= 0 && (b->op[before].flags & PROG_SYNC)) /* it blocks the stream */
        add_op(c, rs, b, before, false);
    for (int i = 0; i < o->nreads; i++)
        resolve(c, b, k, o->reads[i], rs);
    if (frame)
        add_frame_init(c, rs, b);
}

/* ---------------- written or implied ---------------- */

/* What op 'k' of 'b' waits for without after: (the op before). */
static void default_waits(struct ctx *c, const struct prog_block *b, int k, struct refs *d)
{
    if (k > 0) {
        add_op(c, d, b, k - 1, false);
        return;
    }
    if (!b->parent)
        return;
    add_op(c, d, b, b->nops - 1, true);
    if (b->at > 0)
        add_op(c, d, b->parent, b->at - 1, false);
}

/* Whether 'r' is done once op 'k' of 'b' has waited for 'd' and the compute
 * stream has reached index 'lim'. */
static bool covered(const struct prog_ref *r, const struct refs *d, const struct prog_block *b,
                    int k, int lim)
{
    for (int i = 0; i < d->n; i++)
        if (reaches(&d->r[i], r, b))
            return true;
    for (int i = 0; i < lim; i++) {
        const struct prog_op *s = &b->op[i];
        if (!is_compute(s))
            continue;
        struct prog_ref sr = {.op = s, .in = b, .prev = false};
        if (ref_eq(&sr, r) || (is_stream(s) && reaches(&sr, r, b)))
            return true;
    }
    return ran_before(r, b, k);
}

/* Whether waiting for the op before does what 'rs' asks, no more. */
static bool default_ok(struct ctx *c, const struct prog_block *b, int k, const struct refs *rs)
{
    const struct prog_op *o = &b->op[k];
    if (!is_stream(o) || (o->flags & PROG_DATA_WAIT))
        return false;
    bool after_loop = k > 0 && b->op[k - 1].loop;
    struct refs d = {.n = 0};
    if (!after_loop)
        default_waits(c, b, k, &d);
    int lim = is_compute(o) || (k > 0 && is_compute(&b->op[k - 1])) ? k : 0;
    for (int i = 0; i < rs->n; i++)
        if (!covered(&rs->r[i], &d, b, k, lim))
            return false;
    for (int i = 0; i < d.n; i++) {
        bool needed = is_stream(d.r[i].op);
        for (int j = 0; j < rs->n && !needed; j++)
            needed = reaches(&rs->r[j], &d.r[i], b);
        if (!needed)
            return false;
    }
    return true;
}

static void sched_op(struct ctx *c, struct prog_block *b, int k)
{
    struct refs rs = {.n = 0};
    c->cur = b, c->waiter = b->op[k].name;
    candidates(c, b, k, &rs);
    c->cur = NULL, c->waiter = NULL;
    reduce(&rs, b);
    struct prog_op *o = &b->op[k];
    free(o->wait);
    o->wait = xcalloc((size_t)rs.n + 1, sizeof *o->wait);
    memcpy(o->wait, rs.r, sizeof *o->wait * (size_t)rs.n);
    o->nwait = rs.n;
    o->has_wait = !default_ok(c, b, k, &rs);
}

static void sched_block(struct ctx *c, struct prog_block *b)
{
    for (int k = 0; k < b->nops; k++) {
        if (b->op[k].loop)
            sched_block(c, b->op[k].loop);
        else
            sched_op(c, b, k);
    }
}

/* ---------------- moves: the gradient's gather beside the recomputation ---------------- */

static const char *axis_of(const struct prog_op *o)
{
    for (int i = 0; i < o->params.n; i++)
        if (strcmp(o->params.p[i].key, "groups") == 0)
            return o->params.p[i].s;
    return "";
}

static bool is_kind(const struct prog_op *o, const char *kind)
{
    return o->kind && strcmp(o->kind, kind) == 0;
}

static bool reads_tensor(const struct prog_op *o, int tensor)
{
    for (int i = 0; i < o->nreads; i++)
        if (o->reads[i] == tensor)
            return true;
    return false;
}

static int first_reader(const struct prog_block *b, int tensor, int from)
{
    for (int i = from; i < b->nops; i++)
        if (reads_tensor(&b->op[i], tensor))
            return i;
    return -1;
}

/* Moves op 'from' of 'b' to index 'to' (to < from). */
static void move_op(struct prog_block *b, int from, int to)
{
    struct prog_op o = b->op[from];
    memmove(&b->op[to + 1], &b->op[to], sizeof *b->op * (size_t)(from - to));
    b->op[to] = o;
    for (int i = 0; i < b->nops; i++)
        if (b->op[i].loop)
            b->op[i].loop->at = i;
}

static void reindex(struct program *p, struct prog_block *b)
{
    for (int k = 0; k < b->nops; k++) {
        for (int i = 0; i < b->op[k].nwrites; i++)
            p->t[b->op[k].writes[i]].by = b, p->t[b->op[k].writes[i]].op = k;
        if (b->op[k].loop)
            reindex(p, b->op[k].loop);
    }
}

/* The recomputation's first gather, the one its first matmul reads, right
 * after the op it starts with: -1 if none. */
static int remat_gather(const struct program *p, const struct prog_block *b, int *matmul)
{
    int m = 0;
    while (m < b->nops && !((b->op[m].flags & PROG_REMAT) && is_kind(&b->op[m], "matmul")))
        m++;
    if (m == b->nops || b->op[m].nreads == 0)
        return -1;
    const struct prog_tensor *t = &p->t[b->op[m].reads[0]];
    int first = 0; /* the recomputation starts with a norm and this gather */
    while (first < b->nops && !(b->op[first].flags & PROG_REMAT))
        first++;
    if (t->by != b || t->op != first + 1 || !(b->op[t->op].flags & PROG_REMAT) ||
        !is_kind(&b->op[t->op], "all_gather"))
        return -1;
    *matmul = m;
    return t->op;
}

static bool reads_carried(const struct prog_block *b, const struct prog_op *o)
{
    for (int i = 0; i < o->nreads; i++)
        if (!carry_of(b, o->reads[i]))
            return false;
    return o->nreads > 0;
}

/* The first op after the recomputation from 'm' on, if it gathers a carried
 * tensor over 'axis' for a matmul; -1 if not. */
static int carried_gather(const struct prog_block *b, int m, const char *axis)
{
    int g = m;
    while (g < b->nops && (b->op[g].flags & PROG_REMAT))
        g++;
    if (g == b->nops || !is_kind(&b->op[g], "all_gather") || strcmp(axis_of(&b->op[g]), axis) ||
        !reads_carried(b, &b->op[g]) || b->op[g].nwrites == 0)
        return -1;
    int r = first_reader(b, b->op[g].writes[0], g + 1);
    return r >= 0 && is_kind(&b->op[r], "matmul") ? g : -1;
}

/* The gradient's first matmul beside the recomputation's last scatter, when
 * a recomputed matmul follows that scatter. */
static void dgrad_beside(struct prog_block *b, int g)
{
    int d = first_reader(b, b->op[g].writes[0], g + 1), rs = -1;
    for (int i = g + 1; i < d; i++)
        if ((b->op[i].flags & PROG_REMAT) && is_kind(&b->op[i], "reduce_scatter") &&
            strcmp(axis_of(&b->op[i]), axis_of(&b->op[g])) == 0)
            rs = i;
    bool matmul_after = false;
    for (int i = rs + 1; rs >= 0 && i < d; i++)
        matmul_after |= (b->op[i].flags & PROG_REMAT) && is_kind(&b->op[i], "matmul");
    if (!matmul_after)
        return;
    move_op(b, d, rs + 1);
    b->op[rs + 1].flags |= PROG_BESIDE;
}

static void gather_beside_remat(struct program *p, struct prog_block *b)
{
    int m = -1, a = remat_gather(p, b, &m);
    int g = a >= 0 ? carried_gather(b, m, axis_of(&b->op[a])) : -1;
    if (g < 0)
        return;
    move_op(b, g, a + 1);
    b->op[a + 1].flags |= PROG_ASYNC;
    b->op[a + 1].issue = a;
    reindex(p, b);
    dgrad_beside(b, a + 1);
}

/* Whether op 'k' of 'b' stores an async op's result on the TensorCore (an
 * HLO dynamic-update-slice of a reduce-scatter into a loop's stacked
 * gradients) and nothing after it in 'b' reads what it writes. */
static bool sinkable_store(const struct prog_block *b, int k)
{
    const struct prog_op *o = &b->op[k];
    if (o->loop || !(o->flags & PROG_ASYNC) || prog_is_transfer(o->kind))
        return false;
    for (int i = 0; i < o->nwrites; i++)
        if (first_reader(b, o->writes[i], k + 1) >= 0)
            return false;
    return true;
}

/* A loop body's stores of async results to its end, in their order: XLA's
 * latency-hiding scheduler places an async done and its users as late as
 * their users allow, and a store whose only user is the body's root tuple
 * ends the iteration; the TensorCore's stream does not wait on the
 * collective before its next matmul. */
static void stores_to_end(struct prog_block *b)
{
    for (int k = b->nops - 1, end = b->nops - 1; k >= 0; k--) {
        if (!sinkable_store(b, k))
            continue;
        struct prog_op o = b->op[k];
        memmove(&b->op[k], &b->op[k + 1], sizeof *b->op * (size_t)(end - k));
        b->op[end--] = o;
    }
    for (int i = 0; i < b->nops; i++)
        if (b->op[i].loop)
            b->op[i].loop->at = i;
}

static void moves(struct program *p, struct prog_block *b)
{
    for (int k = 0; k < b->nops; k++)
        if (b->op[k].loop)
            moves(p, b->op[k].loop);
    if (b->parent) {
        gather_beside_remat(p, b);
        stores_to_end(b);
        reindex(p, b);
    }
}

int sched_program(struct program *p, char *err, size_t n)
{
    struct ctx c = {.p = p, .err = err, .n = n, .rc = 0};
    reindex(p, &p->top);
    moves(p, &p->top);
    reindex(p, &p->top);
    sched_block(&c, &p->top);
    return c.rc;
}

/* ---------------- what-ifs: synchronous collectives ---------------- */
/* The moves above stay (their order is a valid program order); their reason,
 * an async collective to hide, is gone with it. */

static bool kind_in(const char *kind, const char *const *kinds)
{
    for (int i = 0; kind && kinds[i]; i++)
        if (strcmp(kind, kinds[i]) == 0)
            return true;
    return false;
}

static int make_sync(struct prog_block *b, const char *const *kinds)
{
    int changed = 0;
    bool scatters = kind_in("reduce_scatter", kinds);
    for (int k = 0; k < b->nops; k++) {
        struct prog_op *o = &b->op[k];
        if (o->loop) {
            changed += make_sync(o->loop, kinds);
            continue;
        }
        if (scatters) /* a matmul moved beside the recomputation's scatter */
            o->flags &= ~(unsigned)PROG_BESIDE;
        if ((o->flags & PROG_ASYNC) && kind_in(o->kind, kinds)) {
            o->flags = (o->flags & ~(unsigned)PROG_ASYNC) | PROG_SYNC;
            o->issue = -1; /* a moved gather is issued where it now stands */
            changed++;
        }
    }
    return changed;
}

int sched_sync_kinds(struct program *p, const char *const *kinds, char *err, size_t n)
{
    int changed = make_sync(&p->top, kinds);
    if (changed == 0)
        return 0;
    return sched_program(p, err, n) != 0 ? -1 : changed;
}

/* ---------------- unread tensors ---------------- */

static void mark_reads(const struct prog_block *b, bool *read)
{
    for (int i = 0; i < b->ncarry; i++) {
        if (b->carry[i].init >= 0)
            read[b->carry[i].init] = true;
        if (b->carry[i].next >= 0)
            read[b->carry[i].next] = true;
    }
    for (int k = 0; k < b->nops; k++) {
        for (int i = 0; i < b->op[k].nreads; i++)
            read[b->op[k].reads[i]] = true;
        if (b->op[k].loop)
            mark_reads(b->op[k].loop, read);
    }
}

int sched_unread(const struct program *p, char *buf, size_t n)
{
    bool *read = xcalloc((size_t)p->nt + 1, sizeof *read);
    mark_reads(&p->top, read);
    int count = 0;
    if (n)
        buf[0] = '\0';
    for (int t = 0; t < p->nt; t++) {
        if (read[t] || p->t[t].output || !p->t[t].by)
            continue;
        size_t len = strlen(buf);
        if (len < n)
            snprintf(buf + len, n - len, "%s%s", count ? ", " : "", p->t[t].name);
        count++;
    }
    free(read);
    return count;
}
