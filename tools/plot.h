/* plot.h: netc plot, the loss and accuracy curves of a training log as SVG (tools/plot.c). */
#ifndef NETC_TOOLS_PLOT_H
#define NETC_TOOLS_PLOT_H

#include "tools/args.h"

int cmd_plot(const Args *a);

#endif
