/* plot.c: `netc plot LOG.csv -o FILE.svg [--log-y]`: the loss curve and the accuracy curves
 * (training and held-out) of a `netc train --log` file, in two panels over the step, as SVG
 * written by hand; the loss alone when the log has no accuracy (a regression loss). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/progress.h"
#include "tools/plot.h"

#define MAX_LINE 4096
#define MAX_COLS 32

/* The columns the plot reads; accuracy and eval_accuracy may be missing or empty. */
enum { COL_STEP, COL_LOSS, COL_ACC, COL_EVAL, NCOLS };
static const char *const col_names[NCOLS] = {"step", "loss", "accuracy", "eval_accuracy"};

typedef struct {
	double *v[NCOLS]; /* NAN where a cell is empty */
	int n, cap;
} Log;

/* Splits line (modified) at commas; returns the number of fields. */
static int split(char *line, char **field)
{
	line[strcspn(line, "\r\n")] = 0;
	int n = 0;
	for (char *p = line;; p++) {
		if (n == MAX_COLS)
			return MAX_COLS + 1;
		field[n++] = p;
		p += strcspn(p, ",");
		if (!*p)
			return n;
		*p = 0;
	}
}

static bool header(const char *path, char *line, int *ncols, int where[NCOLS])
{
	char *field[MAX_COLS];
	*ncols = split(line, field);
	for (int c = 0; c < NCOLS; c++) {
		where[c] = -1;
		for (int i = 0; i < *ncols && i < MAX_COLS; i++)
			if (strcmp(field[i], col_names[c]) == 0)
				where[c] = i;
	}
	if (where[COL_STEP] < 0 || where[COL_LOSS] < 0) {
		fprintf(stderr, "netc plot: error: %s: line 1 is not a netc training log header: expected columns "
			"'step' and 'loss' (netc train --log writes %s)\n", path, PROGRESS_CSV_HEADER);
		return false;
	}
	return true;
}

static bool grow(Log *g)
{
	if (g->n < g->cap)
		return true;
	int cap = g->cap ? g->cap * 2 : 256;
	for (int c = 0; c < NCOLS; c++) {
		double *v = realloc(g->v[c], (size_t)cap * sizeof *v);
		if (!v)
			return false;
		g->v[c] = v;
	}
	g->cap = cap;
	return true;
}

/* One cell: a number, or NAN when empty and allowed. */
static bool cell(const char *path, int line, int c, const char *s, double *out)
{
	char *end;
	if (!*s && c != COL_STEP && c != COL_LOSS) {
		*out = NAN;
		return true;
	}
	errno = 0;
	*out = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(*out)) {
		fprintf(stderr, "netc plot: error: %s: line %d: column '%s' is '%s', not a number\n", path, line,
			col_names[c], s);
		return false;
	}
	return true;
}

static bool row(const char *path, int line, char *text, int ncols, const int where[NCOLS], Log *g)
{
	char *field[MAX_COLS];
	int n = split(text, field);
	if (n != ncols) {
		fprintf(stderr, "netc plot: error: %s: line %d has %d fields; the header has %d\n", path, line, n, ncols);
		return false;
	}
	if (!grow(g)) {
		fprintf(stderr, "netc plot: error: out of memory\n");
		return false;
	}
	for (int c = 0; c < NCOLS; c++)
		if (where[c] < 0)
			g->v[c][g->n] = NAN;
		else if (!cell(path, line, c, field[where[c]], &g->v[c][g->n]))
			return false;
	g->n++;
	return true;
}

static bool read_log(const char *path, Log *g)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "netc plot: error: %s: %s\n", path, strerror(errno));
		return false;
	}
	char line[MAX_LINE];
	int ncols = 0, where[NCOLS], lineno = 1;
	bool ok = fgets(line, sizeof line, f) != NULL;
	if (!ok)
		fprintf(stderr, "netc plot: error: %s: empty file: expected a CSV header and rows (netc train --log)\n",
			path);
	ok = ok && header(path, line, &ncols, where);
	while (ok && fgets(line, sizeof line, f)) {
		lineno++;
		if (line[strspn(line, " \t\r\n")] != 0)
			ok = row(path, lineno, line, ncols, where, g);
	}
	fclose(f);
	if (ok && g->n == 0) {
		fprintf(stderr, "netc plot: error: %s: a header and no rows: nothing to plot\n", path);
		ok = false;
	}
	return ok;
}

/* ---- drawing ---- */

#define W 760
#define H 600
#define LEFT 80
#define RIGHT 730
#define MAX_TICKS 64

typedef struct {
	double x0, x1, y0, y1; /* data ranges; y0 > 0 on a log axis */
	int top, bottom;       /* the panel's pixel rows */
	bool log_y;            /* y is drawn as log10(y) */
} Panel;

/* A step of 1, 2 or 5 times a power of ten that cuts span in about 5. */
static double nice_step(double span)
{
	double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
	return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

/* The ticks i*step within [lo, hi], computed from the index so that no sum drifts. */
static int linear_ticks(double lo, double hi, double step, double *tick)
{
	int n = 0;
	for (double i = ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9 && n < MAX_TICKS; i++)
		tick[n++] = i * step;
	return n;
}

/* Decades 10^k within [lo, hi], with 2 and 5 times each over a range of at most two decades,
 * and only every few decades over a wide one, so that about 3 to 8 labels show. */
static int log_ticks(double lo, double hi, double *tick)
{
	int k0 = (int)floor(log10(lo) + 1e-9), k1 = (int)ceil(log10(hi) - 1e-9);
	int every = (k1 - k0 + 7) / 8, n = 0;
	static const double mantissas[] = {1, 2, 5};
	for (int k = k0; k <= k1 && n < MAX_TICKS - 3; k++)
		for (int m = 0; m < (k1 - k0 <= 2 ? 3 : 1); m++) {
			double v = mantissas[m] * pow(10, k);
			if ((k - k0) % every == 0 && v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9))
				tick[n++] = v;
		}
	return n;
}

/* A tick's text: a value that rounds to zero at the ticks' spacing is 0, never "-0". */
static void tick_text(char *buf, size_t len, double v, double spacing)
{
	snprintf(buf, len, "%g", fabs(v) < spacing * 1e-6 ? 0.0 : v);
}

static double px_x(const Panel *p, double x)
{
	return LEFT + (RIGHT - LEFT) * (x - p->x0) / (p->x1 - p->x0);
}

static double px_y(const Panel *p, double y)
{
	double f = p->log_y ? log10(y / p->y0) / log10(p->y1 / p->y0) : (y - p->y0) / (p->y1 - p->y0);
	return p->bottom - (p->bottom - p->top) * f;
}

static void axes(FILE *o, const Panel *p, const char *ylabel, bool xlabel)
{
	fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", LEFT,
		p->top, RIGHT - LEFT, p->bottom - p->top);
	double tick[MAX_TICKS], ys = nice_step(p->y1 - p->y0), xs = nice_step(p->x1 - p->x0);
	char text[32];
	int n = p->log_y ? log_ticks(p->y0, p->y1, tick) : linear_ticks(p->y0, p->y1, ys, tick);
	for (int i = 0; i < n; i++) {
		tick_text(text, sizeof text, tick[i], p->log_y ? tick[i] : ys);
		fprintf(o, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT, RIGHT,
			px_y(p, tick[i]), px_y(p, tick[i]), LEFT - 6, px_y(p, tick[i]) + 4, text);
	}
	n = linear_ticks(p->x0, p->x1, xs, tick);
	for (int i = 0; i < n; i++) {
		tick_text(text, sizeof text, tick[i], xs);
		fprintf(o, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px_x(p, tick[i]),
			px_x(p, tick[i]), p->top, p->bottom, px_x(p, tick[i]), p->bottom + 16, text);
	}
	fprintf(o, "<text class=\"label\" x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">%s</text>\n",
		(p->top + p->bottom) / 2, (p->top + p->bottom) / 2, ylabel);
	if (xlabel)
		fprintf(o, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
			(LEFT + RIGHT) / 2, p->bottom + 36);
}

/* Whether row i has a value in column c that the panel can draw. */
static bool drawable(const Panel *p, const Log *g, int c, int i)
{
	return !isnan(g->v[c][i]) && !(p->log_y && g->v[c][i] <= 0);
}

/* The points of column c that have a value as a polyline, and as dots too where dots is set or
 * there is one point only (a polyline of one point draws nothing); returns how many. */
static int curve(FILE *o, const Panel *p, const Log *g, int c, const char *cls, const char *color, bool dots)
{
	int n = 0;
	fprintf(o, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", cls, color);
	for (int i = 0; i < g->n; i++)
		if (drawable(p, g, c, i))
			fprintf(o, "%s%.1f,%.1f", n++ ? " " : "", px_x(p, g->v[COL_STEP][i]), px_y(p, g->v[c][i]));
	fprintf(o, "\"/>\n");
	for (int i = 0; i < g->n && (dots || n == 1); i++)
		if (drawable(p, g, c, i))
			fprintf(o, "<circle class=\"%s point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", cls,
				px_x(p, g->v[COL_STEP][i]), px_y(p, g->v[c][i]), color);
	return n;
}

/* The loss panel's range: the data's, widened to whole ticks (whole decades on a log axis,
 * which has only the positive losses). Returns how many rows the panel cannot draw. */
static int loss_range(const Log *g, Panel *p)
{
	double lo = INFINITY, hi = -INFINITY;
	int left_out = 0;
	for (int i = 0; i < g->n; i++) {
		if (!drawable(p, g, COL_LOSS, i)) {
			left_out++;
			continue;
		}
		lo = fmin(lo, g->v[COL_LOSS][i]);
		hi = fmax(hi, g->v[COL_LOSS][i]);
	}
	if (p->log_y) {
		p->y0 = pow(10, floor(log10(lo) + 1e-9));
		p->y1 = pow(10, ceil(log10(hi) - 1e-9));
		if (p->y1 <= p->y0)
			p->y1 = p->y0 * 10;
		return left_out;
	}
	if (hi - lo < 1e-12 * fmax(1, fabs(hi))) {
		lo -= 1;
		hi += 1;
	}
	double s = nice_step(hi - lo);
	p->y0 = floor(lo / s) * s;
	p->y1 = ceil(hi / s) * s;
	return left_out;
}

/* Whether the log has any accuracy: a model without class scores (a regression loss) logs
 * empty accuracy cells, and a log may lack both columns. */
static bool has_accuracy(const Log *g)
{
	for (int i = 0; i < g->n; i++)
		if (!isnan(g->v[COL_ACC][i]) || !isnan(g->v[COL_EVAL][i]))
			return true;
	return false;
}

static void draw(FILE *o, const char *title, const Log *g, const Panel *loss_panel)
{
	Panel loss = *loss_panel, acc = {.top = 330, .bottom = 540, .y0 = 0, .y1 = 100};
	bool accuracy = has_accuracy(g);
	loss.top = 60;
	loss.bottom = accuracy ? 270 : 540;
	acc.x0 = loss.x0;
	acc.x1 = loss.x1;
	fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H, W, H);
	fprintf(o, "<title>%s</title>\n<text class=\"title\" x=\"%d\" y=\"30\" text-anchor=\"middle\" "
		"font-size=\"16\">%s</text>\n", title, W / 2, title);
	axes(o, &loss, loss.log_y ? "training loss (log scale)" : "training loss", !accuracy);
	curve(o, &loss, g, COL_LOSS, "loss", "#c0392b", false);
	if (accuracy) {
		axes(o, &acc, "accuracy (%)", true);
		curve(o, &acc, g, COL_ACC, "accuracy", "#2471a3", false);
		int evals = curve(o, &acc, g, COL_EVAL, "eval_accuracy", "#1e8449", true);
		fprintf(o, "<text x=\"%d\" y=\"%d\" fill=\"#2471a3\">training accuracy</text>\n", LEFT + 10, acc.top + 18);
		if (evals)
			fprintf(o, "<text x=\"%d\" y=\"%d\" fill=\"#1e8449\">held-out accuracy</text>\n", LEFT + 10,
				acc.top + 34);
	}
	fprintf(o, "</svg>\n");
}

/* The loss panel's ranges, or false when a log scale has no positive loss to draw. */
static bool loss_panel(const char *path, const Log *g, bool log_y, Panel *p)
{
	*p = (Panel){.log_y = log_y};
	p->x0 = fmin(0, g->v[COL_STEP][0]);
	p->x1 = g->v[COL_STEP][g->n - 1] > p->x0 ? g->v[COL_STEP][g->n - 1] : p->x0 + 1;
	int left_out = loss_range(g, p);
	if (left_out == g->n) {
		fprintf(stderr, "netc plot: error: %s: --log-y: no loss above 0 to draw on a log scale\n", path);
		return false;
	}
	if (left_out)
		fprintf(stderr, "netc plot: warning: %s: --log-y leaves out %d row%s with a loss of 0 or below\n", path,
			left_out, left_out == 1 ? "" : "s");
	return true;
}

/* The title: the log's file name, with what SVG text must escape left out. */
static void make_title(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = (size_t)snprintf(buf, len, "netc training: ");
	for (; *base && n + 1 < len; base++)
		if (!strchr("<>&\"", *base))
			buf[n++] = *base;
	buf[n] = 0;
}

int cmd_plot(const Args *a)
{
	if (!a->output) {
		fprintf(stderr, "netc plot: -o FILE.svg is required\n");
		return 2;
	}
	Log g = {0};
	Panel loss;
	int rc = 1;
	if (read_log(a->model, &g) && loss_panel(a->model, &g, a->log_y, &loss)) {
		FILE *o = fopen(a->output, "w");
		char title[256];
		make_title(a->model, title, sizeof title);
		if (!o) {
			fprintf(stderr, "netc plot: error: %s: %s\n", a->output, strerror(errno));
		} else {
			draw(o, title, &g, &loss);
			rc = fclose(o) == 0 ? 0 : 1;
			if (rc)
				fprintf(stderr, "netc plot: error: writing %s failed: %s\n", a->output, strerror(errno));
			else if (!a->quiet)
				printf("wrote %s: %d rows of %s\n", a->output, g.n, a->model);
		}
	}
	for (int c = 0; c < NCOLS; c++)
		free(g.v[c]);
	return rc;
}
