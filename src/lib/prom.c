/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <math.h>

#include "prom.h"

/* s with the format's escapes: '\\' and newline always, '"' in label
 * values (help == 0) only. */
static void put_escaped(FILE *fp, const char *s, int help)
{
	for (; *s != '\0'; s++) {
		if (*s == '\n')
			fputs("\\n", fp);
		else if (*s == '\\' || (*s == '"' && !help))
			fprintf(fp, "\\%c", *s);
		else
			fputc(*s, fp);
	}
}

void de_prom_value(double v, char *out, size_t len)
{
	if (isnan(v))
		snprintf(out, len, "NaN");
	else if (isinf(v))
		snprintf(out, len, "%cInf", v > 0 ? '+' : '-');
	else
		/* 15 digits: every integer up to 1e15 (a Unix time, a byte
		 * count) exactly, and no 0.1000000000000001 tails. */
		snprintf(out, len, "%.15g", v);
}

void de_prom_family(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s ", name);
	put_escaped(fp, help, 1);
	fprintf(fp, "\n# TYPE %s %s\n", name, type);
}

void de_prom_sample(FILE *fp, const char *name, const char *const *labels, size_t nlabels,
		    double v)
{
	char val[32];
	size_t i;

	fputs(name, fp);
	for (i = 0; i < nlabels; i++) {
		fprintf(fp, "%s%s=\"", i ? "," : "{", labels[2 * i]);
		put_escaped(fp, labels[2 * i + 1], 0);
		fputc('"', fp);
	}
	de_prom_value(v, val, sizeof(val));
	fprintf(fp, "%s %s\n", nlabels ? "}" : "", val);
}
