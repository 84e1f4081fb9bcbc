/* models/chip.c -- dtype helpers and derived chip numbers. */
#include "models/chip.h"

#include <string.h>

int dtype_bytes(enum dtype dt)
{
    switch (dt) {
    case DT_BF16:
        return 2;
    case DT_INT8:
    case DT_FP8:
        return 1;
    case DT_F32:
    case DT_INT32:
    case DT_COUNT:
        break;
    }
    return 4;
}

const char *dtype_name(enum dtype dt)
{
    static const char *const names[DT_COUNT] = {"bf16", "f32", "int8", "fp8", "int32"};
    return dt < DT_COUNT ? names[dt] : "?";
}

int dtype_parse(const char *s, enum dtype *dt)
{
    static const struct {
        const char *name;
        enum dtype dt;
    } tab[] = {{"bf16", DT_BF16},  {"bfloat16", DT_BF16}, {"f32", DT_F32},   {"float32", DT_F32},
               {"int8", DT_INT8},  {"s8", DT_INT8},       {"fp8", DT_FP8},   {"int32", DT_INT32},
               {"i32", DT_INT32}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(s, tab[i].name) == 0) {
            *dt = tab[i].dt;
            return 0;
        }
    }
    return -1;
}

int chip_sublane_tiling(const struct chip_params *chip, enum dtype dt)
{
    int bits = 8 * dtype_bytes(dt);
    int base = chip->vpu_sublanes;
    return bits < chip->vpu_packing_below_bits ? base * (32 / bits) : base;
}

double chip_mxu_hz(const struct chip_params *chip)
{
    double d = chip->mxu_dim;
    return chip->peak_flops[DT_BF16] / (2.0 * d * d * chip->mxu_count);
}
