/* base/json.c -- the one JSON writer rule and a small RFC 8259 reader. */
#include "base/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"


struct jp {
    const char *s;
    size_t i, n;
    int line;
    char *err;
    size_t errn;
    bool failed;
};

static void jp_fail(struct jp *p, const char *what)
{
    if (!p->failed)
        snprintf(p->err, p->errn, "line %d: %s", p->line, what);
    p->failed = true;
}

static void jp_ws(struct jp *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i])) {
        if (p->s[p->i] == '\n')
            p->line++;
        p->i++;
    }
}

static struct json *jnew(enum json_type t)
{
    struct json *j = xcalloc(1, sizeof *j);
    j->type = t;
    return j;
}

/* Appends 'kid' (and its member name 'key'): the arrays double, so a summary
 * of 50k ops is read in linear time whatever the allocator's realloc does. */
static void jadd(struct json *j, char *key, struct json *kid)
{
    size_t cap = j->cap;
    xgrow(&j->kids, &j->cap, (size_t)j->n + 1, sizeof *j->kids);
    if (j->type == JSON_OBJ) {
        xgrow(&j->keys, &cap, (size_t)j->n + 1, sizeof *j->keys);
        j->keys[j->n] = key;
    }
    j->kids[j->n++] = kid;
}

/* The length (1-4) of the valid UTF-8 sequence at 's' (at most 'n' bytes),
 * or 0: a stray tail byte, a lead byte without its tail, an overlong form,
 * a UTF-16 surrogate or a code point past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (!n)
        return 0;
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
                 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                                : 0;
    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (s[0] == 0xe0)
        lo = 0xa0; /* overlong */
    else if (s[0] == 0xed)
        hi = 0x9f; /* surrogates */
    else if (s[0] == 0xf0)
        lo = 0x90; /* overlong */
    else if (s[0] == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    return s[1] >= lo && s[1] <= hi ? len : 0;
}

size_t json_utf8_seq(const char *s, size_t n)
{
    return utf8_seq((const unsigned char *)s, n);
}

static void put_utf8(char *out, size_t *o, unsigned long c)
{
    if (c < 0x80) {
        out[(*o)++] = (char)c;
    } else if (c < 0x800) {
        out[(*o)++] = (char)(0xc0 | c >> 6);
        out[(*o)++] = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out[(*o)++] = (char)(0xe0 | c >> 12);
        out[(*o)++] = (char)(0x80 | (c >> 6 & 0x3f));
        out[(*o)++] = (char)(0x80 | (c & 0x3f));
    } else {
        out[(*o)++] = (char)(0xf0 | c >> 18);
        out[(*o)++] = (char)(0x80 | (c >> 12 & 0x3f));
        out[(*o)++] = (char)(0x80 | (c >> 6 & 0x3f));
        out[(*o)++] = (char)(0x80 | (c & 0x3f));
    }
}

static int hex4(struct jp *p, unsigned long *c)
{
    if (p->n - p->i < 4)
        return -1;
    char h[5] = {0};
    memcpy(h, p->s + p->i, 4);
    char *end;
    *c = strtoul(h, &end, 16);
    p->i += 4;
    return *end ? -1 : 0;
}

static int jp_escape(struct jp *p, char *out, size_t *o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char e = p->s[p->i++];
    const char *k = e ? strchr(from, e) : NULL;
    if (k) {
        out[(*o)++] = to[k - from];
        return 0;
    }
    unsigned long c, lo;
    if (e != 'u' || hex4(p, &c))
        return -1;
    if (c >= 0xd800 && c < 0xdc00) {
        if (p->n - p->i < 6 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
            return -1;
        p->i += 2;
        if (hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return -1;
        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
    } else if (c >= 0xdc00 && c <= 0xdfff) {
        return -1; /* a low surrogate alone */
    }
    put_utf8(out, o, c);
    return 0;
}

static char *jp_string(struct jp *p)
{
    p->i++; /* the opening quote */
    size_t cap = 16, o = 0;
    char *out = xmalloc(cap);
    while (p->i < p->n && p->s[p->i] != '"') {
        xgrow(&out, &cap, o + 8, 1);
        char c = p->s[p->i++];
        if ((unsigned char)c < 0x20) {
            jp_fail(p, "control character in a string");
            break;
        }
        size_t len = (unsigned char)c < 0x80 ? 1 : utf8_seq((const unsigned char *)p->s + p->i - 1,
                                                            p->n - p->i + 1);
        if (!len) {
            jp_fail(p, "a string that is not UTF-8");
            break;
        }
        if (len > 1) {
            xgrow(&out, &cap, o + len + 8, 1);
            memcpy(out + o, p->s + p->i - 1, len);
            o += len;
            p->i += len - 1;
        } else if (c != '\\')
            out[o++] = c;
        else if (p->i >= p->n || jp_escape(p, out, &o) != 0) {
            jp_fail(p, "bad escape in a string");
            break;
        }
    }
    if (p->i >= p->n)
        jp_fail(p, "unterminated string");
    p->i++;
    out[o] = '\0';
    if (p->failed) {
        free(out);
        return NULL;
    }
    return out;
}

static struct json *jp_value(struct jp *p, int depth);

static struct json *jp_container(struct jp *p, int depth, bool obj)
{
    struct json *j = jnew(obj ? JSON_OBJ : JSON_ARR);
    char close = obj ? '}' : ']';
    p->i++;
    jp_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return j;
    }
    while (!p->failed) {
        char *key = NULL;
        if (obj) {
            jp_ws(p);
            if (p->i >= p->n || p->s[p->i] != '"' || !(key = jp_string(p))) {
                jp_fail(p, "expected a member name");
                break;
            }
            jp_ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':') {
                free(key);
                jp_fail(p, "expected ':'");
                break;
            }
        }
        struct json *v = jp_value(p, depth + 1);
        if (!v) {
            free(key);
            break;
        }
        jadd(j, key, v);
        jp_ws(p);
        char c = p->i < p->n ? p->s[p->i++] : '\0';
        if (c == close)
            return j;
        if (c != ',')
            jp_fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    json_free(j);
    return NULL;
}

static struct json *jp_scalar(struct jp *p)
{
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t k = strlen(words[w]);
        if (p->n - p->i >= k && !strncmp(p->s + p->i, words[w], k)) {
            p->i += k;
            struct json *j = jnew(w == 2 ? JSON_NULL : JSON_BOOL);
            j->b = w == 0;
            return j;
        }
    }
    size_t k = 0;
    char buf[64];
    while (p->i + k < p->n && k < sizeof buf - 1 && strchr("+-0123456789.eE", p->s[p->i + k]))
        buf[k] = p->s[p->i + k], k++;
    buf[k] = '\0';
    char *end;
    double v = k ? strtod(buf, &end) : 0;
    if (!k || *end) {
        jp_fail(p, "expected a value");
        return NULL;
    }
    p->i += k;
    struct json *j = jnew(JSON_NUM);
    j->num = v;
    return j;
}

static struct json *jp_value(struct jp *p, int depth)
{
    jp_ws(p);
    if (depth > 64) {
        jp_fail(p, "nested too deeply");
        return NULL;
    }
    if (p->i >= p->n) {
        jp_fail(p, "unexpected end of input");
        return NULL;
    }
    char c = p->s[p->i];
    if (c == '{' || c == '[')
        return jp_container(p, depth, c == '{');
    if (c == '"') {
        char *s = jp_string(p);
        if (!s)
            return NULL;
        struct json *j = jnew(JSON_STR);
        j->str = s;
        return j;
    }
    return jp_scalar(p);
}

struct json *json_parse(const char *text, size_t len, char *err, size_t errn)
{
    struct jp p = {text, 0, len, 1, err, errn, false};
    struct json *j = jp_value(&p, 0);
    jp_ws(&p);
    if (j && p.i < p.n) {
        jp_fail(&p, "trailing characters after the value");
        json_free(j);
        return NULL;
    }
    return j;
}

struct json *json_read_file(const char *path, size_t max_bytes, char *err, size_t errn)
{
    size_t n;
    char *buf = fs_read_all(path, max_bytes, &n);
    if (!buf) {
        char why[128];
        fs_read_error(errno, max_bytes, why, sizeof why);
        snprintf(err, errn, "%s: %s", path, why);
        return NULL;
    }
    char why[256];
    struct json *j = json_parse(buf, n, why, sizeof why);
    if (!j)
        snprintf(err, errn, "%s: %s", path, why);
    free(buf);
    return j;
}

void json_free(struct json *j)
{
    if (!j)
        return;
    for (int i = 0; i < j->n; i++) {
        if (j->keys)
            free(j->keys[i]);
        json_free(j->kids[i]);
    }
    free(j->keys);
    free(j->kids);
    free(j->str);
    free(j);
}

const struct json *json_get(const struct json *o, const char *key)
{
    for (int i = 0; o && o->type == JSON_OBJ && i < o->n; i++)
        if (!strcmp(o->keys[i], key))
            return o->kids[i];
    return NULL;
}

double json_num(const struct json *o, const char *key, double dflt)
{
    const struct json *v = json_get(o, key);
    return v && v->type == JSON_NUM ? v->num : dflt;
}

const char *json_str(const struct json *o, const char *key, const char *dflt)
{
    const struct json *v = json_get(o, key);
    return v && v->type == JSON_STR ? v->str : dflt;
}

void json_write_string(FILE *f, const char *s)
{
    s = s ? s : "";
    size_t plain = 0; /* the common case, nothing to escape: one write */
    while (s[plain] && s[plain] != '"' && s[plain] != '\\' && (unsigned char)s[plain] >= 0x20 &&
           (unsigned char)s[plain] < 0x80)
        plain++;
    if (!s[plain]) {
        fputc('"', f);
        fwrite(s, 1, plain, f);
        fputc('"', f);
        return;
    }
    fputc('"', f);
    const unsigned char *c = (const unsigned char *)s;
    size_t left = strlen(s);
    while (*c) {
        size_t len = utf8_seq(c, left);
        if (len > 1)
            fwrite(c, 1, len, f);
        else if (!len)
            fputs("\\ufffd", f); /* a byte that is not UTF-8 (a file name's): U+FFFD */
        else if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
        len = len ? len : 1;
        c += len;
        left -= len;
    }
    fputc('"', f);
}

char *json_fmt_num(char *buf, size_t n, double v, char conv, int prec)
{
    if (!isfinite(v))
        snprintf(buf, n, "null");
    else if (conv == 'f' && fabs(v) < 1e20) /* (larger: hundreds of digits, as 'e') */
        snprintf(buf, n, "%.*f", prec, v);
    else if (conv == 'f' || conv == 'e')
        snprintf(buf, n, "%.*e", prec, v);
    else
        snprintf(buf, n, "%.*g", prec, v);
    return buf;
}
