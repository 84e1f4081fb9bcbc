/* config/embedded.h -- configuration files compiled into the binary.
 * The chip presets and the default scenario are embedded at build time by
 * tools/embed.sh, so `tpusim` runs from any directory. */
#ifndef TPUSIM_CONFIG_EMBEDDED_H
#define TPUSIM_CONFIG_EMBEDDED_H

#include <stddef.h>

struct embedded_file {
    const char *path; /* repository path, e.g. "configs/chips/v5e.yaml" */
    const char *data; /* NUL-terminated contents */
    size_t len;
};

extern const struct embedded_file embedded_files[]; /* ends with a zeroed entry */
/* The names of the embedded chip presets (configs/chips/NAME.yaml), NULL-terminated. */
extern const char *const embedded_chip_names[];

/* Returns the embedded file whose path is 'path', or NULL. Borrowed. */
const struct embedded_file *embedded_find(const char *path);

#endif
