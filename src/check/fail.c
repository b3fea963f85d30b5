/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The failure helper and the logger every file of distenv-check uses. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "fail.h"

int de_fail_set(struct de_fail *f, enum de_diag d, const char *fmt, ...)
{
	va_list ap;

	f->diag = d;
	f->from_rank0 = 0;
	f->exclude[0] = '\0';
	f->exclude_sure = 0;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void de_log(const char *who, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	/* One write per line: ranks sharing a terminal do not interleave. */
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "distenv-check: %s: %s\n", who, line);
}
