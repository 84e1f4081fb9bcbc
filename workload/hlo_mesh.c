/* workload/hlo_mesh.c -- replica groups in XLA's mesh-axes form,
 *   replica_groups=mesh['a'=2,'b'=4] {'b'}
 *   replica_groups=mesh['a'=8] {'a':(2)2}
 *   replica_groups=mesh['a'=2,'b'=2], device_ids=(...) {'b','a'}
 * which XLA prints for a MeshAxesReplicaGroupList (jax 0.10 writes it in
 * compiled and post-partitioning HLO alike). Its meaning, as XLA's
 * xla/hlo/ir/replica_group.cc (MeshAxesReplicaGroupList::flattened_replica_groups)
 * and mesh_and_axis.cc define it: the mesh's device array (iota, or the listed
 * ids) is reshaped to the axes, each axis named with a sub-axis "(pre)size"
 * split into [pre, size, rest] (several sub-axes of one axis: sorted by pre,
 * with padding dimensions between them); the array is transposed so that the
 * named axes come last, in the order named; consecutive runs of the product of
 * their sizes are the groups. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "workload/hlo_int.h"

#define MESH_MAX_AXES 16
#define MESH_MAX_DIMS (3 * MESH_MAX_AXES)
#define MESH_NAME_MAX 64

struct mesh_axis {
    char name[MESH_NAME_MAX];
    int64_t size;
};

struct mesh_ref {
    int axis;
    int64_t pre, size; /* pre 0: the whole axis */
};

struct mesh_text {
    const char *s;
    char *err;
    size_t errn;
};

static bool mesh_fail(struct mesh_text *t, const char *what)
{
    snprintf(t->err, t->errn, "expected %s in mesh replica groups, got '%.30s'", what, t->s);
    return false;
}

static void skip_ws(struct mesh_text *t)
{
    while (*t->s == ' ')
        t->s++;
}

/* An axis name, quoted with ' or " or bare. */
static bool read_name(struct mesh_text *t, char *out)
{
    skip_ws(t);
    char q = (*t->s == '\'' || *t->s == '"') ? *t->s++ : 0;
    size_t n = 0;
    while (*t->s && (q ? *t->s != q : (isalnum((unsigned char)*t->s) || *t->s == '_'))) {
        if (n + 1 >= MESH_NAME_MAX)
            return mesh_fail(t, "an axis name of at most 63 characters");
        out[n++] = *t->s++;
    }
    out[n] = '\0';
    if (q && *t->s != q) /* at the end of the text: never step past it */
        return mesh_fail(t, "a closing quote");
    t->s += q != 0;
    return n > 0 || mesh_fail(t, "an axis name");
}

static bool read_int(struct mesh_text *t, int64_t lo, int64_t hi, int64_t *v)
{
    skip_ws(t);
    char *e;
    long long x = strtoll(t->s, &e, 10);
    if (e == t->s || x < lo || x > hi)
        return mesh_fail(t, "a whole number in range");
    *v = x;
    t->s = e;
    return true;
}

static bool expect(struct mesh_text *t, char c)
{
    skip_ws(t);
    if (*t->s != c) {
        char what[8] = {'\'', c, '\'', '\0'};
        return mesh_fail(t, what);
    }
    t->s++;
    return true;
}

/* mesh['a'=2,'b'=4]: the axes; the product at most 'ndev'. */
static bool read_axes(struct mesh_text *t, int64_t ndev, struct mesh_axis *ax, int *nax)
{
    if (strncmp(t->s, "mesh[", 5) != 0)
        return mesh_fail(t, "mesh[");
    t->s += 5;
    int64_t total = 1;
    *nax = 0;
    do {
        if (*nax == MESH_MAX_AXES)
            return mesh_fail(t, "at most 16 mesh axes");
        struct mesh_axis *a = &ax[(*nax)++];
        if (!read_name(t, a->name) || !expect(t, '=') || !read_int(t, 1, ndev, &a->size))
            return false;
        for (int i = 0; i + 1 < *nax; i++)
            if (strcmp(ax[i].name, a->name) == 0)
                return mesh_fail(t, "axis names once each");
        total *= a->size;
        if (total > ndev) {
            snprintf(t->err, t->errn, "expected a mesh of at most the program's %lld devices "
                     "in replica groups, got more", (long long)ndev);
            return false;
        }
        skip_ws(t);
    } while (*t->s == ',' && t->s++);
    return expect(t, ']');
}

/* device_ids=(...): a list of 'total' ids (a permutation), or an iota
 * [r0,...]T(p0,...) over 'total' devices, as XLA prints a tile assignment. */
static bool read_device_ids(struct mesh_text *t, int64_t total, int64_t *dev)
{
    const char *open = t->s;
    const char *close = strchr(open, ')');
    if (!close)
        return mesh_fail(t, "device_ids=(...)");
    int64_t n = 0;
    const char *tp = strstr(open, "T(");
    bool iota = tp && tp < close;
    if (!iota) { /* a flat list, braces and brackets ignored */
        while (t->s < close) {
            if (isdigit((unsigned char)*t->s)) {
                int64_t x;
                if (n == total || !read_int(t, 0, total - 1, &x))
                    return mesh_fail(t, "as many device ids as the mesh has devices");
                dev[n++] = x;
            } else
                t->s++;
        }
        t->s = close + 1;
        bool *seen = xcalloc((size_t)total, sizeof *seen);
        bool perm = n == total;
        for (int64_t i = 0; perm && i < n; i++)
            perm = !seen[dev[i]] && (seen[dev[i]] = true);
        free(seen);
        return perm || mesh_fail(t, "device_ids that list each device once");
    }
    int64_t dims[MESH_MAX_DIMS], perm[MESH_MAX_DIMS];
    int nd = 0;
    if (!expect(t, '['))
        return false;
    do {
        if (nd == MESH_MAX_DIMS || !read_int(t, 1, total, &dims[nd]))
            return mesh_fail(t, "iota dimensions");
        nd++;
        skip_ws(t);
    } while (*t->s == ',' && t->s++);
    if (!expect(t, ']') || !expect(t, 'T') || !expect(t, '('))
        return false;
    for (int i = 0; i < nd; i++)
        if (!read_int(t, 0, nd - 1, &perm[i]) || (i + 1 < nd && !expect(t, ',')))
            return false;
    if (!expect(t, ')') || !expect(t, ')'))
        return false;
    int64_t prod = 1;
    for (int i = 0; i < nd; i++)
        prod *= dims[i];
    if (prod != total)
        return mesh_fail(t, "iota dimensions whose product is the mesh's device count");
    int64_t src[MESH_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        src[i] = dims[perm[i]];
    for (int64_t i = 0; i < total; i++) { /* element i of iota(dims) transposed by perm */
        int64_t rem = i, c[MESH_MAX_DIMS], orig[MESH_MAX_DIMS], idx = 0;
        for (int k = nd - 1; k >= 0; k--) {
            c[k] = rem % src[k];
            rem /= src[k];
        }
        for (int k = 0; k < nd; k++)
            orig[perm[k]] = c[k];
        for (int k = 0; k < nd; k++)
            idx = idx * dims[k] + orig[k];
        dev[i] = idx;
    }
    return true;
}

/* {'b','a':(2)2}: the grouped axes in their order. */
static bool read_refs(struct mesh_text *t, const struct mesh_axis *ax, int nax,
                      struct mesh_ref *ref, int *nref)
{
    if (!expect(t, '{'))
        return false;
    *nref = 0;
    skip_ws(t);
    if (*t->s == '}') {
        t->s++;
        return true;
    }
    do {
        char name[MESH_NAME_MAX];
        if (*nref == MESH_MAX_AXES || !read_name(t, name))
            return *nref == MESH_MAX_AXES ? mesh_fail(t, "at most 16 grouped axes") : false;
        struct mesh_ref *r = &ref[(*nref)++];
        r->axis = -1;
        for (int i = 0; i < nax; i++)
            if (strcmp(ax[i].name, name) == 0)
                r->axis = i;
        if (r->axis < 0) {
            snprintf(t->err, t->errn, "expected the grouped axes among the mesh's axes in "
                     "replica groups, got '%s'", name);
            return false;
        }
        r->pre = 0, r->size = ax[r->axis].size;
        skip_ws(t);
        if (*t->s == ':') {
            t->s++;
            int64_t n = ax[r->axis].size;
            if (!expect(t, '(') || !read_int(t, 1, n, &r->pre) || !expect(t, ')') ||
                !read_int(t, 2, n, &r->size))
                return false;
            if (n % (r->pre * r->size) != 0 || r->size >= n)
                return mesh_fail(t, "a sub-axis (pre)size whose pre*size divides its axis");
        }
        skip_ws(t);
    } while (*t->s == ',' && t->s++);
    return expect(t, '}');
}

/* The reshaped dimensions: each axis split by its sub-axes (sorted by pre,
 * padding between them, a rest after); 'gdim[i]' is ref i's dimension. */
static bool split_dims(struct mesh_text *t, const struct mesh_axis *ax, int nax,
                       const struct mesh_ref *ref, int nref, int64_t *dims, int *nd, int *gdim)
{
    *nd = 0;
    for (int a = 0; a < nax; a++) {
        int idx[MESH_MAX_AXES], k = 0;
        for (int r = 0; r < nref; r++)
            if (ref[r].axis == a)
                idx[k++] = r;
        for (int i = 1; i < k; i++) /* insertion sort by pre */
            for (int j = i; j > 0 && ref[idx[j]].pre < ref[idx[j - 1]].pre; j--) {
                int x = idx[j];
                idx[j] = idx[j - 1], idx[j - 1] = x;
            }
        if (k > 1)
            for (int i = 0; i < k; i++)
                if (ref[idx[i]].pre == 0)
                    return mesh_fail(t, "a whole axis named once, without its sub-axes");
        int64_t prefix = 1;
        for (int i = 0; i < k; i++) {
            const struct mesh_ref *r = &ref[idx[i]];
            if (r->pre == 0) { /* the whole axis */
                gdim[idx[i]] = *nd;
                dims[(*nd)++] = ax[a].size;
                prefix = ax[a].size;
                continue;
            }
            if (r->pre % prefix != 0)
                return mesh_fail(t, "sub-axes of one axis that do not overlap");
            if (r->pre != prefix)
                dims[(*nd)++] = r->pre / prefix;
            gdim[idx[i]] = *nd;
            dims[(*nd)++] = r->size;
            prefix = r->pre * r->size;
        }
        if (ax[a].size % prefix != 0)
            return mesh_fail(t, "sub-axes that divide their axis");
        if (prefix != ax[a].size || k == 0)
            dims[(*nd)++] = ax[a].size / prefix;
    }
    for (int i = 0; i < nref; i++)
        for (int j = 0; j < i; j++)
            if (gdim[i] == gdim[j])
                return mesh_fail(t, "each grouped axis once");
    return true;
}

/* The groups: dims transposed so that the grouped dimensions come last. */
static void mesh_groups(const int64_t *src, int64_t total, const int64_t *dims, int nd,
                        const int *gdim, int nref, int64_t *out)
{
    int perm[MESH_MAX_DIMS], np = 0;
    for (int d = 0; d < nd; d++) {
        bool grouped = false;
        for (int r = 0; r < nref; r++)
            grouped |= gdim[r] == d;
        if (!grouped)
            perm[np++] = d;
    }
    for (int r = 0; r < nref; r++)
        perm[np++] = gdim[r];
    int64_t stride[MESH_MAX_DIMS];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        stride[d] = s;
        s *= dims[d];
    }
    for (int64_t i = 0; i < total; i++) {
        int64_t rem = i, idx = 0;
        for (int k = nd - 1; k >= 0; k--) {
            idx += (rem % dims[perm[k]]) * stride[perm[k]];
            rem /= dims[perm[k]];
        }
        out[i] = src[idx];
    }
}

bool hlo_mesh_groups(const char *text, int64_t ndev, struct hlo_mesh_groups *g, char *err,
                     size_t errn)
{
    struct mesh_text t = {.s = text, .err = err, .errn = errn};
    struct mesh_axis ax[MESH_MAX_AXES];
    struct mesh_ref ref[MESH_MAX_AXES];
    int nax, nref, nd, gdim[MESH_MAX_AXES];
    int64_t dims[MESH_MAX_DIMS];
    memset(g, 0, sizeof *g);
    skip_ws(&t);
    if (!read_axes(&t, ndev, ax, &nax))
        return false;
    int64_t total = 1, gs = 1;
    for (int i = 0; i < nax; i++)
        total *= ax[i].size;
    int64_t *src = xcalloc((size_t)total, sizeof *src);
    for (int64_t i = 0; i < total; i++)
        src[i] = i;
    skip_ws(&t);
    bool ok = true;
    if (*t.s == ',') {
        t.s++;
        skip_ws(&t);
        ok = strncmp(t.s, "device_ids=(", 12) == 0 ? (t.s += 12, read_device_ids(&t, total, src))
                                                   : mesh_fail(&t, "device_ids=(...)");
    }
    ok = ok && read_refs(&t, ax, nax, ref, &nref) && split_dims(&t, ax, nax, ref, nref, dims,
                                                                  &nd, gdim);
    skip_ws(&t);
    if (ok && *t.s)
        ok = mesh_fail(&t, "the end of the replica groups");
    if (!ok) {
        free(src);
        return false;
    }
    for (int r = 0; r < nref; r++)
        gs *= dims[gdim[r]];
    g->dev = xcalloc((size_t)total, sizeof *g->dev);
    mesh_groups(src, total, dims, nd, gdim, nref, g->dev);
    free(src);
    g->gs = (int)gs;
    g->ng = (int)(total / gs);
    return true;
}
