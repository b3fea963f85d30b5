/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --node --drain's one link to Slurm (scontrol.c): read this
 * node's record, drain it, resume it, each by running scontrol with a
 * deadline. Deciding what to do is nodecheck.c's, pure. */
#ifndef DISTENV_CHECK_SCONTROL_H
#define DISTENV_CHECK_SCONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "nodecheck.h"

/* The scontrol to run: opt (--scontrol) when given, which must be an
 * executable file; else the first on PATH, else in the usual places (a
 * HealthCheckProgram has no PATH). 0 with its path in out, or -1 with e. */
int de_scontrol_find(const char *opt, char *out, size_t len, struct de_err *e);

/* `scontrol show node -o NODE` into r. 0, or -1 with e. */
int de_scontrol_node(const char *scontrol, const char *node, int64_t deadline,
		     struct de_node_rec *r, struct de_err *e);

/* `scontrol update NodeName=NODE State=DRAIN Reason=REASON`. */
int de_scontrol_drain(const char *scontrol, const char *node, const char *reason,
		      int64_t deadline, struct de_err *e);

/* `scontrol update NodeName=NODE State=RESUME`. */
int de_scontrol_resume(const char *scontrol, const char *node, int64_t deadline,
		       struct de_err *e);

#endif
