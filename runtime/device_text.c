/* device_text.c: how devices and sizes read in logs and in `netc devices`. The backends
 * (device_*.c) and the device choice (devices.c) use it; it knows no backend by name. */
#include <stdio.h>

#include "runtime/device.h"

void rt_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 5)
		v /= 1024, u++;
	if (u == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void rt_device_line(const RtDeviceOps *ops, int index, const RtDeviceInfo *info, char *buf, size_t len)
{
	char mem[32];
	rt_format_bytes(info->memory, mem, sizeof mem);
	/* the CPU is the backend that runs host code */
	if (ops->code_kind == CODE_HOST)
		snprintf(buf, len, "cpu %s (%d %s, %s)", info->name, info->units, ops->units, mem);
	else
		snprintf(buf, len, "%s:%d %s (%s, %s, %d %s, wave %d)", ops->name, index, info->name,
			 info->full_arch, mem, info->units, ops->units, info->wave);
}
