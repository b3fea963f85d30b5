/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-hostnames: `scontrol show hostnames` without slurmctld.
 *
 * Prints the hosts of one or more Slurm hostlist expressions, one a line,
 * in Slurm's order; or only the first, the number, or host N. Without an
 * EXPR it reads SLURM_NODELIST (what scontrol reads), then
 * SLURM_JOB_NODELIST. Several EXPRs make one list, each expanded in turn
 * (scontrol itself refuses more than one). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hostlist.h"
#include "opterr.h"

#define PROG "distenv-hostnames"

enum mode { MODE_ALL, MODE_FIRST, MODE_COUNT, MODE_INDEX };

/* --slurm-22 has no short form: its val is no character (opterr.h). */
enum { OPT_SLURM22 = 256 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--first|--count|--index N] [--slurm-22] [EXPR...]\n"
		"Print the hosts of Slurm hostlist expressions, one a line, like\n"
		"`scontrol show hostnames EXPR`, without contacting slurmctld.\n"
		"\n"
		"  -f, --first      print only the first host\n"
		"  -c, --count      print only the number of hosts\n"
		"  -i, --index N    print only host N (0-based)\n"
		"      --slurm-22   Slurm 22.05 grammar (no text after ']', no\n"
		"                   newline separator); default: Slurm >= 23.11.0\n"
		"  -h, --help       show this help\n"
		"  -V, --version    show the version\n"
		"\n"
		"Several EXPRs form one list. Without EXPR, SLURM_NODELIST (or else\n"
		"SLURM_JOB_NODELIST) is read.\n"
		"Exit status: 0 success, 1 error, 2 usage error.\n");
}

/* N: decimal digits only, no sign, no blanks. */
static bool parse_index(const char *s, size_t *n)
{
	unsigned long long v;
	char *end;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > (size_t)-1)
		return false;
	*n = (size_t)v;
	return true;
}

static int finish(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		return de_error(PROG, "writing output: %s", strerror(errno));
	}
	return 0;
}

/* Prints host n of the list made of all exprs. */
static int print_nth(char **exprs, int nexpr, unsigned flags, size_t n)
{
	char name[DE_HOSTLIST_MAX_NAME + 1];
	struct de_err err;
	size_t total = 0, count;
	int i;

	/* Check every EXPR first, so a bad one is never silently ignored. */
	for (i = 0; i < nexpr; i++) {
		if (de_hostlist_count(exprs[i], flags, &count, &err))
			return de_error(PROG, "%s", err.msg);
	}
	for (i = 0; i < nexpr; i++) {
		if (de_hostlist_count(exprs[i], flags, &count, &err))
			return de_error(PROG, "%s", err.msg);
		if (n - total < count) {
			if (de_hostlist_nth(exprs[i], flags, n - total, name,
					    sizeof(name), &err))
				return de_error(PROG, "%s", err.msg);
			printf("%s\n", name);
			return finish();
		}
		total += count;
	}
	if (total == 0)
		return de_error(PROG, "the host list is empty");
	return de_error(PROG, "no host %zu: the list has %zu hosts", n, total);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "first", no_argument, NULL, 'f' },
		{ "count", no_argument, NULL, 'c' },
		{ "index", required_argument, NULL, 'i' },
		{ "slurm-22", no_argument, NULL, OPT_SLURM22 },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	enum mode mode = MODE_ALL;
	unsigned flags = DE_HL_SUFFIX;
	size_t index = 0, total = 0, count, j;
	struct de_hostlist hl;
	struct de_err err;
	char *env_expr[1];
	char **exprs;
	int nexpr, opt, i, nmodes = 0;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":fci:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			mode = MODE_FIRST;
			nmodes++;
			break;
		case 'c':
			mode = MODE_COUNT;
			nmodes++;
			break;
		case 'i':
			if (!parse_index(optarg, &index))
				return de_usage_error(PROG, "--index needs a number >= 0, not '%s'",
						   optarg);
			mode = MODE_INDEX;
			nmodes++;
			break;
		case OPT_SLURM22:
			flags &= ~(unsigned)DE_HL_SUFFIX;
			break;
		case 'h':
			usage(stdout);
			return finish();
		case 'V':
			printf(PROG " (distenv) %s\n", PACKAGE_VERSION);
			return finish();
		default: /* ':' or '?' */
			de_opterr(&err, argc, argv, optind, optopt, opts, opt);
			return de_usage_error(PROG, "%s", err.msg);
		}
	}
	if (nmodes > 1)
		return de_usage_error(PROG, "--first, --count and --index exclude each other");

	exprs = argv + optind;
	nexpr = argc - optind;
	if (nexpr == 0) {
		env_expr[0] = getenv("SLURM_NODELIST");
		if (!env_expr[0])
			env_expr[0] = getenv("SLURM_JOB_NODELIST");
		if (!env_expr[0])
			return de_usage_error(PROG, "no EXPR given and neither SLURM_NODELIST nor SLURM_JOB_NODELIST is set");
		/* parse.h's rule: an empty variable is named, never unset. */
		if (env_expr[0][0] == '\0')
			return de_usage_error(PROG, "no EXPR given and %s is empty: expected a hostlist expression",
					      getenv("SLURM_NODELIST") ? "SLURM_NODELIST" : "SLURM_JOB_NODELIST");
		exprs = env_expr;
		nexpr = 1;
	}

	switch (mode) {
	case MODE_FIRST:
		return print_nth(exprs, nexpr, flags, 0);
	case MODE_INDEX:
		return print_nth(exprs, nexpr, flags, index);
	case MODE_COUNT:
		for (i = 0; i < nexpr; i++) {
			if (de_hostlist_count(exprs[i], flags, &count, &err))
				return de_error(PROG, "%s", err.msg);
			total += count;
		}
		printf("%zu\n", total);
		return finish();
	case MODE_ALL:
		/* Check every EXPR first: print all or nothing, as scontrol. */
		for (i = 0; i < nexpr; i++) {
			if (de_hostlist_count(exprs[i], flags, &count, &err))
				return de_error(PROG, "%s", err.msg);
		}
		for (i = 0; i < nexpr; i++) {
			if (de_hostlist_expand(exprs[i], flags, &hl, &err))
				return de_error(PROG, "%s", err.msg);
			for (j = 0; j < hl.count; j++) {
				fputs(hl.host[j], stdout);
				putchar('\n');
			}
			de_hostlist_free(&hl);
		}
		return finish();
	}
	return 1;
}
