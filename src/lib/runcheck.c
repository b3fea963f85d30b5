/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runcheck.h"
#include "settings.h"

int de_check_status(const char *what, int status, struct de_err *err)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return de_errf(err, "%s failed (distenv-check exit %d): the program was not started",
			       what, WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return de_errf(err, "%s killed by signal %d: the program was not started",
			       what, WTERMSIG(status));
	return de_errf(err, "%s: distenv-check ended with wait status 0x%x: the program was not started",
		       what, (unsigned)status);
}

/* Waits for pid, killing it after give_up_s seconds (0: never). Polls,
 * so no signal handler or alarm is needed in a process (a task forked by
 * slurmstepd) whose signal setup is not ours. */
static int wait_check(const struct de_run_check *rc, pid_t pid, int *status,
		      struct de_err *err)
{
	time_t give_up = time(NULL) + (time_t)rc->give_up_s;
	pid_t w;

	for (;;) {
		w = waitpid(pid, status, rc->give_up_s ? WNOHANG : 0);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return de_errf(err, "%s: waiting for %s: %s", rc->what,
				       rc->path, strerror(errno));
		if (rc->give_up_s && time(NULL) > give_up) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return de_errf(err, "%s: the check did not finish within %u s: the program was not started",
				       rc->what, rc->give_up_s);
		}
		if (w == 0)
			usleep(20000);
	}
}

int de_run_check(const struct de_run_check *rc, struct de_err *err)
{
	struct de_check_argv a;
	struct de_err e2;
	int status = 0;
	pid_t pid;

	if (access(rc->path, X_OK) != 0)
		return de_errf(err, "%s: cannot run %s: %s (%s)", rc->what,
			       rc->path, strerror(errno), rc->path_hint);
	if (de_check_argv(&a, rc->path, rc->backend, rc->opts, &e2))
		return de_errf(err, "%s: %s", rc->what, e2.msg);

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return de_errf(err, "%s: fork: %s", rc->what, strerror(errno));
	if (pid == 0) {
		execve(rc->path, a.argv, rc->envp);
		dprintf(STDERR_FILENO, "%s%s: cannot run %s: %s\n",
			rc->child_prefix, rc->what, rc->path, strerror(errno));
		_exit(127);
	}
	if (wait_check(rc, pid, &status, err))
		return -1;
	return de_check_status(rc->what, status, err);
}
