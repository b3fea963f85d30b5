/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-exec: the plugin's environment without the plugin.
 *
 *   srun distenv-exec [--check] python train.py
 *
 * Computes, in this task, exactly what the distenv SPANK plugin would set
 * (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK,
 * GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS) with the
 * same library code (layout.c), keeps what the user set, optionally runs
 * distenv-check, then execs PROGRAM. For clusters where the plugin is not
 * installed. What the plugin learns from srun and slurmstepd comes from
 * the environment here: the host of task 0 with arbitrary distribution from
 * SLURM_HOSTFILE, the local task count of a het step from
 * SLURM_STEP_TASKS_PER_NODE. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_id.h"
#include "err.h"
#include "hostlist.h"
#include "layout.h"
#include "opterr.h"
#include "parse.h"
#include "env.h"
#include "port.h"
#include "runcheck.h"
#include "settings.h"

#define PROG "distenv-exec"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--check[=auto|socket|nccl]] [--verbose] [--force] [--run-id] [--] PROGRAM [ARGS...]\n"
		"Set the torchrun environment the distenv Slurm plugin would set in this\n"
		"task (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK,\n"
		"GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ROLE_*,\n"
		"TORCHELASTIC_RESTART_COUNT/MAX_RESTARTS, OMP_NUM_THREADS, ...),\n"
		"then run PROGRAM in its place: `srun " PROG " python train.py`.\n"
		"\n"
		"      --check[=B]  first run distenv-check (backend B, default auto) in\n"
		"                   this task; PROGRAM is not started if it fails\n"
		"  -v, --verbose    print each variable and whether it was set or kept\n"
		"  -f, --force      overwrite values already set (OMP_NUM_THREADS and the\n"
		"                   other defaults torchrun would give are always kept)\n"
		"      --run-id     also set TORCHELASTIC_RUN_ID (the job id), as torchrun\n"
		"                   does: is_torchelastic_launched() becomes true, and\n"
		"                   Lightning leaves its SLURMEnvironment (auto-requeue)\n"
		"  -h, --help       show this help\n"
		"  -V, --version    show the version\n"
		"\n"
		"Environment: DISTENV_PORT_MIN, DISTENV_PORT_MAX (MASTER_PORT range,\n"
		"default %u-%u), DISTENV_CHECK (the distenv-check binary; default: next\n"
		"to " PROG "), DISTENV_CHECK_OPTS (extra distenv-check options).\n"
		"Exit status: PROGRAM's; 1 error, 2 usage error, 127 PROGRAM not run.\n",
		DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT);
}

extern char **environ;

/* DISTENV_PORT_MIN / DISTENV_PORT_MAX, as the plugin's port_min/port_max. */
static int port_range(struct de_config *cfg, struct de_err *err)
{
	const char *smin = getenv("DISTENV_PORT_MIN");
	const char *smax = getenv("DISTENV_PORT_MAX");
	unsigned long min = cfg->port_min, max = cfg->port_max;

	/* parse.h's rule: unset is the default, empty or malformed an error. */
	if (smin != NULL &&
	    de_env_ulong("DISTENV_PORT_MIN", smin, 1024, 65535, &min, err))
		return -1;
	if (smax != NULL &&
	    de_env_ulong("DISTENV_PORT_MAX", smax, 1024, 65535, &max, err))
		return -1;
	if (min > max)
		return de_errf(err, "DISTENV_PORT_MIN=%lu is above DISTENV_PORT_MAX=%lu%s",
			       min, max, smax == NULL ? " (the default)" : "");
	cfg->port_min = (uint16_t)min;
	cfg->port_max = (uint16_t)max;
	return 0;
}

/* Arbitrary distribution: task i runs on the hostfile's host i, so task 0
 * on its first host. Slurm's reader skips blank lines and '#' comments and
 * accepts a hostlist expression or "host*count" on a line. */
static int hostfile_first(const char *path, char *host, size_t len,
			  struct de_err *err)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *p, *end;
	size_t cap = 0;
	struct de_err e2;
	int rc = -1, lines = 0;

	if (f == NULL)
		return de_errf(err, "SLURM_HOSTFILE=%s: cannot read it: %s (with SLURM_DISTRIBUTION=arbitrary it says which host runs task 0)",
			       path, strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		lines++;
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		if ((p = strchr(line, '*')) != NULL)
			*p = '\0';
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		end = p + strlen(p);
		while (end > p && (end[-1] == '\n' || end[-1] == '\r' ||
				   end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*p == '\0')
			continue;
		if (de_hostlist_nth(p, DE_HL_SUFFIX, 0, host, len, &e2))
			de_errf(err, "SLURM_HOSTFILE=%s: line %d: %s", path, lines, e2.msg);
		else
			rc = 0;
		goto out;
	}
	if (ferror(f))
		de_errf(err, "SLURM_HOSTFILE=%s: reading it: %s", path, strerror(errno));
	else
		de_errf(err, "SLURM_HOSTFILE=%s: no host in the file", path);
out:
	free(line);
	fclose(f);
	return rc;
}

/* distenv-check: DISTENV_CHECK, else next to this binary, else the
 * installed one. An empty DISTENV_CHECK was refused in main. */
static const char *check_path(char *buf, size_t len)
{
	const char *p = getenv("DISTENV_CHECK");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (p != NULL)
		return p;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(buf, len, "%s/distenv-check", self);
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return DE_CHECK_PATH_DEFAULT;
}

/* Runs distenv-check with this (final) environment, as the plugin's
 * --dist-check does; 0 only if it passed. */
static int run_check(enum de_backend backend, struct de_err *err)
{
	char buf[PATH_MAX + 32];
	struct de_run_check rc = {
		.what = "--check",
		.path = check_path(buf, sizeof(buf)),
		.path_hint = "set DISTENV_CHECK to the distenv-check binary",
		.backend = backend,
		.opts = getenv("DISTENV_CHECK_OPTS"),
		.envp = environ,
		.child_prefix = PROG ": ",
		.give_up_s = 0, /* distenv-check's --timeout bounds it */
	};

	return de_run_check(&rc, err);
}

/* `--check socket`: --check takes its value only after '=', so "socket"
 * would be run as PROGRAM: refused as a usage error instead. A
 * PROGRAM after "--" is the user's choice. */
static int check_value_apart(char **argv, int optind_, int check_given)
{
	enum de_backend b;

	if (!check_given || argv[optind_] == NULL ||
	    strcmp(argv[optind_ - 1], "--") == 0)
		return 0;
	return de_backend_parse(argv[optind_], &b) == 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check", optional_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "force", no_argument, NULL, 'f' },
		{ "run-id", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct de_config cfg;
	struct de_layout_in in;
	struct de_torch_env want;
	struct de_plan plan;
	struct de_err err;
	char task0[DE_VALUE_MAX], from[PATH_MAX + 32], line[DE_PLAN_LINE_MAX];
	const char *dist, *hostfile;
	int opt, verbose = 0, force = 0, check_bare = 0;
	size_t i;

	de_config_init(&cfg);
	opterr = 0;
	/* '+': stop at PROGRAM, its options are its own. */
	while ((opt = getopt_long(argc, argv, "+:vfhV", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (de_config_parse_check(&cfg, "--check", optarg, &err))
				return de_usage_error(PROG, "%s", err.msg);
			check_bare = optarg == NULL;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'r':
			cfg.run_id = 1;
			break;
		case 'h':
			usage(stdout);
			return fflush(stdout) == 0 ? 0 : 1;
		case 'V':
			printf(PROG " (distenv) %s\n", PACKAGE_VERSION);
			return fflush(stdout) == 0 ? 0 : 1;
		default: /* ':' or '?' */
			de_opterr(&err, argc, argv, optind, optopt, opts, opt);
			return de_usage_error(PROG, "%s", err.msg);
		}
	}
	if (check_value_apart(argv, optind, check_bare))
		return de_usage_error(PROG, "option '--check' takes its value with '=': --check=%s (\"%s\" would be run as PROGRAM; use -- before a PROGRAM of that name)",
				      argv[optind], argv[optind]);
	if (optind >= argc)
		return de_usage_error(PROG, "no PROGRAM to run");

	/* distenv-exec's own settings, twins of options: a bad one is a
	 * usage error (2), as a bad option is. */
	if (port_range(&cfg, &err) ||
	    de_env_str("DISTENV_CHECK", getenv("DISTENV_CHECK"), "the path of distenv-check", &err))
		return de_usage_error(PROG, "%s", err.msg);
	if (getenv("SLURM_JOB_ID") == NULL)
		return de_error(PROG, "SLURM_JOB_ID is not set: run " PROG " in a Slurm job (srun " PROG " PROGRAM, or in the job script)");

	memset(&in, 0, sizeof(in));
	in.get = de_env_get;
	in.ctx = environ;
	in.cfg = &cfg;
	in.step_id = -1;     /* SLURM_STEP_ID; absent: the batch step */
	in.local_tasks = -1; /* from SLURM_STEP_TASKS_PER_NODE */
	dist = getenv("SLURM_DISTRIBUTION");
	hostfile = getenv("SLURM_HOSTFILE");
	if (dist != NULL && strncmp(dist, "arbitrary", 9) == 0 &&
	    getenv("SLURM_STEP_ID") != NULL) {
		/* srun's hint (plugin loaded by srun only) wins in layout.c;
		 * without it the hostfile is the only record of the layout. */
		if (hostfile == NULL || *hostfile == '\0') {
			if (getenv(DE_MASTER_HINT_VAR) == NULL)
				return de_error(PROG, "SLURM_DISTRIBUTION=%s but SLURM_HOSTFILE is %s: cannot tell which host runs task 0",
						dist, hostfile == NULL ? "not set" : "empty");
		} else {
			if (hostfile_first(hostfile, task0, sizeof(task0), &err)) {
				if (getenv(DE_MASTER_HINT_VAR) == NULL)
					return de_error(PROG, "%s", err.msg);
			} else {
				snprintf(from, sizeof(from), "SLURM_HOSTFILE=%s", hostfile);
				in.task0_host = task0;
				in.task0_from = from;
			}
		}
	}
	/* Unreadable (no /proc): no warning about it, the port still works. */
	if (de_ephemeral_read(DE_EPHEMERAL_PATH, &in.eph_lo, &in.eph_hi, &err))
		in.eph_lo = in.eph_hi = 0;
	if (de_layout_compute(&in, &want, &err))
		return de_error(PROG, "%s", err.msg);
	de_plan_make(&want, de_env_get, environ, force, &plan);

	for (i = 0; i < plan.n; i++) {
		const char *name = plan.item[i].name;
		int keep = plan.item[i].action == DE_KEEP;

		if (!keep && setenv(name, plan.item[i].value, 1) != 0)
			return de_error(PROG, "setting %s=%s: %s", name,
					plan.item[i].value, strerror(errno));
		if (verbose) {
			de_plan_line(&plan, i, line, sizeof(line));
			fprintf(stderr, PROG ": %s\n", line);
		}
	}
	for (i = 0; verbose && i < want.nnotes; i++)
		fprintf(stderr, PROG ": note: %s\n", want.note[i]);
	/* As the plugin: an inner step can tell these from the user's. */
	if (setenv(DE_MANAGED_VAR, plan.managed, 1) != 0)
		return de_error(PROG, "setting %s: %s", DE_MANAGED_VAR, strerror(errno));

	if (cfg.check != DE_BACKEND_OFF) {
		if (want.batch) {
			if (verbose)
				fprintf(stderr, PROG ": --check skipped in the batch step (no ranks to check)\n");
		} else if (run_check(cfg.check, &err)) {
			return de_error(PROG, "%s", err.msg);
		}
	}

	fflush(NULL);
	execvp(argv[optind], argv + optind);
	de_error(PROG, "cannot run %s: %s", argv[optind], strerror(errno));
	return 127;
}
