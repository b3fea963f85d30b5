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
