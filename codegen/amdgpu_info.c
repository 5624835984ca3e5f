/* amdgpu_info.c: kernel resources from an AMDGPU code object's metadata note, and the occupancy
 * they allow. The ELF is read by hand (64-bit little-endian, as every amdhsa code object is) with
 * every offset checked, so a damaged file is an error, never a crash. */
#include <elf.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/amdgpu_info.h"

#define NOTE_AMDGPU_METADATA 32 /* NT_AMDGPU_METADATA, in notes named "AMDGPU" */

/* ---- ELF: the metadata note ---- */

static bool in_bounds(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static uint32_t align4(uint32_t n)
{
	return (n + 3u) & ~3u;
}

/* Searches the notes in sec[0..len) for AMDGPU's metadata. */
static bool find_note(const uint8_t *sec, uint64_t len, const uint8_t **desc, uint32_t *desc_len)
{
	uint64_t off = 0;
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr h;
		memcpy(&h, sec + off, sizeof h);
		off += sizeof h;
		uint64_t name_off = off;
		if (!in_bounds(len, off, align4(h.n_namesz)))
			return false;
		off += align4(h.n_namesz);
		if (!in_bounds(len, off, h.n_descsz))
			return false;
		if (h.n_type == NOTE_AMDGPU_METADATA && h.n_namesz == 7 && memcmp(sec + name_off, "AMDGPU", 7) == 0) {
			*desc = sec + off;
			*desc_len = h.n_descsz;
			return true;
		}
		if (!in_bounds(len, off, align4(h.n_descsz)))
			return false;
		off += align4(h.n_descsz);
	}
	return false;
}

bool cg_amd_metadata_note(const uint8_t *elf, size_t size, const uint8_t **desc, uint32_t *desc_len,
			  char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	if (size < sizeof eh || memcmp(elf, ELFMAG, SELFMAG) != 0) {
		snprintf(err, errlen, "not an ELF file");
		return false;
	}
	memcpy(&eh, elf, sizeof eh);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_AMDGPU) {
		snprintf(err, errlen, "not an AMDGPU code object (64-bit little-endian ELF for EM_AMDGPU)");
		return false;
	}
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr))) {
		snprintf(err, errlen, "damaged code object: section headers out of the file");
		return false;
	}
	for (int i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, elf + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
		if (sh.sh_type != SHT_NOTE)
			continue;
		if (!in_bounds(size, sh.sh_offset, sh.sh_size)) {
			snprintf(err, errlen, "damaged code object: note section out of the file");
			return false;
		}
		if (find_note(elf + sh.sh_offset, sh.sh_size, desc, desc_len))
			return true;
	}
	snprintf(err, errlen, "code object has no AMDGPU metadata note (code object v3 or later expected)");
	return false;
}

/* ---- msgpack: the metadata map ---- */

static bool key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

static const msgpack_object *lookup(const msgpack_object *map, const char *name)
{
	if (map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (key_is(&map->via.map.ptr[i].key, name))
			return &map->via.map.ptr[i].val;
	return NULL;
}

static int get_int(const msgpack_object *map, const char *name)
{
	const msgpack_object *v = lookup(map, name);
	if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > INT32_MAX)
		return 0;
	return (int)v->via.u64;
}

static void get_str(const msgpack_object *map, const char *name, char *buf, size_t len)
{
	const msgpack_object *v = lookup(map, name);
	buf[0] = 0;
	if (v && v->type == MSGPACK_OBJECT_STR)
		snprintf(buf, len, "%.*s", (int)v->via.str.size, v->via.str.ptr);
}

static void read_kernel(const msgpack_object *m, CgAmdKernel *k)
{
	get_str(m, ".name", k->name, sizeof k->name);
	k->vgpr = get_int(m, ".vgpr_count");
	k->agpr = get_int(m, ".agpr_count");
	k->sgpr = get_int(m, ".sgpr_count");
	k->vgpr_spill = get_int(m, ".vgpr_spill_count");
	k->sgpr_spill = get_int(m, ".sgpr_spill_count");
	k->lds = (uint32_t)get_int(m, ".group_segment_fixed_size");
	k->scratch = (uint32_t)get_int(m, ".private_segment_fixed_size");
	k->wave = get_int(m, ".wavefront_size");
	k->max_wg = get_int(m, ".max_flat_workgroup_size");
}

static bool read_map(const msgpack_object *root, CgAmdCode *code, char *err, size_t errlen)
{
	const msgpack_object *kernels = lookup(root, "amdhsa.kernels");
	if (root->type != MSGPACK_OBJECT_MAP || !kernels || kernels->type != MSGPACK_OBJECT_ARRAY) {
		snprintf(err, errlen, "AMDGPU metadata has no amdhsa.kernels list");
		return false;
	}
	get_str(root, "amdhsa.target", code->target, sizeof code->target);
	const msgpack_object *ver = lookup(root, "amdhsa.version");
	for (int i = 0; ver && ver->type == MSGPACK_OBJECT_ARRAY && i < 2 && (uint32_t)i < ver->via.array.size; i++)
		if (ver->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			code->version[i] = (int)ver->via.array.ptr[i].via.u64;
	code->nkernels = (int)kernels->via.array.size;
	code->kernels = calloc(code->nkernels ? (size_t)code->nkernels : 1, sizeof *code->kernels);
	if (!code->kernels)
		abort();
	for (int i = 0; i < code->nkernels; i++)
		read_kernel(&kernels->via.array.ptr[i], &code->kernels[i]);
	return true;
}

static uint64_t be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Walks msgpack data without allocating and checks every length and element count against the
 * bytes that are there. msgpack-c allocates a container's elements before it reads them, so a
 * damaged count would otherwise ask for gigabytes. */
static bool msgpack_plausible(const uint8_t *p, size_t len)
{
	size_t pos = 0;
	uint64_t pending = 1; /* objects still to read; each takes at least one byte */
	while (pending > 0) {
		if (pos >= len || pending > len - pos)
			return false;
		uint8_t t = p[pos++];
		uint64_t skip = 0, items = 0;
		int n;
		if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3)
			skip = 0;
		else if (t <= 0x8f)
			items = 2 * (uint64_t)(t & 15);
		else if (t <= 0x9f)
			items = t & 15;
		else if (t <= 0xbf)
			skip = t & 31;
		else if (t >= 0xc4 && t <= 0xc9) { /* bin 8/16/32, ext 8/16/32 */
			n = 1 << ((t - 0xc4) % 3);
			if (len - pos < (size_t)n)
				return false;
			skip = be(p + pos, n) + n + (t >= 0xc7);
		} else if (t >= 0xca && t <= 0xd3) /* float32/64, uint 8..64, int 8..64 */
			skip = t == 0xca ? 4 : t == 0xcb ? 8 : 1u << ((t - 0xcc) % 4);
		else if (t >= 0xd4 && t <= 0xd8) /* fixext 1..16 */
			skip = 1 + (1u << (t - 0xd4));
		else if (t >= 0xd9 && t <= 0xdb) { /* str 8/16/32 */
			n = 1 << (t - 0xd9);
			if (len - pos < (size_t)n)
				return false;
			skip = be(p + pos, n) + n;
		} else if (t >= 0xdc && t <= 0xdf) { /* array/map 16/32 */
			n = (t & 1) ? 4 : 2;
			if (len - pos < (size_t)n)
				return false;
			items = be(p + pos, n) * (t >= 0xde ? 2 : 1);
			skip = n;
		} else
			return false; /* 0xc1 is never used */
		if (skip > len - pos)
			return false;
		pos += skip;
		pending = pending - 1 + items;
	}
	return true;
}

bool cg_amd_read(const uint8_t *elf, size_t size, CgAmdCode *code, char *err, size_t errlen)
{
	memset(code, 0, sizeof *code);
	const uint8_t *desc;
	uint32_t len;
	if (!cg_amd_metadata_note(elf, size, &desc, &len, err, errlen))
		return false;
	msgpack_unpacked msg;
	msgpack_unpacked_init(&msg);
	size_t off = 0;
	bool ok = msgpack_plausible(desc, len) &&
		  msgpack_unpack_next(&msg, (const char *)desc, len, &off) == MSGPACK_UNPACK_SUCCESS;
	if (!ok)
		snprintf(err, errlen, "AMDGPU metadata note is not valid msgpack");
	else
		ok = read_map(&msg.data, code, err, errlen);
	msgpack_unpacked_destroy(&msg);
	return ok;
}

void cg_amd_free(CgAmdCode *code)
{
	free(code->kernels);
	memset(code, 0, sizeof *code);
}

/* ---- chips and occupancy ---- */

/* "gfx90a:xnack-" -> major 9, minor 0, stepping 10: the last two characters are the minor
 * version and the stepping (hex digits), the rest the major version. */
static bool parse_gfx(const char *arch, int *major, int *minor, int *step)
{
	if (strncmp(arch, "gfx", 3) != 0)
		return false;
	const char *s = arch + 3;
	size_t n = strcspn(s, ":");
	if (n < 3 || n > 4)
		return false;
	char buf[8];
	memcpy(buf, s, n);
	buf[n] = 0;
	char *end;
	unsigned long v = strtoul(buf, &end, 16);
	if (*end)
		return false;
	*step = (int)(v & 15);
	*minor = (int)((v >> 4) & 15);
	/* the major version is decimal: "10" in gfx1030 */
	buf[n - 2] = 0;
	*major = (int)strtol(buf, &end, 10);
	return *end == 0 && *major >= 6;
}

bool cg_amd_chip(const char *arch, int wave, CgAmdChip *c)
{
	int major, minor, step;
	if (!parse_gfx(arch, &major, &minor, &step) || (wave != 32 && wave != 64) || (major < 10 && wave != 64))
		return false;
	bool w32 = wave == 32;
	bool gfx90a = major == 9 && ((minor == 0 && step == 10) || minor == 4 || minor == 5);
	bool gfx10_3 = major > 10 || (major == 10 && minor >= 3);
	/* RDNA3 Navi 31/32 (gfx1100, gfx1101, gfx1151) and RDNA4 have 1.5x the VGPRs of RDNA2 */
	bool vgpr_1_5x = (major == 11 && minor == 0 && step <= 1) || (major == 11 && minor == 5 && step == 1) || major == 12;
	memset(c, 0, sizeof *c);
	c->major = major;
	c->wave = wave;
	c->unified_agpr = gfx90a;
	c->max_waves = gfx90a ? 8 : major < 10 ? 10 : gfx10_3 ? 16 : 20;
	if (gfx90a) {
		c->vgpr_total = 512, c->vgpr_granule = 8;
	} else if (major < 10) {
		c->vgpr_total = 256, c->vgpr_granule = 4;
	} else if (vgpr_1_5x) {
		c->vgpr_total = w32 ? 1536 : 768, c->vgpr_granule = w32 ? 24 : 12;
	} else {
		c->vgpr_total = w32 ? 1024 : 512, c->vgpr_granule = gfx10_3 ? (w32 ? 16 : 8) : (w32 ? 8 : 4);
	}
	/* gfx10+ run in WGP mode: a work-group's waves share the WGP's four SIMDs and 128 KiB of LDS */
	c->simds = 4;
	c->lds_bytes = major >= 10 ? 131072 : 65536;
	c->max_barriers = major >= 10 ? 32 : 16;
	return true;
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

static int div_ceil(int a, int b)
{
	return (a + b - 1) / b;
}

static int waves_by_vgpr(const CgAmdChip *c, const CgAmdKernel *k)
{
	/* separate AGPR files (gfx908) hold as many as the VGPRs; on unified chips .vgpr_count already
	 * counts both */
	int n = !c->unified_agpr && k->agpr > k->vgpr ? k->agpr : k->vgpr;
	if (n < c->vgpr_granule)
		return c->max_waves;
	int rounded = div_ceil(n, c->vgpr_granule) * c->vgpr_granule;
	int w = c->vgpr_total / rounded;
	return min_int(w < 1 ? 1 : w, c->max_waves);
}

/* gfx8/9 share 800 SGPRs per SIMD, allocated in blocks of 16; gfx10+ give every wave its own. */
static int waves_by_sgpr(const CgAmdChip *c, int sgpr)
{
	if (c->major >= 10)
		return c->max_waves;
	int w = sgpr <= 80 ? 10 : sgpr <= 88 ? 9 : sgpr <= 100 ? 8 : 7;
	return min_int(w, c->max_waves);
}

/* Work-groups resident on one CU (WGP) by slots and barriers, and further by LDS when lds > 0;
 * as waves per SIMD. */
static int waves_by_groups(const CgAmdChip *c, int wg_size, uint32_t lds)
{
	int per_wg = div_ceil(wg_size, c->wave);
	int slots = c->max_waves * c->simds;
	int groups = per_wg == 1 ? slots : min_int(slots / per_wg, c->max_barriers);
	if (groups == 0)
		return 1;
	if (lds) {
		uint32_t by_lds = c->lds_bytes / lds;
		if (by_lds == 0)
			return 1;
		if (by_lds < (uint32_t)groups)
			groups = (int)by_lds;
	}
	return min_int(div_ceil(groups * per_wg, c->simds), c->max_waves);
}

CgAmdOccupancy cg_amd_occupancy(const CgAmdChip *c, const CgAmdKernel *k, int wg_size)
{
	if (wg_size <= 0)
		wg_size = k->max_wg > 0 ? k->max_wg : 256;
	CgAmdOccupancy o = {
		.by_vgpr = waves_by_vgpr(c, k),
		.by_sgpr = waves_by_sgpr(c, k->sgpr),
		.by_wg = waves_by_groups(c, wg_size, 0),
		.by_lds = waves_by_groups(c, wg_size, k->lds),
	};
	o.waves = c->max_waves, o.limit = "max";
	if (o.by_wg < o.waves)
		o.waves = o.by_wg, o.limit = "work-group";
	if (o.by_lds < o.waves)
		o.waves = o.by_lds, o.limit = "lds";
	if (o.by_sgpr < o.waves)
		o.waves = o.by_sgpr, o.limit = "sgpr";
	if (o.by_vgpr < o.waves)
		o.waves = o.by_vgpr, o.limit = "vgpr";
	return o;
}
