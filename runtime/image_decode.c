/* image_decode.c: JPEG through libjpeg(-turbo)'s decompressor, with its fatal errors turned into a
 * longjmp so a damaged file is an error message, never an exit; PNG through libpng's simplified
 * API, which converts every PNG layout to the one asked for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/image_decode.h"

#ifdef NETC_HAVE_IMAGES
#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>

bool rt_image_decode_available(void) { return true; }

/* An image above this many pixels is refused before anything is allocated for it: 2^26 (an 8192 x
 * 8192 image, 192 MiB of RGB) is above any photo a network is trained on, and a header that claims
 * 65535 x 65535 must not make one decode take 12 GiB. */
#define MAX_PIXELS (UINT64_C(1) << 26)

static bool too_large(uint64_t w, uint64_t h, char *err, size_t errlen)
{
	if (w * h <= MAX_PIXELS)
		return false;
	snprintf(err, errlen, "an image of %llux%llu pixels, more than netc decodes (2^26)", (unsigned long long)w,
		 (unsigned long long)h);
	return true;
}

typedef struct {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
} JpegError;

static void jpeg_fail(j_common_ptr info)
{
	JpegError *e = (JpegError *)info->err;
	info->err->format_message(info, e->msg);
	longjmp(e->jump, 1);
}

/* warnings (a corrupt but readable stream) stay quiet: the image decodes */
static void jpeg_quiet(j_common_ptr info, int level) { (void)info, (void)level; }

static bool decode_jpeg(FILE *f, int c, RtImage *img, char *err, size_t errlen)
{
	struct jpeg_decompress_struct info;
	JpegError e;
	info.err = jpeg_std_error(&e.mgr);
	e.mgr.error_exit = jpeg_fail;
	e.mgr.emit_message = jpeg_quiet;
	uint8_t *volatile px = NULL;
	if (setjmp(e.jump)) {
		snprintf(err, errlen, "damaged JPEG: %s", e.msg);
		jpeg_destroy_decompress(&info);
		free(px);
		return false;
	}
	jpeg_create_decompress(&info);
	jpeg_stdio_src(&info, f);
	jpeg_read_header(&info, TRUE);
	if (too_large(info.image_width, info.image_height, err, errlen)) {
		jpeg_destroy_decompress(&info);
		return false;
	}
	info.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_start_decompress(&info);
	size_t row = (size_t)info.output_width * (size_t)c;
	px = malloc(row * info.output_height);
	if (!px) {
		snprintf(err, errlen, "out of memory for a %ux%u image", info.output_width, info.output_height);
		jpeg_destroy_decompress(&info);
		return false;
	}
	while (info.output_scanline < info.output_height) {
		JSAMPROW r = px + row * info.output_scanline;
		jpeg_read_scanlines(&info, &r, 1);
	}
	jpeg_finish_decompress(&info);
	*img = (RtImage){(int)info.output_width, (int)info.output_height, c, px};
	jpeg_destroy_decompress(&info);
	return true;
}

static bool decode_png(const char *path, int c, RtImage *img, char *err, size_t errlen)
{
	png_image p;
	memset(&p, 0, sizeof p);
	p.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&p, path)) {
		snprintf(err, errlen, "damaged PNG: %s", p.message);
		return false;
	}
	if (too_large(p.width, p.height, err, errlen)) {
		png_image_free(&p);
		return false;
	}
	p.format = c == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
	uint8_t *px = malloc(PNG_IMAGE_SIZE(p));
	if (!px) {
		snprintf(err, errlen, "out of memory for a %ux%u image", p.width, p.height);
		png_image_free(&p);
		return false;
	}
	if (!png_image_finish_read(&p, NULL, px, 0, NULL)) {
		snprintf(err, errlen, "damaged PNG: %s", p.message);
		free(px);
		png_image_free(&p);
		return false;
	}
	*img = (RtImage){(int)p.width, (int)p.height, c, px};
	return true;
}

bool rt_image_decode(const char *path, int c, RtImage *img, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot open it");
		return false;
	}
	unsigned char magic[8] = {0};
	size_t got = fread(magic, 1, sizeof magic, f);
	bool ok;
	if (got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF) {
		rewind(f);
		ok = decode_jpeg(f, c, img, err, errlen);
	} else if (got == 8 && !png_sig_cmp(magic, 0, 8)) {
		ok = decode_png(path, c, img, err, errlen);
	} else {
		snprintf(err, errlen, "neither a JPEG nor a PNG file");
		ok = false;
	}
	fclose(f);
	if (ok && (img->w <= 0 || img->h <= 0)) {
		free(img->px);
		snprintf(err, errlen, "an image of no pixels");
		ok = false;
	}
	return ok;
}

#else

bool rt_image_decode_available(void) { return false; }

bool rt_image_decode(const char *path, int c, RtImage *img, char *err, size_t errlen)
{
	(void)path, (void)c, (void)img;
	snprintf(err, errlen, "this netc was built without libjpeg and libpng");
	return false;
}

#endif
