/* tests/jsoncheck.c -- exits 0 if every argument is a file holding one valid
 * JSON value (RFC 8259, read with base/json.h), else prints why and exits 1. */
#include <stdio.h>

#include "base/json.h"

int main(int argc, char **argv)
{
    int bad = 0;
    for (int a = 1; a < argc; a++) {
        char why[512];
        struct json *j = json_read_file(argv[a], (size_t)1 << 31, why, sizeof why);
        if (!j) {
            fprintf(stderr, "invalid JSON: %s\n", why);
            bad = 1;
        }
        json_free(j);
    }
    return bad;
}
