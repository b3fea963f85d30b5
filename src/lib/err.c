/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "err.h"

int de_errf(struct de_err *e, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* "PROG: message" on stderr, then what follows it. */
__attribute__((format(printf, 2, 0)))
static void vreport(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int de_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(prog, fmt, ap);
	va_end(ap);
	return 1;
}

int de_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(prog, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	return 2;
}
