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

#endif
