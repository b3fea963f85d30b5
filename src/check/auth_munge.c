/* SPDX-License-Identifier: GPL-2.0-or-later */
/* MUNGE, compiled only with libmunge (auth.c has the stub otherwise). It
 * does for the rendezvous what it does for Slurm itself: it proves the uid
 * of whoever made a credential, and lets rank 0 hand the session key to
 * that uid only. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <munge.h>
#include <sodium.h>

#include "auth_ops.h"

/* Where munged listens: DISTENV_MUNGE_SOCKET, else what Slurm itself
 * uses (AuthInfo=socket=... in slurm.conf), else libmunge's default. */
static void munge_socket(char *out, size_t len)
{
	const char *v = getenv("DISTENV_MUNGE_SOCKET");
	const char *conf = getenv("SLURM_CONF");
	char line[1024];
	FILE *fp;

	out[0] = '\0';
	if (v != NULL && *v) {
		snprintf(out, len, "%s", v);
		return;
	}
	fp = fopen(conf ? conf : "/etc/slurm/slurm.conf", "r");
	if (fp == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *p = strstr(line, "AuthInfo");
		char *s;

		if (p == NULL || line[strspn(line, " \t")] == '#')
			continue;
		s = strstr(p, "socket=");
		if (s != NULL) {
			s += 7;
			s[strcspn(s, ", \t\r\n")] = '\0';
			snprintf(out, len, "%s", s);
		}
	}
	fclose(fp);
}

static munge_ctx_t munge_ctx(void)
{
	munge_ctx_t ctx = munge_ctx_create();
	char sock[512];

	munge_socket(sock, sizeof(sock));
	if (ctx != NULL && sock[0])
		munge_ctx_set(ctx, MUNGE_OPT_SOCKET, sock);
	return ctx;
}

/* Does munged answer? why says why not (and where). */
static int munge_usable(const struct de_auth_given *g, struct de_err *why)
{
	munge_ctx_t ctx = munge_ctx();
	char *cred = NULL, sock[512];
	munge_err_t e = ctx ? munge_encode(&cred, ctx, NULL, 0) : EMUNGE_NO_MEMORY;

	(void)g;
	free(cred);
	if (ctx)
		munge_ctx_destroy(ctx);
	if (e == EMUNGE_SUCCESS)
		return 1;
	munge_socket(sock, sizeof(sock));
	de_errf(why, "MUNGE is not usable (%s%s%s)", munge_strerror(e), sock[0] ? " at " : "", sock);
	return 0;
}

static int munge_hello_make(const struct de_auth *a, const struct de_auth_msg *m, char *auth,
			    size_t len, struct de_fail *f)
{
	munge_ctx_t ctx = munge_ctx();
	char *cred = NULL;
	munge_err_t e = ctx ? munge_encode(&cred, ctx, m->b, (int)m->n) : EMUNGE_NO_MEMORY;

	(void)a;
	if (ctx)
		munge_ctx_destroy(ctx);
	if (e != EMUNGE_SUCCESS || strlen(cred) >= len) {
		free(cred);
		return de_fail_set(f, DE_D_USAGE, "MUNGE: munged gave no credential for the rendezvous: %s "
				   "(DISTENV_MUNGE_SOCKET names its socket; DISTENV_SECRET does without it)",
				   munge_strerror(e));
	}
	snprintf(auth, len, "%s", cred);
	free(cred);
	return 0;
}

static int munge_hello_check(const struct de_auth *a, const struct de_auth_msg *m,
			     const char *auth, struct de_err *why)
{
	munge_ctx_t ctx;
	void *payload = NULL;
	int len = 0, rc = -1;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	munge_err_t e;

	if (auth[0] == '\0')
		return de_errf(why, DE_AUTH_NO_CREDENTIAL);
	ctx = munge_ctx();
	e = ctx ? munge_decode(auth, ctx, &payload, &len, &uid, &gid) : EMUNGE_NO_MEMORY;
	if (ctx)
		munge_ctx_destroy(ctx);
	if (e != EMUNGE_SUCCESS)
		de_errf(why, "MUNGE credential refused: %s", munge_strerror(e));
	else if ((unsigned int)uid != a->uid)
		de_errf(why, "MUNGE credential of uid %u, this job runs as uid %u", (unsigned)uid, a->uid);
	else if ((size_t)len != m->n || memcmp(payload, m->b, m->n) != 0)
		de_errf(why, "MUNGE credential made for another job, rank or challenge");
	else
		rc = 0;
	free(payload);
	return rc;
}

static int munge_peers_make(const struct de_auth *a, struct de_auth_msg *m, uint32_t rank,
			    char *out, size_t out_len, struct de_fail *f)
{
	munge_ctx_t ctx = munge_ctx();
	char *cred = NULL;
	munge_err_t e;

	de_auth_msg_put(m, a->session_key, 32);
	if (ctx == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	/* Only the job's uid can decode it: nobody else learns the key. */
	munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)a->uid);
	e = munge_encode(&cred, ctx, m->b, (int)m->n);
	munge_ctx_destroy(ctx);
	sodium_memzero(m->b, sizeof(m->b));
	if (e != EMUNGE_SUCCESS || strlen(cred) >= out_len) {
		free(cred);
		return de_fail_set(f, DE_D_INTERNAL, "MUNGE credential for rank %u: %s",
				   rank, munge_strerror(e));
	}
	snprintf(out, out_len, "%s", cred);
	free(cred);
	return 0;
}

static int munge_peers_check(struct de_auth *a, struct de_auth_msg *m, const char *auth,
			     struct de_fail *f)
{
	munge_ctx_t ctx = munge_ctx();
	void *payload = NULL;
	int plen = 0;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	munge_err_t e = ctx ? munge_decode(auth, ctx, &payload, &plen, &uid, &gid)
			    : EMUNGE_NO_MEMORY;

	if (ctx)
		munge_ctx_destroy(ctx);
	if (e != EMUNGE_SUCCESS || (unsigned int)uid != a->uid ||
	    (size_t)plen != m->n + 32 || memcmp(payload, m->b, m->n) != 0) {
		if (payload)
			sodium_memzero(payload, (size_t)plen);
		free(payload);
		return de_fail_set(f, DE_D_AUTH, "rank 0's answer is not authentic (%s)",
				   e != EMUNGE_SUCCESS ? munge_strerror(e) :
				   (unsigned int)uid != a->uid ? "made by another uid" :
				   "bound to another table, rank or nonce");
	}
	memcpy(a->session_key, (uint8_t *)payload + m->n, 32);
	sodium_memzero(payload, (size_t)plen);
	free(payload);
	a->have_session = 1;
	return 0;
}

const struct de_auth_ops de_auth_munge_ops = {
	.src = DE_SRC_MUNGE,
	.usable = munge_usable,
	.init = NULL, /* munged holds the credentials */
	.hello_make = munge_hello_make,
	.hello_check = munge_hello_check,
	.peers_make = munge_peers_make,
	.peers_check = munge_peers_check,
};
