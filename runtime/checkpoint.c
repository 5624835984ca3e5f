/* checkpoint.c: parameters and optimizer state in the safetensors format.
 *
 * A file is a little-endian u64 N, N bytes of JSON, then the tensors' bytes:
 *   {"__metadata__": {"format": "netc", "step": "120"},
 *    "conv1.weight": {"dtype": "F32", "shape": [32, 1, 3, 3], "data_offsets": [0, 1152]}, ...}
 * Names are the bundle's: parameters as the .net file names them, optimizer state as
 * "<param>.<slot>". The header's JSON is a restricted subset (objects, strings, integers, arrays of
 * integers), so a small reader here checks it strictly instead of pulling a JSON library into the
 * runtime. Files are written to "<path>.tmp", fsynced and renamed, and the folder is fsynced, so
 * neither a crash nor a power loss leaves a broken file or loses the last good one. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/layout.h"
#include "runtime/rt.h"

#define CK_MAX_HEADER (64u << 20)

static bool saved(const BundleBuffer *x)
{
	return (x->role == BUF_PARAM || x->role == BUF_STATE) && x->offset >= 0 && x->dtype == DT_F32;
}

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- writing ---- */

static void put_name(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* One tensor's entry of the header: its data at [at, at + bytes) of the data section. */
static void put_entry(FILE *f, const char *name, int rank, const int64_t *dim, int64_t at, int64_t bytes)
{
	fputc(',', f);
	put_name(f, name);
	fprintf(f, ":{\"dtype\":\"F32\",\"shape\":[");
	for (int d = 0; d < rank; d++)
		fprintf(f, "%s%lld", d ? "," : "", (long long)dim[d]);
	fprintf(f, "],\"data_offsets\":[%lld,%lld]}", (long long)at, (long long)(at + bytes));
}

static void put_metadata(FILE *f, const char *model, const RtCheckpointMeta *m)
{
	fprintf(f, "{\"__metadata__\":{\"format\":\"netc\",\"model\":");
	put_name(f, model);
	fprintf(f, ",\"step\":\"%lld\"", (long long)m->step);
	/* %.9g gives a float back exactly */
	if (m->has_loss_scale)
		fprintf(f, ",\"loss_scale\":\"%.9g\",\"loss_scale_growth\":\"%lld\",\"skipped_steps\":\"%lld\"",
			(double)m->loss_scale, (long long)m->loss_scale_growth, (long long)m->skipped_steps);
	fputc('}', f);
}

/* Closes the header (the memory stream f): safetensors pads it with spaces to 8 bytes. */
static void end_header(FILE *f)
{
	fputc('}', f);
	while (ftell(f) % 8)
		fputc(' ', f);
	fclose(f);
}

/* The JSON header into a memory stream; its length through *len. */
static char *header_json(const Bundle *b, const RtCheckpointMeta *m, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	put_metadata(f, b->model, m);
	int64_t at = 0;
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if (!saved(x))
			continue;
		int64_t dim[BUNDLE_MAX_DIMS];
		rt_layout_public_shape(x, dim); /* checkpoints keep the public order (OIHW) */
		put_entry(f, x->name, x->rank, dim, at, x->bytes);
		at += x->bytes;
	}
	end_header(f);
	return buf;
}

static bool write_le64(FILE *f, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return fwrite(b, 1, 8, f) == 8;
}

/* data in the public order (to_public) or the stored one: data itself when they are the same,
 * else a new copy (NULL when out of memory). */
static void *public_order(const BundleBuffer *x, const void *data, bool to_public)
{
	if (rt_layout_identity(x))
		return (void *)data;
	void *t = malloc((size_t)x->bytes);
	if (t)
		rt_layout_permute(x, 4, data, t, to_public);
	return t;
}

/* Tensor data is little-endian f32, which is the host's order on every machine netc runs on. */
static bool write_tensors(Session *s, FILE *f)
{
	const Bundle *b = rt_bundle(s);
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if (!saved(x))
			continue;
		void *tmp = malloc((size_t)x->bytes);
		if (!tmp)
			return false;
		rt_read(s, i, tmp, (size_t)x->bytes);
		void *pub = public_order(x, tmp, true);
		bool ok = pub && fwrite(pub, 1, (size_t)x->bytes, f) == (size_t)x->bytes;
		if (pub != tmp)
			free(pub);
		free(tmp);
		if (!ok)
			return false;
	}
	return true;
}

/* A fresh path.tmp: a stale one (left by a killed run) is removed first, so that a read-only
 * file or a link there is replaced rather than written through. */
static FILE *create_tmp(const char *tmp)
{
	if (unlink(tmp) != 0 && errno != ENOENT)
		return NULL;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	return f;
}

/* Makes a rename in path's folder durable. Folders whose file system cannot sync them (EINVAL)
 * have nothing to lose. */
static bool sync_folder(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = fsync(fd) == 0 || errno == EINVAL;
	close(fd);
	return ok;
}

/* The header json (len bytes) and the tensors data() writes, to path.tmp, fsynced and renamed over
 * path. data returns false with *why set (NULL: errno says why) when it cannot write. */
static bool write_durably(const char *path, const char *json, size_t len, bool (*data)(FILE *, void *, const char **),
			  void *ctx, char *err, size_t errlen)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = create_tmp(tmp);
	if (!f)
		return fail(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
	/* the data reach the disk before the rename makes them the checkpoint */
	const char *why_text = NULL;
	bool ok = write_le64(f, len) && fwrite(json, 1, len, f) == len && data(f, ctx, &why_text) && fflush(f) == 0 &&
		  fsync(fileno(f)) == 0;
	int why = ok ? 0 : errno;
	if (fclose(f) != 0 && ok) {
		ok = false;
		why = errno;
	}
	if (!ok) {
		remove(tmp);
		return fail(err, errlen, "%s: writing the checkpoint failed: %s", tmp, why_text ? why_text : strerror(why));
	}
	if (rename(tmp, path) != 0)
		return fail(err, errlen, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
	if (!sync_folder(path))
		return fail(err, errlen, "%s: cannot sync its folder: %s", path, strerror(errno));
	return true;
}

static bool session_data(FILE *f, void *ctx, const char **why)
{
	Session *s = ctx;
	bool ok = write_tensors(s, f);
	if (rt_error(s))
		*why = rt_error(s);
	return ok && !rt_error(s);
}

bool rt_checkpoint_save(Session *s, const char *path, const RtCheckpointMeta *m, char *err, size_t errlen)
{
	size_t len;
	char *json = header_json(rt_bundle(s), m, &len);
	if (!json)
		return fail(err, errlen, "%s: out of memory", path);
	bool ok = write_durably(path, json, len, session_data, s, err, errlen);
	free(json);
	return ok;
}

/* ---- reading the header: the restricted JSON ---- */

typedef struct {
	const char *p, *end;
	bool ok;
} Json;

static void ws(Json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static bool eat(Json *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static bool expect_char(Json *j, char c)
{
	if (!eat(j, c))
		j->ok = false;
	return j->ok;
}

/* A string into out (truncated at len-1); \uXXXX escapes beyond ASCII become '?'. */
static bool json_string(Json *j, char *out, size_t len)
{
	size_t n = 0;
	if (!expect_char(j, '"'))
		return false;
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++;
		if (c == '\\') {
			if (j->p >= j->end)
				break;
			c = *j->p++;
			if (c == 'u') {
				if (j->end - j->p < 4)
					break;
				unsigned v = (unsigned)strtoul((char[]){j->p[0], j->p[1], j->p[2], j->p[3], 0}, NULL, 16);
				j->p += 4;
				c = v < 0x80 ? (char)v : '?';
			} else if (c == 'n') {
				c = '\n';
			} else if (c == 't') {
				c = '\t';
			}
		}
		if (n + 1 < len)
			out[n++] = c;
	}
	out[n] = 0;
	return expect_char(j, '"');
}

static bool json_int(Json *j, int64_t *v)
{
	ws(j);
	/* strtoll reads up to a NUL, and the header has none at its end: it reads a bounded copy */
	char num[24], *e;
	size_t n = (size_t)(j->end - j->p) < sizeof num - 1 ? (size_t)(j->end - j->p) : sizeof num - 1;
	memcpy(num, j->p, n);
	num[n] = 0;
	errno = 0;
	long long x = strtoll(num, &e, 10);
	if (e == num || errno || x < 0)
		return j->ok = false;
	j->p += e - num;
	*v = x;
	return true;
}

/* [i, i, ...] with at most max entries */
static int json_ints(Json *j, int64_t *v, int max)
{
	int n = 0;
	if (!expect_char(j, '['))
		return -1;
	if (eat(j, ']'))
		return 0;
	do {
		int64_t x;
		if (!json_int(j, &x) || n == max)
			return j->ok = false, -1;
		v[n++] = x;
	} while (eat(j, ','));
	return expect_char(j, ']') ? n : -1;
}

typedef struct {
	char name[128];
	char dtype[16];
	int rank;
	int64_t dim[BUNDLE_MAX_DIMS];
	int64_t begin, end;
	bool used;
} Entry;

/* The metadata keys netc reads (other keys are for people), as the file spells their values. */
enum { META_STEP, META_LOSS_SCALE, META_LOSS_SCALE_GROWTH, META_SKIPPED_STEPS, META_COUNT };
static const char *const meta_keys[META_COUNT] = {"step", "loss_scale", "loss_scale_growth", "skipped_steps"};

typedef struct {
	Entry *e;
	int n;
	char meta[META_COUNT][128];
	bool has[META_COUNT];
} Header;

static void json_metadata(Json *j, Header *h)
{
	expect_char(j, '{');
	if (eat(j, '}'))
		return;
	do {
		char key[64], val[128];
		if (!json_string(j, key, sizeof key) || !expect_char(j, ':') || !json_string(j, val, sizeof val))
			return;
		for (int k = 0; k < META_COUNT; k++)
			if (!strcmp(key, meta_keys[k])) {
				snprintf(h->meta[k], sizeof h->meta[k], "%s", val);
				h->has[k] = true;
			}
	} while (eat(j, ','));
	expect_char(j, '}');
}

static void json_entry(Json *j, Entry *e)
{
	expect_char(j, '{');
	int fields = 0;
	do {
		char key[32];
		if (!json_string(j, key, sizeof key) || !expect_char(j, ':'))
			return;
		int64_t off[2];
		if (!strcmp(key, "dtype")) {
			json_string(j, e->dtype, sizeof e->dtype);
			fields |= 1;
		} else if (!strcmp(key, "shape")) {
			e->rank = json_ints(j, e->dim, BUNDLE_MAX_DIMS);
			fields |= 2;
		} else if (!strcmp(key, "data_offsets") && json_ints(j, off, 2) == 2) {
			e->begin = off[0], e->end = off[1];
			fields |= 4;
		} else {
			j->ok = false;
		}
	} while (j->ok && eat(j, ','));
	expect_char(j, '}');
	if (fields != 7 || e->rank < 0 || e->end < e->begin)
		j->ok = false;
}

static bool parse_header(const char *text, size_t len, Header *h)
{
	Json j = {text, text + len, true};
	int cap = 0;
	expect_char(&j, '{');
	if (eat(&j, '}'))
		return j.ok;
	do {
		char key[128];
		if (!json_string(&j, key, sizeof key) || !expect_char(&j, ':'))
			break;
		if (!strcmp(key, "__metadata__")) {
			json_metadata(&j, h);
			continue;
		}
		if (h->n == cap) {
			cap = cap ? 2 * cap : 64;
			Entry *e = realloc(h->e, (size_t)cap * sizeof *e);
			if (!e)
				return false;
			h->e = e;
		}
		Entry *e = &h->e[h->n++];
		*e = (Entry){0};
		snprintf(e->name, sizeof e->name, "%s", key);
		json_entry(&j, e);
	} while (j.ok && eat(&j, ','));
	expect_char(&j, '}');
	ws(&j);
	return j.ok && j.p == j.end;
}

/* ---- loading ---- */

static const Entry *find_entry(const Header *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->e[i].name, name))
			return &h->e[i];
	return NULL;
}

static bool same_shape(const Entry *e, const BundleBuffer *x)
{
	int64_t dim[BUNDLE_MAX_DIMS];
	rt_layout_public_shape(x, dim);
	if (e->rank != x->rank)
		return false;
	for (int d = 0; d < x->rank; d++)
		if (e->dim[d] != dim[d])
			return false;
	return true;
}

const char *rt_shape_text(int rank, const int64_t *dim, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "[");
	for (int d = 0; d < rank && n < len; d++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? ", " : "", (long long)dim[d]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

/* A count as metadata spells it: decimal digits only (no sign, no space), no overflow. */
static bool parse_count(const char *s, int64_t *v)
{
	int64_t x = 0;
	for (const char *c = s; *c; c++)
		if (*c < '0' || *c > '9' || __builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *c - '0', &x))
			return false;
	*v = x;
	return *s != 0;
}

/* The metadata netc reads, checked: a resumed run trusts it to know where it stands. */
static bool read_meta(const Header *h, const char *path, RtCheckpointMeta *m, char *err, size_t errlen)
{
	*m = (RtCheckpointMeta){0};
	int64_t *counts[META_COUNT] = {[META_STEP] = &m->step, [META_LOSS_SCALE_GROWTH] = &m->loss_scale_growth,
				       [META_SKIPPED_STEPS] = &m->skipped_steps};
	for (int k = 0; k < META_COUNT; k++)
		if (h->has[k] && counts[k] && !parse_count(h->meta[k], counts[k]))
			return fail(err, errlen, "%s: metadata '%s' is '%s', not a count (an integer from 0 up)", path,
				    meta_keys[k], h->meta[k]);
	if (h->has[META_LOSS_SCALE]) {
		const char *v = h->meta[META_LOSS_SCALE];
		char *end;
		m->loss_scale = strtof(v, &end);
		if (end == v || *end || !isfinite(m->loss_scale) || !(m->loss_scale > 0))
			return fail(err, errlen, "%s: metadata 'loss_scale' is '%s', not a positive finite number", path,
				    v);
		m->has_loss_scale = true;
	}
	if (m->skipped_steps > m->step)
		return fail(err, errlen, "%s: metadata 'skipped_steps' is %lld, more than its 'step' (%lld)", path,
			    (long long)m->skipped_steps, (long long)m->step);
	return true;
}

/* The first of n f32 values at p that is NaN or infinite; -1 when all are finite. The data may
 * sit at any byte offset in a foreign file: read them by copying. */
static int64_t first_nonfinite(const uint8_t *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float v;
		memcpy(&v, p + 4 * i, sizeof v);
		if (!isfinite(v))
			return i;
	}
	return -1;
}

/* One buffer from the file's data section (data, size bytes). */
static bool load_entry(Session *s, int i, const Entry *e, const uint8_t *data, uint64_t size,
		       const char *path, char *err, size_t errlen)
{
	const BundleBuffer *x = &rt_bundle(s)->buf[i];
	char a[96], b[96];
	if (strcmp(e->dtype, "F32"))
		return fail(err, errlen, "%s: tensor '%s' is %s; netc loads F32", path, e->name, e->dtype);
	int64_t dim[BUNDLE_MAX_DIMS];
	rt_layout_public_shape(x, dim);
	if (!same_shape(e, x))
		return fail(err, errlen, "%s: tensor '%s' has shape %s; the model's is %s", path, e->name,
			    rt_shape_text(e->rank, e->dim, a, sizeof a), rt_shape_text(x->rank, dim, b, sizeof b));
	if (e->end - e->begin != x->bytes || (uint64_t)e->end > size)
		return fail(err, errlen, "%s: tensor '%s' lies outside the file (truncated?)", path, e->name);
	int64_t bad = first_nonfinite(data + e->begin, x->bytes / 4);
	if (bad >= 0) {
		float v;
		memcpy(&v, data + e->begin + 4 * bad, sizeof v);
		return fail(err, errlen, "%s: tensor '%s' holds %s at element %lld: the run that saved it diverged "
			    "(netc loads finite values only)", path, e->name, isnan(v) ? "NaN" : "Inf", (long long)bad);
	}
	void *stored = public_order(x, data + e->begin, false);
	if (!stored)
		return fail(err, errlen, "%s: out of memory", path);
	rt_write(s, i, stored, (size_t)x->bytes);
	if (stored != data + e->begin)
		free(stored);
	return true;
}

/* Every parameter must be there; missing optimizer state starts from zero (a file of weights
 * only, such as one exported from PyTorch); names the model lacks are listed in a warning. */
static bool load_all(Session *s, Header *h, const uint8_t *data, uint64_t size, const char *path,
		     char *err, size_t errlen)
{
	const Bundle *b = rt_bundle(s);
	int missing_state = 0;
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if (!saved(x))
			continue;
		Entry *e = (Entry *)find_entry(h, x->name);
		if (!e && x->role == BUF_PARAM)
			return fail(err, errlen, "%s: no tensor '%s' (a parameter of model '%s')", path, x->name, b->model);
		if (!e) {
			missing_state++;
			continue;
		}
		e->used = true;
		if (!load_entry(s, i, e, data, size, path, err, errlen))
			return false;
	}
	if (missing_state)
		fprintf(stderr, "warning: %s: no optimizer state for %d buffer%s; it starts from zero\n", path,
			missing_state, missing_state == 1 ? "" : "s");
	int extra = 0;
	for (int i = 0; i < h->n; i++)
		if (!h->e[i].used)
			fprintf(stderr, "%s%s", extra++ ? ", " : "warning: tensors the model does not have, ignored: ",
				h->e[i].name);
	if (extra)
		fprintf(stderr, " (%s)\n", path);
	return true;
}

static bool read_all(const char *path, uint8_t **out, uint64_t *size, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = n > 0 ? malloc((size_t)n) : NULL;
	bool ok = p && fread(p, 1, (size_t)n, f) == (size_t)n;
	fclose(f);
	if (!ok) {
		free(p);
		return fail(err, errlen, "%s: cannot read it (%ld bytes)", path, n);
	}
	*out = p, *size = (uint64_t)n;
	return true;
}

/* A safetensors file read whole: its header parsed into h, its data n + 8 bytes into file. False
 * (the file freed) with err set when it is no safetensors file; else the caller frees file and h.e. */
static bool open_safetensors(const char *path, uint8_t **file, uint64_t *size, uint64_t *n, Header *h, char *err,
			     size_t errlen)
{
	*file = NULL, *size = 0, *n = 0, *h = (Header){0};
	if (!read_all(path, file, size, err, errlen))
		return false;
	for (int i = 0; i < 8 && *size >= 8; i++)
		*n |= (uint64_t)(*file)[i] << (8 * i);
	bool ok = *size >= 8 && *n <= CK_MAX_HEADER && *n <= *size - 8 && *n >= 2 && (*file)[8] == '{';
	if (!ok)
		fail(err, errlen, "%s: not a safetensors file (a header of %llu bytes in a file of %llu)", path,
		     (unsigned long long)*n, (unsigned long long)*size);
	else if (!(ok = parse_header((const char *)*file + 8, *n, h)))
		fail(err, errlen, "%s: not a safetensors file (its JSON header is malformed)", path);
	if (!ok) {
		free(h->e);
		free(*file);
	}
	return ok;
}

bool rt_checkpoint_load(Session *s, const char *path, RtCheckpointMeta *m, char *err, size_t errlen)
{
	uint8_t *file;
	uint64_t size, n;
	Header h;
	if (!open_safetensors(path, &file, &size, &n, &h, err, errlen))
		return false;
	bool ok = true;
	RtCheckpointMeta meta;
	ok = ok && read_meta(&h, path, &meta, err, errlen) &&
	     load_all(s, &h, file + 8 + n, size - 8 - n, path, err, errlen);
	if (ok && m)
		*m = meta;
	free(h.e);
	free(file);
	return ok;
}

/* ---- named tensors outside a session ---- */

int64_t rt_tensor_numel(const RtTensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	return n;
}

RtTensor *rt_tensors_add(RtTensors *set, const char *name, int rank, const int64_t *dim)
{
	RtTensor t = {.rank = rank};
	int64_t n = 1;
	for (int d = 0; d < rank; d++) {
		if (dim[d] < 0 || __builtin_mul_overflow(n, dim[d], &n) || n > ((int64_t)1 << 40))
			return NULL;
		t.dim[d] = dim[d];
	}
	if (rank < 0 || rank > BUNDLE_MAX_DIMS || !(t.data = calloc(n ? (size_t)n : 1, sizeof *t.data)))
		return NULL;
	snprintf(t.name, sizeof t.name, "%s", name);
	if (set->n == set->cap) {
		int cap = set->cap ? 2 * set->cap : 32;
		RtTensor *grown = realloc(set->t, (size_t)cap * sizeof *grown);
		if (!grown) {
			free(t.data);
			return NULL;
		}
		set->t = grown, set->cap = cap;
	}
	set->t[set->n] = t;
	return &set->t[set->n++];
}

const RtTensor *rt_tensors_find(const RtTensors *set, const char *name)
{
	for (int i = 0; i < set->n; i++)
		if (!strcmp(set->t[i].name, name))
			return &set->t[i];
	return NULL;
}

void rt_tensors_free(RtTensors *set)
{
	for (int i = 0; i < set->n; i++)
		free(set->t[i].data);
	free(set->t);
	*set = (RtTensors){0};
}

static bool set_data(FILE *f, void *ctx, const char **why)
{
	const RtTensors *set = ctx;
	for (int i = 0; i < set->n; i++) {
		size_t n = (size_t)rt_tensor_numel(&set->t[i]);
		if (fwrite(set->t[i].data, sizeof(float), n, f) != n)
			return false;
	}
	return true;
}

bool rt_tensors_save(const RtTensors *set, const char *model, const char *path, char *err, size_t errlen)
{
	char *json = NULL;
	size_t len;
	FILE *f = open_memstream(&json, &len);
	if (!f)
		return fail(err, errlen, "%s: out of memory", path);
	put_metadata(f, model, &(RtCheckpointMeta){0});
	int64_t at = 0;
	for (int i = 0; i < set->n; i++) {
		int64_t bytes = rt_tensor_numel(&set->t[i]) * (int64_t)sizeof(float);
		put_entry(f, set->t[i].name, set->t[i].rank, set->t[i].dim, at, bytes);
		at += bytes;
	}
	end_header(f);
	bool ok = write_durably(path, json, len, set_data, (void *)set, err, errlen);
	free(json);
	return ok;
}

/* Entry e of a file as a tensor of set, checked as load_entry checks a buffer's. */
static bool read_entry(RtTensors *set, const Entry *e, const uint8_t *data, uint64_t size, const char *path,
		       char *err, size_t errlen)
{
	if (strcmp(e->dtype, "F32"))
		return fail(err, errlen, "%s: tensor '%s' is %s; netc loads F32", path, e->name, e->dtype);
	RtTensor *t = rt_tensors_add(set, e->name, e->rank, e->dim);
	if (!t)
		return fail(err, errlen, "%s: tensor '%s' is too large", path, e->name);
	int64_t bytes = rt_tensor_numel(t) * (int64_t)sizeof(float);
	if (e->end - e->begin != bytes || (uint64_t)e->end > size)
		return fail(err, errlen, "%s: tensor '%s' lies outside the file (truncated?)", path, e->name);
	int64_t bad = first_nonfinite(data + e->begin, bytes / 4);
	if (bad >= 0)
		return fail(err, errlen, "%s: tensor '%s' holds NaN or Inf at element %lld (netc loads finite values only)",
			    path, e->name, (long long)bad);
	memcpy(t->data, data + e->begin, (size_t)bytes);
	return true;
}

bool rt_tensors_read(const char *path, RtTensors *set, char *err, size_t errlen)
{
	*set = (RtTensors){0};
	uint8_t *file;
	uint64_t size, n;
	Header h;
	if (!open_safetensors(path, &file, &size, &n, &h, err, errlen))
		return false;
	bool ok = true;
	for (int i = 0; ok && i < h.n; i++)
		ok = read_entry(set, &h.e[i], file + 8 + n, size - 8 - n, path, err, errlen);
	if (!ok)
		rt_tensors_free(set);
	free(h.e);
	free(file);
	return ok;
}

/* Whether state buffer x is a parameter's optimizer state ("<param>.<slot>"), which --init leaves
 * at its start. */
static bool optimizer_state(const Bundle *b, const BundleBuffer *x)
{
	for (int i = 0; i < b->nbuf; i++) {
		size_t k = strlen(b->buf[i].name);
		if (b->buf[i].role == BUF_PARAM && !strncmp(x->name, b->buf[i].name, k) && x->name[k] == '.')
			return true;
	}
	return false;
}

bool rt_init_from(Session *s, const RtTensors *set, const char *source, char *err, size_t errlen)
{
	const Bundle *b = rt_bundle(s);
	bool *used = calloc(set->n ? (size_t)set->n : 1, sizeof *used);
	if (!used)
		return fail(err, errlen, "out of memory");
	bool ok = true;
	for (int i = 0; ok && i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if (!saved(x) || (x->role == BUF_STATE && optimizer_state(b, x)))
			continue;
		const RtTensor *t = rt_tensors_find(set, x->name);
		if (!t) {
			if (x->role == BUF_PARAM)
				ok = fail(err, errlen, "%s: no tensor '%s' (a parameter of model '%s')", source, x->name, b->model);
			continue;
		}
		used[t - set->t] = true;
		Entry e = {.rank = t->rank};
		memcpy(e.dim, t->dim, sizeof e.dim);
		int64_t dim[BUNDLE_MAX_DIMS];
		rt_layout_public_shape(x, dim);
		char a[96], c[96];
		if (!same_shape(&e, x)) {
			ok = fail(err, errlen, "%s: tensor '%s' has shape %s; the model's is %s", source, t->name,
				  rt_shape_text(t->rank, t->dim, a, sizeof a), rt_shape_text(x->rank, dim, c, sizeof c));
			break;
		}
		void *stored = public_order(x, t->data, false);
		if (!stored) {
			ok = fail(err, errlen, "out of memory");
			break;
		}
		rt_write(s, i, stored, (size_t)x->bytes);
		if (stored != t->data)
			free(stored);
	}
	int extra = 0;
	for (int i = 0; ok && i < set->n; i++)
		if (!used[i])
			fprintf(stderr, "%s%s", extra++ ? ", " : "warning: tensors the model does not have, ignored: ",
				set->t[i].name);
	if (extra)
		fprintf(stderr, " (%s)\n", source);
	free(used);
	return ok;
}
