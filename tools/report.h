/* report.h: `netc bench --compare unfused,fused --report FILE.html`: one self-contained page
 * (inline SVG and CSS, a few lines of inline script, nothing fetched) with the comparison table,
 * the time and the bytes of every fused group beside the unfused kernels it replaced, and a
 * roofline plot of every kernel. */
#ifndef NETC_TOOLS_REPORT_H
#define NETC_TOOLS_REPORT_H

#include <stdbool.h>

#include "ir/ir.h"
#include "runtime/roofline.h"
#include "runtime/rt.h"

#define REPORT_ROWS 8
#define REPORT_COLUMNS 4

/* One pipeline: its name ("unfused", "fused", "O0"), its compiled graph and its profiled bench
 * (BenchResult.kernels and kernel_ms). */
typedef struct {
	const char *name;
	const Graph *g;
	const Bundle *b;     /* its group counts */
	const BenchResult *r;
} ReportColumn;

/* The side-by-side table as `bench --compare` prints it. */
typedef struct {
	int nrows;
	const char *label[REPORT_ROWS];
	double value[REPORT_ROWS][REPORT_COLUMNS];
	int decimals[REPORT_ROWS];
} ReportTable;

/* The page for columns c[0..n) of model: unfused and fused (by name) must be among them, the
 * fused column's groups being the bars; roof: the device's roofline (zeros: the plot has no
 * roofs). false with a message when the file cannot be written. */
bool report_write(const char *path, const char *model, const char *device, const ReportColumn *c, int n,
		  const ReportTable *t, const RtRoofline *roof);

#endif
