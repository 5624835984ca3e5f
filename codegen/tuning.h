/* tuning.h: tile configurations for the GEMM templates taken from a tuning table instead of the
 * templates' heuristics (`netc compile --tuning FILE`, `netc tune`; docs/tuning.md).
 *
 * A key names what a GEMM's tiles depend on: the target's architecture, the precision class it
 * multiplies in, its shape and its operands' facts. A configuration is what the template varies:
 * the work-group tile (BM x BN on a GPU, MB x NB on the host) and the k-block. Each template
 * enumerates the configurations it supports for a GEMM (codegen/gemm.c, codegen/gemm_gpu.c; the
 * first is the heuristic's) and takes one of them through cg_tuning_choose: a table's entry where
 * it names one of the candidates, the i-th candidate while `netc tune` compiles candidate i, else
 * the heuristic's. Whichever it takes is noted on the kernel (CgKernel.tiles) with why.
 *
 * Pure C: the tables and their text also serve the runtime-only build (`netc tune --candidates`). */
#ifndef NETC_TUNING_H
#define NETC_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The first line of a tuning file and of a candidates manifest. */
#define CG_TUNING_MAGIC "netc-tuning"
#define CG_TUNING_VERSION "1"
#define CG_TUNING_HEADER CG_TUNING_MAGIC " " CG_TUNING_VERSION

typedef struct {
	char arch[72];     /* the target's architecture ("sm_90", "gfx906"); the host: "host-" and the
			      LLVM CPU its code is built for ("host-skylake-avx512") */
	char cls[8];       /* precision class: f32, f64 (SIMT or host), f16f32, bf16f32 (half
			      operands in f32 registers, GPU SIMT), tf32, xf32, mf32 (matrix units' float products),
			      f16, bf16 (half products on a matrix unit), dot2, f16x2, bf16x2 (packed
			      half FMAs, --packed-half) */
	int64_t batch, m, n, k;
	char a[16], b[16]; /* operand facts: 'k' where it runs along k, else 'm' (A) or 'n' (B); its
			      aligned run length; A: 's' where one packed A serves every batch */
	int split;         /* split-K slices asked for (1: none) */
} CgTuneKey;

/* What a template varies: the work-group tile (GPU: BM x BN; host: MB x NB) and the k-block; on
 * the GPU's narrow SIMT tiles also the register tile, where it is not the template's own for the
 * tile (rm, rn 0: the template's; the text's `reg=RMxRN`); on wgmma's targets whether a
 * convolution's window is staged as padded rows, in how many buffers, and how many tiles one
 * work-group takes. */
typedef struct {
	int64_t tm, tn, kb;
	int64_t rm, rn;
	bool rows;         /* the GPU template's halo tiles of a stride-1 NHWC window (the text's
			      `rows`; codegen/gemm_gpu.c, "padded rows") */
	int64_t stages;    /* padded rows: their LDS buffers (0: as many as fit; the text's
			      `stages=N` after `rows`) */
	int64_t tiles;     /* padded rows: tiles per work-group, their k-blocks one pipeline (0:
			      one; the text's `tiles=N` after `rows` and its `stages=N`) */
} CgTileConfig;

typedef enum {
	CG_TILES_NONE,      /* the kernel is no GEMM (or the sum kernel of a split one) */
	CG_TILES_HEURISTIC, /* the template's own choice */
	CG_TILES_TUNED,     /* a tuning table's entry */
	CG_TILES_CANDIDATE, /* candidate i of `netc tune` */
} CgTileSource;

/* The tiles one GEMM kernel took, and why (netc info, netc tune's manifests). */
typedef struct {
	CgTileSource source;
	CgTuneKey key;
	CgTileConfig cfg;
	int index, ncand;  /* cfg is candidate index of ncand (0: the heuristic's) */
	char why[448];     /* "heuristic", "tuned from FILE:LINE: figures", "candidate 3 of 12", ... */
	char instr[128];   /* the matrix instruction where the tiles' choice of it is news ("wgmma
			      m64n128k16, 3 stages of 16 KiB"); empty otherwise */
} CgTileNote;

typedef struct {
	CgTuneKey key;
	CgTileConfig cfg;
	int line;          /* where the file has it */
	char comment[160]; /* what the line says after '#' (figures), without the '#' */
} CgTuneEntry;

typedef struct CgTuning {
	char source[256];  /* the file ("tuning/sm_90.tune" for a shipped one) */
	CgTuneEntry *e;
	int n, cap;
	int *slot;         /* an open-addressing index of e by key: entry + 1, 0 where empty */
	int nslot;         /* a power of two, at least twice n (0: no index yet) */
} CgTuning;

/* ---- keys and configurations as text ----
 *
 *     sm_90 f32 batch=1 m=64 n=3136 k=800 a=m1 b=n4 split=1 : tile=64x128 kb=16  # figures
 *     gfx906 f32 batch=36 m=16 n=16 k=8192 a=k4 b=k4 split=16 : tile=16x16 kb=32 reg=2x2
 *     sm_90 bf16 batch=1 m=3211264 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows
 */
void cg_tune_key_text(const CgTuneKey *k, char *buf, size_t len);
void cg_tile_config_text(const CgTileConfig *c, char *buf, size_t len);
bool cg_tune_key_equal(const CgTuneKey *a, const CgTuneKey *b);

/* ---- tables ---- */

/* Parses a tuning file's text; an error says "SOURCE:LINE: what was expected". */
bool cg_tuning_parse(const char *text, size_t len, const char *source, CgTuning *t, char *err, size_t errlen);
bool cg_tuning_load(const char *path, CgTuning *t, char *err, size_t errlen);
void cg_tuning_free(CgTuning *t);
/* Sets key's configuration (replacing an entry of the same key); comment may be NULL. */
void cg_tuning_set(CgTuning *t, const CgTuneKey *key, const CgTileConfig *cfg, const char *comment);
const CgTuneEntry *cg_tuning_find(const CgTuning *t, const CgTuneKey *key);
/* The header, a comment line per line of `about` (may be NULL), and one line per entry. */
void cg_tuning_write(FILE *f, const CgTuning *t, const char *about);

/* ---- what compiles in this process use (set before compiling; read by every compile thread) ---- */

/* The tables a GEMM's key is looked up in, in order (a user's file before the shipped ones); n 0:
 * none, the heuristics everywhere. The tables must outlive the compiles. */
void cg_tuning_use(const CgTuning *const *tables, int n);
/* netc tune: every GEMM takes its candidate i (its heuristic's where it has fewer); -1: off. */
void cg_tuning_candidate(int i);
/* The most candidates any GEMM compiled since the last reset had. */
int cg_tuning_candidates_seen(void);
void cg_tuning_reset_seen(void);

/* The shipped tables (the .tune files of tuning/, built into netc), and the one for an architecture (NULL: none). */
int cg_tuning_shipped_count(void);
const CgTuning *cg_tuning_shipped(int i);
const CgTuning *cg_tuning_shipped_for(const char *arch);

struct Cg;
/* The template's entry: which of cand[0..n) (cand[0]: the heuristic's) the GEMM of key takes;
 * noted on the kernel being emitted. */
int cg_tuning_choose(struct Cg *cg, const CgTuneKey *key, const CgTileConfig *cand, int n);
/* Notes on the kernel being emitted the matrix instruction its tiles run on (CgTileNote.instr). */
void cg_tuning_note_instr(struct Cg *cg, const char *instr);

#endif
