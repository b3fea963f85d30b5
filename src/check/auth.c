/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Authentication of the rendezvous and the data plane (see auth.h): which
 * method applies, the messages every proof covers, and the data plane's
 * proof of the session key, which is the same whatever the method. The
 * methods themselves are tables (auth_ops.h). Crypto is libsodium's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "auth_ops.h"
#include "parse.h"
#include "secret.h"

/* --------------------------------------------------- none (--insecure) */

static int none_usable(const struct de_auth_given *g, struct de_err *why)
{
	(void)why;
	return g->insecure;
}

static int none_init(struct de_auth *a, const struct de_auth_given *g, struct de_fail *f)
{
	(void)g;
	(void)f;
	if (a->rank == 0)
		de_log("warning", "--insecure: the rendezvous and data ports accept anyone who connects");
	return 0;
}

static int none_hello_make(const struct de_auth *a, const struct de_auth_msg *m, char *auth,
			   size_t len, struct de_fail *f)
{
	(void)a, (void)m, (void)auth, (void)len, (void)f;
	return 0; /* no proof: auth stays empty */
}

static int none_hello_check(const struct de_auth *a, const struct de_auth_msg *m,
			    const char *auth, struct de_err *why)
{
	(void)a, (void)m, (void)auth, (void)why;
	return 0;
}

static int none_peers_make(const struct de_auth *a, struct de_auth_msg *m, uint32_t rank,
			   char *out, size_t out_len, struct de_fail *f)
{
	(void)a, (void)m, (void)rank, (void)out, (void)out_len, (void)f;
	return 0;
}

/* No key travels: every rank agrees on zeros. */
static int none_peers_check(struct de_auth *a, struct de_auth_msg *m, const char *auth,
			    struct de_fail *f)
{
	(void)m, (void)auth, (void)f;
	memset(a->session_key, 0, sizeof(a->session_key));
	a->have_session = 1;
	return 0;
}

static const struct de_auth_ops none_ops = {
	.src = DE_SRC_INSECURE,
	.open = 1,
	.usable = none_usable,
	.init = none_init,
	.hello_make = none_hello_make,
	.hello_check = none_hello_check,
	.peers_make = none_peers_make,
	.peers_check = none_peers_check,
};

#ifdef HAVE_MUNGE
#define MUNGE_OPS (&de_auth_munge_ops)
#else
/* Built without libmunge: never usable, and the refusal says so. */
static int no_munge(const struct de_auth_given *g, struct de_err *why)
{
	(void)g;
	de_errf(why, "built without MUNGE");
	return 0;
}

static const struct de_auth_ops no_munge_ops = { .src = DE_SRC_MUNGE, .usable = no_munge };
#define MUNGE_OPS (&no_munge_ops)
#endif

/* Each source's method; de_auth_methods (secret.c) says in which order
 * they are asked. */
static const struct de_auth_ops *const methods[DE_SRC_COUNT] = {
	[DE_SRC_INSECURE] = &none_ops,
	[DE_SRC_USER_SECRET] = &de_auth_user_secret_ops,
	[DE_SRC_MUNGE] = MUNGE_OPS,
	[DE_SRC_STEP_SECRET] = &de_auth_step_secret_ops,
};

/* ------------------------------------------------------------ messages */

void de_auth_msg_put(struct de_auth_msg *m, const void *p, size_t n)
{
	if (m->n + n <= sizeof(m->b)) {
		memcpy(m->b + m->n, p, n);
		m->n += n;
	}
}

static void m_u32(struct de_auth_msg *m, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	de_auth_msg_put(m, x, 4);
}

static void m_str(struct de_auth_msg *m, const char *s)
{
	size_t n = strlen(s);

	m_u32(m, (uint32_t)n);
	de_auth_msg_put(m, s, n);
}

void de_auth_hmac(const uint8_t key[32], const struct de_auth_msg *m, uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, 32);
	crypto_auth_hmacsha256_update(&st, m->b, m->n);
	crypto_auth_hmacsha256_final(&st, out);
}

static void hello_msg(const struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
		      const struct de_hello *h, struct de_auth_msg *m)
{
	m->n = 0;
	m_str(m, "distenv-hello-v1");
	m_str(m, a->token);
	m_u32(m, h->rank);
	m_u32(m, h->world);
	de_auth_msg_put(m, sn, DE_NONCE_BYTES);
	de_auth_msg_put(m, h->nonce, DE_NONCE_BYTES);
}

static void peers_msg(const struct de_auth *a, const uint8_t *table, size_t len,
		      uint32_t rank, const uint8_t rn[DE_NONCE_BYTES], struct de_auth_msg *m)
{
	uint8_t digest[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(digest, table, len);
	m->n = 0;
	m_str(m, "distenv-peers-v1");
	m_str(m, a->token);
	m_u32(m, rank);
	de_auth_msg_put(m, rn, DE_NONCE_BYTES);
	de_auth_msg_put(m, digest, sizeof(digest));
}

static void data_msg(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		     uint32_t rank, uint8_t purpose, struct de_auth_msg *m)
{
	m->n = 0;
	m_str(m, "distenv-data-v1");
	m_str(m, a->token);
	m_u32(m, rank);
	de_auth_msg_put(m, &purpose, 1);
	de_auth_msg_put(m, ch, DE_NONCE_BYTES);
}

/* ------------------------------------------------------------- choice */

const char *de_auth_name(const struct de_auth *a)
{
	return de_auth_method_of(a->ops != NULL ? a->ops->src : DE_SRC_INSECURE)->name;
}

void de_auth_nonce(uint8_t nonce[DE_NONCE_BYTES])
{
	randombytes_buf(nonce, DE_NONCE_BYTES);
}

/* What de_auth_first asks: does this source's method apply here? */
struct usable_ctx {
	const struct de_auth_given *g;
	struct de_err *munge_why;
};

static int source_usable(enum de_auth_source src, void *ctx)
{
	struct usable_ctx *u = ctx;
	const struct de_auth_ops *m = (unsigned)src < DE_SRC_COUNT ? methods[src] : NULL;

	return m != NULL && m->usable(u->g, u->munge_why);
}

/* DISTENV_SECRET_FILE into buf (len bytes), without its line end. A file
 * others can read is refused: the secret is as good as public. */
static int read_secret_file(const char *file, char *buf, size_t len, struct de_fail *f)
{
	struct stat st;
	FILE *fp = fopen(file, "r");
	size_t n;

	if (fp == NULL)
		return de_fail_set(f, DE_D_USAGE, "DISTENV_SECRET_FILE=%s: %s", file, strerror(errno));
	if (fstat(fileno(fp), &st) == 0 && (st.st_mode & 077)) {
		fclose(fp);
		return de_fail_set(f, DE_D_USAGE, "DISTENV_SECRET_FILE=%s is readable by others (mode %03o): chmod 600 it",
				   file, (unsigned)(st.st_mode & 0777));
	}
	n = fread(buf, 1, len - 1, fp);
	fclose(fp);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	if (n == 0)
		return de_fail_set(f, DE_D_USAGE, "DISTENV_SECRET_FILE=%s is empty", file);
	return 0;
}

int de_auth_init(struct de_auth *a, const char *token, uint32_t rank, int insecure,
		 struct de_fail *f)
{
	const char *secret = getenv("DISTENV_SECRET");
	const char *file = getenv("DISTENV_SECRET_FILE");
	const char *step = getenv(DE_STEP_SECRET_VAR);
	const char *ins = getenv("DISTENV_INSECURE");
	struct de_err why = { "" };
	struct de_auth_given g = { 0, NULL, 0, step, why.msg };
	struct usable_ctx u = { &g, &why };
	enum de_auth_source src;
	char buf[4096];
	int ins_on, rc;
	struct de_err e;

	if (sodium_init() < 0)
		return de_fail_set(f, DE_D_INTERNAL, "libsodium failed to initialise");
	a->token = token;
	a->rank = rank;
	a->uid = (unsigned int)getuid();
	/* parse.c's rule: DISTENV_INSECURE is a flag of the accepted
	 * spellings, and an empty variable is an error, never unset. */
	if (de_env_flag("DISTENV_INSECURE", ins, &ins_on, &e))
		return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
	if (de_env_str("DISTENV_SECRET", secret, "a secret of at least 16 bytes, the same in every rank", &e) ||
	    de_env_str("DISTENV_SECRET_FILE", file, "the path of a file holding the secret", &e) ||
	    de_env_str(DE_STEP_SECRET_VAR, step, "64 hex digits (the distenv plugin sets it in srun)", &e) ||
	    de_env_str("DISTENV_MUNGE_SOCKET", getenv("DISTENV_MUNGE_SOCKET"), "the path of munged's socket", &e))
		return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
	g.insecure = insecure || ins_on;
	if (!g.insecure && (secret == NULL || *secret == '\0') && file != NULL && *file) {
		if (read_secret_file(file, buf, sizeof(buf), f))
			return -1;
		secret = buf;
		g.secret_from_file = 1;
	}
	g.secret = secret;
	/* The order is de_auth_methods' (secret.c): MUNGE is asked only when
	 * nothing before it applies. */
	src = de_auth_first(source_usable, &u);
	if (src == DE_SRC_NONE)
		/* why: MUNGE's reason, or "built without MUNGE". */
		return de_fail_set(f, DE_D_USAGE,
				   "no authentication: %s, DISTENV_SECRET is not set and there is no " DE_STEP_SECRET_VAR
				   " (the distenv plugin gives every srun step one): "
				   "set DISTENV_SECRET (or DISTENV_SECRET_FILE) to the same value in every rank, "
				   "or pass --insecure to run unauthenticated", why.msg);
	a->ops = methods[src];
	rc = a->ops->init != NULL ? a->ops->init(a, &g, f) : 0;
	if (g.secret_from_file)
		sodium_memzero(buf, sizeof(buf));
	return rc;
}

/* ------------------------------------------------------- the rendezvous */

int de_auth_hello_make(struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
		       struct de_hello *h, struct de_fail *f)
{
	struct de_auth_msg m;

	de_auth_nonce(h->nonce);
	hello_msg(a, sn, h, &m);
	h->auth[0] = '\0';
	return a->ops->hello_make(a, &m, h->auth, sizeof(h->auth), f);
}

int de_auth_hello_check(struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
			const struct de_hello *h, struct de_err *why)
{
	struct de_auth_msg m;

	hello_msg(a, sn, h, &m);
	return a->ops->hello_check(a, &m, h->auth, why);
}

int de_auth_session_new(struct de_auth *a, struct de_fail *f)
{
	(void)f;
	randombytes_buf(a->session_key, sizeof(a->session_key));
	a->have_session = 1;
	return 0;
}

int de_auth_peers_make(struct de_auth *a, const uint8_t *table, size_t len,
		       uint32_t rank, const uint8_t rn[DE_NONCE_BYTES],
		       char *out, size_t out_len, struct de_fail *f)
{
	struct de_auth_msg m;

	peers_msg(a, table, len, rank, rn, &m);
	out[0] = '\0';
	return a->ops->peers_make(a, &m, rank, out, out_len, f);
}

int de_auth_peers_check(struct de_auth *a, const uint8_t *table, size_t len,
			const uint8_t rn[DE_NONCE_BYTES], const char *auth,
			struct de_fail *f)
{
	struct de_auth_msg m;

	peers_msg(a, table, len, a->rank, rn, &m);
	return a->ops->peers_check(a, &m, auth, f);
}

/* ------------------------------------------------------ the data plane */

void de_auth_data_mac(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		      uint32_t rank, uint8_t purpose, uint8_t mac[DE_MAC_BYTES])
{
	struct de_auth_msg m;

	data_msg(a, ch, rank, purpose, &m);
	de_auth_hmac(a->session_key, &m, mac);
}

int de_auth_data_check(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		       uint32_t rank, uint8_t purpose, const uint8_t mac[DE_MAC_BYTES])
{
	uint8_t want[DE_MAC_BYTES];

	if (!a->have_session)
		return -1;
	if (a->ops->open)
		return 0;
	de_auth_data_mac(a, ch, rank, purpose, want);
	return sodium_memcmp(want, mac, DE_MAC_BYTES) == 0 ? 0 : -1;
}
