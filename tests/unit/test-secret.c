/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "secret.h"
#include "tap.h"

/* Random sources that misbehave the ways getrandom(2) may. */
static int calls, eintr_once;

static ssize_t dribble(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	calls++;
	if (eintr_once) {
		eintr_once = 0;
		errno = EINTR;
		return -1;
	}
	if (len == 0)
		return 0;
	*(unsigned char *)buf = (unsigned char)(0xa0 + calls);
	return 1; /* one byte per call: a short read every time */
}

static ssize_t enosys(void *buf, size_t len, unsigned int flags)
{
	(void)buf;
	(void)len;
	(void)flags;
	errno = ENOSYS;
	return -1;
}

static ssize_t nothing(void *buf, size_t len, unsigned int flags)
{
	(void)buf;
	(void)len;
	(void)flags;
	return 0;
}

/* de_auth_first's question, counted: only the user's secret applies. */
static int asked;

static int count_asks(enum de_auth_source src, void *ctx)
{
	(void)ctx;
	asked++;
	return src == DE_SRC_USER_SECRET;
}

int main(void)
{
	char a[DE_STEP_SECRET_LEN + 1], b[DE_STEP_SECRET_LEN + 1];
	char want[DE_STEP_SECRET_LEN + 1];
	struct de_err e;
	unsigned i;

	/* Short reads and EINTR: every byte still comes from the source. */
	calls = 0;
	eintr_once = 1;
	ok(de_step_secret_new(dribble, a, &e) == 0, "short reads and EINTR are retried");
	for (i = 0; i < DE_STEP_SECRET_BYTES; i++)
		snprintf(want + 2 * i, 3, "%02x", 0xa0 + i + 2); /* call 1 was EINTR */
	is_str(a, want, "the secret is the source's bytes in lower-case hex");
	is_int(calls, DE_STEP_SECRET_BYTES + 1, "one call per byte plus the interrupted one");

	/* A source that fails: an error, never a weak secret. */
	strcpy(a, "stale");
	ok(de_step_secret_new(enosys, a, &e) == -1, "getrandom failing (ENOSYS) is an error");
	is_str(a, "", "and leaves no secret behind");
	ok(strstr(e.msg, "getrandom: Function not implemented") != NULL &&
	   strstr(e.msg, "no step secret made") != NULL, "the error names getrandom and its reason: %s", e.msg);
	ok(de_step_secret_new(nothing, a, &e) == -1, "a source that returns 0 bytes is an error, not a loop");

	/* The real one. */
	ok(de_step_secret_new(NULL, a, &e) == 0 && de_step_secret_new(NULL, b, &e) == 0,
	   "getrandom(2) makes secrets");
	is_int((long long)strlen(a), DE_STEP_SECRET_LEN, "of %u hex digits", DE_STEP_SECRET_LEN);
	ok(strcmp(a, b) != 0, "two steps get different secrets");
	ok(de_step_secret_check(a, &e) == 0, "a made secret has the expected shape");

	/* Shape checks, which never quote the value. */
	ok(de_step_secret_check("abc", &e) == -1 && strstr(e.msg, "3 characters long: expected 64 hex digits") &&
	   strstr(e.msg, "abc") == NULL, "too short: refused without quoting it: %s", e.msg);
	strcpy(b, a);
	b[10] = 'G';
	ok(de_step_secret_check(b, &e) == -1 && strstr(e.msg, "at offset 10") && strstr(e.msg, b) == NULL,
	   "a non-hex character: refused, its offset named: %s", e.msg);
	b[10] = 'A';
	ok(de_step_secret_check(b, &e) == -1, "upper-case hex is not what the plugin makes: refused");
	ok(de_step_secret_check("", &e) == -1, "empty: refused");

	/* The order of the sources. */
	is_int(de_auth_pick(1, 1, 1, 1), DE_SRC_INSECURE, "--insecure wins over everything");
	is_int(de_auth_pick(0, 1, 1, 1), DE_SRC_USER_SECRET, "a user's DISTENV_SECRET before MUNGE and the step secret");
	is_int(de_auth_pick(0, 0, 1, 1), DE_SRC_MUNGE, "MUNGE before the step secret");
	is_int(de_auth_pick(0, 0, 0, 1), DE_SRC_STEP_SECRET, "the step secret when MUNGE is not usable (auth/slurm)");
	is_int(de_auth_pick(0, 0, 0, 0), DE_SRC_NONE, "nothing: none (distenv-check refuses to run)");

	/* One table: the order, and the names the PASS line and --help use. */
	{
		static const char *const names[] = { "none (--insecure)", "shared secret", "munge", "step secret" };
		unsigned seen = 0;
		size_t m;

		for (m = 0; m < DE_AUTH_NMETHODS; m++) {
			is_str(de_auth_methods[m].name, names[m], "method %zu of the order: %s", m + 1, names[m]);
			ok(de_auth_method_of(de_auth_methods[m].src) == &de_auth_methods[m] &&
			   de_auth_methods[m].when[0] && de_auth_methods[m].what[0],
			   "method %zu: found by its source, says what selects it and what it proves", m + 1);
			seen |= 1u << de_auth_methods[m].src;
		}
		is_int((int)seen, (1 << DE_SRC_INSECURE) | (1 << DE_SRC_USER_SECRET) | (1 << DE_SRC_MUNGE) |
		       (1 << DE_SRC_STEP_SECRET), "every source once in the table");
		ok(de_auth_method_of(DE_SRC_NONE) == NULL, "no method for DE_SRC_NONE");
		asked = 0;
		is_int(de_auth_first(count_asks, NULL), DE_SRC_USER_SECRET, "de_auth_first: the first usable one");
		is_int(asked, 2, "... asking none after it (MUNGE is not asked when a user secret applies)");
	}
	return tap_done();
}
