/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json.c: the escape rule, truncation of the buffer version, and the
 * stream version writing the same bytes with quotes around them. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"

/* What de_json_put writes for s, in a static buffer. */
static const char *put(const char *s)
{
	static char buf[256];
	FILE *fp = fmemopen(buf, sizeof(buf), "w");

	if (fp == NULL)
		return "(fmemopen failed)";
	de_json_put(fp, s);
	fclose(fp);
	return buf;
}

int main(void)
{
	char out[64];
	size_t n;

	n = de_json_escape("plain text", out, sizeof(out));
	is_str(out, "plain text", "plain text passes");
	is_int((long long)n, 10, "all of it taken");
	de_json_escape("say \"hi\"", out, sizeof(out));
	is_str(out, "say \\\"hi\\\"", "quotes get a backslash");
	de_json_escape("C:\\dir\\", out, sizeof(out));
	is_str(out, "C:\\\\dir\\\\", "backslashes get a backslash");
	de_json_escape("a\tb\nc\rd\x01" "e\x1f", out, sizeof(out));
	is_str(out, "a b c d e ", "control characters become spaces (one line per record)");
	de_json_escape("del \x7f", out, sizeof(out));
	is_str(out, "del \x7f", "DEL passes (JSON allows it)");
	de_json_escape("n\xc5\x93ud \xe2\x86\x92 \xf0\x9f\x96\xa5", out, sizeof(out));
	is_str(out, "n\xc5\x93ud \xe2\x86\x92 \xf0\x9f\x96\xa5", "UTF-8 passes byte for byte");
	de_json_escape("", out, sizeof(out));
	is_str(out, "", "empty string");

	/* Truncation: whole escapes and whole characters only. */
	n = de_json_escape("abcdef", out, 4);
	is_str(out, "abc", "cut to the buffer, NUL included");
	is_int((long long)n, 3, "returns the bytes taken");
	n = de_json_escape("ab\"c", out, 4);
	is_str(out, "ab", "an escape that does not fit is left out whole");
	is_int((long long)n, 2, "...and not counted as taken");
	n = de_json_escape("ab\"c", out, 5);
	is_str(out, "ab\\\"", "an escape that fits exactly is kept");
	n = de_json_escape("a\xc3\xa9", out, 3);
	is_str(out, "a", "a UTF-8 character cut in two is left out whole");
	is_int((long long)n, 1, "...and the next call would start at its first byte");
	n = de_json_escape("a\xe2\x86\x92", out, 4);
	is_str(out, "a", "a three-byte character cut after two bytes is left out");
	n = de_json_escape("\"\x80\x80", out, 4);
	is_str(out, "\\\"", "stray continuation bytes are cut, never an escape before them");
	n = de_json_escape("abc", out, 1);
	is_str(out, "", "a one-byte buffer holds the NUL");
	is_int((long long)n, 0, "...and takes nothing");
	is_int((long long)de_json_escape("abc", out, 0), 0, "a zero-length buffer is not written");

	/* The stream version: the same rule, between quotes. */
	is_str(put("x"), "\"x\"", "put: quoted");
	is_str(put(""), "\"\"", "put: empty string");
	is_str(put("a\"b\\c\nd\xc3\xa9"), "\"a\\\"b\\\\c d\xc3\xa9\"", "put: the same escapes");
	return tap_done();
}
