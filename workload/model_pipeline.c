/* workload/model_pipeline.c -- the pipeline's schedule sized (see
 * workload/model_pipeline_int.h).
 *
 * The bubble. With p stages and m microbatches of equal work, a pass (the
 * forward, or the backward) takes m + p - 1 iterations: the first stage
 * starts microbatch i at iteration i, the last stage finishes microbatch m - 1
 * at iteration m - 1 + p - 1. Each stage is busy in m of them, idle in p - 1:
 * the bubble is (p - 1) / (m + p - 1) of the step (GPipe, Huang et al. 2019,
 * arXiv:1811.06965, section 2.3; the same for 1F1B, which reorders the
 * forwards and backwards but keeps the same count, Narayanan et al. 2021,
 * arXiv:2104.04473, section 2.2.1). The circular (interleaved) schedule gives
 * each stage r chunks of L / (p r) layers: a microbatch goes round the stages
 * r times, a stage has r m chunk-iterations of work, and the fill and drain
 * still take p - 1 iterations, now of a chunk: (p - 1) / (r m + p - 1)
 * (MaxText pipeline.py: num_iterations = num_microbatches x num_repeats +
 * num_stages - 1; Narayanan et al.'s (p - 1) / (v m) bubble-to-work ratio).
 * MaxText runs every stage in every iteration (a vmap over the stages), so a
 * stage's idle iterations cost what its busy ones do: the program runs all
 * r m + p - 1 of them.
 *
 * The transfers: after each iteration a stage sends its microbatch's
 * activations, micro_b x S x D bytes of the model's dtype (split over tensor
 * and sequence like the residual), to the next stage (MaxText's
 * shift of the state along the stage axis, a collective permute), over ICI or,
 * when the pipeline axis spans the slices, over the DCN.
 *
 * Memory: GPipe (and MaxText's circular schedule, the backward of the scan)
 * keeps every microbatch's activations for its layers until the backward; 1F1B
 * starts a microbatch's backward as soon as the last stage has it, so the first
 * stage keeps at most p microbatches in flight (Narayanan et al. 2021). */
#include "workload/model_pipeline_int.h"

#include <stdio.h>

#include "base/diag.h"

static const char *const schedule_names[] = {"gpipe", "1f1b", "circular", NULL};

const char *const *model_pipe_schedule_names(void)
{
    return schedule_names;
}

static int64_t repeats(const struct model *m)
{
    return m->pipeline_repeats > 0 ? m->pipeline_repeats : 1;
}

static int64_t microbatches(const struct model *m, const struct model_shard *s)
{
    return m->microbatches > 0 ? m->microbatches : s->pipeline;
}

int64_t pipe_stage_layers(const struct model *m, const struct model_shard *s)
{
    return m->layers / (s->pipeline > 0 ? s->pipeline : 1);
}

int pipe_check(const struct model *m, const struct model_shard *s, char *err, size_t n)
{
    int p = s->pipeline;
    int64_t r = repeats(m), mb = microbatches(m, s);
    bool circular = m->pipeline_schedule == PIPE_CIRCULAR;
    if (p <= 1)
        return 0;
    if (m->mode == MODEL_DECODE)
        return diag_fail(err, n, "a decode step does not run over a pipeline axis (%d): put "
                         "those devices on data or tensor", p);
    if (circular != (r > 1))
        return diag_fail(err, n, "the circular schedule has num_pipeline_repeats above 1 and "
                         "the others 1; got pipeline_schedule %s with %lld repeats",
                         schedule_names[m->pipeline_schedule], (long long)r);
    if (m->layers % ((int64_t)p * r) != 0)
        return diag_fail(err, n, "layers (%lld) is not divisible by the pipeline stages x "
                         "num_pipeline_repeats (%lld)", (long long)m->layers,
                         (long long)(p * r));
    if (s->b % mb != 0)
        return diag_fail(err, n, "the sequences per device (%lld) are not divisible by "
                         "num_pipeline_microbatches (%lld)", (long long)s->b, (long long)mb);
    if (circular && mb % p != 0)
        return diag_fail(err, n, "the circular schedule needs num_pipeline_microbatches (%lld) "
                         "to be a multiple of the pipeline stages (%d)", (long long)mb, p);
    return 0;
}

void pipe_plan(const struct model *m, const struct model_shard *s, struct pipe_plan *p)
{
    *p = (struct pipe_plan){.stages = s->pipeline > 0 ? s->pipeline : 1, .repeats = 1,
                            .microbatches = 1, .iterations = 1, .layers_per_iter = m->layers,
                            .micro_b = s->b, .micro_tokens = s->tokens, .in_flight = 1};
    if (p->stages <= 1)
        return;
    p->repeats = repeats(m);
    p->microbatches = microbatches(m, s);
    p->iterations = p->repeats * p->microbatches + p->stages - 1;
    p->layers_per_iter = m->layers / (p->stages * p->repeats);
    p->micro_b = s->b / p->microbatches;
    p->micro_tokens = s->tokens / p->microbatches;
    p->send_bytes = (double)p->micro_tokens * (double)m->d_model / s->tensor *
                    (double)dtype_bytes(m->dtype) * s->dev_per_chip;
    p->bubble = (double)(p->stages - 1) / (double)p->iterations;
    p->in_flight = m->pipeline_schedule == PIPE_1F1B && p->stages < p->microbatches
                       ? p->stages
                       : p->microbatches;
}

void model_pipeline_info(const struct model *m, const struct model_shard *s,
                         struct model_pipeline_info *pi)
{
    struct pipe_plan p;
    pipe_plan(m, s, &p);
    *pi = (struct model_pipeline_info){.stages = p.stages, .microbatches = p.microbatches,
                                       .repeats = p.repeats, .iterations = p.iterations,
                                       .bubble = p.bubble};
}
