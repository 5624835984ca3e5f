/* target_spec.c: reading the parts of a target spec that the target table (targets.c) and the
 * target files (target_*.c) share: comma-separated word lists and wave sizes. */
#include <stdio.h>
#include <string.h>

#include "codegen/target.h"

const char *cg_target_find_in_list(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && !strncmp(p, name, len))
			return p;
		p += n + (p[n] == ',');
	}
	return NULL;
}

bool cg_target_in_list(const char *list, const char *name, size_t len)
{
	return cg_target_find_in_list(list, name, len) != NULL;
}

bool cg_target_check_wave(int wave, char *err, size_t errlen)
{
	if (wave && wave != 32 && wave != 64) {
		snprintf(err, errlen, "wave size %d: it is 32 or 64", wave);
		return false;
	}
	return true;
}
