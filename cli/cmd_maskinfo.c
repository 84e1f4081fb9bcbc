/* cli/cmd_maskinfo.c -- `tpusim maskinfo`: splash attention's MaskInfo
 * (block_mask, data_next, mask_next) for masks given on the command line,
 * exactly as upstream's _process_mask computes it (kernels/maskinfo.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/mask_file.h"
#include "cli/cli.h"

struct maskinfo_args {
    const char *specs[1024];
    int nspecs;
    int64_t q, k;
    int bq, bkv, heads;
    bool dense, json;
    struct maskinfo_params p;
};

/* Largest --shape side: the scenarios' limit on sequence lengths. */
#define MAX_SEQ ((int64_t)1 << 24)
/* Largest --dense mask (heads x Q x K bytes): as for mask files. */
#define MAX_DENSE ((int64_t)1 << 30)

/* One number in [1, 'max']; never saturates (strtoll's ERANGE is an error). */
static int parse_num(const char *s, char **end, int64_t max, int64_t *out)
{
    errno = 0;
    long long v = strtoll(s, end, 10);
    if (*end == s || errno == ERANGE || v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_pair(const char *s, int64_t max, int64_t *a, int64_t *b)
{
    char *end;
    if (parse_num(s, &end, max, a) != 0 || *end != ',')
        return -1;
    return parse_num(end + 1, &end, max, b) != 0 || *end ? -1 : 0;
}

static int parse_maskinfo_args(int argc, char **argv, struct maskinfo_args *m)
{
    static const struct option longs[] = {
        {"mask", required_argument, 0, 'm'},    {"shape", required_argument, 0, 's'},
        {"block", required_argument, 0, 'b'},   {"heads", required_argument, 0, 'H'},
        {"dense", no_argument, 0, 'd'},         {"head-shards", required_argument, 0, 'h'},
        {"q-seq-shards", required_argument, 0, 'q'}, {"dkv", no_argument, 0, 'k'},
        {"dynamic", no_argument, 0, 'y'},       {"json", no_argument, 0, 'j'},
        {0, 0, 0, 0}};
    int ch;
    int64_t bq = 0, bkv = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        char *end = NULL;
        switch (ch) {
        case 'm':
            if (m->nspecs == 1024)
                return cli_usage_error("too many --mask");
            m->specs[m->nspecs++] = optarg;
            break;
        case 's':
            if (parse_pair(optarg, MAX_SEQ, &m->q, &m->k))
                return cli_usage_error("--shape takes Q,K (integers from 1 to 16777216)");
            break;
        case 'b':
            if (parse_pair(optarg, MAX_SEQ, &bq, &bkv))
                return cli_usage_error("--block takes BQ,BKV (integers from 1 to 16777216)");
            break;
        case 'H':
        case 'h':
        case 'q': {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 65536)
                return cli_usage_error("--heads, --head-shards and --q-seq-shards take a positive "
                                   "integer");
            *(ch == 'H' ? &m->heads : ch == 'h' ? &m->p.head_shards : &m->p.q_seq_shards) =
                (int)v;
            break;
        }
        case 'd':
            m->dense = true;
            break;
        case 'k':
            m->p.is_dkv = true;
            break;
        case 'y':
            m->p.dynamic = true;
            break;
        case 'j':
            m->json = true;
            break;
        default:
            return cli_usage_error("bad option");
        }
    }
    if (optind < argc || !m->nspecs || !m->q || !bq)
        return cli_usage_error("maskinfo needs --mask, --shape and --block");
    m->p.bq = (int)bq, m->p.bkv = (int)bkv;
    if (!m->heads)
        m->heads = m->nspecs;
    if (m->nspecs != 1 && m->nspecs != m->heads)
        return cli_usage_error("give one --mask for all heads or one per head");
    if (m->dense && (m->q * m->k > MAX_DENSE / m->heads)) /* each side <= 2^24: no overflow */
        return cli_usage_error("--dense materialises heads x Q x K bytes: at most 1 GiB");
    return 0;
}

/* Builds head masks from specs; "file:PATH" loads an explicit mask. */
static struct mask *head_mask(const char *spec, const struct maskinfo_args *m, bool dense, char *err,
                            size_t n)
{
    struct mask *mk = strncmp(spec, "file:", 5) == 0 ? mask_load_file(spec + 5, err, n)
                                                      : mask_parse_spec(spec, m->q, m->k, err, n);
    if (mk && (mk->q_len != m->q || mk->kv_len != m->k)) {
        snprintf(err, n, "mask '%s' is %lldx%lld, --shape is %lldx%lld", spec,
                 (long long)mk->q_len, (long long)mk->kv_len, (long long)m->q, (long long)m->k);
        mask_free(mk);
        return NULL;
    }
    if (mk && dense && mk->kind != MASK_DENSE) {
        struct mask *d = mask_dense_from(mk);
        mask_free(mk);
        mk = d;
    }
    return mk;
}

int cmd_maskinfo(int argc, char **argv)
{
    struct maskinfo_args *m = xcalloc(1, sizeof *m);
    maskinfo_params_init(&m->p, 1, 1);
    int rc = parse_maskinfo_args(argc, argv, m);
    if (rc) {
        free(m);
        return rc;
    }
    struct mask **heads = xcalloc((size_t)m->heads, sizeof *heads);
    char err[512] = "";
    for (int h = 0; h < m->heads && rc == 0; h++) {
        const char *spec = m->specs[m->nspecs == 1 ? 0 : h];
        /* one spec for all heads: the same mask object content in every head */
        heads[h] = head_mask(spec, m, m->dense, err, sizeof err);
        rc = heads[h] ? 0 : 2;
    }
    struct mask_info mi;
    if (rc == 0 && maskinfo_process(heads, m->heads, &m->p, &mi, err, sizeof err) != 0)
        rc = 2;
    if (rc == 0) {
        maskinfo_print(stdout, &mi, m->json);
        maskinfo_free(&mi);
    } else {
        fprintf(stderr, "tpusim maskinfo: %s\n", err);
    }
    for (int h = 0; h < m->heads; h++)
        mask_free(heads[h]);
    free(heads);
    free(m);
    return rc;
}

