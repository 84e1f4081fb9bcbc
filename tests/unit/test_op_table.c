/* tests/unit/test_op_table.c -- every op kind has a complete row: a unique
 * name that parses back, a category, a runner, and either a Pallas builder
 * or a rule check; its key table (if any) is well formed. */
#include "test_util.h"

#include <string.h>

#include "config/op_table.h"
#include "engine/engine.h"

static void test_every_kind_has_a_complete_row(void **state)
{
    (void)state;
    for (int i = 0; i < OP_KIND_COUNT; i++) {
        const struct op_row *r = op_row((enum op_kind)i);
        assert_non_null(r->name);
        assert_non_null(r->category);
        assert_non_null(eng_runner((enum op_kind)i)); /* a runner row, or a Pallas builder */
        /* a Pallas kind runs as a kernel; a kind with a runner row is no Pallas kind */
        assert_true((r->kern != NULL) == (eng_runner((enum op_kind)i) == eng_run_kernel));
        assert_true(r->kern != NULL || r->check != NULL);
        assert_true(r->keys != NULL || r->load != NULL);
        enum op_kind back;
        assert_int_equal(op_kind_parse(r->name, &back), 0);
        assert_int_equal(back, i);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(r->name, op_row((enum op_kind)j)->name);
        for (const struct walk_key *k = r->keys; k && k->key; k++) {
            assert_true(k->offset < sizeof(struct op) || k->type == WALK_MAP);
            if (k->type == WALK_ENUM)
                assert_non_null(k->names);
            if (k->type == WALK_MAP)
                assert_non_null(k->sub);
        }
    }
    assert_int_equal(op_kind_parse("no_such_op", &(enum op_kind){0}), -1);
}

static void test_kind_names_list_every_row(void **state)
{
    (void)state;
    const char *names[OP_KIND_COUNT + 1];
    op_kind_names(names);
    for (int i = 0; i < OP_KIND_COUNT; i++)
        assert_string_equal(names[i], op_kind_name((enum op_kind)i));
    assert_null(names[OP_KIND_COUNT]);
    assert_string_equal(op_kind_name(OP_FLASH), "flash_attention");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_has_a_complete_row),
        cmocka_unit_test(test_kind_names_list_every_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
