/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Authentication of the rendezvous and the data plane (see auth.h).
 * Crypto is libsodium's; MUNGE does what it does for Slurm itself: it
 * proves the uid of whoever made a credential, and lets rank 0 hand the
 * session key to that uid only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#ifdef HAVE_MUNGE
#include <munge.h>
#endif

#include "auth.h"
#include "parse.h"
#include "secret.h"

/* The modes whose proofs are HMACs keyed with a secret every rank has. */
#define KEYED(a) ((a)->mode == DE_AUTH_SECRET || (a)->mode == DE_AUTH_STEP)

/* The secret a keyed mode proves, for messages (never its value). */
static const char *secret_what(const struct de_auth *a)
{
	return a->mode == DE_AUTH_STEP ? "the step secret (" DE_STEP_SECRET_VAR ")" : "DISTENV_SECRET";
}

const char *de_auth_name(const struct de_auth *a)
{
	enum de_auth_source src = a->mode == DE_AUTH_MUNGE ? DE_SRC_MUNGE :
				  a->mode == DE_AUTH_SECRET ? DE_SRC_USER_SECRET :
				  a->mode == DE_AUTH_STEP ? DE_SRC_STEP_SECRET : DE_SRC_INSECURE;

	return de_auth_method_of(src)->name;
}

void de_auth_nonce(uint8_t nonce[DE_NONCE_BYTES])
{
	randombytes_buf(nonce, DE_NONCE_BYTES);
}

/* The message every proof covers, built the same way on both sides. */
struct msg {
	uint8_t b[DE_PROTO_MAX_TOKEN + 512];
	size_t n;
};

static void m_put(struct msg *m, const void *p, size_t n)
{
	if (m->n + n <= sizeof(m->b)) {
		memcpy(m->b + m->n, p, n);
		m->n += n;
	}
}

static void m_u32(struct msg *m, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	m_put(m, x, 4);
}

static void m_str(struct msg *m, const char *s)
{
	size_t n = strlen(s);

	m_u32(m, (uint32_t)n);
	m_put(m, s, n);
}

static void hmac(const uint8_t key[32], const struct msg *m, uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, 32);
	crypto_auth_hmacsha256_update(&st, m->b, m->n);
	crypto_auth_hmacsha256_final(&st, out);
}

static void to_hex(const uint8_t *b, size_t n, char *out, size_t out_len)
{
	sodium_bin2hex(out, out_len, b, n);
}

static int from_hex(const char *s, uint8_t *b, size_t n)
{
	size_t got = 0;

	return sodium_hex2bin(b, n, s, strlen(s), NULL, &got, NULL) == 0 && got == n ? 0 : -1;
}

static void hello_msg(const struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
		      const struct de_hello *h, struct msg *m)
{
	m->n = 0;
	m_str(m, "distenv-hello-v1");
	m_str(m, a->token);
	m_u32(m, h->rank);
	m_u32(m, h->world);
	m_put(m, sn, DE_NONCE_BYTES);
	m_put(m, h->nonce, DE_NONCE_BYTES);
}

static void peers_msg(const struct de_auth *a, const uint8_t *table, size_t len,
		      uint32_t rank, const uint8_t rn[DE_NONCE_BYTES], struct msg *m)
{
	uint8_t digest[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(digest, table, len);
	m->n = 0;
	m_str(m, "distenv-peers-v1");
	m_str(m, a->token);
	m_u32(m, rank);
	m_put(m, rn, DE_NONCE_BYTES);
	m_put(m, digest, sizeof(digest));
}

#ifdef HAVE_MUNGE
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
#endif

#ifdef HAVE_MUNGE
/* Does munged answer? 0 yes; else -1 with why (and where) in why. */
static int munge_usable(struct de_err *why)
{
	munge_ctx_t ctx = munge_ctx();
	char *cred = NULL, sock[512];
	munge_err_t e = ctx ? munge_encode(&cred, ctx, NULL, 0) : EMUNGE_NO_MEMORY;

	free(cred);
	if (ctx)
		munge_ctx_destroy(ctx);
	if (e == EMUNGE_SUCCESS)
		return 0;
	munge_socket(sock, sizeof(sock));
	return de_errf(why, "MUNGE is not usable (%s%s%s)", munge_strerror(e),
		       sock[0] ? " at " : "", sock);
}
#endif

/* The HMAC key every proof of a secret uses: SHA-256 over a label (the
 * two kinds of secret never make the same key) and the secret. */
static void secret_key(const char *label, const char *secret, uint8_t key[32])
{
	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_hash_sha256_update(&st, (const uint8_t *)secret, strlen(secret));
	crypto_hash_sha256_final(&st, key);
}

/* What de_auth_first asks: does this source apply here? */
struct usable_ctx {
	int insecure, has_user, has_step;
	struct de_err *munge_why; /* why MUNGE is not usable, once asked */
};

static int source_usable(enum de_auth_source src, void *ctx)
{
	struct usable_ctx *u = ctx;

	switch (src) {
	case DE_SRC_INSECURE:
		return u->insecure;
	case DE_SRC_USER_SECRET:
		return u->has_user;
	case DE_SRC_MUNGE:
#ifdef HAVE_MUNGE
		return munge_usable(u->munge_why) == 0;
#else
		return 0;
#endif
	case DE_SRC_STEP_SECRET:
		return u->has_step;
	default:
		return 0;
	}
}

int de_auth_init(struct de_auth *a, const char *token, uint32_t rank, int insecure,
		 struct de_fail *f)
{
	const char *secret = getenv("DISTENV_SECRET");
	const char *file = getenv("DISTENV_SECRET_FILE");
	const char *step = getenv(DE_STEP_SECRET_VAR);
	const char *ins = getenv("DISTENV_INSECURE");
	struct de_err why = { "built without MUNGE" };
	char buf[4096];
	int ins_on;
	struct usable_ctx u = { 0, 0, 0, &why };
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
	insecure = insecure || ins_on;
	if (!insecure && (secret == NULL || *secret == '\0') && file != NULL && *file) {
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
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		buf[n] = '\0';
		if (n == 0)
			return de_fail_set(f, DE_D_USAGE, "DISTENV_SECRET_FILE=%s is empty", file);
		secret = buf;
	}
	u.insecure = insecure;
	u.has_user = secret != NULL && *secret;
	u.has_step = step != NULL && *step;
	/* The order is de_auth_methods' (secret.c): MUNGE is asked only when
	 * nothing before it applies. */
	switch (de_auth_first(source_usable, &u)) {
	case DE_SRC_INSECURE:
		a->mode = DE_AUTH_NONE;
		if (a->rank == 0)
			de_log("warning", "--insecure: the rendezvous and data ports accept anyone who connects");
		return 0;
	case DE_SRC_USER_SECRET:
		/* Anyone who can guess the secret joins the job: refuse one
		 * short enough to guess (16 bytes: `openssl rand -hex 16` gives 32). */
		if (strlen(secret) < DE_SECRET_MIN) {
			sodium_memzero(buf, sizeof(buf));
			return de_fail_set(f, DE_D_USAGE,
					   "%s is %zu bytes long: expected at least %u (e.g. `openssl rand -hex 16`)",
					   secret == buf ? "the secret in DISTENV_SECRET_FILE" : "DISTENV_SECRET",
					   strlen(secret), DE_SECRET_MIN);
		}
		secret_key("distenv-secret-v1", secret, a->secret_key);
		sodium_memzero(buf, sizeof(buf));
		a->mode = DE_AUTH_SECRET;
		return 0;
	case DE_SRC_MUNGE:
		a->mode = DE_AUTH_MUNGE;
		return 0;
	case DE_SRC_STEP_SECRET:
		if (de_step_secret_check(step, &e))
			return de_fail_set(f, DE_D_USAGE, "%s (%s)", e.msg, why.msg);
		secret_key("distenv-step-secret-v1", step, a->secret_key);
		a->mode = DE_AUTH_STEP;
		return 0;
	default:
		break;
	}
	/* why: MUNGE's reason, or "built without MUNGE". */
	return de_fail_set(f, DE_D_USAGE,
			   "no authentication: %s, DISTENV_SECRET is not set and there is no " DE_STEP_SECRET_VAR
			   " (the distenv plugin gives every srun step one): "
			   "set DISTENV_SECRET (or DISTENV_SECRET_FILE) to the same value in every rank, "
			   "or pass --insecure to run unauthenticated", why.msg);
}

int de_auth_hello_make(struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
		       struct de_hello *h, struct de_fail *f)
{
	struct msg m;
	uint8_t mac[32];

	de_auth_nonce(h->nonce);
	hello_msg(a, sn, h, &m);
	h->auth[0] = '\0';
	if (KEYED(a)) {
		hmac(a->secret_key, &m, mac);
		to_hex(mac, sizeof(mac), h->auth, sizeof(h->auth));
	}
#ifdef HAVE_MUNGE
	if (a->mode == DE_AUTH_MUNGE) {
		munge_ctx_t ctx = munge_ctx();
		char *cred = NULL;
		munge_err_t e = ctx ? munge_encode(&cred, ctx, m.b, (int)m.n) : EMUNGE_NO_MEMORY;

		if (ctx)
			munge_ctx_destroy(ctx);
		if (e != EMUNGE_SUCCESS || strlen(cred) > DE_PROTO_MAX_AUTH) {
			free(cred);
			return de_fail_set(f, DE_D_USAGE, "MUNGE: munged gave no credential for the rendezvous: %s "
					   "(DISTENV_MUNGE_SOCKET names its socket; DISTENV_SECRET does without it)",
					   munge_strerror(e));
		}
		snprintf(h->auth, sizeof(h->auth), "%s", cred);
		free(cred);
	}
#endif
	(void)f;
	return 0;
}

int de_auth_hello_check(struct de_auth *a, const uint8_t sn[DE_NONCE_BYTES],
			const struct de_hello *h, struct de_err *why)
{
	struct msg m;
	uint8_t mac[32], got[32];

	hello_msg(a, sn, h, &m);
	if (a->mode == DE_AUTH_NONE)
		return 0;
	if (h->auth[0] == '\0')
		return de_errf(why, "no credential (distenv-check --insecure, or not distenv?)");
	if (KEYED(a)) {
		hmac(a->secret_key, &m, mac);
		if (from_hex(h->auth, got, sizeof(got)) || sodium_memcmp(mac, got, 32) != 0)
			return de_errf(why, "wrong proof of %s", secret_what(a));
		return 0;
	}
#ifdef HAVE_MUNGE
	{
		munge_ctx_t ctx = munge_ctx();
		void *payload = NULL;
		int len = 0;
		uid_t uid = (uid_t)-1;
		gid_t gid;
		munge_err_t e = ctx ? munge_decode(h->auth, ctx, &payload, &len, &uid, &gid)
				    : EMUNGE_NO_MEMORY;

		if (ctx)
			munge_ctx_destroy(ctx);
		if (e != EMUNGE_SUCCESS) {
			de_errf(why, "MUNGE credential refused: %s", munge_strerror(e));
			free(payload);
			return -1;
		}
		if ((unsigned int)uid != a->uid) {
			de_errf(why, "MUNGE credential of uid %u, this job runs as uid %u",
				 (unsigned)uid, a->uid);
			free(payload);
			return -1;
		}
		if ((size_t)len != m.n || memcmp(payload, m.b, m.n) != 0) {
			de_errf(why, "MUNGE credential made for another job, rank or challenge");
			free(payload);
			return -1;
		}
		free(payload);
		return 0;
	}
#else
	return de_errf(why, "built without MUNGE");
#endif
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
	struct msg m;

	peers_msg(a, table, len, rank, rn, &m);
	out[0] = '\0';
	if (a->mode == DE_AUTH_NONE)
		return 0;
	if (KEYED(a)) {
		/* The key travels sealed with the secret; the MAC binds it too. */
		uint8_t box[32 + crypto_secretbox_MACBYTES], nonce[crypto_secretbox_NONCEBYTES];
		uint8_t mac[32];
		char hex[2 * sizeof(box) + 1], nhex[2 * sizeof(nonce) + 1], mhex[65];

		randombytes_buf(nonce, sizeof(nonce));
		crypto_secretbox_easy(box, a->session_key, 32, nonce, a->secret_key);
		m_put(&m, nonce, sizeof(nonce));
		m_put(&m, box, sizeof(box));
		hmac(a->secret_key, &m, mac);
		to_hex(nonce, sizeof(nonce), nhex, sizeof(nhex));
		to_hex(box, sizeof(box), hex, sizeof(hex));
		to_hex(mac, sizeof(mac), mhex, sizeof(mhex));
		snprintf(out, out_len, "%s:%s:%s", nhex, hex, mhex);
		return 0;
	}
#ifdef HAVE_MUNGE
	{
		munge_ctx_t ctx = munge_ctx();
		char *cred = NULL;
		munge_err_t e;

		m_put(&m, a->session_key, 32);
		if (ctx == NULL)
			return de_fail_set(f, DE_D_INTERNAL, "out of memory");
		/* Only the job's uid can decode it: nobody else learns the key. */
		munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)a->uid);
		e = munge_encode(&cred, ctx, m.b, (int)m.n);
		munge_ctx_destroy(ctx);
		sodium_memzero(m.b, sizeof(m.b));
		if (e != EMUNGE_SUCCESS || strlen(cred) >= out_len) {
			free(cred);
			return de_fail_set(f, DE_D_INTERNAL, "MUNGE credential for rank %u: %s",
					   rank, munge_strerror(e));
		}
		snprintf(out, out_len, "%s", cred);
		free(cred);
		return 0;
	}
#else
	return de_fail_set(f, DE_D_INTERNAL, "built without MUNGE");
#endif
}

int de_auth_peers_check(struct de_auth *a, const uint8_t *table, size_t len,
			const uint8_t rn[DE_NONCE_BYTES], const char *auth,
			struct de_fail *f)
{
	struct msg m;

	peers_msg(a, table, len, a->rank, rn, &m);
	if (a->mode == DE_AUTH_NONE) {
		memset(a->session_key, 0, sizeof(a->session_key));
		a->have_session = 1;
		return 0;
	}
	if (KEYED(a)) {
		uint8_t box[32 + crypto_secretbox_MACBYTES], nonce[crypto_secretbox_NONCEBYTES];
		uint8_t mac[32], got[32];
		char part[3][200];

		if (sscanf(auth, "%199[0-9a-f]:%199[0-9a-f]:%199[0-9a-f]", part[0], part[1], part[2]) != 3 ||
		    from_hex(part[0], nonce, sizeof(nonce)) || from_hex(part[1], box, sizeof(box)) ||
		    from_hex(part[2], got, sizeof(got)))
			return de_fail_set(f, DE_D_AUTH, "rank 0's answer carries no valid proof of %s (a different secret, or not our rank 0)",
					   secret_what(a));
		m_put(&m, nonce, sizeof(nonce));
		m_put(&m, box, sizeof(box));
		hmac(a->secret_key, &m, mac);
		if (sodium_memcmp(mac, got, 32) != 0 ||
		    crypto_secretbox_open_easy(a->session_key, box, sizeof(box), nonce, a->secret_key) != 0)
			return de_fail_set(f, DE_D_AUTH, "rank 0's answer fails the check of %s: a different secret in rank 0, or not our rank 0",
					   secret_what(a));
		a->have_session = 1;
		return 0;
	}
#ifdef HAVE_MUNGE
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
		    (size_t)plen != m.n + 32 || memcmp(payload, m.b, m.n) != 0) {
			if (payload)
				sodium_memzero(payload, (size_t)plen);
			free(payload);
			return de_fail_set(f, DE_D_AUTH, "rank 0's answer is not authentic (%s)",
					   e != EMUNGE_SUCCESS ? munge_strerror(e) :
					   (unsigned int)uid != a->uid ? "made by another uid" :
					   "bound to another table, rank or nonce");
		}
		memcpy(a->session_key, (uint8_t *)payload + m.n, 32);
		sodium_memzero(payload, (size_t)plen);
		free(payload);
		a->have_session = 1;
		return 0;
	}
#else
	(void)auth;
	return de_fail_set(f, DE_D_INTERNAL, "built without MUNGE");
#endif
}

static void data_msg(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		     uint32_t rank, uint8_t purpose, struct msg *m)
{
	m->n = 0;
	m_str(m, "distenv-data-v1");
	m_str(m, a->token);
	m_u32(m, rank);
	m_put(m, &purpose, 1);
	m_put(m, ch, DE_NONCE_BYTES);
}

void de_auth_data_mac(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		      uint32_t rank, uint8_t purpose, uint8_t mac[DE_MAC_BYTES])
{
	struct msg m;

	data_msg(a, ch, rank, purpose, &m);
	hmac(a->session_key, &m, mac);
}

int de_auth_data_check(const struct de_auth *a, const uint8_t ch[DE_NONCE_BYTES],
		       uint32_t rank, uint8_t purpose, const uint8_t mac[DE_MAC_BYTES])
{
	uint8_t want[DE_MAC_BYTES];

	if (!a->have_session)
		return -1;
	if (a->mode == DE_AUTH_NONE)
		return 0;
	de_auth_data_mac(a, ch, rank, purpose, want);
	return sodium_memcmp(want, mac, DE_MAC_BYTES) == 0 ? 0 : -1;
}
