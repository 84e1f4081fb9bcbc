/* base/sat.h -- saturating integer arithmetic for products and sums of user
 * numbers (repeat counts, shapes, grids, bytes). A result that does not fit
 * becomes INT64_MAX (or INT64_MIN), so a limit compared against it refuses
 * it instead of seeing a wrapped, small or negative value. */
#ifndef TPUSIM_BASE_SAT_H
#define TPUSIM_BASE_SAT_H

#include <stdint.h>

/* a * b, saturated at INT64_MAX / INT64_MIN. */
static inline int64_t sat_mul64(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

/* a + b, saturated at INT64_MAX / INT64_MIN. */
static inline int64_t sat_add64(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return a < 0 ? INT64_MIN : INT64_MAX;
    return r;
}

/* a * b for sizes, saturated at UINT64_MAX. */
static inline uint64_t sat_mulu64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* a + b for sizes, saturated at UINT64_MAX. */
static inline uint64_t sat_addu64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
