/* tests/unit/test_util.h -- shared test includes and fixtures. */
#ifndef TPUSIM_TESTS_TEST_UTIL_H
#define TPUSIM_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#endif
