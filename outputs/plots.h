/* outputs/plots.h -- the SVG plots of a sweep table: plot_<key>.svg (time
 * against each swept key: one line per combination of the other keys, or
 * the best over them) and heatmap.svg for two-key sweeps. */
#ifndef TPUSIM_OUTPUTS_PLOTS_H
#define TPUSIM_OUTPUTS_PLOTS_H

struct table;

/* Writes dir/plot_<key>.svg for every key of 't' and dir/heatmap.svg when
 * there are exactly two keys (atomically). Returns 0 or -1 with errno. */
int plot_write_sweep(const struct table *t, const char *dir);
/* The file name plot_<key>.svg of key 'key' (characters outside
 * [A-Za-z0-9._-] become '_'). Returns a new string; caller frees. */
char *plot_file_name(const char *key);

#endif
