/* tests/unit/test_keys.c -- every key a scenario may write is read (issue
 * 18.11: paged_attention.batch was allowed and nothing read it, so .nan, -1
 * and a full-width 128 all passed). For every op kind the test takes the keys
 * its loader allows (the lists walk_check_keys is given), sets each of them,
 * all together and each alone, and checks that the loader looked every one
 * up: an allowed key nothing reads fails here. A whole scenario with the
 * common keys and the top-level sections shows the loader's own check (an
 * unread key is an error, walk_check_unread) passes on real input. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "kernels/ops.h"
#include "config/cfg.h"
#include "config/cfg_int.h"
#include "config/cfg_tree.h"
#include "config/op_table.h"

static const char *const common[] = {CFG_OP_COMMON_KEYS, NULL};

static bool is_common(const char *k)
{
    for (int i = 0; common[i]; i++)
        if (!strcmp(common[i], k))
            return true;
    return false;
}

static struct cfg_node *scalar(const char *v)
{
    struct cfg_node *n = cfg_node_new(CFG_SCALAR, "keys.yaml", 1, 1);
    n->value = xstrdup(v);
    return n;
}

/* Walks op 'kind' from a map of 'keys' (each set to 1); '*log' (may be NULL)
 * gets the allowed lists. Returns the map, its nodes marked read or not. */
static struct cfg_node *walk_op(enum op_kind kind, char **keys, int n, struct walk_keylog *log)
{
    struct cfg_node *m = cfg_node_new(CFG_MAP, "keys.yaml", 1, 1);
    cfg_put(m, "op", scalar(op_kind_name(kind)));
    for (int i = 0; i < n; i++)
        cfg_put(m, keys[i], scalar("1"));
    cfg_forget_reads(m);
    struct diag *d = diag_new();
    struct walk w = {.d = d, .log = log};
    struct op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    cfg_load_op_kind(&w, m, "workload.0", &op);
    op_fini(&op);
    diag_free(d);
    return m;
}

/* Valid ops for the kinds whose loaders read some keys only once the others
 * loaded cleanly (a fusion's reduce_axis needs its arrays). */
static const char *const valid_ops[] = {
    "{op: splash_attention, q_heads: 2, q_seq_len: 512, head_dim: 128}",
    "{op: fusion, inputs: [{shape: [8, 128]}], outputs: [{shape: [8, 128]}]}",
    NULL};

/* Walks a valid op of 'kind' (if the table has one) with 'key' added. */
static bool read_after_valid(enum op_kind kind, const char *key)
{
    bool read = false;
    for (int i = 0; valid_ops[i]; i++) {
        struct diag *d = diag_new();
        struct cfg_node *m = cfg_parse(valid_ops[i], strlen(valid_ops[i]), "keys.yaml", d);
        enum op_kind k;
        assert_non_null(m);
        assert_int_equal(op_kind_parse(cfg_get(m, "op")->value, &k), 0);
        if (k == kind) {
            cfg_put(m, key, scalar("1"));
            cfg_forget_reads(m);
            struct walk w = {.d = d};
            struct op op;
            memset(&op, 0, sizeof op);
            op.kind = kind;
            cfg_load_op_kind(&w, m, "workload.0", &op);
            op_fini(&op);
            read = cfg_get(m, key)->read;
        }
        cfg_node_free(m);
        diag_free(d);
    }
    return read;
}

static bool was_read(const struct cfg_node *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->keys[i], key))
            return m->kids[i]->read;
    return false;
}

/* The op map's own allowed keys: the first list walk_check_keys was given
 * (nested maps come later, each list ends where a key repeats 'op'). */
static int own_keys(const struct walk_keylog *log, char ***out)
{
    char **k = xcalloc((size_t)log->n + 1, sizeof *k);
    int n = 0, ops = 0;
    for (int i = 0; i < log->n; i++) {
        if (!strcmp(log->keys[i], "op") && ops++)
            break;
        if (!is_common(log->keys[i]))
            k[n++] = log->keys[i];
    }
    *out = k;
    return n;
}

static void test_every_allowed_op_key_is_read(void **state)
{
    (void)state;
    int unread = 0, checked = 0;
    for (int kind = 0; kind < OP_KIND_COUNT; kind++) {
        struct walk_keylog log = {0};
        cfg_node_free(walk_op((enum op_kind)kind, NULL, 0, &log));
        char **keys;
        int n = own_keys(&log, &keys);
        assert_true(n > 0);
        struct cfg_node *all = walk_op((enum op_kind)kind, keys, n, NULL);
        for (int i = 0; i < n; i++) {
            bool read = was_read(all, keys[i]);
            if (!read) { /* a loader may stop early on a clash: alone then */
                struct cfg_node *one = walk_op((enum op_kind)kind, &keys[i], 1, NULL);
                read = was_read(one, keys[i]);
                cfg_node_free(one);
            }
            if (!read) /* or after the others loaded cleanly */
                read = read_after_valid((enum op_kind)kind, keys[i]);
            if (!read) {
                print_error("%s.%s is allowed and nothing reads it\n",
                            op_kind_name((enum op_kind)kind), keys[i]);
                unread++;
            }
            checked++;
        }
        cfg_node_free(all);
        free(keys);
        for (int i = 0; i < log.n; i++)
            free(log.keys[i]);
        free(log.keys);
    }
    assert_int_equal(unread, 0);
    assert_true(checked > 100); /* the kinds' keys were found */
}

/* The loader's own check: a scenario with every common op key and every
 * top-level section loads, and an allowed key nothing reads is an error. */
static void test_loader_refuses_unread_keys(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *good = "name: keys\nchip: {base: v5e, hypothetical: false}\n"
                       "topology: {shape: [2, 2], wraparound: false}\n"
                       "options: {fidelity: fast, seed: 3, max_steps: 1000000, all_chips: false}\n"
                       "mesh: {data: 4}\n"
                       "workload:\n"
                       "  - {op: hbm_copy, name: a, bytes: 1MiB, chunk: 256KiB}\n"
                       "  - {op: matmul, name: b, m: 256, k: 256, n: 256, after: [a],\n"
                       "     overlap: false, functional: false, vmem_limit_bytes: 32MiB}\n";
    assert_int_equal(cfg_load_scenario_text(good, strlen(good), "keys.yaml", NULL, 0, &sc, d),
                     0);
    cfg_scenario_fini(&sc);
    /* paged_attention.batch was read by nothing: now it is the number of sequences */
    const char *paged = "chip: v5e\nworkload:\n"
                        "  - {op: paged_attention, batch: 3, q_heads: 8, kv_heads: 8, head_dim: 128,\n"
                        "     page_size: 16, pages_per_seq: 8, pages_per_compute_block: 8,\n"
                        "     lengths: [128, 64, 32]}\n";
    assert_int_equal(cfg_load_scenario_text(paged, strlen(paged), "keys.yaml", NULL, 0, &sc, d),
                     0);
    assert_int_equal(sc.ops[0].u.paged.batch, 3);
    cfg_scenario_fini(&sc);
    const char *sets[] = {"workload.0.batch=4"};
    assert_int_equal(cfg_load_scenario_text(paged, strlen(paged), "keys.yaml", sets, 1, &sc, d),
                     -1);
    assert_non_null(strstr(diag_message(d, 0), "workload.0.batch: expected the number of "
                                               "sequences (3, from lengths), got '4'"));
    diag_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allowed_op_key_is_read),
        cmocka_unit_test(test_loader_refuses_unread_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
