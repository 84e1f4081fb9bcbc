/* tests/unit/test_mesh.c -- logical meshes on tori (jax's placement rule and
 * the split one), collective groups, and collectives over mesh axes. */
#include "test_util.h"

#include "sim_fork.h"
#include "topology/mesh.h"

static struct topo torus(int nd, int x, int y, int z, bool wrap)
{
    struct topo t;
    int shape[3] = {x, y, z};
    bool w[3] = {wrap, wrap, wrap};
    assert_int_equal(topo_init(&t, nd, shape, w), 0);
    return t;
}

static struct mesh mesh2(const char *a, int sa, const char *b, int sb)
{
    struct mesh m;
    memset(&m, 0, sizeof m);
    m.naxes = 2;
    snprintf(m.axis[0].name, MESH_NAME_MAX, "%s", a);
    m.axis[0].size = sa;
    snprintf(m.axis[1].name, MESH_NAME_MAX, "%s", b);
    m.axis[1].size = sb;
    return m;
}

static void expect_factor(const struct mesh_axis *a, int k, int phys, int stride, int extent)
{
    assert_true(k < a->nfactors);
    assert_int_equal(a->f[k].phys, phys);
    assert_int_equal(a->f[k].stride, stride);
    assert_int_equal(a->f[k].extent, extent);
}

/* jax's create_device_mesh: the last logical axis first, on the first set
 * of whole physical axes whose product is its size. */
static void test_layout_whole_axes(void **state)
{
    (void)state;
    char err[256];
    struct topo t = torus(3, 4, 4, 4, true);
    struct mesh m = mesh2("fsdp", 16, "tensor", 4);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), 0);
    assert_int_equal(m.axis[1].nfactors, 1);
    expect_factor(&m.axis[1], 0, 0, 1, 4); /* tensor takes x */
    assert_int_equal(m.axis[0].nfactors, 2);
    expect_factor(&m.axis[0], 0, 1, 1, 4); /* fsdp takes (y, z) */
    expect_factor(&m.axis[0], 1, 2, 1, 4);
    t = torus(3, 4, 4, 8, true);
    m = mesh2("fsdp", 16, "tensor", 8);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), 0);
    expect_factor(&m.axis[1], 0, 2, 1, 8); /* tensor takes z, the only axis of 8 */
}

/* No whole axis fits: the innermost part of a physical axis (neighbours). */
static void test_layout_split(void **state)
{
    (void)state;
    char err[256];
    struct topo t = torus(2, 16, 16, 1, true);
    struct mesh m = mesh2("fsdp", 64, "tensor", 4);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), 0);
    expect_factor(&m.axis[1], 0, 0, 1, 4);
    expect_factor(&m.axis[0], 0, 0, 4, 4); /* the rest of x, every 4th chip */
    expect_factor(&m.axis[0], 1, 1, 1, 16);
    /* groups: tensor is a line of 4 neighbours, fsdp a 4x16 torus */
    struct topo g;
    int tensor[1] = {1}, fsdp[1] = {0};
    assert_int_equal(mesh_group(&m, &t, tensor, 1, &g), 0);
    assert_int_equal(g.ndims, 1);
    assert_int_equal(g.shape[0], 4);
    assert_false(g.wrap[0]);
    assert_int_equal(mesh_group(&m, &t, fsdp, 1, &g), 0);
    assert_int_equal(g.ndims, 2);
    assert_true(g.wrap[0] && g.wrap[1]);
    /* chip (6, 3): tensor rank 2; its group's rank 0 is (4, 3) */
    int chip = 6 + 16 * 3;
    assert_int_equal(mesh_group_rank(&m, &t, tensor, 1, chip), 2);
    assert_int_equal(mesh_group_chip(&m, &t, tensor, 1, chip, 0), 4 + 16 * 3);
    /* fsdp rank of (6, 3): x factor (6/4)%4 = 1, y 3 -> 1 + 4*3 */
    assert_int_equal(mesh_group_rank(&m, &t, fsdp, 1, chip), 13);
    assert_int_equal(mesh_group_chip(&m, &t, fsdp, 1, chip, 13), chip);
    assert_int_equal(mesh_group_chip(&m, &t, fsdp, 1, chip, 0), 2 + 0);
    /* reach: tensor neighbours 1 hop, groups repeat every 4 chips; fsdp 4 hops apart */
    int hops[3] = {0, 0, 0}, period[3] = {1, 1, 1};
    mesh_reach(&m, &t, tensor, 1, hops, period);
    assert_int_equal(hops[0], 1);
    assert_int_equal(period[0], 4);
    mesh_reach(&m, &t, fsdp, 1, hops, period);
    assert_int_equal(hops[0], 4);
    assert_int_equal(hops[1], 1);
    assert_int_equal(period[1], 1);
}

/* Placed explicitly with the factors the automatic layout chose (what
 * `tpusim expand` prints), a mesh lays out as it did: on a v5p 8x8x8, fsdp 32
 * x tensor 16 puts tensor on x (8) and the innermost 2 of y (stride 1), fsdp
 * on the rest of y (every 2nd chip) and z. Taken in written order, fsdp took
 * y's innermost 4 and tensor's pair of y stood 4 chips apart. */
static void test_layout_placed_as_printed(void **state)
{
    (void)state;
    char err[256];
    struct topo t = torus(3, 8, 8, 8, true);
    struct mesh m = mesh2("fsdp", 32, "tensor", 16);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), 0);
    expect_factor(&m.axis[1], 0, 0, 1, 8);
    expect_factor(&m.axis[1], 1, 1, 1, 2);
    expect_factor(&m.axis[0], 0, 1, 2, 4);
    expect_factor(&m.axis[0], 1, 2, 1, 8);
    struct mesh p = m;
    for (int i = 0; i < 2; i++) {
        p.axis[i].placed = true;
        for (int k = 0; k < p.axis[i].nfactors; k++)
            p.axis[i].f[k].stride = 0;
    }
    assert_int_equal(mesh_layout(&p, &t, err, sizeof err), 0);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < m.axis[i].nfactors; k++)
            expect_factor(&p.axis[i], k, m.axis[i].f[k].phys, m.axis[i].f[k].stride,
                          m.axis[i].f[k].extent);
}

static void test_layout_errors(void **state)
{
    (void)state;
    char err[256];
    struct topo t = torus(2, 16, 16, 1, true);
    struct mesh m = mesh2("fsdp", 64, "tensor", 8);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), -1);
    assert_string_equal(err, "expected axes whose sizes multiply to the topology's 256 chips, got 512 (fsdp 64 x tensor 8)");
    m = mesh2("fsdp", 32, "tensor", 8);
    m.axis[1].placed = true;
    m.axis[1].nfactors = 1;
    m.axis[1].f[0] = (struct mesh_factor){0, 1, 3};
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), -1);
    assert_string_equal(err, "3 chips do not fit the 16 left on physical axis 0");
}

/* A collective over a mesh axis runs within each group: tensor 4 is a line
 * of 4 neighbours, so its all-gather takes what it takes on a slice that is a
 * line of 4 (within 4 % of (4 - 1) shards / the link bandwidth: the line's
 * fill), the same folded or on every chip. */
static void test_collective_over_groups(void **state)
{
    (void)state;
    static const char *const ideal[] = {"chip.ici.efficiency=1", "chip.ici.hop_latency=0us",
                                        "chip.ici.step_latency=0us",
                                        "chip.ici.collective_latency=0us",
                                        "chip.tensorcore.dma_latency=0us",
                                        "options.all_chips=false"};
    const char *y = "chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {fsdp: 64, tensor: 4}\n"
                    "workload:\n  - {op: all_gather, name: ag, bytes: 8MiB, groups: [tensor]}\n"
                    "  - {op: reduce_scatter, name: rs, bytes: 16MiB, groups: [fsdp]}\n";
    struct result fold = run(y, ideal, 6);
    const char *all[6];
    memcpy(all, ideal, sizeof all);
    all[5] = "options.all_chips=true";
    struct result full = run(y, all, 6);
    assert_int_equal(fold.rc, 0);
    assert_int_equal(full.rc, 0);
    struct result line = run("chip: v5e\ntopology: {shape: [4]}\nworkload:\n"
                             "  - {op: all_gather, name: ag, bytes: 8MiB, axes: [0]}\n",
                             ideal, 5);
    assert_int_equal(line.rc, 0);
    assert_true(fabs(fold.time[0] - line.time[0]) <= 1e-9 * line.time[0]);
    double want = 3 * 8388608.0 / 45e9;
    if (fabs(fold.time[0] - want) > 0.04 * want) {
        print_error("all-gather over tensor: %.9g s, want %.9g s\n", fold.time[0], want);
        fail();
    }
    for (int i = 0; i < 2; i++)
        assert_true(fabs(fold.time[i] - full.time[i]) <= 1e-9 * full.time[i]);
    assert_true(fold.ici[0] == full.ici[0]);
}

static void expect_load_error(const char *yaml, const char *want)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(cfg_load_scenario_text(yaml, strlen(yaml), "m.yaml", NULL, 0, &sc, d), -1);
    const char *got = diag_count(d) ? diag_message(d, 0) : "";
    if (!strstr(got, want)) {
        print_error("got \"%s\", want \"%s\"\n", got, want);
        fail();
    }
    diag_free(d);
}

static void test_group_errors(void **state)
{
    (void)state;
    expect_load_error("chip: v5e\ntopology: {shape: [16, 16]}\nworkload:\n"
                      "  - {op: all_gather, bytes: 1MiB, groups: [tensor]}\n",
                      "m.yaml:4:5: workload.0: groups: needs a mesh");
    expect_load_error("chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {fsdp: 64, tensor: 4}\n"
                      "workload:\n  - {op: all_gather, bytes: 1MiB, groups: [tensro]}\n",
                      "groups: the mesh has no axis 'tensro'");
    expect_load_error("chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {fsdp: 64, tensor: 8}\n"
                      "workload:\n  - {op: all_gather, bytes: 1MiB, groups: [tensor]}\n",
                      "m.yaml:3:7: mesh: expected axes whose sizes multiply to the topology's 256 chips, got 512");
    expect_load_error("chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {fsdp: 64, tensor: 4}\n"
                      "workload:\n  - {op: all_gather, bytes: 1MiB, groups: [tensor], axes: [0]}\n",
                      "either axes: (physical axes) or groups: (mesh axes), not both");
}

/* Multislice: one axis takes the slices as its outer factor (create_hybrid_
 * device_mesh): 'data' by default, else the first axis they divide, or the
 * axis written with dcn:; its part within the slice is laid out as usual. */
static void test_slices_axis(void **state)
{
    (void)state;
    struct topo t = torus(2, 16, 16, 1, true);
    char err[256];
    struct mesh m = mesh2("data", 4, "fsdp", 128); /* data 4 over 2 slices: 2 in each */
    assert_int_equal(mesh_place_slices(&m, 256, 2, err, sizeof err), 0);
    assert_int_equal(m.axis[0].dcn, 2);
    assert_int_equal(mesh_layout(&m, &t, err, sizeof err), 0);
    assert_int_equal(m.axis[0].nfactors, 1); /* 2 chips of the slice for data */
    int ax = 0;
    assert_true(mesh_axes_dcn(&m, &ax, 1));
    ax = 1;
    assert_false(mesh_axes_dcn(&m, &ax, 1));
    m = mesh2("fsdp", 256, "tensor", 2); /* no data: the first axis the slices divide */
    assert_int_equal(mesh_place_slices(&m, 256, 2, err, sizeof err), 0);
    assert_int_equal(m.axis[0].dcn, 2);
    m = mesh2("fsdp", 256, "tensor", 2);
    m.axis[1].dcn = 2; /* written: tensor: {size: 2, dcn: 2} */
    assert_int_equal(mesh_place_slices(&m, 256, 2, err, sizeof err), 0);
    assert_int_equal(m.axis[0].dcn, 0);
    assert_int_equal(m.axis[1].dcn, 2);
    m = mesh2("data", 3, "fsdp", 256); /* 768 chips: not 2 x 256 */
    assert_int_equal(mesh_place_slices(&m, 256, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "multiply to the 512 chips of 2 slices of 256, got 768"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_whole_axes),
        cmocka_unit_test(test_layout_split),
        cmocka_unit_test(test_layout_placed_as_printed),
        cmocka_unit_test(test_layout_errors),
        cmocka_unit_test(test_collective_over_groups),
        cmocka_unit_test(test_group_errors),
        cmocka_unit_test(test_slices_axis),
    };
    return cmocka_run_group_tests_name("mesh", tests, NULL, NULL);
}
