/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-step secret, for clusters without MUNGE (Slurm's auth/slurm):
 * the srun side of the plugin makes a fresh one for every step and hands
 * it to the step's tasks in DE_STEP_SECRET_VAR; distenv-check proves that
 * it knows it when neither a user's DISTENV_SECRET nor MUNGE is at hand.
 * Pure but for de_step_secret_new's getrandom(2); the random source is a
 * parameter so that its failures can be tested. */
#ifndef DISTENV_SECRET_H
#define DISTENV_SECRET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define DE_STEP_SECRET_VAR "DISTENV_STEP_SECRET"
#define DE_STEP_SECRET_BYTES 32u                      /* 256 random bits */
#define DE_STEP_SECRET_LEN (2u * DE_STEP_SECRET_BYTES) /* as lower-case hex */

/* getrandom(2)'s shape: bytes written, or -1 with errno. */
typedef ssize_t (*de_random_fn)(void *buf, size_t len, unsigned int flags);

/* Fills b with n bytes from rnd, through short reads and EINTR. Any other
 * failure (no getrandom, no entropy yet...) is an error: never a weaker
 * secret. */
int de_random_fill(de_random_fn rnd, uint8_t *b, size_t n, struct de_err *err);

/* A fresh step secret from rnd (getrandom(2) when NULL), as
 * DE_STEP_SECRET_LEN hex characters and a NUL. */
int de_step_secret_new(de_random_fn rnd, char out[DE_STEP_SECRET_LEN + 1],
		       struct de_err *err);

/* 0 when s has a step secret's shape (DE_STEP_SECRET_LEN lower-case hex
 * characters); else -1, err naming what is wrong but never quoting s. */
int de_step_secret_check(const char *s, struct de_err *err);

/* Where distenv-check's credentials come from. */
enum de_auth_source {
	DE_SRC_NONE,        /* nothing usable: refuse to run */
	DE_SRC_INSECURE,    /* --insecure: nobody is checked */
	DE_SRC_USER_SECRET, /* DISTENV_SECRET / DISTENV_SECRET_FILE */
	DE_SRC_MUNGE,       /* munged answers: proves every rank's uid */
	DE_SRC_STEP_SECRET, /* the plugin's DISTENV_STEP_SECRET */
	DE_SRC_COUNT
};

/* One way to authenticate, as distenv-check's selection, its --help and
 * its PASS line ("authentication: NAME") know it. */
struct de_auth_method {
	enum de_auth_source src;
	const char *name; /* the PASS line's word for it */
	const char *when; /* what selects it: the options and variables */
	const char *what; /* what it proves, one line */
};

/* THE order, the first that applies wins: --insecure, a user's secret
 * (the user chose it), MUNGE (it proves the uid, not only knowledge), the
 * step secret. The man page's AUTHENTICATION and docs/security.md list
 * the same (tests/cli/test-check-auth-order.sh). */
extern const struct de_auth_method de_auth_methods[];
#define DE_AUTH_NMETHODS 4u

/* The method of src, or NULL (DE_SRC_NONE). */
const struct de_auth_method *de_auth_method_of(enum de_auth_source src);

/* The first method of de_auth_methods for which usable(src, ctx) is
 * true, asking in that order and no further (MUNGE is asked only when
 * nothing before it applies); DE_SRC_NONE when none is. */
enum de_auth_source de_auth_first(int (*usable)(enum de_auth_source src, void *ctx), void *ctx);

/* de_auth_first with each source's answer given. */
enum de_auth_source de_auth_pick(int insecure, int user_secret, int munge_ok,
				 int step_secret);

#endif
