/* report.c: the fused-against-unfused page of `bench --compare --report` (report.h). Everything
 * is drawn here as SVG; the page's script only counts what was drawn into the body's data
 * attributes, which tests read back from a headless browser. */
#include "tools/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/profile.h"

/* Groups drawn one by one; the rest share one row. */
#define SHOWN_GROUPS 40
#define COLORS 4
static const char *const column_color[COLORS] = {"#e8833a", "#3b7dd8", "#4caf50", "#9c27b0"};

/* One fused group: its kernels in the fused column and the unfused kernels it replaced. */
typedef struct {
	int leader;          /* the fused group's node, -1 for the row of the others */
	char members[72];
	double fused_ms, fused_bytes;
	double unfused_ms, unfused_bytes;
	int first_seg, nseg; /* its unfused kernels in Groups.seg */
} Group;

typedef struct {
	int kernel;          /* in the unfused column */
	double ms;
} Segment;

typedef struct {
	Group *group;
	int ngroups;
	Segment *seg;
	int nseg, unmatched;
} Groups;

static void html_text(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

static const ReportColumn *column_named(const ReportColumn *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			return &c[i];
	return NULL;
}

static int larger_first(const void *a, const void *b)
{
	const Group *x = a, *y = b;
	double u = fmax(x->fused_ms, x->unfused_ms), v = fmax(y->fused_ms, y->unfused_ms);
	return u < v ? 1 : u > v ? -1 : x->leader - y->leader;
}

/* The fused column's groups, each with the unfused kernels whose node it holds: the two graphs
 * differ only in the fuse pass, so a node has the same id and op in both. */
static void make_groups(const ReportColumn *fused, const ReportColumn *unfused, Groups *out)
{
	memset(out, 0, sizeof *out);
	const Graph *g = fused->g;
	const BenchResult *fr = fused->r, *ur = unfused->r;
	KernelCounts *fc = profile_counts(fused->b, fr), *uc = profile_counts(unfused->b, ur);
	int *index = malloc(((size_t)g->nnodes + 1) * sizeof *index);
	int *owner = malloc(((size_t)ur->nkernels + 1) * sizeof *owner);
	out->group = calloc((size_t)fr->nkernels + 2, sizeof *out->group);
	out->seg = calloc((size_t)ur->nkernels + 1, sizeof *out->seg);
	if (!fc || !uc || !index || !owner || !out->group || !out->seg)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		index[i] = -1;
	for (int k = 0; k < fr->nkernels; k++) {
		int leader = fr->kernels[k].node;
		if (leader < 0 || leader >= g->nnodes)
			continue;
		if (index[leader] < 0) {
			Group *gr = &out->group[out->ngroups];
			index[leader] = out->ngroups++;
			gr->leader = leader;
			snprintf(gr->members, sizeof gr->members, "%s", fc[k].known ? fc[k].members : fr->kernels[k].name);
			gr->fused_bytes = fc[k].bytes;
		}
		out->group[index[leader]].fused_ms += fr->kernel_ms[k];
	}
	for (int u = 0; u < ur->nkernels; u++) { /* owner: the fused group's node */
		int x = ur->kernels[u].node;
		bool same = x >= 0 && x < g->nnodes && x < unfused->g->nnodes && g->node[x].op == unfused->g->node[x].op &&
			    g->node[x].group >= 0 && index[g->node[x].group] >= 0;
		owner[u] = same ? g->node[x].group : -1;
		out->unmatched += !same;
	}
	qsort(out->group, (size_t)out->ngroups, sizeof *out->group, larger_first);
	for (int i = 0; i < out->ngroups; i++)
		index[out->group[i].leader] = i;
	/* the others' row: groups past SHOWN_GROUPS */
	int shown = out->ngroups > SHOWN_GROUPS ? SHOWN_GROUPS : out->ngroups;
	if (out->ngroups > shown) {
		Group others = {.leader = -1};
		snprintf(others.members, sizeof others.members, "%d other groups", out->ngroups - shown);
		for (int i = shown; i < out->ngroups; i++) {
			others.fused_ms += out->group[i].fused_ms;
			others.fused_bytes += out->group[i].fused_bytes;
		}
		out->group[shown] = others;
		out->ngroups = shown + 1;
	}
	for (int i = 0; i < out->ngroups; i++) {
		Group *gr = &out->group[i];
		gr->first_seg = out->nseg;
		for (int u = 0; u < ur->nkernels; u++) {
			int at = owner[u] < 0 ? -1 : index[owner[u]];
			if (at >= shown)
				at = shown; /* the others' row */
			if (at != i)
				continue;
			out->seg[out->nseg++] = (Segment){.kernel = u, .ms = ur->kernel_ms[u]};
			gr->unfused_ms += ur->kernel_ms[u];
			gr->unfused_bytes += uc[u].known ? uc[u].bytes : 0;
			gr->nseg++;
		}
	}
	free(index);
	free(owner);
	free(fc);
	free(uc);
}

static void legend(FILE *f, int x, int y, const char *color, const char *text)
{
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", x, y, color,
		x + 16, y + 11);
	html_text(f, text);
	fprintf(f, "</text>\n");
}

#define LABEL_W 270
#define BAR_W 600
#define ROW_H 30

/* Time (ms) or bytes (MB) per group: the fused group's bar over the unfused kernels' stack. */
static void group_chart(FILE *f, const Groups *gs, const BenchResult *ur, bool bytes)
{
	double max = 1e-12;
	for (int i = 0; i < gs->ngroups; i++) {
		const Group *g = &gs->group[i];
		max = fmax(max, bytes ? fmax(g->fused_bytes, g->unfused_bytes) : fmax(g->fused_ms, g->unfused_ms));
	}
	int height = gs->ngroups * ROW_H + 50;
	const char *kind = bytes ? "bytes" : "time";
	fprintf(f, "<svg class=\"chart\" id=\"%s-chart\" width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		kind, LABEL_W + BAR_W + 140, height);
	legend(f, LABEL_W, 4, column_color[1], "fused group");
	legend(f, LABEL_W + 140, 4, column_color[0], bytes ? "the unfused kernels it replaced (summed)"
							     : "the unfused kernels it replaced (stacked)");
	for (int i = 0; i < gs->ngroups; i++) {
		const Group *g = &gs->group[i];
		int y = 30 + i * ROW_H;
		double fv = bytes ? g->fused_bytes : g->fused_ms, uv = bytes ? g->unfused_bytes : g->unfused_ms;
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LABEL_W - 6, y + 15);
		html_text(f, g->members);
		fprintf(f, "</text>\n");
		fprintf(f, "<rect class=\"%s fused\" x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"11\" fill=\"%s\"><title>",
			kind, LABEL_W, y + 2, BAR_W * fv / max, column_color[1]);
		html_text(f, g->members);
		fprintf(f, bytes ? ": %.3f MB</title></rect>\n" : ": %.4f ms</title></rect>\n", bytes ? fv / 1e6 : fv);
		if (bytes) {
			fprintf(f, "<rect class=\"bytes unfused\" x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"11\" fill=\"%s\">"
				   "<title>%d unfused kernels: %.3f MB</title></rect>\n", LABEL_W, y + 15, BAR_W * uv / max,
				column_color[0], g->nseg, uv / 1e6);
		} else {
			double x = LABEL_W;
			for (int s = 0; s < g->nseg; s++) {
				const Segment *sg = &gs->seg[g->first_seg + s];
				double w = BAR_W * sg->ms / max;
				fprintf(f, "<rect class=\"time unfused\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"11\" "
					   "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>", x, y + 15, w,
					s % 2 ? "#f2b27a" : column_color[0]);
				html_text(f, ur->kernels[sg->kernel].name);
				fprintf(f, ": %.4f ms</title></rect>\n", sg->ms);
				x += w;
			}
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"value\">", LABEL_W + BAR_W * fmax(fv, uv) / max + 4, y + 15);
		fprintf(f, bytes ? "%.2f / %.2f MB" : "%.3f / %.3f ms", bytes ? fv / 1e6 : fv, bytes ? uv / 1e6 : uv);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</svg>\n");
}

static void arena_chart(FILE *f, const ReportColumn *c, int n, const ReportTable *t, int arena_row)
{
	double max = 1;
	for (int i = 0; i < n; i++)
		max = fmax(max, t->value[arena_row][i]);
	fprintf(f, "<svg class=\"chart\" id=\"arena-chart\" width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		LABEL_W + BAR_W + 90, n * ROW_H + 10);
	for (int i = 0; i < n; i++) {
		double v = t->value[arena_row][i];
		int y = 5 + i * ROW_H;
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LABEL_W - 6, y + 15);
		html_text(f, c[i].name);
		fprintf(f, "</text><rect class=\"arena\" x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"18\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%d\" class=\"value\">%.2f MB</text>\n", LABEL_W, y + 2, BAR_W * v / max,
			column_color[i % COLORS], LABEL_W + BAR_W * v / max + 4, y + 15, v / 1e6);
	}
	fprintf(f, "</svg>\n");
}

/* log10 axes of the roofline plot */
#define PLOT_W 640
#define PLOT_H 400
#define PLOT_X 70
#define PLOT_Y 20
static double plot_x(double intensity, double lo, double hi)
{
	return PLOT_X + PLOT_W * (log10(intensity) - lo) / (hi - lo);
}
static double plot_y(double gflops, double lo, double hi)
{
	return PLOT_Y + PLOT_H * (1 - (log10(gflops) - lo) / (hi - lo));
}

/* Kernel k's point on the roofline plot, FLOP per byte and GFLOP/s, where it has one (counted
 * FLOPs and bytes, a measured time). */
static bool roofline_point(const KernelCounts *kc, const BenchResult *r, int k, double *ai, double *gf)
{
	double ms = r->kernel_ms[k];
	if (!kc[k].known || kc[k].flops <= 0 || kc[k].bytes <= 0 || ms <= 0)
		return false;
	*ai = kc[k].flops / kc[k].bytes;
	*gf = kc[k].flops / (ms * 1e6);
	return true;
}

static void roofline_chart(FILE *f, const ReportColumn *c, int n, const RtRoofline *roof)
{
	/* the axes: the kernels' points and the roofs, in whole decades */
	double xlo = 1e30, xhi = -1e30, ylo = 1e30, yhi = -1e30, ai, gf;
	KernelCounts **kcs = calloc((size_t)n, sizeof *kcs);
	if (!kcs)
		abort();
	for (int i = 0; i < n; i++) {
		kcs[i] = profile_counts(c[i].b, c[i].r);
		for (int k = 0; k < c[i].r->nkernels; k++) {
			if (!roofline_point(kcs[i], c[i].r, k, &ai, &gf))
				continue;
			xlo = fmin(xlo, ai), xhi = fmax(xhi, ai);
			ylo = fmin(ylo, gf), yhi = fmax(yhi, gf);
		}
	}
	if (roof->gflops > 0) {
		yhi = fmax(yhi, roof->gflops);
		xhi = fmax(xhi, roof->gflops / roof->gbs * 4);
	}
	if (xlo > xhi) { /* nothing counted */
		xlo = 0.1, xhi = 10, ylo = 0.1, yhi = 10;
	}
	xlo = floor(log10(xlo)), xhi = ceil(log10(xhi)), ylo = floor(log10(ylo)), yhi = ceil(log10(yhi));
	xhi = xhi > xlo ? xhi : xlo + 1;
	yhi = yhi > ylo ? yhi : ylo + 1;
	fprintf(f, "<svg class=\"chart\" id=\"roofline-chart\" width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		PLOT_X + PLOT_W + 200, PLOT_Y + PLOT_H + 50);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", PLOT_X, PLOT_Y,
		PLOT_W, PLOT_H);
	for (double d = xlo; d <= xhi; d++)
		fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" "
			   "text-anchor=\"middle\">%g</text>\n", plot_x(pow(10, d), xlo, xhi), PLOT_Y,
			plot_x(pow(10, d), xlo, xhi), PLOT_Y + PLOT_H, plot_x(pow(10, d), xlo, xhi), PLOT_Y + PLOT_H + 16,
			pow(10, d));
	for (double d = ylo; d <= yhi; d++)
		fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" "
			   "text-anchor=\"end\">%g</text>\n", PLOT_X, plot_y(pow(10, d), ylo, yhi), PLOT_X + PLOT_W,
			plot_y(pow(10, d), ylo, yhi), PLOT_X - 4, plot_y(pow(10, d), ylo, yhi) + 4, pow(10, d));
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">FLOP per byte</text>\n", PLOT_X + PLOT_W / 2,
		PLOT_Y + PLOT_H + 36);
	fprintf(f, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">GFLOP/s</text>\n",
		PLOT_Y + PLOT_H / 2, PLOT_Y + PLOT_H / 2);
	if (roof->gflops > 0) {
		/* bandwidth-bound up to the ridge, compute-bound after it; clipped to the plot */
		double ridge = roof->gflops / roof->gbs, x0 = pow(10, xlo), x1 = pow(10, xhi);
		double y0 = fmax(roof->gbs * x0, pow(10, ylo)), xs = y0 / roof->gbs;
		fprintf(f, "<polyline class=\"roof\" fill=\"none\" stroke=\"#c00\" stroke-width=\"2\" points=\"%.1f,%.1f "
			   "%.1f,%.1f %.1f,%.1f\"><title>roofline: %.1f GFLOP/s, %.1f GB/s</title></polyline>\n",
			plot_x(xs, xlo, xhi), plot_y(y0, ylo, yhi), plot_x(ridge, xlo, xhi), plot_y(roof->gflops, ylo, yhi),
			plot_x(x1, xlo, xhi), plot_y(roof->gflops, ylo, yhi), roof->gflops, roof->gbs);
	}
	for (int i = 0; i < n; i++) {
		const KernelCounts *kc = kcs[i];
		for (int k = 0; k < c[i].r->nkernels; k++) {
			if (!roofline_point(kc, c[i].r, k, &ai, &gf))
				continue;
			fprintf(f, "<circle class=\"point\" data-column=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
				   "fill-opacity=\"0.7\"><title>", c[i].name, plot_x(ai, xlo, xhi), plot_y(gf, ylo, yhi),
				column_color[i % COLORS]);
			html_text(f, c[i].name);
			fprintf(f, " ");
			html_text(f, c[i].r->kernels[k].name);
			fprintf(f, " (");
			html_text(f, kc[k].members);
			fprintf(f, "): %.2f FLOP/byte, %.2f GFLOP/s</title></circle>\n", ai, gf);
		}
		free(kcs[i]);
		legend(f, PLOT_X + PLOT_W + 16, PLOT_Y + 10 + 20 * i, column_color[i % COLORS], c[i].name);
	}
	free(kcs);
	fprintf(f, "</svg>\n");
}

static const char style[] =
	"body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
	"td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}th:first-child,td:first-child{text-align:left}"
	"svg text{font-size:11px;font-family:sans-serif}.grid{stroke:#eee}.value{fill:#555}"
	"h2{margin-top:1.6em}p.note{color:#555;max-width:60em}";

/* Counts what was drawn into the body's data attributes (for readers and tests). */
static const char script[] =
	"(function () {\n"
	"  var count = function (s) { return document.querySelectorAll(s).length; };\n"
	"  var d = document.body.dataset;\n"
	"  d.fusedBars = count('rect.time.fused');\n"
	"  d.unfusedSegments = count('rect.time.unfused');\n"
	"  d.byteBars = count('rect.bytes');\n"
	"  d.arenaBars = count('rect.arena');\n"
	"  d.points = count('circle.point');\n"
	"  d.ready = '1';\n"
	"})();\n";

bool report_write(const char *path, const char *model, const char *device, const ReportColumn *c, int n,
		  const ReportTable *t, const RtRoofline *roof)
{
	const ReportColumn *fused = column_named(c, n, "fused"), *unfused = column_named(c, n, "unfused");
	if (!fused || !unfused) {
		fprintf(stderr, "%s:%d: report_write: no unfused or no fused column\n", __FILE__, __LINE__);
		abort();
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "netc: error: cannot write %s: %s\n", path, strerror(errno));
		return false;
	}
	Groups gs;
	make_groups(fused, unfused, &gs);
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>netc: ");
	html_text(f, model);
	fprintf(f, ", fused against unfused</title>\n<style>%s</style></head>\n<body>\n<h1>", style);
	html_text(f, model);
	fprintf(f, ": fused against unfused</h1>\n<p class=\"note\">On ");
	html_text(f, device);
	fprintf(f, ". Kernels timed one by one (netc bench --profile); FLOPs and bytes as the compiler counts "
		   "them.</p>\n<h2>Side by side</h2>\n<table id=\"compare\"><tr><th></th>");
	for (int i = 0; i < n; i++) {
		fprintf(f, "<th>");
		html_text(f, c[i].name);
		fprintf(f, "</th>");
	}
	fprintf(f, "<th>");
	html_text(f, c[n - 1].name);
	fprintf(f, "/");
	html_text(f, c[0].name);
	fprintf(f, "</th></tr>\n");
	int arena_row = 0;
	for (int row = 0; row < t->nrows; row++) {
		if (strstr(t->label[row], "arena"))
			arena_row = row;
		fprintf(f, "<tr><td>");
		html_text(f, t->label[row]);
		fprintf(f, "</td>");
		for (int i = 0; i < n; i++)
			fprintf(f, "<td>%.*f</td>", t->decimals[row], t->value[row][i]);
		fprintf(f, "<td>%.3f</td></tr>\n", t->value[row][0] != 0 ? t->value[row][n - 1] / t->value[row][0] : 0);
	}
	fprintf(f, "</table>\n<h2>Time per fused group</h2>\n<p class=\"note\">Each fused group's kernel (blue) over "
		   "the unfused kernels of its nodes, stacked (orange), slowest first; %d groups%s.%s</p>\n",
		gs.ngroups, gs.ngroups > SHOWN_GROUPS ? ", the last row summing the rest" : "",
		gs.unmatched ? " Some unfused kernels had no node in a fused group and are left out." : "");
	group_chart(f, &gs, unfused->r, false);
	fprintf(f, "<h2>Bytes per fused group</h2>\n<p class=\"note\">What each group's kernel reads from outside it and "
		   "writes, against the unfused kernels' sum.</p>\n");
	group_chart(f, &gs, unfused->r, true);
	fprintf(f, "<h2>Arena</h2>\n");
	arena_chart(f, c, n, t, arena_row);
	fprintf(f, "<h2>Roofline</h2>\n<p class=\"note\">Every kernel with FLOPs and bytes: its arithmetic intensity "
		   "against the GFLOP/s it reached; the roof: ");
	if (roof->gflops > 0) {
		fprintf(f, "%.1f GFLOP/s, %.1f GB/s (", roof->gflops, roof->gbs);
		html_text(f, roof->source);
		fprintf(f, ").</p>\n");
	} else
		fprintf(f, "not known for this device.</p>\n");
	roofline_chart(f, c, n, roof);
	fprintf(f, "<script>\n%s</script>\n</body></html>\n", script);
	free(gs.group);
	free(gs.seg);
	bool ok = !ferror(f);
	if (fclose(f) != 0 || !ok) {
		fprintf(stderr, "netc: error: cannot write %s: %s\n", path, strerror(errno));
		return false;
	}
	return true;
}
