/* test_rt_progress.c: the training run's output. Plain lines carry step, epoch, loss, accuracy
 * and rate; the bar is one line redrawn with \r (epoch, step, bar, loss, accuracy, examples/s,
 * ETA) and at most ten times a second; the CSV log has its header and one row per call, empty
 * cells for what is not there, and is flushed as it goes; a log that cannot be opened is an error
 * naming it. */
#include "runtime/progress.h"
#include "tests/unit/test_util.h"

static char *slurp(FILE *f)
{
	fflush(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	char *s = tu_calloc((size_t)n + 1, 1);
	rewind(f);
	if (fread(s, 1, (size_t)n, f) != (size_t)n)
		abort();
	return s;
}

static ProgressRow random_row(void)
{
	return (ProgressRow){
		.step = 100 + (int64_t)tu_below(900), .total = 2000, .epoch = 2, .epochs = 3,
		.loss = tu_uniform(0.1, 3), .accuracy = tu_uniform(10, 99), .examples_per_s = tu_uniform(100, 9000),
		.elapsed_s = tu_uniform(1, 100), .eta_s = 125, .lr = tu_uniform(1e-4, 1e-1), .eval_accuracy = NAN,
	};
}

static void test_plain(void)
{
	FILE *out = tmpfile();
	Progress p;
	char err[512];
	CHECK(progress_open(&p, out, false, false, NULL, err, sizeof err));
	ProgressRow r = random_row();
	progress_step(&p, &r); /* nothing without a bar */
	progress_interval(&p, &r);
	r.accuracy = NAN;
	progress_interval(&p, &r);
	CHECK(progress_close(&p, err, sizeof err));
	char *s = slurp(out), want[128];
	snprintf(want, sizeof want, "step %5lld/2000  epoch 2/3  loss %.4f  acc ", (long long)r.step, r.loss);
	CHECK(strncmp(s, want, strlen(want)) == 0, "'%s' does not start with '%s'", s, want);
	CHECK(strncmp(s, "step ", 5) == 0 && strchr(s, '\r') == NULL, "'%s'", s);
	char line[128];
	snprintf(line, sizeof line, "loss %.4f", r.loss);
	CHECK(strstr(s, line) != NULL, "'%s' lacks '%s'", s, line);
	CHECK(strstr(s, "acc       -  ") != NULL, "no accuracy: '%s'", s);
	int lines = 0;
	for (char *c = s; *c; c++)
		lines += *c == '\n';
	CHECK(lines == 2, "%d lines in '%s'", lines, s);
	free(s);
	fclose(out);
}

static void test_bar(void)
{
	FILE *out = tmpfile();
	Progress p;
	char err[512];
	CHECK(progress_open(&p, out, true, false, NULL, err, sizeof err));
	ProgressRow r = random_row();
	r.step = 500;
	for (int i = 0; i < 50; i++)
		progress_step(&p, &r); /* a burst: drawn once */
	progress_break(&p);
	char *s = slurp(out), want[64];
	int draws = 0;
	for (char *c = s; *c; c++)
		draws += *c == '\r';
	CHECK(draws == 1, "%d redraws in a burst", draws);
	CHECK(strstr(s, "epoch 2/3 [######..................] 500/2000") != NULL, "'%s'", s);
	CHECK(strstr(s, "ETA 2:05\033[K\n") != NULL, "'%s'", s);
	snprintf(want, sizeof want, "acc %.2f%%", r.accuracy);
	CHECK(strstr(s, want) != NULL, "'%s' lacks '%s'", s, want);
	free(s);
	CHECK(progress_close(&p, err, sizeof err));
	fclose(out);
}

static void test_csv(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/test_rt_progress_%d.csv", tu_tmpdir(), (int)getpid());
	Progress p;
	char err[512];
	CHECK(progress_open(&p, stdout, false, true, path, err, sizeof err), "%s", err);
	ProgressRow a = random_row(), b = random_row();
	b.accuracy = NAN;
	b.eval_accuracy = tu_uniform(50, 90);
	progress_log(&p, &a);
	/* flushed as it goes: readable before the log closes */
	FILE *f = fopen(path, "r");
	char line[256];
	CHECK(f && fgets(line, sizeof line, f) && strcmp(line, PROGRESS_CSV_HEADER "\n") == 0, "header '%s'", line);
	CHECK(f && fgets(line, sizeof line, f) && atoll(line) == a.step, "row '%s'", line);
	if (f)
		fclose(f);
	progress_log(&p, &b);
	CHECK(progress_close(&p, err, sizeof err));
	f = fopen(path, "r");
	char *s = f ? slurp(f) : NULL;
	char want[256];
	snprintf(want, sizeof want, "%lld,2,%.6g,,%.1f,%.3f,%.6g,%.4f\n", (long long)b.step, b.loss, b.examples_per_s,
		 b.elapsed_s, b.lr, b.eval_accuracy);
	CHECK(s && strstr(s, want) != NULL, "'%s' lacks '%s'", s ? s : "", want);
	snprintf(want, sizeof want, ",%.4f,", a.accuracy);
	CHECK(s && strstr(s, want) != NULL && s[strlen(PROGRESS_CSV_HEADER) + 1] != 0, "'%s' lacks '%s'", s ? s : "", want);
	free(s);
	if (f)
		fclose(f);
	remove(path);
	snprintf(path, sizeof path, "%s/no-such-dir-%d/log.csv", tu_tmpdir(), (int)getpid());
	CHECK(!progress_open(&p, stdout, false, true, path, err, sizeof err));
	CHECK(strstr(err, path) != NULL && strstr(err, "cannot open"), "'%s'", err);
}

int main(void)
{
	tu_start("test_rt_progress");
	test_plain();
	test_bar();
	test_csv();
	return tu_finish("test_rt_progress");
}
