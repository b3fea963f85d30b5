/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON strings, the one way distenv-check writes them (its --json lines,
 * --json-summary, pairs.json): '"' and '\\' get a backslash, a control
 * character becomes a space (one record stays one line), every other byte
 * passes unchanged (UTF-8 as it came). */
#ifndef DISTENV_JSON_H
#define DISTENV_JSON_H

#include <stddef.h>
#include <stdio.h>

/* s, escaped, as the inside of a JSON string in out (len bytes, NUL
 * included). Takes what fits, never half an escape or half a UTF-8
 * character; returns how many bytes of s it took, so s[return] != '\0'
 * means out was too short. */
size_t de_json_escape(const char *s, char *out, size_t len);

/* s as a whole JSON string, quotes included, on fp. */
void de_json_put(FILE *fp, const char *s);

#endif
