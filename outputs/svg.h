/* outputs/svg.h -- two small SVG 1.1 charts for sweep reports: values against
 * categories (one line per series, optional log y) and a heatmap of a two-way
 * table. Fixed-size, self-contained files (no scripts, no external fonts);
 * output depends only on the arguments, so it is byte-reproducible. */
#ifndef TPUSIM_OUTPUTS_SVG_H
#define TPUSIM_OUTPUTS_SVG_H

#include <stdbool.h>
#include <stdio.h>

struct svg_series {
    const char *label; /* legend text; NULL: not in the legend */
    const double *y;   /* one value per x category; NAN where there is none */
    bool dots_only;    /* markers without a line */
    bool muted;        /* drawn grey, behind the others */
};

struct svg_plot {
    const char *title, *xlabel, *ylabel;
    int nx;
    const char *const *xticks; /* 'nx' category labels, left to right */
    int nseries;
    const struct svg_series *series;
    bool log_y;
    const bool *x_infeasible; /* 'nx' flags: mark the category as having infeasible points */
    int best_series, best_x;  /* the point to highlight; best_series < 0: none */
    const char *note;         /* a line under the plot, or NULL */
};

/* Writes the plot as an SVG document to 'f'. y values must be positive with 'log_y'. */
void svg_write_plot(FILE *f, const struct svg_plot *p);

/* Writes 's' as XML/HTML text or attribute value: <, >, & and " escaped,
 * control characters other than tab dropped, a byte that is not UTF-8 written
 * as &#xFFFD; (NULL writes nothing). */
void svg_escape(FILE *f, const char *s);
/* The same for the text of a <pre> block: its lines kept, but a last newline
 * (the closing tag ends the last line). */
void svg_escape_lines(FILE *f, const char *s);

enum svg_cell { SVG_CELL_EMPTY, SVG_CELL_VALUE, SVG_CELL_INFEASIBLE, SVG_CELL_FAILED };

struct svg_heatmap {
    const char *title, *xlabel, *ylabel;
    int nx, ny;
    const char *const *xticks, *const *yticks;
    const double *z;                    /* nx*ny values, z[y * nx + x] (for the colour) */
    const char *const *cell_text;       /* nx*ny labels (NULL entries: none) */
    const enum svg_cell *cells;         /* nx*ny states */
    bool log_z;                         /* colour by log(z) */
    int best_x, best_y;                 /* cell to outline; best_x < 0: none */
    const char *low_label, *high_label; /* colour-scale ends, e.g. "1.2 ms" */
    const char *note;                   /* a line under the map, or NULL */
};

void svg_write_heatmap(FILE *f, const struct svg_heatmap *h);

#endif
