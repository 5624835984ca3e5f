/* fuzz_input.h: what the harnesses share: the fuzzer's bytes as a file for readers that take a
 * path, and as several files for readers of a set of files. */
#ifndef NETC_FUZZ_INPUT_H
#define NETC_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/data_idx.h"

/* Separates the files of one input in the IDX and CIFAR harnesses (fuzz/data.dict lists it). */
#define FUZZ_FILE_SEPARATOR "--NETC-FILE--"

/* The bytes as the contents of a file, and that file's path ("/proc/self/fd/N" of an in-memory
 * file, rewritten on each call). Aborts when it cannot: a harness that reads nothing finds
 * nothing. */
const char *fuzz_as_file(const uint8_t *data, size_t size);

/* A folder of this process (in /dev/shm when there, else TMPDIR or /tmp), made on the first call
 * and removed at exit, for readers that take a folder. */
const char *fuzz_dir(void);
/* The bytes as the file fuzz_dir()/name (its folders made as needed). Aborts when it cannot. */
void fuzz_write(const char *name, const uint8_t *data, size_t size);

/* Splits data at FUZZ_FILE_SEPARATOR into n blobs (malloc'd copies, named names[i]); pieces past
 * the n-th stay in the last, missing ones are empty. Free them with rt_blobs_free. */
void fuzz_split(const uint8_t *data, size_t size, IdxBlob *f, int n, const char *const *names);

#endif
