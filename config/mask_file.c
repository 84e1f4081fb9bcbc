/* config/mask_file.c -- masks from files (text or .npy) for splash attention
 * and `tpusim maskinfo` (see config/mask_file.h). File I/O stays up here; the
 * mask itself is a kernels/maskinfo.h MASK_DENSE. Uses base/ and kernels/. */
#include "config/mask_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/fsutil.h"
#include "base/xalloc.h"

/* Reads all of 'path' (at most MASK_FILE_MAX_BYTES); NULL with "path: why" in 'err'. */
static uint8_t *read_all(const char *path, size_t *size, char *err, size_t n)
{
    uint8_t *buf = (uint8_t *)fs_read_all(path, MASK_FILE_MAX_BYTES, size);
    if (!buf) {
        char why[128];
        fs_read_error(errno, MASK_FILE_MAX_BYTES, why, sizeof why);
        diag_fail(err, n, "%s: %s", path, why);
    }
    return buf;
}

static const char *next_line(const char **p, const char *end, size_t *len)
{
    if (*p >= end)
        return NULL;
    const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    const char *e = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *len = (size_t)(e - s);
    return s;
}

static struct mask *load_text(const char *path, const char *buf, size_t size, char *err, size_t n)
{
    const char *p = buf, *end = buf + size, *line;
    size_t len;
    long long q = 0, k = 0;
    int used = 0;
    line = next_line(&p, end, &len);
    if (!line || sscanf(line, "%lld %lld%n", &q, &k, &used) != 2 || (size_t)used != len || q < 1 ||
        k < 1) {
        diag_fail(err, n, "%s:1: expected a first line \"Q K\" with two positive integers", path);
        return NULL;
    }
    if ((unsigned long long)k > size / (unsigned long long)q) { /* Q rows of K characters */
        diag_fail(err, n,
                  "%s:1: expected a first line \"Q K\" that the file can hold, got %lld x %lld "
                  "in %zu bytes", path, q, k, size);
        return NULL;
    }
    struct mask *m = mask_new_dense(q, k, NULL);
    for (long long i = 0; i < q; i++) {
        line = next_line(&p, end, &len);
        if (!line || len != (size_t)k || strspn(line, "01") < len) {
            diag_fail(err, n, "%s:%lld: expected %lld characters '0' or '1'%s", path, i + 2, k,
                      line ? "" : ", got end of file");
            mask_free(m);
            return NULL;
        }
        for (long long j = 0; j < k; j++)
            m->dense[i * k + j] = line[j] == '1';
    }
    for (long long ln = q + 2; (line = next_line(&p, end, &len)) != NULL; ln++) {
        if (len) {
            diag_fail(err, n, "%s:%lld: unexpected data after %lld rows", path, ln, q);
            mask_free(m);
            return NULL;
        }
    }
    return m;
}

/* Finds "'key':" in the .npy header dictionary and returns what follows it. */
static const char *npy_field(const char *hdr, const char *key)
{
    const char *s = strstr(hdr, key);
    if (!s)
        return NULL;
    s += strlen(key);
    while (*s == ' ')
        s++;
    if (*s != ':')
        return NULL;
    s++;
    while (*s == ' ')
        s++;
    return s;
}

/* Parses the header dictionary: dtype b1/u1, fortran_order, 2-D shape. */
static bool npy_header(const char *hdr, bool *fortran, long long *q, long long *k, const char **why)
{
    const char *d = npy_field(hdr, "'descr'");
    const char *f = npy_field(hdr, "'fortran_order'");
    const char *s = npy_field(hdr, "'shape'");
    if (!d || !f || !s) {
        *why = "malformed header";
        return false;
    }
    if (*d == '\'' && d[1] && strchr("|<>=", d[1]))
        d++;
    if (strncmp(d + 1, "b1'", 3) != 0 && strncmp(d + 1, "u1'", 3) != 0) {
        *why = "dtype must be bool ('|b1') or uint8 ('|u1')";
        return false;
    }
    *fortran = strncmp(f, "True", 4) == 0;
    int used = 0;
    if (sscanf(s, "(%lld ,%lld )%n", q, k, &used) != 2 || used == 0 || *q < 1 || *k < 1) {
        *why = "expected a 2-D array with a non-empty shape";
        return false;
    }
    return true;
}

static struct mask *load_npy(const char *path, const uint8_t *buf, size_t size, char *err, size_t n)
{
    size_t hlen = 0, start = 0;
    if (size >= 10 && buf[6] == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        start = 10;
    } else if (size >= 12 && (buf[6] == 2 || buf[6] == 3)) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    }
    if (!start || hlen > size - start) {
        diag_fail(err, n, "%s: unsupported or truncated .npy header", path);
        return NULL;
    }
    char *hdr = xmalloc(hlen + 1);
    memcpy(hdr, buf + start, hlen);
    hdr[hlen] = '\0';
    bool fortran = false;
    long long q = 0, k = 0;
    const char *why = NULL;
    bool ok = npy_header(hdr, &fortran, &q, &k, &why);
    free(hdr);
    if (!ok) {
        diag_fail(err, n, "%s: %s", path, why);
        return NULL;
    }
    const uint8_t *data = buf + start + hlen;
    if ((unsigned long long)q > (size - start - hlen) / (unsigned long long)k) {
        diag_fail(err, n, "%s: file holds fewer than %lld x %lld bytes of data", path, q, k);
        return NULL;
    }
    struct mask *m = mask_new_dense(q, k, NULL);
    for (long long i = 0; i < q; i++) {
        for (long long j = 0; j < k; j++) {
            uint8_t v = data[fortran ? j * q + i : i * k + j];
            if (v > 1) {
                diag_fail(err, n, "%s: element (%lld, %lld) is %u, expected 0 or 1", path, i, j, v);
                mask_free(m);
                return NULL;
            }
            m->dense[i * k + j] = v;
        }
    }
    return m;
}

struct mask *mask_load_file(const char *path, char *err, size_t n)
{
    size_t size = 0;
    uint8_t *buf = read_all(path, &size, err, n);
    if (!buf)
        return NULL;
    struct mask *m;
    if (size >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0)
        m = load_npy(path, buf, size, err, n);
    else
        m = load_text(path, (const char *)buf, size, err, n);
    free(buf);
    return m;
}
