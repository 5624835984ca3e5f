/* test_rt_schedule.c: the learning rate of every schedule, step by step, against the formulas
 * PyTorch's schedulers use (StepLR, MultiStepLR, CosineAnnealingLR) and a linear warm-up. Cosine
 * keeps following the cosine past t_max, rising again, as CosineAnnealingLR does. */
#include <math.h>

#include "runtime/rt.h"
#include "tests/unit/test_util.h"

static TrainConfig random_config(ScheduleKind kind)
{
	TrainConfig c = train_config_default();
	c.schedule = kind;
	c.lr = tu_uniform(0.001, 2.0);
	c.gamma = tu_uniform(0.05, 0.95);
	c.step_size = 1 + (int64_t)tu_below(4);
	c.nmilestones = 1 + (int)tu_below(TRAIN_MAX_MILESTONES);
	for (int i = 0; i < c.nmilestones; i++)
		c.milestones[i] = (i ? c.milestones[i - 1] : 0) + 1 + (int64_t)tu_below(3);
	c.t_max = tu_below(2) ? 0 : 10 + (int64_t)tu_below(200);
	c.eta_min = c.lr * tu_uniform(0, 0.1);
	c.warmup = tu_below(2) ? 0 : 1 + (int64_t)tu_below(50);
	return c;
}

static double expected(const TrainConfig *c, int64_t step, int64_t epoch, int64_t total)
{
	double lr = c->lr;
	if (c->schedule == SCHED_STEP)
		lr = c->lr * pow(c->gamma, (double)(epoch / c->step_size));
	if (c->schedule == SCHED_MULTISTEP) {
		int passed = 0;
		for (int i = 0; i < c->nmilestones; i++)
			passed += epoch >= c->milestones[i];
		lr = c->lr * pow(c->gamma, passed);
	}
	if (c->schedule == SCHED_COSINE) { /* CosineAnnealingLR's closed form, for every step */
		double t_max = (double)(c->t_max ? c->t_max : total);
		lr = c->eta_min + (c->lr - c->eta_min) * (1 + cos(M_PI * (double)step / t_max)) / 2;
	}
	if (step < c->warmup)
		lr *= (double)(step + 1) / (double)c->warmup;
	return lr;
}

int main(void)
{
	tu_start("test_rt_schedule");
	const ScheduleKind kinds[] = {SCHED_NONE, SCHED_STEP, SCHED_MULTISTEP, SCHED_COSINE};
	for (int trial = 0; trial < 200; trial++) {
		TrainConfig c = random_config(kinds[trial % 4]);
		int64_t per_epoch = 1 + (int64_t)tu_below(40), total = per_epoch * (1 + (int64_t)tu_below(12));
		for (int64_t step = 0; step < total; step++) {
			int64_t epoch = step / per_epoch;
			double got = rt_lr_at(&c, step, epoch, total), want = expected(&c, step, epoch, total);
			CHECK(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), "schedule %d step %lld epoch %lld: %.15g, want %.15g",
			      (int)c.schedule, (long long)step, (long long)epoch, got, want);
			CHECK(got > 0 || (c.schedule == SCHED_COSINE && c.eta_min == 0), "schedule %d: lr %g", (int)c.schedule, got);
		}
	}
	/* fixed points PyTorch users know: MNIST's step schedule, x0.7 per epoch */
	TrainConfig m = train_config_default();
	m.lr = 1.0, m.schedule = SCHED_STEP, m.step_size = 1, m.gamma = 0.7;
	CHECK_NEAR(rt_lr_at(&m, 0, 0, 100), 1.0, 1e-15);
	CHECK_NEAR(rt_lr_at(&m, 2000, 2, 100), 0.49, 1e-15);
	TrainConfig w = train_config_default();
	w.lr = 0.1, w.warmup = 10;
	CHECK_NEAR(rt_lr_at(&w, 0, 0, 100), 0.01, 1e-15);
	CHECK_NEAR(rt_lr_at(&w, 9, 0, 100), 0.1, 1e-15);
	CHECK_NEAR(rt_lr_at(&w, 50, 0, 100), 0.1, 1e-15);
	/* past t_max: PyTorch's CosineAnnealingLR(SGD(lr=0.1), T_max=10, eta_min=0.001) gives these
	 * (eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2, evaluated in float64) */
	TrainConfig cos_c = train_config_default();
	cos_c.lr = 0.1, cos_c.schedule = SCHED_COSINE, cos_c.t_max = 10, cos_c.eta_min = 0.001;
	const struct { int64_t t; double lr; } torch[] = {
		{10, 0.001}, {13, 0.021404630011522575}, {15, 0.05049999999999999}, {20, 0.1}, {27, 0.021404630011522593},
	};
	for (size_t i = 0; i < sizeof torch / sizeof *torch; i++)
		CHECK_NEAR(rt_lr_at(&cos_c, torch[i].t, 0, 1000), torch[i].lr, 1e-15);
	CHECK(rt_lr_at(&cos_c, 11, 0, 1000) > rt_lr_at(&cos_c, 10, 0, 1000), "cosine rises again past t_max");
	return tu_finish("test_rt_schedule");
}
