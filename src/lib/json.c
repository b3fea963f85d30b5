/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "json.h"

/* The one rule, per byte: what goes out for c, in 1 or 2 bytes. */
static size_t escape_byte(char c, char out[2])
{
	if (c == '"' || c == '\\') {
		out[0] = '\\';
		out[1] = c;
		return 2;
	}
	out[0] = (unsigned char)c < 0x20 ? ' ' : c;
	return 1;
}

size_t de_json_escape(const char *s, char *out, size_t len)
{
	size_t i = 0, j = 0;

	if (len == 0)
		return 0;
	for (; s[i] != '\0'; i++) {
		char e[2];
		size_t n = escape_byte(s[i], e);

		if (j + n >= len)
			break;
		out[j++] = e[0];
		if (n == 2)
			out[j++] = e[1];
	}
	/* Cut short inside a UTF-8 character: leave all of it out, so what
	 * is there stays valid text. */
	if (((unsigned char)s[i] & 0xc0) == 0x80) {
		/* Bytes from 0x80 up went out as they were, one for one. */
		while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
			i--;
			j--;
		}
		if (i > 0 && (unsigned char)s[i - 1] >= 0xc0) {
			i--;
			j--;
		}
	}
	out[j] = '\0';
	return i;
}

void de_json_put(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		char e[2];

		fwrite(e, 1, escape_byte(*s, e), fp);
	}
	fputc('"', fp);
}
