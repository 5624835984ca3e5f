/* loss_scale.h: dynamic loss scaling for fp16 training, with PyTorch's GradScaler policy: start at
 * 65536, halve the scale and skip the step when a gradient overflowed, double it after 2000
 * finite steps in a row. The compiled step multiplies the loss gradient by the scale, divides
 * the parameter gradients by it, and updates nothing when Bundle.finite reads 0. */
#ifndef NETC_RT_LOSS_SCALE_H
#define NETC_RT_LOSS_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt.h"

#define RT_LOSS_SCALE_INIT 65536.0f
#define RT_LOSS_SCALE_GROWTH_INTERVAL 2000

typedef struct {
	bool active;      /* the bundle scales its loss (fp16); otherwise every step counts */
	float scale;      /* what the next step is seeded with */
	int64_t growth;   /* finite steps in a row since the scale last changed */
	int64_t skipped;  /* steps whose update was skipped */
} RtLossScale;

/* The policy for b: active when b has a loss-scale buffer. NETC_LOSS_SCALE_INIT in the
 * environment replaces the initial scale (for tests that force an overflow). */
RtLossScale rt_loss_scale_new(const Bundle *b);
/* Writes the scale into the bundle's buffer before a step (nothing when inactive). */
void rt_loss_scale_write(const RtLossScale *ls, Session *s);
/* The policy after a step whose gradients were finite or not; returns whether the update ran. */
bool rt_loss_scale_update(RtLossScale *ls, bool finite);
/* Reads Bundle.finite after a step (this waits for it) and applies the policy; true when the
 * update ran (always when inactive). */
bool rt_loss_scale_after_step(RtLossScale *ls, Session *s);
/* The scale's state into a checkpoint's metadata, and back from one that has it (a resumed fp16
 * run goes on with the scale, the growth count and the skipped steps where they were). */
void rt_loss_scale_to_meta(const RtLossScale *ls, RtCheckpointMeta *m);
void rt_loss_scale_from_meta(RtLossScale *ls, const RtCheckpointMeta *m);
/* The run's summary line, "loss scale: 65536, 3 steps skipped (gradient overflow)"; nothing when
 * inactive. */
void rt_loss_scale_summary(const RtLossScale *ls, FILE *out);

#endif
