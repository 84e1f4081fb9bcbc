/* base/json.h -- the one JSON string writer and a small RFC 8259 reader.
 * Every JSON file tpusim writes escapes strings with json_write_string (one
 * rule: \" \\ \n \t, other control characters as \u00XX, a byte that is not
 * UTF-8 as \ufffd; the reader refuses text that is not UTF-8); summary.json and
 * sweep.json are read back with json_parse (compare, --resume, sweep merge). */
#ifndef TPUSIM_BASE_JSON_H
#define TPUSIM_BASE_JSON_H

/* Largest JSON file tpusim reads back (summaries, sweep tables). */
#define JSON_MAX_BYTES ((size_t)256 << 20)

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json {
    enum json_type type;
    bool b;
    double num;
    char *str;          /* JSON_STR, owned, UTF-8 */
    int n;              /* JSON_ARR items or JSON_OBJ members */
    size_t cap;         /* room in 'kids' (and 'keys'): grown by doubling */
    char **keys;        /* JSON_OBJ, owned */
    struct json **kids; /* owned */
};

/* Returns a new tree for the JSON text 'text' ('len' bytes); caller frees with
 * json_free(). On a syntax error returns NULL with "line L: what" in 'err'. */
struct json *json_parse(const char *text, size_t len, char *err, size_t errn);
/* Reads (at most 'max_bytes') and parses the file 'path'; NULL with "path: why" in 'err'. */
struct json *json_read_file(const char *path, size_t max_bytes, char *err, size_t errn);
void json_free(struct json *j); /* NULL is a no-op */
/* Member 'key' of object 'o', or NULL (also when 'o' is not an object). Borrowed. */
const struct json *json_get(const struct json *o, const char *key);
/* The number / string member 'key' of 'o', or 'dflt' when absent or of another type. */
double json_num(const struct json *o, const char *key, double dflt);
const char *json_str(const struct json *o, const char *key, const char *dflt);

/* The length (1-4) of the valid UTF-8 sequence at 's' (at most 'n' bytes),
 * or 0 for a byte that starts none (a stray tail byte, a lead byte without
 * its tail, an overlong form, a surrogate, past U+10FFFF). Every text output
 * writes U+FFFD in place of such a byte. */
size_t json_utf8_seq(const char *s, size_t n);

/* Writes 's' (NULL: "") as a JSON string literal to 'f'. */
void json_write_string(FILE *f, const char *s);

/* 'v' as a JSON number in 'buf' ('n' >= 32 bytes): printf's conversion 'conv'
 * ('e', 'f' or 'g') with 'prec' digits, so "%.9e" is json_fmt_num(b, n, v, 'e', 9).
 * JSON has no NaN or infinity: they come out null (no input may produce one:
 * the loaders refuse what would; this keeps a missed case valid JSON). Returns 'buf'. */
char *json_fmt_num(char *buf, size_t n, double v, char conv, int prec);
/* A JSON number for one argument of a "%s" format: JSON_E9(x) reads as "%.9e",
 * JSON_G17 as "%.17g", JSON_F6 as "%.6f" (the buffer lives to the end of the
 * enclosing block). */
#define JSON_E9(v) json_fmt_num((char[40]){""}, 40, (v), 'e', 9)
#define JSON_G17(v) json_fmt_num((char[40]){""}, 40, (v), 'g', 17)
#define JSON_F6(v) json_fmt_num((char[40]){""}, 40, (v), 'f', 6)

#endif
