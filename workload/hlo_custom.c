/* workload/hlo_custom.c -- the cost estimate a custom call carries: jax's
 * Pallas TPU kernels (custom_call_target="tpu_custom_call") write
 * {"custom_call_config": {"body": ..., "cost_estimate": {"bytes_accessed":
 * B, "flops": F, "remote_bytes_transferred": R, "transcendentals": T}}} in
 * their backend_config (jax/_src/tpu_custom_call.py, CostEstimate), as raw
 * JSON or as an escaped string. */
#include <stdlib.h>
#include <string.h>

#include "workload/hlo.h"
#include "workload/hlo_int.h"

/* The number after "key" (quotes escaped or not, then ':') in 's'; false if none. */
static bool json_number(const char *s, const char *key, double *v)
{
    const char *k = strstr(s, key);
    if (!k)
        return false;
    k += strlen(key);
    while (*k == '\\' || *k == '"' || *k == ':' || *k == ' ')
        k++;
    char *e;
    *v = strtod(k, &e);
    return e != k && *v >= 0 && *v < 1e30;
}

bool hlo_cost_estimate(const struct hlo_instr *in, struct hlo_cost *c)
{
    const struct hlo_attr *a = hlo_attr(in, "backend_config");
    const char *ce = a ? strstr(a->value, "cost_estimate") : NULL;
    if (!ce)
        return false;
    /* the estimate's object: up to its closing brace */
    const char *end = strchr(ce, '}');
    size_t len = end ? (size_t)(end - ce) : strlen(ce);
    char buf[512];
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    memcpy(buf, ce, len);
    buf[len] = '\0';
    memset(c, 0, sizeof *c);
    bool any = json_number(buf, "\"flops", &c->flops);
    any |= json_number(buf, "\"bytes_accessed", &c->bytes);
    any |= json_number(buf, "\"transcendentals", &c->transcendentals);
    return any;
}
