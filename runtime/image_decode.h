/* image_decode.h: JPEG and PNG files to 8-bit pixels (libjpeg-turbo and libpng), for image-folder
 * data sets. */
#ifndef NETC_IMAGE_DECODE_H
#define NETC_IMAGE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	int w, h, c;  /* c: 1 (gray) or 3 (RGB) */
	uint8_t *px;  /* h rows of w pixels of c bytes (channels last); the caller frees it */
} RtImage;

/* Whether this build reads JPEG and PNG (a runtime-only build may lack the libraries). */
bool rt_image_decode_available(void);
/* Decodes the file at path, JPEG or PNG by its first bytes, into c channels (1: gray, 3: RGB;
 * other layouts are converted: palettes, alpha dropped, 16 bits to 8). False with the reason in
 * err (without the path: the caller names the file) when it is neither or is damaged. Thread-safe. */
bool rt_image_decode(const char *path, int c, RtImage *img, char *err, size_t errlen);

#endif
