/* tests/jsoncheck.c -- exits 0 if each file argument is one valid JSON value
 * (RFC 8259 syntax), else prints where it breaks and exits 1. Used by
 * tests/run_e2e.sh so the test needs nothing beyond a C compiler. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct p {
    const char *s;
    size_t i, n;
};

static int value(struct p *p, int depth);

static void ws(struct p *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]))
        p->i++;
}

static int lit(struct p *p, const char *w)
{
    size_t k = strlen(w);
    if (p->n - p->i < k || strncmp(p->s + p->i, w, k))
        return -1;
    p->i += k;
    return 0;
}

static int string(struct p *p)
{
    if (p->s[p->i++] != '"')
        return -1;
    while (p->i < p->n && p->s[p->i] != '"') {
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c < 0x20)
            return -1;
        if (c == '\\' && p->i++ >= p->n)
            return -1;
    }
    return p->i++ < p->n ? 0 : -1;
}

static int number(struct p *p)
{
    size_t b = p->i;
    if (p->s[p->i] == '-')
        p->i++;
    while (p->i < p->n && (isdigit((unsigned char)p->s[p->i]) || strchr(".eE+-", p->s[p->i])))
        p->i++;
    return p->i > b ? 0 : -1;
}

static int seq(struct p *p, int depth, char close, int obj)
{
    p->i++;
    ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return 0;
    }
    for (;;) {
        ws(p);
        if (obj) {
            if (p->i >= p->n || p->s[p->i] != '"' || string(p))
                return -1;
            ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':')
                return -1;
        }
        if (value(p, depth + 1))
            return -1;
        ws(p);
        if (p->i >= p->n)
            return -1;
        char c = p->s[p->i++];
        if (c == close)
            return 0;
        if (c != ',')
            return -1;
    }
}

static int value(struct p *p, int depth)
{
    ws(p);
    if (p->i >= p->n || depth > 256)
        return -1;
    switch (p->s[p->i]) {
    case '{':
        return seq(p, depth, '}', 1);
    case '[':
        return seq(p, depth, ']', 0);
    case '"':
        return string(p);
    case 't':
        return lit(p, "true");
    case 'f':
        return lit(p, "false");
    case 'n':
        return lit(p, "null");
    default:
        return number(p);
    }
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            perror(argv[a]);
            bad = 1;
            continue;
        }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *s = malloc((size_t)n + 1);
        size_t got = fread(s, 1, (size_t)n, f);
        fclose(f);
        struct p p = {s, 0, got};
        int rc = value(&p, 0);
        ws(&p);
        if (rc || p.i != p.n) {
            fprintf(stderr, "%s: invalid JSON at byte %zu\n", argv[a], p.i);
            bad = 1;
        }
        free(s);
    }
    return bad;
}
