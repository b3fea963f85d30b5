/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "parse.h"

int de_parse_ulong(const char *what, const char *s, unsigned long min,
		   unsigned long max, unsigned long *out, struct de_err *err)
{
	unsigned long v;
	char *end;

	if (s == NULL)
		return de_errf(err, "%s is not set (expected an integer in %lu..%lu)",
			       what, min, max);
	/* strtoul accepts leading blanks and '-': we accept digits only. */
	if (!isdigit((unsigned char)s[0]))
		return de_errf(err, "%s=\"%s\": expected an integer in %lu..%lu",
			       what, s, min, max);
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0')
		return de_errf(err, "%s=\"%s\": expected an integer in %lu..%lu",
			       what, s, min, max);
	if (errno == ERANGE || v < min || v > max)
		return de_errf(err, "%s=%s: out of range (expected %lu..%lu)",
			       what, s, min, max);
	*out = v;
	return 0;
}

int de_parse_bool(const char *what, const char *s, int *out,
		  struct de_err *err)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };
	size_t i;

	if (s != NULL) {
		for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
			if (strcasecmp(s, yes[i]) == 0) {
				*out = 1;
				return 0;
			}
			if (strcasecmp(s, no[i]) == 0) {
				*out = 0;
				return 0;
			}
		}
	}
	return de_errf(err, "%s=\"%s\": expected 0|1 (or on|off, yes|no)",
		       what, s ? s : "");
}

/* The environment's rule, for every variable distenv parses: unset is
 * NULL, and an empty value is an error of its own ("is empty"), never
 * taken for unset: `RANK= cmd` is a mistake to name, not a default. */
int de_env_ulong(const char *name, const char *v, unsigned long min,
		 unsigned long max, unsigned long *out, struct de_err *err)
{
	if (v == NULL)
		return de_errf(err, "%s is not set: expected a whole number in %lu..%lu",
			       name, min, max);
	if (*v == '\0')
		return de_errf(err, "%s is empty: expected a whole number in %lu..%lu",
			       name, min, max);
	/* de_parse_ulong refuses signs, blanks, junk and overflow. */
	if (de_parse_ulong(name, v, min, max, out, NULL))
		return de_errf(err, "%s \"%s\": expected a whole number in %lu..%lu",
			       name, v, min, max);
	return 0;
}

int de_env_flag(const char *name, const char *v, int *out, struct de_err *err)
{
	if (v == NULL) {
		*out = 0;
		return 0;
	}
	if (*v == '\0')
		return de_errf(err, "%s is empty: expected " DE_FLAG_FORMS, name);
	if (de_parse_bool(name, v, out, NULL))
		return de_errf(err, "%s \"%s\": expected " DE_FLAG_FORMS, name, v);
	return 0;
}

int de_env_str(const char *name, const char *v, const char *expected,
	       struct de_err *err)
{
	if (v != NULL && *v == '\0')
		return de_errf(err, "%s is empty: expected %s", name, expected);
	return 0;
}
