/* readfile.h: a whole file into memory, and errors about a file (private to the runtime). */
#ifndef NETC_READFILE_H
#define NETC_READFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* On failure err says "PATH: why" (errno's words). The caller frees *data. */
bool rt_read_file(const char *path, uint8_t **data, size_t *size, char *err, size_t errlen);
/* Writes "FILE: message" into err for a file whose contents are wrong; returns false. */
bool rt_file_error(char *err, size_t errlen, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
