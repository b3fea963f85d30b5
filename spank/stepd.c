/* slurmstepd side: in each task, just before exec, compute the torchrun
 * environment (layout.c) and set it, keeping what the user set. Errors fail
 * this task with the reason on its stderr; slurmstepd carries on. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "plugin.h"

static const char *env_get(void *ctx, const char *name)
{
	char **env = ctx;
	size_t n = strlen(name);

	for (; env != NULL && *env != NULL; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* The task's stderr is already in place in task_init (we run in the forked
 * task), so the user sees this next to the task's own output. */
static int fail_task(const char *msg)
{
	slurm_error(DE_LOG_PREFIX "%s", msg);
	dprintf(STDERR_FILENO, DE_LOG_PREFIX "error: %s\n", msg);
	return -1;
}

int de_stepd_task_init(spank_t sp)
{
	struct de_layout_in in;
	struct de_torch_env want;
	struct de_plan plan;
	struct de_err e;
	char **env = NULL;
	uint32_t step, ntasks;
	size_t i;
	int rc;

	if (de_plugin.bad)
		return fail_task(de_plugin.err.msg);
	if (!de_plugin.cfg.enabled) {
		slurm_debug(DE_LOG_PREFIX "disabled for this job (--dist-env=off or default=off)");
		return 0;
	}
	if ((rc = spank_get_item(sp, S_JOB_STEPID, &step)) != ESPANK_SUCCESS)
		return fail_task("cannot read the step id from slurmstepd");
	if (step == 0xFFFFFFFCu) /* extern step: no user tasks */
		return 0;
	if ((rc = spank_get_item(sp, S_JOB_ENV, &env)) != ESPANK_SUCCESS)
		return fail_task("cannot read the task's environment from slurmstepd");

	memset(&in, 0, sizeof(in));
	in.get = env_get;
	in.ctx = env;
	in.cfg = &de_plugin.cfg;
	in.step_id = step;
	in.local_tasks = -1;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS)
		in.local_tasks = ntasks;
	if (de_layout_compute(&in, &want, &e))
		return fail_task(e.msg);
	de_plan_make(&want, env_get, env, de_plugin.cfg.force, &plan);

	for (i = 0; i < plan.n; i++) {
		const char *name = plan.item[i].name;

		if (plan.item[i].action == DE_KEEP) {
			slurm_verbose(DE_LOG_PREFIX "%s=%s kept (user's; distenv would set %s)",
				      name, plan.item[i].current, plan.item[i].value);
		} else {
			rc = spank_setenv(sp, name, plan.item[i].value, 1);
			if (rc != ESPANK_SUCCESS) {
				char msg[DE_ERR_MAX];

				snprintf(msg, sizeof(msg), "setting %s=%s: %s", name,
					 plan.item[i].value, spank_strerror(rc));
				return fail_task(msg);
			}
			slurm_verbose(DE_LOG_PREFIX "%s=%s %s", name,
				      plan.item[i].value,
				      de_action_name(plan.item[i].action));
		}
		if (de_plugin.verbose)
			dprintf(STDERR_FILENO, DE_LOG_PREFIX "%s=%s (%s%s%s)\n", name,
				plan.item[i].action == DE_KEEP ? plan.item[i].current
							       : plan.item[i].value,
				de_action_name(plan.item[i].action),
				plan.item[i].action == DE_KEEP ? ", distenv: " : "",
				plan.item[i].action == DE_KEEP ? plan.item[i].value : "");
	}
	spank_setenv(sp, DE_MANAGED_VAR, plan.managed, 1);
	return 0;
}
