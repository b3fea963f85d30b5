/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who may join a job's rendezvous and data plane: --insecure (nobody is
 * checked); else a user's shared secret (DISTENV_SECRET); else MUNGE (the
 * cluster's own authentication) where munged runs; else the step's secret
 * that the plugin's srun side made (DISTENV_STEP_SECRET: clusters on
 * auth/slurm, no munged); else distenv-check refuses to run. The order is
 * one table, de_auth_methods (secret.h), that --help prints too. */
#ifndef DISTENV_AUTH_H
#define DISTENV_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "fail.h"
#include "proto.h"

/* Shortest DISTENV_SECRET accepted, in bytes. */
#define DE_SECRET_MIN 16u

struct de_auth_ops; /* auth_ops.h: one table per method */

/* One rank's credentials, and the job identity every proof binds. */
struct de_auth {
	const struct de_auth_ops *ops; /* the method, chosen once by de_auth_init */
	const char *token;      /* the launch's token (struct de_ident's) */
	uint32_t rank;
	unsigned int uid;
	uint8_t secret_key[32]; /* from DISTENV_SECRET or DISTENV_STEP_SECRET */
	uint8_t session_key[32];
	int have_session;
};

/* Picks the mode: the first of de_auth_methods that applies. */
int de_auth_init(struct de_auth *a, const char *token, uint32_t rank, int insecure,
		 struct de_fail *f);
const char *de_auth_name(const struct de_auth *a);

void de_auth_nonce(uint8_t nonce[DE_NONCE_BYTES]);

/* A rank's proof in its HELLO, over the job token, its rank and world,
 * rank 0's challenge and its own nonce. */
int de_auth_hello_make(struct de_auth *a, const uint8_t server_nonce[DE_NONCE_BYTES],
		       struct de_hello *h, struct de_fail *f);
/* Rank 0: 0 if h proves it is this job's rank h->rank, else -1 with why. */
int de_auth_hello_check(struct de_auth *a, const uint8_t server_nonce[DE_NONCE_BYTES],
			const struct de_hello *h, struct de_err *why);

/* Rank 0: a fresh session key (kept in a), then per rank the proof that
 * binds the peer table (its encoding without auth) to that rank's nonce
 * and hands it the key. */
int de_auth_session_new(struct de_auth *a, struct de_fail *f);
int de_auth_peers_make(struct de_auth *a, const uint8_t *table, size_t table_len,
		       uint32_t rank, const uint8_t rank_nonce[DE_NONCE_BYTES],
		       char *out, size_t out_len, struct de_fail *f);
/* A rank: checks rank 0's proof and takes the session key. */
int de_auth_peers_check(struct de_auth *a, const uint8_t *table, size_t table_len,
			const uint8_t my_nonce[DE_NONCE_BYTES], const char *auth,
			struct de_fail *f);

/* Data plane: the caller proves the session key over the acceptor's
 * challenge; the acceptor checks in constant time. */
void de_auth_data_mac(const struct de_auth *a, const uint8_t challenge[DE_NONCE_BYTES],
		      uint32_t rank, uint8_t purpose, uint8_t mac[DE_MAC_BYTES]);
int de_auth_data_check(const struct de_auth *a, const uint8_t challenge[DE_NONCE_BYTES],
		       uint32_t rank, uint8_t purpose, const uint8_t mac[DE_MAC_BYTES]);

#endif
