/* tests/unit/test_topo.c -- neighbours, hops, routes, SimGrid node mapping, platform XML. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/dcn.h"
#include "topology/plat_dir.h"
#include "topology/plat_xml.h"
#include "topology/topo.h"

static struct topo mk(int nd, int a, int b, int c, bool wa, bool wb, bool wc)
{
    struct topo t;
    int shape[3] = {a, b, c};
    bool wrap[3] = {wa, wb, wc};
    assert_int_equal(topo_init(&t, nd, shape, wrap), 0);
    return t;
}

static void test_topo_ring_neighbors_wrap(void **state)
{
    (void)state;
    struct topo t = mk(1, 16, 1, 1, true, false, false);
    assert_int_equal(t.nchips, 16);
    assert_int_equal(topo_neighbor(&t, 0, 0, -1), 15);
    assert_int_equal(topo_neighbor(&t, 15, 0, 1), 0);
    assert_int_equal(topo_neighbor(&t, 3, 0, 1), 4);
    assert_int_equal(topo_hops(&t, 0, 15), 1);
    assert_int_equal(topo_hops(&t, 0, 8), 8);
    assert_int_equal(topo_hops(&t, 2, 13), 5);
}

/* The chip count is a product of three lengths: 4096 x 4096 x 256 = 2^32 wrapped an int to
 * 0 and 4096 x 4096 x 128 = 2^31 to INT_MIN; a slice above TOPO_MAX_CHIPS is refused, the
 * largest one allowed is exactly TOPO_MAX_CHIPS. */
static void test_topo_chip_count_bounded(void **state)
{
    (void)state;
    struct topo t;
    bool wrap[3] = {false, false, false};
    int wraps[3][3] = {{4096, 4096, 256}, {4096, 4096, 128}, {4095, 4095, 4095}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(topo_init(&t, 3, wraps[i], wrap), -1);
    int over[3] = {TOPO_MAX_CHIPS / 64 + 1, 8, 8}, max[3] = {TOPO_MAX_CHIPS / 64, 8, 8};
    assert_int_equal(topo_init(&t, 3, over, wrap), -1);
    assert_int_equal(topo_init(&t, 3, max, wrap), 0);
    assert_int_equal(t.nchips, TOPO_MAX_CHIPS);
}

/* dcn.host_shape must tile the slice axis by axis: the same axes (extra ones of 1 allowed),
 * each dividing the slice's length. It was clipped: [2, 2, 2] on a [4, 4] slice made hosts of
 * 4 chips (twice the NICs, half the DCN time) and [8, 8] passed while [3, 3] was refused. */
static void test_dcn_host_shape_tiles_the_slice(void **state)
{
    (void)state;
    struct topo s = mk(2, 4, 4, 1, false, false, false);
    struct dcn d;
    char err[256];
    static const struct {
        int h[3], nd;
        int ok, per_host;
    } cases[] = {
        {{2, 2, 0}, 2, 0, 4},  /* 4 hosts of 2x2 */
        {{4, 4, 0}, 2, 0, 16}, /* one host */
        {{2, 2, 1}, 3, 0, 4},  /* an extra axis of 1 */
        {{2, 2, 2}, 3, -1, 0}, /* the third axis: 2 chips the slice does not have */
        {{8, 8, 0}, 2, -1, 0}, /* longer than the slice */
        {{3, 3, 0}, 2, -1, 0}, /* does not divide 4 */
        {{2, 0, 0}, 1, -1, 0}, /* fewer axes than the slice: which axis? */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = '\0';
        int rc = dcn_init(&d, &s, 2, cases[i].h, cases[i].nd, 25e9, 10e-6, 0, err, sizeof err);
        if (rc != cases[i].ok)
            fail_msg("case %zu: rc %d, want %d (%s)", i, rc, cases[i].ok, err);
        if (rc == 0) {
            assert_int_equal(d.chips_per_host, cases[i].per_host);
            assert_int_equal(d.hosts_per_slice, 16 / cases[i].per_host);
        } else {
            assert_non_null(strstr(err, "dcn.host_shape"));
        }
    }
}

/* One slice simulated for several (issue 30): its DCN pushes land on its own chips, so the
 * DCN gets a second NIC host per NIC to receive them (a push leaves by one host's link up and
 * lands by another's link down, as between two slices); with 2 slices simulated, one set. */
static void test_dcn_one_slice_receives_apart(void **state)
{
    (void)state;
    struct topo s = mk(2, 4, 4, 1, false, false, false), f = mk(2, 2, 2, 1, false, false, false);
    struct dcn d;
    struct dcn_plat p;
    char err[256];
    assert_int_equal(dcn_init(&d, &s, 4, (int[]){2, 2}, 2, 25e9, 10e-6, 0, err, sizeof err), 0);
    dcn_plat(&d, &s, &f, 1, &p); /* folded: a NIC per simulated chip, twice */
    assert_int_equal(p.rx_first, 4);
    assert_int_equal(p.nics, 8);
    assert_int_equal(dcn_nic(&d, &s, &f, 0, 3), 3);
    assert_int_equal(dcn_nic_rx(&d, &s, &f, 1, 0, 3), 7);
    dcn_plat(&d, &s, &s, 1, &p); /* every chip of the slice: a NIC per host (4 of them), twice */
    assert_int_equal(p.rx_first, 4);
    assert_int_equal(p.nics, 8);
    assert_int_equal(dcn_nic_rx(&d, &s, &s, 1, 0, 15), 4 + dcn_nic(&d, &s, &s, 0, 15));
    dcn_plat(&d, &s, &f, 2, &p); /* two slices: each receives on its own NICs */
    assert_int_equal(p.rx_first, 0);
    assert_int_equal(p.nics, 8);
    assert_int_equal(dcn_nic_rx(&d, &s, &f, 2, 1, 3), dcn_nic(&d, &s, &f, 1, 3));
}

/* A wrapped ring folded to an odd period keeps its wraparound: the period's chips are still
 * a ring (3 and 5 chips), a period of 2 is a pair (no wrap link), and a line does not fold. */
static void test_topo_fold_odd_period_keeps_wraparound(void **state)
{
    (void)state;
    struct topo q;
    struct topo six = mk(1, 6, 1, 1, true, false, false), ten = mk(1, 10, 1, 1, true, false, false);
    int p3[3] = {3, 1, 1}, p5[3] = {5, 1, 1}, p2[3] = {2, 1, 1};
    assert_int_equal(topo_fold(&six, p3, &q), 0);
    assert_true(q.wrap[0]);
    assert_int_equal(topo_hops(&q, 0, 2), 1); /* around the wrap link */
    assert_int_equal(topo_fold(&ten, p5, &q), 0);
    assert_true(q.wrap[0]);
    assert_int_equal(topo_hops(&q, 0, 4), 1);
    assert_int_equal(topo_fold(&six, p2, &q), 0);
    assert_false(q.wrap[0]);
    struct topo line = mk(1, 6, 1, 1, false, false, false);
    assert_int_equal(topo_fold(&line, p3, &q), -1);
}

static void test_topo_line_has_edges(void **state)
{
    (void)state;
    struct topo t = mk(1, 8, 1, 1, false, false, false);
    assert_int_equal(topo_neighbor(&t, 0, 0, -1), -1);
    assert_int_equal(topo_neighbor(&t, 7, 0, 1), -1);
    assert_int_equal(topo_hops(&t, 0, 7), 7);
    assert_int_equal(topo_axis_delta(&t, 0, 7, 0), -7);
}

static void test_topo_mixed_8x16_wraps_only_16_axis(void **state)
{
    (void)state;
    struct topo t = mk(2, 8, 16, 1, false, true, false);
    int c[3];
    topo_coords(&t, 8 * 15 + 7, c);
    assert_int_equal(c[0], 7);
    assert_int_equal(c[1], 15);
    /* (7,15) -> (0,0): 7 hops back on x (no wrap), 1 hop on y (wrap) */
    assert_int_equal(topo_hops(&t, 8 * 15 + 7, 0), 8);
    struct topo_hop h[16];
    int n = topo_route(&t, 8 * 15 + 7, 0, h);
    assert_int_equal(n, 8);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(h[i].axis, 0); /* dimension order: x first */
        assert_int_equal(h[i].dir, -1);
    }
    assert_int_equal(h[7].axis, 1);
    assert_int_equal(h[7].dir, 1); /* 15 -> 0 through the wrap link */
    assert_int_equal(h[7].to, 0);
}

static void test_topo_route_3d_dimension_order(void **state)
{
    (void)state;
    struct topo t = mk(3, 4, 4, 4, true, true, true);
    int a[3] = {0, 0, 0}, b[3] = {3, 2, 1};
    struct topo_hop h[12];
    int n = topo_route(&t, topo_rank(&t, a), topo_rank(&t, b), h);
    assert_int_equal(n, 1 + 2 + 1); /* x: 0->3 by wrap (1), y: 2, z: 1 */
    assert_int_equal(h[0].axis, 0);
    assert_int_equal(h[0].dir, -1);
    assert_int_equal(h[1].axis, 1);
    assert_int_equal(h[3].axis, 2);
    assert_int_equal(h[n - 1].to, topo_rank(&t, b));
}

/* Ties at distance L/2 follow SimGrid's TorusZone: up, except from L/2 itself. */
static void test_topo_tie_break_matches_simgrid(void **state)
{
    (void)state;
    struct topo t = mk(1, 16, 1, 1, true, false, false);
    assert_int_equal(topo_axis_delta(&t, 0, 0, 8), 8);
    assert_int_equal(topo_axis_delta(&t, 0, 12, 4), 8);
    assert_int_equal(topo_axis_delta(&t, 0, 8, 0), -8);
    assert_int_equal(topo_axis_delta(&t, 0, 10, 3), -7);
}

static void test_topo_sim_mapping_doubles_open_axes(void **state)
{
    (void)state;
    struct topo t = mk(2, 4, 16, 1, false, true, false);
    assert_int_equal(topo_sim_dim(&t, 0), 8);
    assert_int_equal(topo_sim_dim(&t, 1), 16);
    assert_int_equal(topo_sim_nodes(&t), 128);
    int c[2] = {3, 2};
    assert_int_equal(topo_sim_node(&t, topo_rank(&t, c)), 3 + 8 * 2);
}

static void test_plat_xml_torus_cluster(void **state)
{
    (void)state;
    struct topo t = mk(2, 4, 16, 1, false, true, false);
    struct plat_params p = {1, 197e12, 819e9, 45e9, 1e-6, 0, 0, NULL};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(plat_write_xml(f, &t, &p), 0);
    fclose(f);
    assert_non_null(strstr(buf, "topology=\"TORUS\" topo_parameters=\"8,16\""));
    assert_non_null(strstr(buf, "radical=\"0-127\""));
    assert_non_null(strstr(buf, "limiter_link=\"819000000000Bps\""));
    assert_non_null(strstr(buf, "sharing_policy=\"SPLITDUPLEX\""));
    assert_null(strstr(buf, "pcie")); /* no host_copy: no PCIe zone */
    free(buf);
}

/* A ring of 16 folded to 8 (topology/plat_dir.h): slice chip 0's transfer to
 * chip 4 goes up 4 hops and its transfer to chip 12 down 4; both land on fold
 * chip 4, which the fold routes up (a tie goes up, as in SimGrid): the second
 * takes port 1, whose route goes down 0 -> 7 -> 6 -> 5 -> 4, crossing the
 * limiters of 0, 7, 6, 5 and the down links into 7, 6, 5, 4 ("i<from>_0d" is
 * the down direction of the link from chip <from> to the next one up). A
 * transfer of 8 hops or more would go a whole fold round: none. */
static void test_plat_dir_keeps_direction(void **state)
{
    (void)state;
    struct topo t = mk(1, 16, 1, 1, true, false, false), q;
    int p8[3] = {8, 1, 1};
    assert_int_equal(topo_fold(&t, p8, &q), 0);
    assert_int_equal(plat_dir_flip(&t, &q, 1, 0, 4), 0);
    assert_int_equal(plat_dir_flip(&t, &q, 1, 0, 12), 1);
    /* from 5: fold chip 1 is up 4 through the fold's wrap (5 > 8/2): chip 9 is so, chip 1 not */
    assert_int_equal(plat_dir_flip(&t, &q, 1, 5, 9), 0);
    assert_int_equal(plat_dir_flip(&t, &q, 1, 5, 1), 1);
    assert_int_equal(plat_dir_flip(&t, &q, 0, 0, 12), -1); /* axis 0 has no ports */
    struct topo_hop h[16];
    assert_int_equal(plat_dir_route(&q, 0, 4, 1, h), 4);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(h[k].from, (8 - k) % 8);
        assert_int_equal(h[k].dir, -1);
    }
    struct plat_params p = {1, 197e12, 819e9, 45e9, 1e-6, 0, 0, NULL};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(plat_dir_write_xml(f, &q, 1, &p), 0);
    fclose(f);
    assert_non_null(strstr(buf, "<route src=\"chip0.p1\" dst=\"chip4\" symmetrical=\"NO\">"
                                "<link_ctn id=\"h0\"/><link_ctn id=\"i7_0d\"/>"
                                "<link_ctn id=\"h7\"/><link_ctn id=\"i6_0d\"/>"
                                "<link_ctn id=\"h6\"/><link_ctn id=\"i5_0d\"/>"
                                "<link_ctn id=\"h5\"/><link_ctn id=\"i4_0d\"/>"
                                "<link_ctn id=\"h4\"/></route>"));
    assert_non_null(strstr(buf, "<route src=\"chip0\" dst=\"chip4.p1\" symmetrical=\"NO\">"
                                "<link_ctn id=\"h0\"/><link_ctn id=\"i0_0u\"/>"));
    assert_int_equal(plat_dir_routes(&q, 1), 16 * 16);
    free(buf);
}

/* With a PCIe rate, the cluster sits beside a zone of two PCIe hosts per chip. */
static void test_plat_xml_pcie_zone(void **state)
{
    (void)state;
    struct topo t = mk(2, 2, 4, 1, true, true, false);
    struct plat_params p = {1, 197e12, 819e9, 45e9, 1e-6, 16e9, 0, NULL};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(plat_write_xml(f, &t, &p), 0);
    fclose(f);
    assert_non_null(strstr(buf, "<zone id=\"world\" routing=\"Full\">"));
    assert_non_null(strstr(buf, "<zone id=\"pcie\" routing=\"None\">"));
    assert_non_null(strstr(buf, "<host id=\"pcie_up7\" speed=\"16000000000f\"/>"));
    assert_non_null(strstr(buf, "<host id=\"pcie_down7\""));
    assert_null(strstr(buf, "pcie_up8"));
    char name[32];
    assert_string_equal(plat_pcie_host_name(3, true, name, sizeof name), "pcie_down3");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topo_ring_neighbors_wrap),
        cmocka_unit_test(test_plat_xml_pcie_zone),
        cmocka_unit_test(test_topo_line_has_edges),
        cmocka_unit_test(test_topo_fold_odd_period_keeps_wraparound),
        cmocka_unit_test(test_topo_chip_count_bounded),
        cmocka_unit_test(test_dcn_host_shape_tiles_the_slice),
        cmocka_unit_test(test_dcn_one_slice_receives_apart),
        cmocka_unit_test(test_topo_mixed_8x16_wraps_only_16_axis),
        cmocka_unit_test(test_topo_route_3d_dimension_order),
        cmocka_unit_test(test_topo_tie_break_matches_simgrid),
        cmocka_unit_test(test_topo_sim_mapping_doubles_open_axes),
        cmocka_unit_test(test_plat_xml_torus_cluster),
        cmocka_unit_test(test_plat_dir_keeps_direction),
    };
    return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
