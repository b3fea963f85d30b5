/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scontrol for distenv-check --node --drain: run with no shell, its
 * output read, bounded by the run's deadline (a slurmctld that does not
 * answer must not hold a HealthCheckProgram past Slurm's own limit). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "scontrol.h"

/* Where scontrol is looked for after PATH: Slurm gives a
 * HealthCheckProgram no PATH at all (22.05: SLURMD_NODENAME only). */
#define SCONTROL_DIRS "/usr/bin:/usr/local/bin:/bin:/usr/sbin:/usr/local/sbin:/sbin:/opt/slurm/bin"

static int executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The first DIR/scontrol of a colon-separated list, into out: 1 found. */
static int search(const char *dirs, char *out, size_t len)
{
	const char *p = dirs;

	while (*p != '\0') {
		size_t n = strcspn(p, ":");

		if (n > 0 && (size_t)snprintf(out, len, "%.*s/scontrol", (int)n, p) < len && executable(out))
			return 1;
		p += n;
		if (*p == ':')
			p++;
	}
	return 0;
}

int de_scontrol_find(const char *opt, char *out, size_t len, struct de_err *e)
{
	const char *path = getenv("PATH");

	if (opt != NULL) {
		if (!executable(opt))
			return de_errf(e, "--scontrol %s: not an executable file", opt);
		snprintf(out, len, "%s", opt);
		return 0;
	}
	if ((path != NULL && search(path, out, len)) || search(SCONTROL_DIRS, out, len))
		return 0;
	return de_errf(e, "no scontrol on PATH (%s) or in %s: name it with --scontrol=PATH",
		       path != NULL ? path : "unset", SCONTROL_DIRS);
}

/* "scontrol show node -o node1", for messages. */
static void command(char *const argv[], char *out, size_t len)
{
	size_t off = 0;
	int i;

	out[0] = '\0';
	for (i = 0; argv[i] != NULL && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? " " : "", argv[i]);
}

/* The first line of text, for messages. */
static int first_line(const char *text)
{
	int n = (int)strcspn(text, "\n");

	return n > 200 ? 200 : n;
}

/* Runs path with argv (stdin /dev/null, stdout and stderr into out) by
 * deadline: 0 when it exits 0, else -1 with e naming the command, its
 * exit status and its first line of output. */
static int run(const char *path, char *const argv[], int64_t deadline, char *out, size_t len,
	       struct de_err *e)
{
	char cmd[512];
	size_t used = 0;
	int p[2], st = 0, late = 0;
	pid_t pid;

	command(argv, cmd, sizeof(cmd));
	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC) != 0)
		return de_errf(e, "%s: pipe: %s", cmd, strerror(errno));
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(p[0]);
		close(p[1]);
		return de_errf(e, "%s: fork: %s", cmd, strerror(err));
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(path, argv);
		dprintf(2, "cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int64_t left = deadline - de_now_ms();
		char buf[4096];
		ssize_t n;
		int rc;

		if (left <= 0) {
			late = 1;
			break;
		}
		rc = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
		if (rc <= 0)
			continue; /* a signal, or a second without output: the deadline again */
		n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Past len the output is dropped: its start says what it is. */
		if (used + 1 < len) {
			size_t k = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;

			memcpy(out + used, buf, k);
			used += k;
			out[used] = '\0';
		}
	}
	close(p[0]);
	if (late)
		kill(pid, SIGKILL); /* our own child, by its pid */
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (late)
		return de_errf(e, "%s: no answer within the timeout (stopped)", cmd);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		return de_errf(e, "%s: killed by signal %d: %.*s", cmd, WTERMSIG(st), first_line(out), out);
	return de_errf(e, "%s: exit status %d: %.*s", cmd, WEXITSTATUS(st), first_line(out), out);
}

int de_scontrol_node(const char *scontrol, const char *node, int64_t deadline,
		     struct de_node_rec *r, struct de_err *e)
{
	char *argv[] = { "scontrol", "show", "node", "-o", (char *)node, NULL };
	char out[8192];
	struct de_err pe;

	if (run(scontrol, argv, deadline, out, sizeof(out), e))
		return -1;
	if (de_node_rec_parse(out, r, &pe))
		return de_errf(e, "scontrol show node -o %s: %s", node, pe.msg);
	/* A name scontrol reads as a hostlist could print another node. */
	if (strcmp(r->name, node) != 0)
		return de_errf(e, "scontrol show node -o %s: printed node %s", node, r->name);
	return 0;
}

int de_scontrol_drain(const char *scontrol, const char *node, const char *reason,
		      int64_t deadline, struct de_err *e)
{
	char name[256], why[600], out[2048];
	char *argv[] = { "scontrol", "update", name, "State=DRAIN", why, NULL };

	snprintf(name, sizeof(name), "NodeName=%s", node);
	snprintf(why, sizeof(why), "Reason=%s", reason);
	return run(scontrol, argv, deadline, out, sizeof(out), e);
}

int de_scontrol_resume(const char *scontrol, const char *node, int64_t deadline,
		       struct de_err *e)
{
	char name[256], out[2048];
	char *argv[] = { "scontrol", "update", name, "State=RESUME", NULL };

	snprintf(name, sizeof(name), "NodeName=%s", node);
	return run(scontrol, argv, deadline, out, sizeof(out), e);
}
