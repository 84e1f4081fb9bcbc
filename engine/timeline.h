/* engine/timeline.h -- after a run, what chip 0's timeline says: where the time
 * went (compute by category, async work hidden behind compute or exposed,
 * idle), the critical path (the chain of op instances, each started by the
 * one before it finishing, that ends last), and the time of every iteration
 * of every repeat block. Pure: the per-instance start and end times come in,
 * summary fields go out. Uses workload/graph.h and config/op_table.h. */
#ifndef TPUSIM_ENGINE_TIMELINE_H
#define TPUSIM_ENGINE_TIMELINE_H

#include <stdint.h>

#include "config/cfg.h"
#include "outputs/summary.h"

/* Instance times of a run: for op i, instance k, entry off[i] + k. */
struct timeline_times {
    const int64_t *off;
    const double *t0, *t1; /* chip 0: first start and last end over its cores (0, 0: never ran) */
};

/* Fills s->cat_s, s->path and s->blocks from 'tt' and sets s->timeline. */
void timeline_fill(const struct cfg_scenario *sc, const struct timeline_times *tt,
                   struct summary *s);

#endif
