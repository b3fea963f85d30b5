/* slurmstepd side: in each task, just before exec, compute the torchrun
 * environment (layout.c) and set it, keeping what the user set. Errors fail
 * this task with the reason on its stderr; slurmstepd carries on. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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

/* The --dist-check preflight: run distenv-check with the task's final
 * environment, in the task (as the user, before exec), and fail the task
 * if it fails. fork/exec/wait works on every Slurm version (no
 * spank_prepend_task_argv before 23.02.5). */
static int run_check(spank_t sp)
{
	const char *path = de_plugin.cfg.check_path;
	char **env = NULL;
	struct de_check_argv a;
	struct de_err e;
	int status = 0;
	time_t give_up;
	pid_t pid;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return fail_task("--dist-check: cannot read the task's environment");
	if (access(path, X_OK) != 0) {
		char msg[DE_ERR_MAX];

		snprintf(msg, sizeof(msg), "--dist-check: cannot run %s: %s (plugstack.conf check_path=)",
			 path, strerror(errno));
		return fail_task(msg);
	}
	/* Extra options for the check, e.g. DISTENV_CHECK_OPTS="--timeout=20". */
	if (de_check_argv(&a, path, de_plugin.cfg.check, env_get(env, "DISTENV_CHECK_OPTS"), &e)) {
		char msg[DE_ERR_MAX + 16];

		snprintf(msg, sizeof(msg), "--dist-check: %s", e.msg);
		return fail_task(msg);
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail_task("--dist-check: fork failed");
	if (pid == 0) {
		execve(path, a.argv, env);
		dprintf(STDERR_FILENO, DE_LOG_PREFIX "error: exec %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	/* distenv-check bounds itself by its --timeout; this is the backstop
	 * for a check that is itself stuck (one day at most). */
	give_up = time(NULL) + 86400;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return fail_task("--dist-check: lost the check process");
		if (time(NULL) > give_up) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return fail_task("--dist-check: the check did not finish within a day");
		}
		usleep(20000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	{
		char msg[DE_ERR_MAX];

		if (WIFEXITED(status))
			snprintf(msg, sizeof(msg), "--dist-check failed (distenv-check exit %d): the program was not started",
				 WEXITSTATUS(status));
		else
			snprintf(msg, sizeof(msg), "--dist-check killed by signal %d: the program was not started",
				 WTERMSIG(status));
		return fail_task(msg);
	}
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
		if (de_plugin.cfg.check != DE_CHECK_OFF && spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
		    step != 0xFFFFFFFBu && step != 0xFFFFFFFAu && step != 0xFFFFFFFCu)
			return run_check(sp);
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
	if (de_plugin.cfg.check != DE_CHECK_OFF && !want.batch)
		return run_check(sp);
	return 0;
}
