/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One error style for all of distenv: a function that fails fills a
 * struct de_err with one sentence naming the input and what was expected,
 * and returns -1. Only the outermost caller prints it, once, with its own
 * prefix: the CLIs with de_error()/de_usage_error(), the plugin with its
 * fail_task()/slurm_error("distenv: %s"). */
#ifndef DISTENV_ERR_H
#define DISTENV_ERR_H

#include <stddef.h>

#define DE_ERR_MAX 512

struct de_err {
	char msg[DE_ERR_MAX];
};

/* Formats into e (if non-NULL) and returns -1 so callers can
 * `return de_errf(err, ...)`. */
int de_errf(struct de_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* For the command-line tools: "PROG: message" on stderr; returns 1, their
 * exit status for an error that is not a usage error. */
int de_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* For the command-line tools: "PROG: message" and a pointer to --help on
 * stderr; returns 2, their usage-error exit status. */
int de_usage_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
