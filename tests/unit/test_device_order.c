/* tests/unit/test_device_order.c -- jax's create_device_mesh on tpusim's
 * slices (workload/device_order.h): the tray orders of v5e/v6e and v5p, the
 * general rule on 2-D and 3-D tori, and the refusals. Each expected order is
 * derived by hand in its comment from jax/_src/mesh_utils.py's rules (chips
 * x fastest: chip = x + X·(y + Y·z)). (The same function agreed with jax
 * 0.10.2's create_device_mesh, called on fake TPU devices, on 752 slice and
 * mesh shapes of v4, v5e, v5p and v6e: every order, every refusal.) */
#include "test_util.h"

#include "base/diag.h"
#include "workload/device_order.h"

static int order(enum device_family f, int X, int Y, int Z, const int64_t *mesh, int nmesh,
                 int *chip_of, char *err)
{
    int shape[3] = {X, Y, Z};
    bool wrap[3] = {false, false, false};
    struct topo t;
    assert_int_equal(topo_init(&t, Z > 1 ? 3 : Y > 1 ? 2 : 1, shape, wrap), 0);
    return device_order_create_mesh(f, &t, mesh, nmesh, chip_of, err, 256);
}

static void test_trays(void **state)
{
    (void)state;
    int c[16];
    char err[256];
    /* v5e with 8 devices, any mesh shape: the tray ring (0, 1, 2, 3, 7, 6, 5, 4) */
    const int64_t m42[] = {4, 2};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 2, 4, 1, m42, 2, c, err), 0);
    const int ring8[] = {0, 1, 2, 3, 7, 6, 5, 4};
    assert_memory_equal(c, ring8, sizeof ring8);
    /* v5e 2x2: (0, 1, 3, 2) */
    const int64_t m4[] = {4};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 2, 2, 1, m4, 1, c, err), 0);
    const int ring4[] = {0, 1, 3, 2};
    assert_memory_equal(c, ring4, sizeof ring4);
    /* v5e 4x4, one axis of all 16: the ring around the 4x4 */
    const int64_t m16[] = {16};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 4, 4, 1, m16, 1, c, err), 0);
    const int ring16[] = {0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4};
    assert_memory_equal(c, ring16, sizeof ring16);
    /* v5p 2x2x2: (0, 1, 3, 2, 6, 7, 5, 4); v4 has no tray rule: the general
     * one, the 3 axes to the one mesh axis, z fastest: device 1 is chip
     * (0, 0, 1) = 4, device 2 chip (0, 1, 0) = 2, device 4 chip (1, 0, 0) = 1 */
    const int64_t m8[] = {8};
    assert_int_equal(order(DEVICE_FAMILY_V5P, 2, 2, 2, m8, 1, c, err), 0);
    const int v5p8[] = {0, 1, 3, 2, 6, 7, 5, 4};
    assert_memory_equal(c, v5p8, sizeof v5p8);
    assert_int_equal(order(DEVICE_FAMILY_OTHER, 2, 2, 2, m8, 1, c, err), 0);
    const int v4_8[] = {0, 4, 2, 6, 1, 5, 3, 7};
    assert_memory_equal(c, v4_8, sizeof v4_8);
}

static void test_general(void **state)
{
    (void)state;
    int c[64];
    char err[256];
    /* v5e 4x4 (physical 4x4x1), mesh (4, 4): the last axis first: no 3
     * physical axes multiply to 4, the pair (x, z) does (4 x 1); then y for
     * the first: transposed to (y, x, z), device d = 4y + x: chip d */
    const int64_t m44[] = {4, 4};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 4, 4, 1, m44, 2, c, err), 0);
    for (int d = 0; d < 16; d++)
        assert_int_equal(c[d], d);
    /* v4 4x4x4, mesh (16, 4): 4 is x; 16 the pair (y, z), z fastest: device
     * d = 16y + 4z + x runs on chip x + 4y + 16z: device 4 (z = 1) on chip
     * 16, device 16 (y = 1) on chip 4, device 5 on chip 17 */
    const int64_t m164[] = {16, 4};
    assert_int_equal(order(DEVICE_FAMILY_OTHER, 4, 4, 4, m164, 2, c, err), 0);
    assert_int_equal(c[1], 1);
    assert_int_equal(c[4], 16);
    assert_int_equal(c[16], 4);
    assert_int_equal(c[5], 17);
    /* v5p 4x4x4, mesh (64,): the three axes, z fastest: device 1 on chip
     * (0, 0, 1) = 16, device 4 on (0, 1, 0) = 4, device 16 on (1, 0, 0) = 1 */
    const int64_t m64[] = {64};
    assert_int_equal(order(DEVICE_FAMILY_V5P, 4, 4, 4, m64, 1, c, err), 0);
    assert_int_equal(c[1], 16);
    assert_int_equal(c[4], 4);
    assert_int_equal(c[16], 1);
}

static void test_refused(void **state)
{
    (void)state;
    int c[256];
    char err[256];
    /* 8 x 32 on a 16x16: no set of whole axes gives 32, the first laid out (jax needs
     * allow_split_physical_axes) */
    const int64_t m832[] = {8, 32};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 16, 16, 1, m832, 2, c, err), -1);
    assert_non_null(strstr(err, "mesh axis 1 of size 32 out only by splitting"));
    /* the sizes must multiply to the chips */
    const int64_t m43[] = {4, 3};
    assert_int_equal(order(DEVICE_FAMILY_V5E, 4, 4, 1, m43, 2, c, err), -1);
    assert_non_null(strstr(err, "multiply to the slice's 16 chips"));
}

/* TPUSIM_DEVICE_ORDER_CASES=FILE (make hlo-test writes it with jax,
 * tools/jax_device_order.py): each line "CHIP X Y Z SIZES ORDER" (or ERR)
 * must be what device_order_create_mesh gives. Without it, nothing. */
static void test_jax_cases(void **state)
{
    (void)state;
    const char *path = getenv("TPUSIM_DEVICE_ORDER_CASES");
    if (!path)
        return;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192], chip[16], sizes[64];
    int ncases = 0, agree = 0;
    int *c = calloc(4096, sizeof *c);
    while (fgets(line, sizeof line, f)) {
        int X, Y, Z, used = 0;
        assert_int_equal(sscanf(line, "%15s %d %d %d %63s %n", chip, &X, &Y, &Z, sizes, &used), 5);
        int64_t mesh[DEVICE_ORDER_MAX_AXES];
        int nmesh = 0;
        for (char *t = strtok(sizes, ","); t && nmesh < DEVICE_ORDER_MAX_AXES;
             t = strtok(NULL, ","))
            mesh[nmesh++] = atoll(t);
        char err[256];
        assert_true(X * Y * Z <= 4096);
        int rc = order(device_family_of(chip), X, Y, Z, mesh, nmesh, c, err);
        const char *want = line + used;
        bool ok = strncmp(want, "ERR", 3) == 0 ? rc != 0 : rc == 0;
        for (int d = 0; ok && rc == 0 && d < X * Y * Z; d++) {
            char *end;
            long v = strtol(want, &end, 10);
            ok = end != want && v == c[d];
            want = end;
        }
        if (!ok)
            fprintf(stderr, "differs from jax: %s", line);
        ncases++;
        agree += ok;
    }
    fclose(f);
    free(c);
    fprintf(stderr, "device order: %d of %d slice and mesh shapes as jax lays them out\n", agree,
            ncases);
    assert_true(ncases > 0);
    assert_int_equal(agree, ncases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trays),
        cmocka_unit_test(test_general),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_jax_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
