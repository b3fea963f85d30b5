/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's command line (options.c): read and checked first, so a
 * bad option stops the run before it reads the environment or the
 * network. */
#ifndef DISTENV_CHECK_OPTIONS_H
#define DISTENV_CHECK_OPTIONS_H

#include <stddef.h>

#include "check.h"
#include "err.h"

/* Fills c->o, the defaults first, and *count, the check's allreduce
 * size. --help and --version print and exit 0. 0, or -1 with err: a
 * usage error. */
int de_parse_opts(struct de_check *c, int argc, char **argv,
		  size_t *count, struct de_err *err);

#endif
