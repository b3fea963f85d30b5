/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal TAP producer for the C unit tests: `ok(cond, fmt, ...)`,
 * `is_str`, `is_int`, then `return tap_done();` from main. */
#ifndef DISTENV_TAP_H
#define DISTENV_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 0)))
static void tap_vok(int pass, const char *fmt, va_list ap)
{
	tap_n++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 2, 3), unused))
static int ok(int pass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	return pass;
}

__attribute__((format(printf, 3, 4), unused))
static int is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	int pass = (got == NULL && want == NULL) ||
		   (got != NULL && want != NULL && strcmp(got, want) == 0);

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got: '%s'\n#  want: '%s'\n", got ? got : "(null)",
		       want ? want : "(null)");
	return pass;
}

__attribute__((format(printf, 3, 4), unused))
static int is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	int pass = got == want;

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got: %lld\n#  want: %lld\n", got, want);
	return pass;
}

__attribute__((unused))
static int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
