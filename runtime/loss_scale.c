/* loss_scale.c: the dynamic loss scale of fp16 training (see runtime/loss_scale.h). */
#include <math.h>
#include <stdlib.h>

#include "runtime/loss_scale.h"

RtLossScale rt_loss_scale_new(const Bundle *b)
{
	RtLossScale ls = {.active = b->loss_scale >= 0 && b->finite >= 0, .scale = RT_LOSS_SCALE_INIT};
	const char *env = getenv("NETC_LOSS_SCALE_INIT");
	double v = env ? strtod(env, NULL) : 0;
	if (v > 0 && isfinite((float)v))
		ls.scale = (float)v;
	return ls;
}

void rt_loss_scale_write(const RtLossScale *ls, Session *s)
{
	if (ls->active)
		rt_write(s, rt_bundle(s)->loss_scale, &ls->scale, sizeof ls->scale);
}

bool rt_loss_scale_update(RtLossScale *ls, bool finite)
{
	if (!finite) {
		ls->scale *= 0.5f;
		ls->growth = 0;
		ls->skipped++;
		return false;
	}
	/* doubling stops short of f32's range: an infinite scale would never recover */
	if (++ls->growth == RT_LOSS_SCALE_GROWTH_INTERVAL) {
		if (isfinite(ls->scale * 2.0f))
			ls->scale *= 2.0f;
		ls->growth = 0;
	}
	return true;
}

bool rt_loss_scale_after_step(RtLossScale *ls, Session *s)
{
	if (!ls->active)
		return true;
	float finite = 0;
	rt_read(s, rt_bundle(s)->finite, &finite, sizeof finite);
	return rt_loss_scale_update(ls, finite != 0);
}

void rt_loss_scale_to_meta(const RtLossScale *ls, RtCheckpointMeta *m)
{
	m->has_loss_scale = ls->active;
	m->loss_scale = ls->scale;
	m->loss_scale_growth = ls->growth;
	m->skipped_steps = ls->skipped;
}

void rt_loss_scale_from_meta(RtLossScale *ls, const RtCheckpointMeta *m)
{
	if (!ls->active || !m->has_loss_scale)
		return;
	ls->scale = m->loss_scale;
	ls->growth = m->loss_scale_growth;
	ls->skipped = m->skipped_steps;
}

void rt_loss_scale_summary(const RtLossScale *ls, FILE *out)
{
	if (ls->active)
		fprintf(out, "loss scale: %g, %lld step%s skipped (gradient overflow)\n", (double)ls->scale,
			(long long)ls->skipped, ls->skipped == 1 ? "" : "s");
}
