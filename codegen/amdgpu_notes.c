/* amdgpu_notes.c: merging the metadata notes of a linked AMDGPU code object (amdgpu_notes.h).
 * The merged note is smaller than the notes it replaces (one map header, target and version
 * instead of one per object), so it is written over them and the note section and its PT_NOTE
 * segment shrink; the bytes freed are zeroed and lie between sections, where ELF allows a gap. */
#include "codegen/amdgpu_notes.h"

#include <elf.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTE_AMDGPU_METADATA 32
#define MAX_NOTES 65536

static uint32_t align4(uint32_t n) { return (n + 3u) & ~3u; }

static bool in_bounds(size_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

typedef struct {
	const uint8_t *at;    /* the note, header included */
	uint32_t len;         /* header, name and desc with their padding */
	const uint8_t *desc;
	uint32_t desc_len;
	bool metadata;
} Note;

/* The notes of sec[0..len) into notes (at most MAX_NOTES); -1 when they overrun the section. */
static int list_notes(const uint8_t *sec, uint64_t len, Note *notes)
{
	int n = 0;
	uint64_t off = 0;
	while (len - off >= sizeof(Elf64_Nhdr) && n < MAX_NOTES) {
		Elf64_Nhdr h;
		memcpy(&h, sec + off, sizeof h);
		uint64_t name = off + sizeof h, desc = name + align4(h.n_namesz);
		if (!in_bounds(len, name, align4(h.n_namesz)) || !in_bounds(len, desc, align4(h.n_descsz)))
			return -1;
		notes[n] = (Note){sec + off, (uint32_t)(desc + align4(h.n_descsz) - off), sec + desc, h.n_descsz,
				  h.n_type == NOTE_AMDGPU_METADATA && h.n_namesz == 7 && memcmp(sec + name, "AMDGPU", 7) == 0};
		off = desc + align4(h.n_descsz);
		n++;
	}
	return n;
}

static bool is_key(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

static const msgpack_object *kernels_of(const msgpack_object *map)
{
	if (map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (is_key(&map->via.map.ptr[i].key, "amdhsa.kernels") &&
		    map->via.map.ptr[i].val.type == MSGPACK_OBJECT_ARRAY)
			return &map->via.map.ptr[i].val;
	return NULL;
}

/* The merged map into buf: maps[0] with the kernels of every map. */
static bool pack_merged(msgpack_unpacked *maps, int n, msgpack_sbuffer *buf)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
	const msgpack_object *root = &maps[0].data;
	uint32_t total = 0;
	for (int i = 0; i < n; i++) {
		const msgpack_object *k = kernels_of(&maps[i].data);
		if (!k)
			return false;
		total += k->via.array.size;
	}
	msgpack_pack_map(&pk, root->via.map.size);
	for (uint32_t e = 0; e < root->via.map.size; e++) {
		const msgpack_object_kv *kv = &root->via.map.ptr[e];
		msgpack_pack_object(&pk, kv->key);
		if (!is_key(&kv->key, "amdhsa.kernels")) {
			msgpack_pack_object(&pk, kv->val);
			continue;
		}
		msgpack_pack_array(&pk, total);
		for (int i = 0; i < n; i++) {
			const msgpack_object *k = kernels_of(&maps[i].data);
			for (uint32_t j = 0; j < k->via.array.size; j++)
				msgpack_pack_object(&pk, k->via.array.ptr[j]);
		}
	}
	return true;
}

/* The new note section into out (at most cap bytes): the notes that are not metadata as they were,
 * and the merged metadata note where the first one was. Returns its size, or 0 if it exceeds cap. */
static size_t write_section(const Note *notes, int n, const msgpack_sbuffer *merged, uint8_t *out, size_t cap)
{
	size_t len = 0;
	bool placed = false;
	for (int i = 0; i < n; i++) {
		if (!notes[i].metadata) {
			if (len + notes[i].len > cap)
				return 0;
			memcpy(out + len, notes[i].at, notes[i].len);
			len += notes[i].len;
			continue;
		}
		if (placed)
			continue;
		placed = true;
		Elf64_Nhdr h = {7, (uint32_t)merged->size, NOTE_AMDGPU_METADATA};
		size_t need = sizeof h + 8 + align4((uint32_t)merged->size);
		if (len + need > cap)
			return 0;
		memcpy(out + len, &h, sizeof h);
		memcpy(out + len + sizeof h, "AMDGPU\0", 8);
		memset(out + len + sizeof h + 8, 0, need - sizeof h - 8);
		memcpy(out + len + sizeof h + 8, merged->data, merged->size);
		len += need;
	}
	return len;
}

/* Merges the metadata notes of the note section sh (its header at shdr in elf), where it has more
 * than one. */
static bool merge_section(uint8_t *elf, Elf64_Shdr *sh, uint8_t *shdr, char *err, size_t errlen)
{
	Note *notes = malloc(MAX_NOTES * sizeof *notes);
	if (!notes) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	int n = list_notes(elf + sh->sh_offset, sh->sh_size, notes);
	int nmeta = 0;
	for (int i = 0; i < n; i++)
		nmeta += notes[i].metadata;
	if (n < 0 || nmeta <= 1) {
		free(notes);
		if (n < 0)
			snprintf(err, errlen, "internal error: linked AMDGPU code object has a damaged note section");
		return n >= 0;
	}
	msgpack_unpacked *maps = calloc((size_t)nmeta, sizeof *maps);
	msgpack_sbuffer merged;
	msgpack_sbuffer_init(&merged);
	uint8_t *section = malloc(sh->sh_size);
	int m = 0;
	bool ok = maps && section;
	for (int i = 0; ok && i < n; i++) {
		if (!notes[i].metadata)
			continue;
		size_t off = 0;
		msgpack_unpacked_init(&maps[m]);
		ok = msgpack_unpack_next(&maps[m++], (const char *)notes[i].desc, notes[i].desc_len, &off) ==
		     MSGPACK_UNPACK_SUCCESS;
	}
	ok = ok && pack_merged(maps, m, &merged);
	size_t len = ok ? write_section(notes, n, &merged, section, sh->sh_size) : 0;
	if (len == 0) {
		snprintf(err, errlen, "internal error: cannot merge the AMDGPU metadata notes of the linked code object");
		ok = false;
	} else {
		memcpy(elf + sh->sh_offset, section, len);
		memset(elf + sh->sh_offset + len, 0, sh->sh_size - len);
		Elf64_Ehdr eh;
		memcpy(&eh, elf, sizeof eh);
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			uint8_t *at = elf + eh.e_phoff + (uint64_t)i * sizeof ph;
			memcpy(&ph, at, sizeof ph);
			if (ph.p_type == PT_NOTE && ph.p_offset == sh->sh_offset && ph.p_filesz == sh->sh_size) {
				ph.p_filesz = ph.p_memsz = len;
				memcpy(at, &ph, sizeof ph);
			}
		}
		sh->sh_size = len;
		memcpy(shdr, sh, sizeof *sh);
	}
	for (int i = 0; i < m; i++)
		msgpack_unpacked_destroy(&maps[i]);
	msgpack_sbuffer_destroy(&merged);
	free(maps);
	free(section);
	free(notes);
	return ok;
}

bool cg_amd_merge_notes(uint8_t *elf, size_t size, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	if (size < sizeof eh || memcmp(elf, ELFMAG, SELFMAG) != 0) {
		snprintf(err, errlen, "internal error: the linked AMDGPU code object is not ELF");
		return false;
	}
	memcpy(&eh, elf, sizeof eh);
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !in_bounds(size, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr))) {
		snprintf(err, errlen, "internal error: the linked AMDGPU code object has damaged headers");
		return false;
	}
	for (int i = 0; i < eh.e_shnum; i++) {
		uint8_t *at = elf + eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr);
		Elf64_Shdr sh;
		memcpy(&sh, at, sizeof sh);
		if (sh.sh_type != SHT_NOTE)
			continue;
		if (!in_bounds(size, sh.sh_offset, sh.sh_size)) {
			snprintf(err, errlen, "internal error: the linked AMDGPU code object has a damaged note section");
			return false;
		}
		if (!merge_section(elf, &sh, at, err, errlen))
			return false;
	}
	return true;
}
