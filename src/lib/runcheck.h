/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running distenv-check before the program, for both launchers: the
 * plugin's --dist-check (in the task, from slurmstepd) and distenv-exec
 * --check. Plain POSIX, no Slurm: fork, exec, wait. The parts that decide
 * something (the command line: de_check_argv in settings.h; what a wait
 * status means: de_check_status) are pure and unit-tested. */
#ifndef DISTENV_RUNCHECK_H
#define DISTENV_RUNCHECK_H

#include "backend_id.h"
#include "err.h"

struct de_run_check {
	const char *what;       /* the option, "--dist-check" or "--check":
				 * every message starts with it */
	const char *path;       /* the distenv-check binary */
	const char *path_hint;  /* where path comes from, shown when it
				 * cannot be run, e.g. "plugstack.conf check_path=" */
	enum de_backend backend; /* --backend=; never DE_BACKEND_OFF */
	const char *opts;       /* DISTENV_CHECK_OPTS, or NULL */
	char *const *envp;      /* the check's environment: the task's, final */
	const char *child_prefix; /* starts the line the child writes to
				   * stderr when exec fails, e.g. "distenv: error: " */
	unsigned give_up_s;     /* kill the check after this many seconds; 0:
				 * wait as long as it runs */
};

/* Runs the check and waits for it. 0 when it passed; else -1 with err
 * saying why the program is not started. */
int de_run_check(const struct de_run_check *rc, struct de_err *err);

/* What a wait status of distenv-check means: 0 for exit 0, else -1 with
 * err worded "WHAT failed (distenv-check exit N): ..." or "WHAT killed by
 * signal N: ...". */
int de_check_status(const char *what, int status, struct de_err *err);

#endif
