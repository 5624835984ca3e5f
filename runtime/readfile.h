/* readfile.h: a whole file into memory (private to the runtime). */
#ifndef NETC_READFILE_H
#define NETC_READFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* On failure err says "PATH: why" (errno's words). The caller frees *data. */
bool rt_read_file(const char *path, uint8_t **data, size_t *size, char *err, size_t errlen);

#endif
