/* progress.c: the training run's progress bar, progress lines and CSV log. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "runtime/clock.h"
#include "runtime/progress.h"

#define BAR_WIDTH 24
#define REDRAW_S 0.1

bool progress_open(Progress *p, FILE *out, bool bar, bool quiet, const char *csv_path, char *err, size_t errlen)
{
	*p = (Progress){.out = out, .bar = bar && !quiet, .quiet = quiet, .last_draw = -1};
	if (!csv_path)
		return true;
	p->csv = fopen(csv_path, "w");
	if (!p->csv) {
		snprintf(err, errlen, "--log %s: cannot open it for writing: %s", csv_path, strerror(errno));
		return false;
	}
	fprintf(p->csv, "%s\n", PROGRESS_CSV_HEADER);
	fflush(p->csv);
	return true;
}

/* "1:02:03" or "2:03". */
static void format_eta(double s, char *buf, size_t len)
{
	if (!isfinite(s) || s < 0) {
		snprintf(buf, len, "--:--");
		return;
	}
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void draw_bar(Progress *p, const ProgressRow *r)
{
	char bar[BAR_WIDTH + 1], eta[24], acc[16] = "-";
	int filled = r->total > 0 ? (int)(BAR_WIDTH * r->step / r->total) : 0;
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[BAR_WIDTH] = 0;
	format_eta(r->eta_s, eta, sizeof eta);
	if (!isnan(r->accuracy))
		snprintf(acc, sizeof acc, "%.2f%%", r->accuracy);
	/* \r back to the line's start, \033[K clears what a longer line left */
	fprintf(p->out, "\repoch %lld/%lld [%s] %lld/%lld  loss %.4f  acc %s  %.0f ex/s  ETA %s\033[K",
		(long long)r->epoch, (long long)r->epochs, bar, (long long)r->step, (long long)r->total, r->loss, acc,
		r->examples_per_s, eta);
	fflush(p->out);
	p->drawn = true;
	p->last_draw = rt_clock_s();
}

void progress_step(Progress *p, const ProgressRow *r)
{
	if (p->bar && (p->last_draw < 0 || rt_clock_s() - p->last_draw >= REDRAW_S))
		draw_bar(p, r);
}

static void plain_line(Progress *p, const ProgressRow *r)
{
	int width = snprintf(NULL, 0, "%lld", (long long)r->total);
	char acc[16] = "      -";
	if (!isnan(r->accuracy))
		snprintf(acc, sizeof acc, "%6.2f%%", r->accuracy);
	fprintf(p->out, "step %*lld/%lld  epoch %lld/%lld  loss %.4f  acc %s  %.0f ex/s  elapsed %.1fs\n",
		width > 5 ? width : 5, (long long)r->step, (long long)r->total, (long long)r->epoch,
		(long long)r->epochs, r->loss, acc, r->examples_per_s, r->elapsed_s);
	fflush(p->out);
}

void progress_interval(Progress *p, const ProgressRow *r)
{
	if (p->quiet)
		return;
	if (p->bar)
		draw_bar(p, r);
	else
		plain_line(p, r);
}

/* A number, or an empty cell for NAN. */
static void csv_cell(FILE *f, const char *fmt, double v, bool last)
{
	if (!isnan(v))
		fprintf(f, fmt, v);
	fputc(last ? '\n' : ',', f);
}

void progress_log(Progress *p, const ProgressRow *r)
{
	if (!p->csv)
		return;
	fprintf(p->csv, "%lld,%lld,", (long long)r->step, (long long)r->epoch);
	csv_cell(p->csv, "%.6g", r->loss, false);
	csv_cell(p->csv, "%.4f", r->accuracy, false);
	csv_cell(p->csv, "%.1f", r->examples_per_s, false);
	csv_cell(p->csv, "%.3f", r->elapsed_s, false);
	csv_cell(p->csv, "%.6g", r->lr, false);
	csv_cell(p->csv, "%.4f", r->eval_accuracy, true);
	fflush(p->csv);
}

void progress_break(Progress *p)
{
	if (p->drawn) {
		fputc('\n', p->out);
		fflush(p->out);
		p->drawn = false;
	}
}

bool progress_close(Progress *p, char *err, size_t errlen)
{
	progress_break(p);
	if (!p->csv)
		return true;
	bool ok = !ferror(p->csv);
	ok = fclose(p->csv) == 0 && ok;
	p->csv = NULL;
	if (!ok)
		snprintf(err, errlen, "--log: writing the CSV log failed: %s", strerror(errno));
	return ok;
}
