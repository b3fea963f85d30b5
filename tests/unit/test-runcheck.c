/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runcheck.h"
#include "settings.h"
#include "tap.h"

/* A real wait status: a child that exits with code, or kills itself. */
static int status_of(int code, int sig)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		if (sig)
			raise(sig);
		_exit(code);
	}
	waitpid(pid, &status, 0);
	return status;
}

static char dir[] = "/tmp/test-runcheck.XXXXXX";

/* An executable script in dir standing in for distenv-check. */
static const char *script(const char *name, const char *body)
{
	static char path[4][256];
	static int n;
	char *p = path[n++ % 4];
	FILE *f;

	snprintf(p, 256, "%s/%s", dir, name);
	f = fopen(p, "w");
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(p, 0755);
	return p;
}

int main(void)
{
	struct de_err e;
	char *env_y[] = { "X=y", NULL };
	char *env_n[] = { "X=n", NULL };
	struct de_run_check rc = {
		.what = "--dist-check",
		.path_hint = "plugstack.conf check_path=",
		.backend = DE_BACKEND_SOCKET,
		.envp = env_y,
		.child_prefix = "distenv: error: ",
	};

	/* What a wait status means. */
	ok(de_check_status("--check", status_of(0, 0), &e) == 0, "exit 0: passed");
	ok(de_check_status("--check", status_of(1, 0), &e) == -1, "exit 1: failed");
	is_str(e.msg, "--check failed (distenv-check exit 1): the program was not started",
	       "exit 1 worded with the option and the exit code");
	de_check_status("--dist-check", status_of(2, 0), &e);
	is_str(e.msg, "--dist-check failed (distenv-check exit 2): the program was not started",
	       "exit 2 (usage) worded the same way");
	ok(de_check_status("--check", status_of(0, SIGKILL), &e) == -1, "killed: failed");
	is_str(e.msg, "--check killed by signal 9: the program was not started",
	       "a signal is named by number");

	/* Running it: path, environment, options, backstop. */
	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return tap_done();
	}
	rc.path = script("ok", "[ \"$1\" = --backend=socket ] && [ \"$X\" = y ] && [ \"$2\" = --timeout=5 ] && [ $# = 2 ]");
	rc.opts = " --timeout=5 ";
	ok(de_run_check(&rc, &e) == 0, "passes: argv is path --backend=socket then DISTENV_CHECK_OPTS words, env is envp");
	rc.envp = env_n;
	ok(de_run_check(&rc, &e) == -1, "the check sees envp, not our environment");
	is_str(e.msg, "--dist-check failed (distenv-check exit 1): the program was not started",
	       "a failed check: the wait-status wording");
	rc.envp = env_y;
	rc.opts = "-q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q -q";
	ok(de_run_check(&rc, &e) == -1, "too many DISTENV_CHECK_OPTS words: refused before running");
	is_str(e.msg, "--dist-check: DISTENV_CHECK_OPTS has more than 37 words: expected at most 37 options",
	       "the refusal names DISTENV_CHECK_OPTS");
	rc.opts = NULL;
	rc.path = "/nonexistent/distenv-check";
	ok(de_run_check(&rc, &e) == -1, "missing binary: error");
	is_str(e.msg, "--dist-check: cannot run /nonexistent/distenv-check: No such file or directory (plugstack.conf check_path=)",
	       "missing binary: path, reason and where the path comes from");
	rc.path = script("slow", "exec sleep 30");
	rc.give_up_s = 1;
	ok(de_run_check(&rc, &e) == -1, "a stuck check is killed at the backstop");
	is_str(e.msg, "--dist-check: the check did not finish within 1 s: the program was not started",
	       "the backstop says how long it waited");

	unlink(script("ok", ""));
	unlink(script("slow", ""));
	rmdir(dir);
	return tap_done();
}
