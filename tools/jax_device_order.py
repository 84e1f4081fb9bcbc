"""tools/jax_device_order.py OUT -- the device orders jax's create_device_mesh gives
on TPU slices, written as cases for tests/unit/test_device_order.c
(TPUSIM_DEVICE_ORDER_CASES=OUT): one line per slice and mesh shape,
"CHIP X Y Z SIZES CHIP_OF..." (SIZES comma-separated; CHIP_OF the chip, x fastest,
of each device of the mesh in row-major order) or "... ERR" where jax refuses the
mesh (NotImplementedError: it would split a physical axis). jax is called on fake
TPU devices (device_kind, coords, core_on_chip), as it reads them; `make hlo-test`
runs it in its jax venv."""
import itertools
import sys

from jax._src import mesh_utils  # the module create_device_mesh lives in

KINDS = {"v4": "TPU v4", "v5e": "TPU v5 lite", "v5p": "TPU v5p", "v6e": "TPU v6 lite"}
SLICES = {
    "v5e": [(2, 2, 1), (2, 4, 1), (4, 2, 1), (4, 4, 1), (4, 8, 1), (8, 8, 1), (8, 16, 1), (16, 16, 1)],
    "v6e": [(2, 2, 1), (4, 4, 1), (16, 16, 1)],
    "v5p": [(2, 2, 1), (2, 2, 2), (2, 2, 4), (4, 4, 4), (4, 4, 8), (4, 8, 8), (8, 8, 8)],
    "v4": [(2, 2, 1), (2, 2, 2), (2, 2, 4), (4, 4, 4), (4, 4, 8), (8, 8, 8)],
}


class Device:
    def __init__(self, kind, x, y, z, X, Y):
        self.device_kind, self.coords, self.core_on_chip = kind, (x, y, z), 0
        self.platform, self.id = "tpu", x + X * (y + Y * z)


def meshes(n):
    """Every mesh shape of 1 to 3 power-of-2 sizes whose product is n."""
    sizes = [2 ** k for k in range(10)]
    for k in (1, 2, 3):
        for m in itertools.product(sizes, repeat=k):
            p = 1
            for v in m:
                p *= v
            if p == n:
                yield m


def main():
    with open(sys.argv[1], "w") as out:
        for chip, shapes in SLICES.items():
            for X, Y, Z in shapes:
                devs = [Device(KINDS[chip], x, y, z, X, Y)
                        for z in range(Z) for y in range(Y) for x in range(X)]
                for m in meshes(X * Y * Z):
                    try:
                        got = " ".join(str(d.id) for d in mesh_utils.create_device_mesh(m, devs).flat)
                    except NotImplementedError:
                        got = "ERR"
                    out.write("%s %d %d %d %s %s\n" % (chip, X, Y, Z, ",".join(map(str, m)), got))


if __name__ == "__main__":
    main()
