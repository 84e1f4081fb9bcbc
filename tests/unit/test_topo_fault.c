/* tests/unit/test_topo_fault.c -- routes around down links (topology/topo_fault.h) and the
 * platform's pstates for slow chips (topology/plat_xml.h). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/plat_xml.h"
#include "topology/topo_fault.h"

/* The link between chips 'a' and 'b' (neighbours along 'axis') is down both ways. */
struct cut {
    const struct topo *t;
    int a, axis, dir;
};

static bool is_down(const void *ctx, int from, int axis, int dir)
{
    const struct cut *c = ctx;
    int b = topo_neighbor(c->t, c->a, c->axis, c->dir);
    return axis == c->axis && ((from == c->a && dir == c->dir) || (from == b && dir == -c->dir));
}

/* A ring of 8 with the 3-4 link down: 3 -> 4 goes the other way round, 7 hops of -1. */
static void test_ring_goes_the_other_way(void **state)
{
    (void)state;
    struct topo t;
    int shape[1] = {8};
    bool wrap[1] = {true};
    assert_int_equal(topo_init(&t, 1, shape, wrap), 0);
    struct cut c = {&t, 3, 0, 1};
    struct topo_hop h[32];
    assert_true(topo_route_blocked(&t, 3, 4, is_down, &c));
    assert_true(topo_route_blocked(&t, 4, 3, is_down, &c));
    assert_false(topo_route_blocked(&t, 0, 2, is_down, &c));
    assert_int_equal(topo_route_around(&t, 3, 4, is_down, &c, h, 32), 7);
    int want[7] = {2, 1, 0, 7, 6, 5, 4};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(h[i].to, want[i]);
        assert_int_equal(h[i].dir, -1);
    }
    /* 2 -> 5 (3 hops up, through the dead link): 5 hops down */
    assert_int_equal(topo_route_around(&t, 2, 5, is_down, &c, h, 32), 5);
    /* a route that avoids it is the dimension-order one */
    assert_int_equal(topo_route_around(&t, 5, 7, is_down, &c, h, 32), 2);
    assert_int_equal(h[1].to, 7);
}

/* Without wraparound the segment sidesteps along the other axis and steps back. */
static void test_open_axis_sidesteps(void **state)
{
    (void)state;
    struct topo t;
    int shape[2] = {8, 2};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&t, 2, shape, wrap), 0);
    struct cut c = {&t, 3, 0, 1}; /* (3,0) - (4,0) */
    struct topo_hop h[32];
    assert_int_equal(topo_route_around(&t, 3, 4, is_down, &c, h, 32), 3);
    assert_int_equal(h[0].to, 3 + 8); /* (3,1) */
    assert_int_equal(h[1].to, 4 + 8); /* (4,1) */
    assert_int_equal(h[2].to, 4);
    /* a line has no way round: no route */
    struct topo line;
    assert_int_equal(topo_init(&line, 1, shape, wrap), 0);
    struct cut cl = {&line, 3, 0, 1};
    assert_int_equal(topo_route_around(&line, 2, 5, is_down, &cl, h, 32), -1);
    /* and a route longer than the room is refused, not overrun */
    assert_int_equal(topo_route_around(&t, 3, 4, is_down, &c, h, 2), -1);
}

/* Slow chips' compute rates are pstates of the cluster's hosts, after the nominal one. */
static void test_plat_pstates(void **state)
{
    (void)state;
    struct topo t;
    int shape[1] = {4};
    bool wrap[1] = {false};
    assert_int_equal(topo_init(&t, 1, shape, wrap), 0);
    double f[2] = {0.9, 0.5};
    struct plat_params p = {1, 200e12, 819e9, 45e9, 1e-6, 0, 2, f};
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    assert_int_equal(plat_write_xml(o, &t, &p), 0);
    fclose(o);
    assert_non_null(strstr(buf, "speed=\"200000000000000f,180000000000000f,100000000000000f\""));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_goes_the_other_way),
        cmocka_unit_test(test_open_axis_sidesteps),
        cmocka_unit_test(test_plat_pstates),
    };
    return cmocka_run_group_tests_name("topo_fault", tests, NULL, NULL);
}
