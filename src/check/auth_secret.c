/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The two methods whose proofs are HMACs keyed with a secret every rank
 * has: a user's DISTENV_SECRET (or DISTENV_SECRET_FILE) and the step
 * secret the plugin's srun side made (DISTENV_STEP_SECRET). They differ
 * only in where the secret comes from and in the label of its key. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "auth_ops.h"

/* The secret a method proves, for messages (never its value). */
static const char *secret_what(const struct de_auth *a)
{
	return a->ops->src == DE_SRC_STEP_SECRET ? "the step secret (" DE_STEP_SECRET_VAR ")" :
						   "DISTENV_SECRET";
}

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

static void to_hex(const uint8_t *b, size_t n, char *out, size_t out_len)
{
	sodium_bin2hex(out, out_len, b, n);
}

static int from_hex(const char *s, uint8_t *b, size_t n)
{
	size_t got = 0;

	return sodium_hex2bin(b, n, s, strlen(s), NULL, &got, NULL) == 0 && got == n ? 0 : -1;
}

static int user_usable(const struct de_auth_given *g, struct de_err *why)
{
	(void)why;
	return g->secret != NULL && *g->secret;
}

static int user_init(struct de_auth *a, const struct de_auth_given *g, struct de_fail *f)
{
	/* Anyone who can guess the secret joins the job: refuse one short
	 * enough to guess (16 bytes: `openssl rand -hex 16` gives 32). */
	if (strlen(g->secret) < DE_SECRET_MIN)
		return de_fail_set(f, DE_D_USAGE,
				   "%s is %zu bytes long: expected at least %u (e.g. `openssl rand -hex 16`)",
				   g->secret_from_file ? "the secret in DISTENV_SECRET_FILE" : "DISTENV_SECRET",
				   strlen(g->secret), DE_SECRET_MIN);
	secret_key("distenv-secret-v1", g->secret, a->secret_key);
	return 0;
}

static int step_usable(const struct de_auth_given *g, struct de_err *why)
{
	(void)why;
	return g->step != NULL && *g->step;
}

static int step_init(struct de_auth *a, const struct de_auth_given *g, struct de_fail *f)
{
	struct de_err e;

	/* Asked last: g->munge_why says why MUNGE did not do instead. */
	if (de_step_secret_check(g->step, &e))
		return de_fail_set(f, DE_D_USAGE, "%s (%s)", e.msg, g->munge_why);
	secret_key("distenv-step-secret-v1", g->step, a->secret_key);
	return 0;
}

static int keyed_hello_make(const struct de_auth *a, const struct de_auth_msg *m, char *auth,
			    size_t len, struct de_fail *f)
{
	uint8_t mac[32];

	(void)f;
	de_auth_hmac(a->secret_key, m, mac);
	to_hex(mac, sizeof(mac), auth, len);
	return 0;
}

static int keyed_hello_check(const struct de_auth *a, const struct de_auth_msg *m,
			     const char *auth, struct de_err *why)
{
	uint8_t mac[32], got[32];

	if (auth[0] == '\0')
		return de_errf(why, DE_AUTH_NO_CREDENTIAL);
	de_auth_hmac(a->secret_key, m, mac);
	if (from_hex(auth, got, sizeof(got)) || sodium_memcmp(mac, got, 32) != 0)
		return de_errf(why, "wrong proof of %s", secret_what(a));
	return 0;
}

/* The key travels sealed with the secret; the MAC binds it too. */
static int keyed_peers_make(const struct de_auth *a, struct de_auth_msg *m, uint32_t rank,
			    char *out, size_t out_len, struct de_fail *f)
{
	uint8_t box[32 + crypto_secretbox_MACBYTES], nonce[crypto_secretbox_NONCEBYTES];
	uint8_t mac[32];
	char hex[2 * sizeof(box) + 1], nhex[2 * sizeof(nonce) + 1], mhex[65];

	(void)rank;
	(void)f;
	randombytes_buf(nonce, sizeof(nonce));
	crypto_secretbox_easy(box, a->session_key, 32, nonce, a->secret_key);
	de_auth_msg_put(m, nonce, sizeof(nonce));
	de_auth_msg_put(m, box, sizeof(box));
	de_auth_hmac(a->secret_key, m, mac);
	to_hex(nonce, sizeof(nonce), nhex, sizeof(nhex));
	to_hex(box, sizeof(box), hex, sizeof(hex));
	to_hex(mac, sizeof(mac), mhex, sizeof(mhex));
	snprintf(out, out_len, "%s:%s:%s", nhex, hex, mhex);
	return 0;
}

static int keyed_peers_check(struct de_auth *a, struct de_auth_msg *m, const char *auth,
			     struct de_fail *f)
{
	uint8_t box[32 + crypto_secretbox_MACBYTES], nonce[crypto_secretbox_NONCEBYTES];
	uint8_t mac[32], got[32];
	char part[3][200];

	if (sscanf(auth, "%199[0-9a-f]:%199[0-9a-f]:%199[0-9a-f]", part[0], part[1], part[2]) != 3 ||
	    from_hex(part[0], nonce, sizeof(nonce)) || from_hex(part[1], box, sizeof(box)) ||
	    from_hex(part[2], got, sizeof(got)))
		return de_fail_set(f, DE_D_AUTH, "rank 0's answer carries no valid proof of %s (a different secret, or not our rank 0)",
				   secret_what(a));
	de_auth_msg_put(m, nonce, sizeof(nonce));
	de_auth_msg_put(m, box, sizeof(box));
	de_auth_hmac(a->secret_key, m, mac);
	if (sodium_memcmp(mac, got, 32) != 0 ||
	    crypto_secretbox_open_easy(a->session_key, box, sizeof(box), nonce, a->secret_key) != 0)
		return de_fail_set(f, DE_D_AUTH, "rank 0's answer fails the check of %s: a different secret in rank 0, or not our rank 0",
				   secret_what(a));
	a->have_session = 1;
	return 0;
}

const struct de_auth_ops de_auth_user_secret_ops = {
	.src = DE_SRC_USER_SECRET,
	.usable = user_usable,
	.init = user_init,
	.hello_make = keyed_hello_make,
	.hello_check = keyed_hello_check,
	.peers_make = keyed_peers_make,
	.peers_check = keyed_peers_check,
};

const struct de_auth_ops de_auth_step_secret_ops = {
	.src = DE_SRC_STEP_SECRET,
	.usable = step_usable,
	.init = step_init,
	.hello_make = keyed_hello_make,
	.hello_check = keyed_hello_check,
	.peers_make = keyed_peers_make,
	.peers_check = keyed_peers_check,
};
