/* config/mask_file.h -- a mask read from a file: the text format or a .npy
 * array, for splash attention's `mask: {type: file}` and `tpusim maskinfo
 * --mask file:PATH`. Uses base/ and kernels/maskinfo.h. */
#ifndef TPUSIM_CONFIG_MASK_FILE_H
#define TPUSIM_CONFIG_MASK_FILE_H

#include <stddef.h>

#include "kernels/maskinfo.h"

/* Largest mask file read (a 32k x 32k .npy of bools is 1 GiB). */
#define MASK_FILE_MAX_BYTES ((size_t)1 << 30)

/* Loads a MASK_DENSE from 'path'.  Text format: a first line "Q K", then Q lines of
 * exactly K characters '0'/'1' (trailing blanks and '\r' ignored).  A file that
 * starts with the .npy magic must hold a 2-D array of dtype bool ('|b1') or uint8
 * ('|u1', values 0 or 1), C or Fortran order, format version 1, 2 or 3.
 * Returns a new mask; caller frees with mask_free().  On error returns NULL and
 * writes "path[:line]: what" to 'err' (size 'n'). */
struct mask *mask_load_file(const char *path, char *err, size_t n);

#endif
