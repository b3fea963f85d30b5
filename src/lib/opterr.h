/* SPDX-License-Identifier: GPL-2.0-or-later */
/* getopt_long's errors in GNU getopt's own words, so that every tool says
 * "option '--verbose' doesn't allow an argument" as coreutils do.
 *
 * The tools call getopt_long with opterr = 0 and a leading ':' (their
 * errors go through de_usage_error, with the --help hint and exit 2), and
 * then glibc tells only the return (':' or '?'), optind and optopt: the
 * long option at fault is read back from argv[optind - 1], which every
 * long-option error has consumed. */
#ifndef DISTENV_OPTERR_H
#define DISTENV_OPTERR_H

#include <getopt.h>

#include "err.h"

/* After getopt_long(argc, argv, ":...", longopts, NULL) returned ret (':'
 * or '?'; the leading ':' is needed: without it a missing short argument
 * reads as an invalid option): fills e (if non-NULL) with GNU getopt's message for that error,
 * without the "PROG: " prefix, and returns -1. ind and opt are optind and
 * optopt as the call left them. One of:
 *   unrecognized option '--foo=1'
 *   option '--p' is ambiguous; possibilities: '--pairs' '--pairs-out'
 *   option '--verbose' doesn't allow an argument
 *   option '--timeout' requires an argument
 *   invalid option -- 'x'
 *   option requires an argument -- 'd'
 * A long option's val must be its short twin in the optstring or not a
 * character (>= 256): an invalid short option's optopt then never equals
 * a long option's val, which is how "--verbose=1" (optopt 'v') is told
 * from "-x" in a cluster (optind not yet past it). */
int de_opterr(struct de_err *e, int argc, char *const argv[], int ind, int opt,
	      const struct option *longopts, int ret);

#endif
