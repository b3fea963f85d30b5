/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurmstepd side: in each task, just before exec, compute the torchrun
 * environment (layout.c) and set it, keeping what the user set. Errors fail
 * this task with the reason on its stderr; slurmstepd carries on.
 *
 * Concurrency (Slurm 25.11+ may run task_init_privileged in parallel with
 * task_post_fork): the plugin defines neither callback. Its one mutable
 * global, de_plugin, is written only by slurm_spank_init and the option
 * callbacks, which slurmstepd runs once, single-threaded, before it forks
 * any task; task_init runs in the forked task (its own copy of memory)
 * and only reads it, through a const pointer. No static state here. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "env.h"
#include "layout.h"
#include "plugin.h"
#include "port.h"
#include "runcheck.h"
#include "step.h"

/* step.h keeps its own copy of Slurm's special step ids (src/lib does not
 * include slurm.h): fail the build if a Slurm release moves them again. */
#ifdef SLURM_BATCH_SCRIPT
_Static_assert(SLURM_BATCH_SCRIPT == DE_STEP_BATCH, "SLURM_BATCH_SCRIPT moved: update src/lib/step.h");
#endif
#ifdef SLURM_EXTERN_CONT
_Static_assert(SLURM_EXTERN_CONT == DE_STEP_EXTERN, "SLURM_EXTERN_CONT moved: update src/lib/step.h");
#endif
#ifdef SLURM_INTERACTIVE_STEP
_Static_assert(SLURM_INTERACTIVE_STEP == DE_STEP_INTERACTIVE, "SLURM_INTERACTIVE_STEP moved: update src/lib/step.h");
#endif
#ifdef SLURM_PENDING_STEP
_Static_assert(SLURM_PENDING_STEP == DE_STEP_PENDING, "SLURM_PENDING_STEP moved: update src/lib/step.h");
#endif

/* The task's stderr is already in place in task_init (we run in the forked
 * task), so the user sees this next to the task's own output. Returns -1,
 * the only failure value SPANK callbacks may return. */
static int fail_task(const struct de_err *e)
{
	slurm_error(DE_LOG_PREFIX "%s", e->msg);
	dprintf(STDERR_FILENO, DE_LOG_PREFIX "error: %s\n", e->msg);
	return -1;
}

/* The --dist-check preflight: run distenv-check with the task's final
 * environment, in the task (as the user, before exec), and fail the task
 * if it fails. fork/exec/wait works on every Slurm version (no
 * spank_prepend_task_argv in 22.05). */
static int run_check(const struct de_plugin *p, spank_t sp)
{
	struct de_run_check rc = {
		.what = "--dist-check",
		.path = p->cfg.check_path,
		.path_hint = "plugstack.conf check_path=",
		.backend = p->cfg.check,
		.child_prefix = DE_LOG_PREFIX "error: ",
		/* distenv-check bounds itself by its --timeout; this is the
		 * backstop for a check that is itself stuck. */
		.give_up_s = 86400,
	};
	char **env = NULL;
	struct de_err e;

	/* Read again: task_init has just set the torchrun variables. */
	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) {
		de_errf(&e, "--dist-check: cannot read the task's environment");
		return fail_task(&e);
	}
	rc.envp = env;
	/* Extra options for the check, e.g. DISTENV_CHECK_OPTS="--timeout=20". */
	rc.opts = de_env_get(env, "DISTENV_CHECK_OPTS");
	if (de_run_check(&rc, &e))
		return fail_task(&e);
	return 0;
}

/* Sets the planned variables in the task; the verbose lines say what
 * happened to each. */
static int apply_plan(const struct de_plugin *p, spank_t sp,
		      const struct de_plan *plan)
{
	char line[DE_PLAN_LINE_MAX];
	struct de_err e;
	size_t i;
	int rc;

	for (i = 0; i < plan->n; i++) {
		if (plan->item[i].action != DE_KEEP) {
			rc = spank_setenv(sp, plan->item[i].name,
					  plan->item[i].value, 1);
			if (rc != ESPANK_SUCCESS) {
				de_errf(&e, "setting %s=%s: %s", plan->item[i].name,
					plan->item[i].value, spank_strerror(rc));
				return fail_task(&e);
			}
		}
		de_plan_log_line(plan, i, line, sizeof(line));
		slurm_verbose(DE_LOG_PREFIX "%s", line);
		if (p->verbose) {
			de_plan_line(plan, i, line, sizeof(line));
			dprintf(STDERR_FILENO, DE_LOG_PREFIX "%s\n", line);
		}
	}
	spank_setenv(sp, DE_MANAGED_VAR, plan->managed, 1);
	return 0;
}

/* The notes beside the variables: slurmd's verbose log, and the task's
 * stderr with --dist-env=verbose. */
static void report_notes(const struct de_plugin *p, const struct de_torch_env *want)
{
	size_t i;

	for (i = 0; i < want->nnotes; i++) {
		slurm_verbose(DE_LOG_PREFIX "note: %s", want->note[i]);
		if (p->verbose)
			dprintf(STDERR_FILENO, DE_LOG_PREFIX "note: %s\n", want->note[i]);
	}
}

/* The global ranks of this step's tasks on this node, for the rank-order
 * note (allocated), or NULL when slurmstepd cannot say: layout.c reads
 * SLURM_GTIDS then. */
static uint32_t *node_ranks(spank_t sp, uint32_t ntasks)
{
	uint32_t i, *r = calloc(ntasks ? ntasks : 1, sizeof(*r));

	for (i = 0; r != NULL && i < ntasks; i++)
		if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &r[i]) != ESPANK_SUCCESS) {
			free(r);
			r = NULL;
		}
	return r;
}

int de_stepd_task_init(spank_t sp)
{
	const struct de_plugin *p = &de_plugin;
	struct de_layout_in in;
	struct de_torch_env want;
	struct de_plan plan;
	struct de_err e;
	char **env = NULL;
	uint32_t step, ntasks, *ranks = NULL;
	int rc;

	if (p->bad)
		return fail_task(&p->err);
	if (!p->cfg.enabled) {
		slurm_debug(DE_LOG_PREFIX "disabled for this job (--dist-env=off or default=off)");
		if (p->cfg.check != DE_BACKEND_OFF &&
		    spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
		    DE_STEP_HAS_RANKS(step))
			return run_check(p, sp);
		return 0;
	}
	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
		de_errf(&e, "cannot read the step id from slurmstepd");
		return fail_task(&e);
	}
	if (step == DE_STEP_EXTERN) /* no user tasks */
		return 0;
	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) {
		de_errf(&e, "cannot read the task's environment from slurmstepd");
		return fail_task(&e);
	}

	memset(&in, 0, sizeof(in));
	in.get = de_env_get;
	in.ctx = env;
	in.cfg = &p->cfg;
	in.step_id = step;
	in.local_tasks = -1;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS) {
		in.local_tasks = ntasks;
		ranks = node_ranks(sp, ntasks);
		in.node_ranks = ranks;
		in.n_node_ranks = ranks != NULL ? ntasks : 0;
	}
	/* Unreadable (no /proc): no warning about it, the port still works. */
	if (de_ephemeral_read(DE_EPHEMERAL_PATH, &in.eph_lo, &in.eph_hi, &e))
		in.eph_lo = in.eph_hi = 0;
	rc = de_layout_compute(&in, &want, &e);
	free(ranks);
	if (rc)
		return fail_task(&e);
	de_plan_make(&want, de_env_get, env, p->cfg.force, &plan);
	if (apply_plan(p, sp, &plan))
		return -1;
	report_notes(p, &want);
	if (p->cfg.check != DE_BACKEND_OFF && !want.batch)
		return run_check(p, sp);
	return 0;
}
