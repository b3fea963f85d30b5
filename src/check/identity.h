/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who this rank is, from the environment (identity.c): c->id, before it
 * talks to anyone. */
#ifndef DISTENV_CHECK_IDENTITY_H
#define DISTENV_CHECK_IDENTITY_H

#include "check.h"

/* The torchrun environment into c->id, derived from SLURM_* where it is
 * missing (setenv, as the plugin would have); -1 with f, a diagnosis of
 * the environment. */
int de_read_env(struct de_check *c, struct de_fail *f);
/* Rank 0: c->id.expect_host from Slurm's block layout, where it can be
 * known; left NULL otherwise. */
void de_expect_hosts(struct de_check *c);
/* A string variable of distenv's or torchrun's: *out NULL when unset, an
 * error (DE_D_ENV_VALUE) when set but empty. */
int de_getenv_str(const char *name, const char *expected, const char **out,
		  struct de_fail *f);

#endif
