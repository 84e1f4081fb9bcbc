/* serving/serve_disagg.h -- prefill/decode disaggregation: of serve.mesh's
 * data replicas, serve.disaggregation's prefill engines run only prefills
 * (chunked as configured) and its decode engines only decodes, simulated
 * together in time order as serving/serve_fleet.h's replicas. A request is
 * routed to a prefill engine when it arrives; when its prefill's step ends
 * (the first token sampled, as vLLM's prefill instance with max_tokens 1),
 * its prompt's KV cache goes to a decode engine (routed then, by the same
 * policy), one transfer at a time on each prefill engine's link: each chip's
 * share of the cache, kv_bytes_per_token x the prompt, at
 * c->kv_transfer_Bps after c->kv_transfer_lat_s (config/cfg.c). The decode
 * engine admits it when its KV has arrived -- its first token reaches the
 * client then (TTFT; docs/reference.md, "Prefill/decode disaggregation") --
 * and decodes the rest. Engines [0, prefill) are the prefill ones in steps
 * and per-replica shares; a request's replica is its decode engine. */
#ifndef TPUSIM_SERVING_SERVE_DISAGG_H
#define TPUSIM_SERVING_SERVE_DISAGG_H

#include "config/cfg_serve.h"
#include "serving/serve.h"

/* A KV transfer of a prompt of 'in' tokens under 'c', in seconds (its link free). */
double serve_kv_transfer_s(const struct serve_cfg *c, int64_t in);

/* As serve_simulate (serving/serve.h) with c->prefill_engines prefill and
 * c->decode_engines decode engines; r->req[i].kv_transfer_s each request's
 * transfer (its prefill's end to its KV's arrival, a wait for the link included). */
int serve_disagg_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                          struct serve_result *r);

#endif
