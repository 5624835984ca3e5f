/* progress.h: what a training run shows and logs as it goes (private to the runtime): a progress
 * bar redrawn in place on a terminal, plain lines elsewhere, and a CSV log. */
#ifndef NETC_PROGRESS_H
#define NETC_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
	int64_t step, total;    /* steps done, steps of the run */
	int64_t epoch, epochs;  /* 1-based */
	double loss;            /* mean over the interval so far */
	double accuracy;        /* % over the interval so far; NAN: the model has no class scores */
	double examples_per_s;  /* over the interval, training time only */
	double elapsed_s;       /* since the run started */
	double eta_s;           /* until the last step, at the run's rate; NAN: not known yet */
	double lr;
	double eval_accuracy;   /* % of the held-out evaluation at this step; NAN: none */
} ProgressRow;

typedef struct {
	FILE *out;        /* stdout */
	FILE *csv;        /* --log, NULL without */
	bool bar, quiet;
	bool drawn;       /* the bar is on the current line */
	double last_draw; /* when, on the monotonic clock */
} Progress;

/* bar: redraw one line in place (an interactive terminal); else one plain line per interval.
 * quiet: nothing on out. csv_path NULL: no log; one that cannot be opened: false, err says why. */
bool progress_open(Progress *p, FILE *out, bool bar, bool quiet, const char *csv_path, char *err, size_t errlen);
/* After every step: redraws the bar, at most ten times a second. */
void progress_step(Progress *p, const ProgressRow *r);
/* The end of a logging interval: the plain line, or the bar drawn now. */
void progress_interval(Progress *p, const ProgressRow *r);
/* The interval's CSV row (after its evaluation, if any), flushed. */
void progress_log(Progress *p, const ProgressRow *r);
/* Ends the bar's line before anything else is printed. */
void progress_break(Progress *p);
/* progress_break, and closes the log; false when writing it failed (err says so). */
bool progress_close(Progress *p, char *err, size_t errlen);

/* The CSV header progress_log writes first. */
#define PROGRESS_CSV_HEADER "step,epoch,loss,accuracy,examples_per_s,elapsed_s,lr,eval_accuracy"

#endif
