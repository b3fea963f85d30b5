/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "secret.h"

static ssize_t os_random(void *buf, size_t len, unsigned int flags)
{
	return getrandom(buf, len, flags);
}

int de_random_fill(de_random_fn rnd, uint8_t *b, size_t n, struct de_err *err)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = rnd(b + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;

			memset(b, 0, n);
			return de_errf(err, "getrandom: %s: no step secret made (a weaker one would let others join the job)",
				       strerror(e));
		}
		got += (size_t)r;
	}
	return 0;
}

int de_step_secret_new(de_random_fn rnd, char out[DE_STEP_SECRET_LEN + 1],
		       struct de_err *err)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[DE_STEP_SECRET_BYTES];
	size_t i;

	out[0] = '\0';
	if (de_random_fill(rnd ? rnd : os_random, b, sizeof(b), err))
		return -1;
	for (i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * sizeof(b)] = '\0';
	explicit_bzero(b, sizeof(b));
	return 0;
}

int de_step_secret_check(const char *s, struct de_err *err)
{
	size_t n = strlen(s), bad = strspn(s, "0123456789abcdef");

	if (n != DE_STEP_SECRET_LEN)
		return de_errf(err, DE_STEP_SECRET_VAR " is %zu characters long: expected %u hex digits, as the distenv plugin makes it",
			       n, DE_STEP_SECRET_LEN);
	if (bad != n)
		return de_errf(err, DE_STEP_SECRET_VAR " has a character other than 0-9a-f at offset %zu: expected %u hex digits, as the distenv plugin makes it",
			       bad, DE_STEP_SECRET_LEN);
	return 0;
}

const struct de_auth_method de_auth_methods[DE_AUTH_NMETHODS] = {
	{ DE_SRC_INSECURE, "none (--insecure)", "--insecure, or DISTENV_INSECURE=1",
	  "nobody is checked: anyone may join (rank 0 warns)" },
	{ DE_SRC_USER_SECRET, "shared secret", "DISTENV_SECRET or DISTENV_SECRET_FILE",
	  "knowledge of the secret: 16 bytes or more, the same in every rank" },
	{ DE_SRC_MUNGE, "munge", "munged answers (DISTENV_MUNGE_SOCKET, else slurm.conf's AuthInfo)",
	  "every rank's uid, for this job, step and rank" },
	{ DE_SRC_STEP_SECRET, "step secret", DE_STEP_SECRET_VAR " (the plugin sets it in every srun step)",
	  "knowledge of this step's secret: being one of its tasks" },
};

const struct de_auth_method *de_auth_method_of(enum de_auth_source src)
{
	size_t i;

	for (i = 0; i < DE_AUTH_NMETHODS; i++)
		if (de_auth_methods[i].src == src)
			return &de_auth_methods[i];
	return NULL;
}

enum de_auth_source de_auth_first(int (*usable)(enum de_auth_source src, void *ctx), void *ctx)
{
	size_t i;

	for (i = 0; i < DE_AUTH_NMETHODS; i++)
		if (usable(de_auth_methods[i].src, ctx))
			return de_auth_methods[i].src;
	return DE_SRC_NONE;
}

static int given(enum de_auth_source src, void *ctx)
{
	return ((const int *)ctx)[src];
}

enum de_auth_source de_auth_pick(int insecure, int user_secret, int munge_ok,
				 int step_secret)
{
	int usable[DE_SRC_COUNT] = { 0 };

	usable[DE_SRC_INSECURE] = insecure;
	usable[DE_SRC_USER_SECRET] = user_secret;
	usable[DE_SRC_MUNGE] = munge_ok;
	usable[DE_SRC_STEP_SECRET] = step_secret;
	return de_auth_first(given, usable);
}
