/* workload/model_pipeline_int.h -- pipeline parallelism as MaxText runs it
 * (maxtext layers/pipeline.py): the `pipeline` mesh axis splits the layers
 * into stages, the device's batch into microbatches
 * (num_pipeline_microbatches); every iteration each stage runs its layers on
 * one microbatch and sends the activations on to the next stage (the last
 * stage's go round to the first: circular with num_pipeline_repeats). This
 * file sizes the schedule (iterations, bubble, transfers, what is kept);
 * workload/model.c emits the loops. Internal to workload/ (model.c, model_pipeline.c). */
#ifndef TPUSIM_WORKLOAD_MODEL_PIPELINE_INT_H
#define TPUSIM_WORKLOAD_MODEL_PIPELINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "workload/model.h"

struct pipe_plan {
    int stages;              /* p: the pipeline axis */
    int64_t microbatches;    /* m */
    int64_t repeats;         /* r: 1, or the circular schedule's chunks per stage */
    int64_t iterations;      /* r m + p - 1 per pass (forward, backward) */
    int64_t layers_per_iter; /* L / (p r): a stage's chunk of layers */
    int64_t micro_b;         /* sequences of a microbatch, per device */
    int64_t micro_tokens;    /* its tokens, per device */
    double send_bytes;       /* the activations one stage sends the next per iteration, per chip */
    double bubble;           /* the share of iterations a stage idles: (p - 1) / (r m + p - 1) */
    int64_t in_flight;       /* microbatches whose activations a stage keeps at once */
};

/* Checks the pipeline keys against the model and the sharding ('s' filled
 * by model_shard). Returns 0, or -1 with the reason in 'err'. */
int pipe_check(const struct model *m, const struct model_shard *s, char *err, size_t n);
/* The schedule of 's' (stages 1: no pipeline, one iteration of every layer). */
void pipe_plan(const struct model *m, const struct model_shard *s, struct pipe_plan *p);
/* Layers a stage holds: L / p. */
int64_t pipe_stage_layers(const struct model *m, const struct model_shard *s);

#endif
