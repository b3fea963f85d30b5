/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Strict number parsing: the whole string must be a decimal number in
 * range; errors name the variable/argument and the value. */
#ifndef DISTENV_PARSE_H
#define DISTENV_PARSE_H

#include <stdint.h>

#include "err.h"

/* Parses s as a decimal integer in [min, max]. `what` names the input in
 * the error, e.g. "SLURM_PROCID" or "plugstack argument port_min". */
int de_parse_ulong(const char *what, const char *s, unsigned long min,
		   unsigned long max, unsigned long *out, struct de_err *err);

/* Parses a boolean: 1/0, yes/no, on/off, true/false (case-insensitive). */
int de_parse_bool(const char *what, const char *s, int *out,
		  struct de_err *err);

/* Environment variables. The rule, the same for every variable distenv
 * reads and parses: unset (v == NULL) is the variable's default where it
 * has one, and an empty value is an error "NAME is empty", never the same
 * as unset. Errors name the variable, quote the value and say the form
 * expected: GROUP_WORLD_SIZE "1x": expected a whole number in 1..N. */

/* The spellings every flag variable accepts, case-insensitive. */
#define DE_FLAG_FORMS "1 or 0 (also yes/no, true/false, on/off)"

/* A decimal number in [min, max]; NULL is an error too ("is not set"):
 * callers of optional variables test for NULL first. */
int de_env_ulong(const char *name, const char *v, unsigned long min,
		 unsigned long max, unsigned long *out, struct de_err *err);

/* A flag: NULL is off (*out = 0); DE_FLAG_FORMS, else an error. */
int de_env_flag(const char *name, const char *v, int *out, struct de_err *err);

/* A string: NULL or non-empty pass (0); "" is an error that says what
 * was expected, e.g. "a host name". */
int de_env_str(const char *name, const char *v, const char *expected,
	       struct de_err *err);

#endif
