/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opterr.h"

/* Appends to e->msg, truncating as snprintf does. */
__attribute__((format(printf, 3, 4)))
static void append(struct de_err *e, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= sizeof(e->msg) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(e->msg + *at, sizeof(e->msg) - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n < sizeof(e->msg) - *at ? (size_t)n : sizeof(e->msg) - 1 - *at;
}

static int abbreviates(const struct option *o, const char *name, size_t len)
{
	return strncmp(o->name, name, len) == 0;
}

/* glibc's rule (posix/getopt.c, process_long_option): two abbreviated
 * options are ambiguous only if they differ in has_arg, flag or val;
 * aliases of one option are not. */
static int differ(const struct option *a, const struct option *b)
{
	return a->has_arg != b->has_arg || a->flag != b->flag || a->val != b->val;
}

/* The option NAME (len bytes, before any '=') selects, as glibc looks it
 * up: an exact name wins, else the first one it abbreviates. -1: none;
 * *ambiguous: another abbreviated one differs from that first one. */
static int lookup(const struct option *lo, const char *name, size_t len,
		  int *ambiguous)
{
	int i, first = -1;

	*ambiguous = 0;
	for (i = 0; lo[i].name != NULL; i++)
		if (abbreviates(&lo[i], name, len) && strlen(lo[i].name) == len)
			return i;
	for (i = 0; lo[i].name != NULL; i++) {
		if (!abbreviates(&lo[i], name, len))
			continue;
		if (first < 0)
			first = i;
		else if (differ(&lo[first], &lo[i]))
			*ambiguous = 1;
	}
	return first;
}

static void ambiguous_msg(struct de_err *e, const char *arg,
			  const struct option *lo, const char *name, size_t len)
{
	size_t at = 0;
	int i, first = -1;

	append(e, &at, "option '%s' is ambiguous; possibilities:", arg);
	/* glibc lists the first match and each one that differs from it. */
	for (i = 0; lo[i].name != NULL; i++) {
		if (!abbreviates(&lo[i], name, len))
			continue;
		if (first < 0)
			first = i;
		if (i == first || differ(&lo[first], &lo[i]))
			append(e, &at, " '--%s'", lo[i].name);
	}
}

int de_opterr(struct de_err *e, int argc, char *const argv[], int ind, int opt,
	      const struct option *longopts, int ret)
{
	/* Every long-option error has consumed its element; a short one may
	 * not have (the rest of its cluster is still to come). */
	const char *arg = ind >= 1 && ind <= argc ? argv[ind - 1] : NULL;

	if (e == NULL)
		return -1;
	if (arg != NULL && arg[0] == '-' && arg[1] == '-' && arg[2] != '\0') {
		const char *name = arg + 2, *eq = strchr(name, '=');
		size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
		int ambiguous, i = lookup(longopts, name, len, &ambiguous);

		if (ret == ':' && i >= 0 && eq == NULL)
			return de_errf(e, "option '--%s' requires an argument", longopts[i].name);
		if (opt == 0 && i >= 0 && ambiguous) {
			ambiguous_msg(e, arg, longopts, name, len);
			return -1;
		}
		if (opt == 0 && i < 0)
			return de_errf(e, "unrecognized option '%s'", arg);
		/* A consumed "--name=value" (an option's argument) before a
		 * bad short option fails the val test and falls through. */
		if (i >= 0 && !ambiguous && longopts[i].val == opt && eq != NULL &&
		    longopts[i].has_arg == no_argument)
			return de_errf(e, "option '--%s' doesn't allow an argument",
				       longopts[i].name);
	}
	if (ret == ':')
		return de_errf(e, "option requires an argument -- '%c'", opt);
	return de_errf(e, "invalid option -- '%c'", opt);
}
