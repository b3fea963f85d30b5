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

enum de_auth_source de_auth_pick(int insecure, int user_secret, int munge_ok,
				 int step_secret)
{
	if (insecure)
		return DE_SRC_INSECURE;
	if (user_secret)
		return DE_SRC_USER_SECRET;
	if (munge_ok)
		return DE_SRC_MUNGE;
	if (step_secret)
		return DE_SRC_STEP_SECRET;
	return DE_SRC_NONE;
}
