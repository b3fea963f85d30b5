/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The authentication methods behind auth.h, one table each: auth.c
 * picks one in de_auth_init (de_auth_methods' order, secret.h) and calls
 * only through it. auth.c builds the messages every proof covers; a method
 * proves them its own way. The tables: none (--insecure) in auth.c, the
 * two secrets in auth_secret.c, MUNGE in auth_munge.c (a stub in auth.c
 * when built without libmunge). */
#ifndef DISTENV_AUTH_OPS_H
#define DISTENV_AUTH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "secret.h"

/* The message a proof covers, built the same way on both sides. */
struct de_auth_msg {
	uint8_t b[DE_PROTO_MAX_TOKEN + 512];
	size_t n;
};

/* Appends n bytes (never past the end: the messages are far smaller). */
void de_auth_msg_put(struct de_auth_msg *m, const void *p, size_t n);
/* HMAC-SHA-256 of m under key. */
void de_auth_hmac(const uint8_t key[32], const struct de_auth_msg *m, uint8_t out[32]);

/* What de_auth_init read from the environment, for a method to judge
 * whether it applies and to take its credentials. */
struct de_auth_given {
	int insecure;         /* --insecure or DISTENV_INSECURE */
	const char *secret;   /* DISTENV_SECRET, or DISTENV_SECRET_FILE's content */
	int secret_from_file;
	const char *step;     /* DISTENV_STEP_SECRET */
	const char *munge_why; /* why MUNGE is not usable (it is asked before the step secret) */
};

/* Rank 0's answer to a HELLO without a proof, in every method that checks. */
#define DE_AUTH_NO_CREDENTIAL "no credential (distenv-check --insecure, or not distenv?)"

struct de_auth_ops {
	enum de_auth_source src; /* its name and place in de_auth_methods */
	int open;                /* nobody is checked: the data plane takes any proof */
	/* Does it apply here? 1 or 0; why says why not where that helps
	 * (MUNGE: what munged answered). */
	int (*usable)(const struct de_auth_given *g, struct de_err *why);
	/* Once chosen: take the credentials. */
	int (*init)(struct de_auth *a, const struct de_auth_given *g, struct de_fail *f);
	/* A rank's HELLO: the proof over m into auth (len bytes). */
	int (*hello_make)(const struct de_auth *a, const struct de_auth_msg *m, char *auth,
			  size_t len, struct de_fail *f);
	/* Rank 0: is auth the proof over m? 0, or -1 with why. */
	int (*hello_check)(const struct de_auth *a, const struct de_auth_msg *m, const char *auth,
			   struct de_err *why);
	/* Rank 0: hands rank the session key, bound to m (m may grow). */
	int (*peers_make)(const struct de_auth *a, struct de_auth_msg *m, uint32_t rank, char *out,
			  size_t out_len, struct de_fail *f);
	/* A rank: checks rank 0's answer against m, takes the session key. */
	int (*peers_check)(struct de_auth *a, struct de_auth_msg *m, const char *auth,
			   struct de_fail *f);
};

extern const struct de_auth_ops de_auth_user_secret_ops; /* auth_secret.c */
extern const struct de_auth_ops de_auth_step_secret_ops; /* auth_secret.c */
extern const struct de_auth_ops de_auth_munge_ops;       /* auth_munge.c, with libmunge */

#endif
