/* outputs/svg.c -- SVG line plots and heatmaps for sweep reports.
 * Hand-written SVG 1.1: axes, ticks (linear 1-2-5 steps or decades), a legend,
 * markers for infeasible categories. Coordinates are printed with one decimal
 * so the same input gives the same bytes.
 * May use: libc, outputs/svg.h and base/json.h (its UTF-8 rule). */
#include "outputs/svg.h"

#include <math.h>
#include <string.h>

#include "base/json.h"

#define PLOT_W 760
#define PLOT_H 460
#define MAP_W 760
#define MAP_H 540
#define FONT "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\""

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
#define NPALETTE (sizeof palette / sizeof palette[0])

/* Writes the UTF-8 sequence at 's' (at most 'n' bytes), or U+FFFD for a
 * byte that starts none (a file name's); returns the bytes it took. */
static size_t utf8(FILE *f, const char *s, size_t n)
{
    size_t len = json_utf8_seq(s, n);
    if (!len) {
        fputs("&#xFFFD;", f);
        return 1;
    }
    fwrite(s, 1, len, f);
    return len;
}

/* The one escaping rule, for the 'n' bytes of 's': '<', '>', '&' and '"'
 * as entities, other control characters dropped but a tab (and, for
 * 'lines', a newline). */
static void escape(FILE *f, const char *s, size_t n, bool lines)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '&')
            fputs("&amp;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else if ((unsigned char)c >= 0x80)
            i += utf8(f, s + i, n - i) - 1;
        else if ((unsigned char)c >= 0x20 || c == '\t' || (lines && c == '\n'))
            fputc(c, f);
    }
}

void svg_escape(FILE *f, const char *s)
{
    escape(f, s ? s : "", s ? strlen(s) : 0, false);
}

void svg_escape_lines(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n && s[n - 1] == '\n')
        n--; /* the closing tag ends the last line */
    escape(f, s ? s : "", n, true);
}

static void text_at(FILE *f, double x, double y, const char *anchor, const char *style,
                    const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, style);
    svg_escape(f, s);
    fputs("</text>\n", f);
}

static void header(FILE *f, int w, int h, const char *title)
{
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" " FONT " font-size=\"12\">\n",
            w, h, w, h);
    fputs("<title>", f);
    svg_escape(f, title);
    fputs("</title>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
    /* shrink long titles to the width (bold sans: about 0.62 em per character) */
    double fs = title ? (w - 40) / (0.62 * (double)strlen(title)) : 16;
    char style[64];
    snprintf(style, sizeof style, "font-size=\"%.1f\" font-weight=\"bold\"", fs > 16 ? 16 : fs);
    text_at(f, w / 2.0, 26, "middle", style, title);
}

/* ---------------- value axis ---------------- */

struct axis {
    double lo, hi; /* in data units (log: positive) */
    bool log;
    int nticks;
    double ticks[32];
};

static double nice_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    double fr = raw / mag;
    return (fr <= 1 ? 1 : fr <= 2 ? 2 : fr <= 5 ? 5 : 10) * mag;
}

static void axis_linear(struct axis *a, double max)
{
    if (!(max > 0))
        max = 1;
    double step = nice_step(max / 5);
    a->lo = 0;
    a->hi = ceil(max * 1.02 / step) * step;
    a->nticks = 0;
    for (double t = 0; t <= a->hi * (1 + 1e-9) && a->nticks < 32; t += step)
        a->ticks[a->nticks++] = t;
}

static void axis_log(struct axis *a, double min, double max)
{
    int e0 = (int)floor(log10(min)), e1 = (int)ceil(log10(max));
    if (e1 <= e0)
        e1 = e0 + 1;
    a->lo = pow(10, e0);
    a->hi = pow(10, e1);
    a->nticks = 0;
    static const double sub[] = {1, 2, 5};
    bool few = e1 - e0 <= 2;
    for (int e = e0; e <= e1; e++)
        for (int s = 0; s < (few && e < e1 ? 3 : 1) && a->nticks < 32; s++)
            a->ticks[a->nticks++] = sub[s] * pow(10, e);
}

/* Fraction 0..1 of the axis height where 'v' sits. */
static double axis_frac(const struct axis *a, double v)
{
    if (a->log)
        return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    return (v - a->lo) / (a->hi - a->lo);
}

/* ---------------- line plot ---------------- */

struct frame {
    double x0, y0, w, h; /* plot area: left, top, width, height */
};

static double px(const struct frame *fr, int nx, int i)
{
    return fr->x0 + fr->w * (i + 0.5) / nx;
}

/* The bottom MARK_BAND pixels of the plot area hold the infeasible marks, below the data. */
#define MARK_BAND 18

static double py(const struct frame *fr, const struct axis *a, double v)
{
    return fr->y0 + (fr->h - MARK_BAND) * (1 - axis_frac(a, v));
}

static bool range(const struct svg_plot *p, double *min, double *max)
{
    bool any = false;
    for (int s = 0; s < p->nseries; s++)
        for (int i = 0; i < p->nx; i++) {
            double v = p->series[s].y[i];
            if (!isfinite(v) || (p->log_y && v <= 0))
                continue;
            if (!any || v < *min)
                *min = v;
            if (!any || v > *max)
                *max = v;
            any = true;
        }
    return any;
}

static void draw_value_axis(FILE *f, const struct frame *fr, const struct axis *a)
{
    for (int i = 0; i < a->nticks; i++) {
        double y = py(fr, a, a->ticks[i]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
                fr->x0, y, fr->x0 + fr->w, y);
        char lab[32];
        snprintf(lab, sizeof lab, "%g", a->ticks[i]);
        text_at(f, fr->x0 - 6, y + 4, "end", "fill=\"#333333\"", lab);
    }
}

static void draw_category_axis(FILE *f, const struct frame *fr, int nx, const char *const *ticks)
{
    size_t longest = 0;
    for (int i = 0; i < nx; i++)
        longest = strlen(ticks[i]) > longest ? strlen(ticks[i]) : longest;
    bool rotate = nx > 10 || longest * 7.0 > fr->w / nx;
    double yb = fr->y0 + fr->h;
    for (int i = 0; i < nx; i++) {
        double x = px(fr, nx, i);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n",
                x, yb, x, yb + 5);
        if (rotate) {
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333333\" "
                    "transform=\"rotate(-35 %.1f %.1f)\">",
                    x, yb + 16, x, yb + 16);
            svg_escape(f, ticks[i]);
            fputs("</text>\n", f);
        } else {
            text_at(f, x, yb + 18, "middle", "fill=\"#333333\"", ticks[i]);
        }
    }
}

static void draw_frame(FILE *f, const struct frame *fr)
{
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333333\"/>\n",
            fr->x0, fr->y0, fr->w, fr->h);
}

static void draw_series(FILE *f, const struct frame *fr, const struct axis *a,
                        const struct svg_plot *p, int s, const char *color)
{
    const struct svg_series *se = &p->series[s];
    bool open = false;
    for (int i = 0; i < p->nx && !se->dots_only; i++) {
        double v = se->y[i];
        bool ok = isfinite(v) && (!a->log || v > 0);
        if (ok && !open) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", color,
                    se->muted ? "1" : "2");
            open = true;
        }
        if (ok)
            fprintf(f, "%.1f,%.1f ", px(fr, p->nx, i), py(fr, a, v));
        if (open && (!ok || i + 1 == p->nx)) {
            fputs("\"/>\n", f);
            open = false;
        }
    }
    for (int i = 0; i < p->nx; i++) {
        double v = se->y[i];
        if (isfinite(v) && (!a->log || v > 0))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", px(fr, p->nx, i),
                    py(fr, a, v), se->muted ? "2.5" : "3.5", color);
    }
}

static void draw_legend(FILE *f, const struct svg_plot *p, double x, double y)
{
    size_t longest = 1; /* shrink the text to fit the 180 px right of the swatches */
    for (int s = 0; s < p->nseries; s++)
        if (p->series[s].label && strlen(p->series[s].label) > longest)
            longest = strlen(p->series[s].label);
    double fs = 180 / (0.6 * (double)longest);
    char style[64];
    snprintf(style, sizeof style, "fill=\"#333333\" font-size=\"%.1f\"", fs > 12 ? 12 : fs);
    int shown = 0;
    for (int s = 0; s < p->nseries && shown < 14; s++) {
        const struct svg_series *se = &p->series[s];
        if (!se->label)
            continue;
        const char *color = se->muted ? "#bbbbbb" : palette[s % NPALETTE];
        double yy = y + 18.0 * shown++;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"%s\"/>\n", x,
                yy - 6, color);
        text_at(f, x + 20, yy, "start", style, se->label);
    }
    bool inf = false;
    for (int i = 0; p->x_infeasible && i < p->nx; i++)
        inf |= p->x_infeasible[i];
    if (inf) {
        double yy = y + 18.0 * shown + 6;
        text_at(f, x + 7, yy, "middle", "fill=\"#c62828\" font-size=\"15\" font-weight=\"bold\"",
                "\xc3\x97");
        text_at(f, x + 20, yy, "start", "fill=\"#333333\"", "infeasible point(s)");
    }
}

void svg_write_plot(FILE *f, const struct svg_plot *p)
{
    header(f, PLOT_W, PLOT_H, p->title);
    struct frame fr = {84, 48, PLOT_W - 84 - 210, PLOT_H - 48 - 100};
    struct axis a = {.log = p->log_y};
    double min = 0, max = 0;
    bool any = range(p, &min, &max);
    if (a.log && any)
        axis_log(&a, min, max);
    else
        a.log = false, axis_linear(&a, any ? max : 1);
    draw_value_axis(f, &fr, &a);
    draw_category_axis(f, &fr, p->nx, p->xticks);
    draw_frame(f, &fr);
    for (int pass = 0; pass < 2; pass++) /* muted series first, behind the others */
        for (int s = 0; s < p->nseries; s++)
            if (p->series[s].muted == (pass == 0))
                draw_series(f, &fr, &a, p, s,
                            p->series[s].muted ? "#bbbbbb" : palette[s % NPALETTE]);
    if (p->best_series >= 0 && p->best_x >= 0 && any) {
        double v = p->series[p->best_series].y[p->best_x];
        if (isfinite(v) && (!a.log || v > 0)) {
            double x = px(&fr, p->nx, p->best_x), y = py(&fr, &a, v);
            fprintf(f,
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#000000\" "
                    "stroke-width=\"2\"/>\n",
                    x, y);
            text_at(f, x, y - 12, "middle", "font-weight=\"bold\"", "best");
        }
    }
    for (int i = 0; p->x_infeasible && i < p->nx; i++)
        if (p->x_infeasible[i])
            text_at(f, px(&fr, p->nx, i), fr.y0 + fr.h - 4, "middle",
                    "fill=\"#c62828\" font-size=\"15\" font-weight=\"bold\"", "\xc3\x97");
    if (!any)
        text_at(f, fr.x0 + fr.w / 2, fr.y0 + fr.h / 2, "middle", "fill=\"#c62828\"",
                "no feasible point");
    fprintf(f,
            "<text x=\"22\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 22 %.1f)\">",
            fr.y0 + fr.h / 2, fr.y0 + fr.h / 2);
    svg_escape(f, p->ylabel);
    fputs(a.log ? " (log scale)</text>\n" : "</text>\n", f);
    text_at(f, fr.x0 + fr.w / 2, PLOT_H - 30, "middle", "", p->xlabel);
    if (p->note)
        text_at(f, fr.x0 + fr.w / 2, PLOT_H - 10, "middle", "fill=\"#666666\" font-size=\"11\"",
                p->note);
    draw_legend(f, p, fr.x0 + fr.w + 16, fr.y0 + 10);
    fputs("</svg>\n", f);
}

/* ---------------- heatmap ---------------- */

/* Green (fast) -> yellow -> red (slow), for t in 0..1. */
static void ramp(double t, int rgb[3])
{
    static const int stops[5][3] = {
        {26, 152, 80}, {145, 207, 96}, {254, 224, 139}, {252, 141, 89}, {215, 48, 39}};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double u = t * 4;
    int i = u >= 4 ? 3 : (int)u;
    double fr = u - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (int)lround(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * fr);
}

static double cell_t(const struct svg_heatmap *h, double v, double lo, double hi)
{
    if (h->log_z)
        v = log(v), lo = log(lo), hi = log(hi);
    return hi > lo ? (v - lo) / (hi - lo) : 0.0;
}

static void map_range(const struct svg_heatmap *h, double *lo, double *hi)
{
    bool any = false;
    for (int i = 0; i < h->nx * h->ny; i++) {
        if (h->cells[i] != SVG_CELL_VALUE || !isfinite(h->z[i]) || (h->log_z && h->z[i] <= 0))
            continue;
        if (!any || h->z[i] < *lo)
            *lo = h->z[i];
        if (!any || h->z[i] > *hi)
            *hi = h->z[i];
        any = true;
    }
    if (!any)
        *lo = *hi = 1;
}

static void draw_cell(FILE *f, const struct svg_heatmap *h, int x, int y, const struct frame *fr,
                      double lo, double hi)
{
    double cw = fr->w / h->nx, ch = fr->h / h->ny;
    double x0 = fr->x0 + cw * x, y0 = fr->y0 + ch * y;
    int i = y * h->nx + x;
    const char *fill = "#ffffff", *ink = "#000000", *label = h->cell_text ? h->cell_text[i] : NULL;
    char rgbs[8];
    if (h->cells[i] == SVG_CELL_VALUE) {
        int rgb[3];
        ramp(cell_t(h, h->z[i], lo, hi), rgb);
        snprintf(rgbs, sizeof rgbs, "#%02x%02x%02x", rgb[0] & 255, rgb[1] & 255, rgb[2] & 255);
        fill = rgbs;
        ink = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 140 ? "#ffffff" : "#000000";
    } else if (h->cells[i] == SVG_CELL_INFEASIBLE) {
        fill = "url(#hatch)", ink = "#444444", label = "infeasible";
    } else if (h->cells[i] == SVG_CELL_FAILED) {
        fill = "#f4b6b6", ink = "#7f0000", label = "failed";
    }
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "stroke=\"#ffffff\" stroke-width=\"1\"/>\n",
            x0, y0, cw, ch, fill);
    if (label && h->cells[i] != SVG_CELL_EMPTY) {
        double fs = cw < 56 ? 8.5 : cw < 80 ? 10 : 12;
        char style[64];
        snprintf(style, sizeof style, "fill=\"%s\" font-size=\"%.1f\"", ink, fs);
        text_at(f, x0 + cw / 2, y0 + ch / 2 + fs / 3, "middle", style, label);
    }
}

static void draw_scale(FILE *f, const struct svg_heatmap *h, const struct frame *fr)
{
    double x = fr->x0 + fr->w + 30, top = fr->y0, hh = fr->h * 0.6;
    fputs("<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n", f);
    for (int s = 0; s <= 4; s++) {
        int rgb[3];
        ramp(s / 4.0, rgb);
        fprintf(f, "<stop offset=\"%.2f\" stop-color=\"#%02x%02x%02x\"/>\n", s / 4.0, rgb[0] & 255,
                rgb[1] & 255, rgb[2] & 255);
    }
    fputs("</linearGradient></defs>\n", f);
    text_at(f, x, top - 8, "start", "font-weight=\"bold\"", "time");
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"%.1f\" fill=\"url(#scale)\" "
            "stroke=\"#333333\"/>\n",
            x, top, hh);
    text_at(f, x + 24, top + 10, "start", "", h->high_label ? h->high_label : "slow");
    text_at(f, x + 24, top + hh, "start", "", h->low_label ? h->low_label : "fast");
    if (h->log_z)
        text_at(f, x, top + hh + 18, "start", "fill=\"#666666\" font-size=\"11\"", "log scale");
    double y = top + hh + 40;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"18\" fill=\"url(#hatch)\" "
            "stroke=\"#333333\"/>\n",
            x, y);
    text_at(f, x + 24, y + 13, "start", "", "infeasible");
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"18\" fill=\"none\" "
            "stroke=\"#000000\" stroke-width=\"3\"/>\n",
            x, y + 28);
    text_at(f, x + 24, y + 41, "start", "", "best");
}

void svg_write_heatmap(FILE *f, const struct svg_heatmap *h)
{
    header(f, MAP_W, MAP_H, h->title);
    fputs("<defs><pattern id=\"hatch\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#e3e3e3\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#a8a8a8\" stroke-width=\"3\"/>"
          "</pattern></defs>\n",
          f);
    struct frame fr = {110, 50, MAP_W - 110 - 150, MAP_H - 50 - 100};
    double lo = 0, hi = 0;
    map_range(h, &lo, &hi);
    for (int y = 0; y < h->ny; y++)
        for (int x = 0; x < h->nx; x++)
            draw_cell(f, h, x, y, &fr, lo, hi);
    double cw = fr.w / h->nx, ch = fr.h / h->ny;
    if (h->best_x >= 0 && h->best_y >= 0)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                "stroke=\"#000000\" stroke-width=\"3\"/>\n",
                fr.x0 + cw * h->best_x + 1.5, fr.y0 + ch * h->best_y + 1.5, cw - 3, ch - 3);
    for (int x = 0; x < h->nx; x++)
        text_at(f, fr.x0 + cw * (x + 0.5), fr.y0 + fr.h + 18, "middle", "fill=\"#333333\"",
                h->xticks[x]);
    for (int y = 0; y < h->ny; y++)
        text_at(f, fr.x0 - 8, fr.y0 + ch * (y + 0.5) + 4, "end", "fill=\"#333333\"", h->yticks[y]);
    text_at(f, fr.x0 + fr.w / 2, fr.y0 + fr.h + 44, "middle", "", h->xlabel);
    fprintf(f,
            "<text x=\"22\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 22 %.1f)\">",
            fr.y0 + fr.h / 2, fr.y0 + fr.h / 2);
    svg_escape(f, h->ylabel);
    fputs("</text>\n", f);
    if (h->note)
        text_at(f, fr.x0 + fr.w / 2, MAP_H - 14, "middle", "fill=\"#666666\" font-size=\"11\"",
                h->note);
    draw_scale(f, h, &fr);
    fputs("</svg>\n", f);
}
