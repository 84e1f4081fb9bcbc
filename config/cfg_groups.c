/* config/cfg_groups.c -- a collective's replica_groups: explicit groups of
 * slice chips ([[0, 5, 10, 15], [1, 6, 11, 12], ...], XLA's name for them),
 * read with the op and checked against the slice once the topology is known:
 * chips of the slice, every chip in exactly one group, groups of one size.
 * Each group then runs as one ring through its chips in the listed order
 * (kernels/collective.c), every hop routed over the torus. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "kernels/ops.h"
#include "config/cfg_int.h"

#define CFG_MAX_REPLICA_CHIPS (1 << 20)

void cfg_load_replica_groups(struct walk *w, const struct cfg_node *g, const char *p,
                             struct op_collective *c)
{
    char *gp = walk_join(p, "replica_groups");
    const char *want = "a list of groups of slice chips of one size, like [[0, 5], [1, 4]]";
    if (g->type != CFG_SEQ || g->n < 1 || g->kids[0]->type != CFG_SEQ || g->kids[0]->n < 1) {
        walk_type_error(w, g, gp, want);
        free(gp);
        return;
    }
    int size = g->kids[0]->n;
    if ((int64_t)g->n * size > CFG_MAX_REPLICA_CHIPS) {
        walk_type_error(w, g, gp, "at most 2^20 chips in all");
        free(gp);
        return;
    }
    c->replica = xcalloc((size_t)g->n * (size_t)size, sizeof *c->replica);
    c->nreplica = g->n, c->replica_size = size;
    for (int i = 0; i < g->n; i++) {
        const struct cfg_node *grp = g->kids[i];
        char *ip = xasprintf("%s.%d", gp, i);
        if (grp->type != CFG_SEQ || grp->n != size) {
            char what[96];
            snprintf(what, sizeof what, "a group of %d chips (as group 0)", size);
            walk_type_error(w, grp, ip, what);
        } else {
            for (int k = 0; k < size; k++) {
                int64_t v = 0;
                if (walk_item(w, grp, ip, k, 0, CFG_MAX_REPLICA_CHIPS, &v) == 0)
                    c->replica[(size_t)i * (size_t)size + (size_t)k] = (int)v;
            }
        }
        free(ip);
    }
    c->naxes = 1; /* the group's ring: axis 0 of its own torus */
    c->axes[0] = 0;
    free(gp);
}

int cfg_check_replica_groups(struct walk *w, const struct cfg_node *g, const char *p,
                             struct op_collective *c, int nchips)
{
    char *gp = walk_join(p, "replica_groups");
    int64_t n = (int64_t)c->nreplica * c->replica_size;
    int rc = 0;
    c->replica_pos = xcalloc((size_t)nchips, sizeof *c->replica_pos);
    for (int i = 0; i < nchips; i++)
        c->replica_pos[i] = -1;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        int chip = c->replica[i];
        const struct cfg_node *item = g->kids[i / c->replica_size]->kids[i % c->replica_size];
        char *ip = xasprintf("%s.%lld.%lld", gp, (long long)(i / c->replica_size),
                             (long long)(i % c->replica_size));
        char want[96];
        if (chip >= nchips) {
            snprintf(want, sizeof want, "a chip of the slice (below %d)", nchips);
            walk_type_error(w, item, ip, want);
            rc = -1;
        } else if (c->replica_pos[chip] >= 0) {
            snprintf(want, sizeof want, "each chip in one group once (chip %d is also %s.%d.%d)",
                     chip, gp, c->replica_pos[chip] / c->replica_size,
                     c->replica_pos[chip] % c->replica_size);
            walk_type_error(w, item, ip, want);
            rc = -1;
        } else {
            c->replica_pos[chip] = (int)i;
        }
        free(ip);
    }
    if (rc == 0 && n != nchips) {
        char want[96];
        snprintf(want, sizeof want, "groups covering the slice's %d chips (they hold %lld)", nchips,
                 (long long)n);
        walk_type_error(w, g, gp, want);
        rc = -1;
    }
    free(gp);
    return rc;
}
