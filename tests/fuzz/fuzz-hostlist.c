/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: Slurm hostlist expressions (src/lib/hostlist.c).
 *
 * The input is one expression, read in both grammars (22.05 and
 * DE_HL_SUFFIX). Besides "no crash, no leak, no sanitizer report" it checks
 * that the four entry points agree: count fails exactly when expand fails
 * and gives the same number; nth(i) is host[i] (and fails past the end or
 * into a buffer one byte short); find(host[i]) is the first index holding
 * that name; a failed call leaves the list empty and says why. And that
 * the grammars agree where both take an expression with no '\n'. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

/* Hosts checked one by one: the first FIRST ones (lists of up to BIG
 * hosts), the middle one and the last; past HUGE hosts only the last one's
 * name, and nothing of find. */
#define FIRST 48
#define BIG 4096
#define HUGE 65536

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz-hostlist: %s:%d: %s: ",       \
				__FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			abort();                                            \
		}                                                           \
	} while (0)

static void check_err(const struct de_err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));

	CHECK(n > 0 && n < sizeof(e->msg), "error message empty or unterminated");
}

static void check_host(const char *expr, unsigned flags,
		       const struct de_hostlist *hl, size_t i)
{
	char buf[DE_HOSTLIST_MAX_NAME + 1], small[DE_HOSTLIST_MAX_NAME + 1];
	const char *want = hl->host[i];
	size_t len = strlen(want);
	struct de_err err;
	long at;
	size_t k;

	CHECK(len <= DE_HOSTLIST_MAX_NAME, "host %zu is %zu bytes", i, len);
	memset(buf, 0x5a, sizeof(buf));
	CHECK(de_hostlist_nth(expr, flags, i, buf, sizeof(buf), &err) == 0,
	      "nth(%zu) failed where expand gave \"%s\": %s", i, want, err.msg);
	CHECK(strcmp(buf, want) == 0, "nth(%zu)=\"%s\", expand gave \"%s\"",
	      i, buf, want);
	/* Exactly big enough works, one byte short fails. */
	if (hl->count <= BIG) {
		CHECK(de_hostlist_nth(expr, flags, i, small, len + 1, &err) == 0 &&
			      strcmp(small, want) == 0,
		      "nth(%zu) into %zu bytes", i, len + 1);
		CHECK(de_hostlist_nth(expr, flags, i, small, len, &err) == -1,
		      "nth(%zu) of \"%s\" fit into %zu bytes", i, want, len);
		check_err(&err);
	}
	if (hl->count > HUGE)
		return;
	at = de_hostlist_find(expr, flags, want, &err);
	CHECK(at >= 0 && (size_t)at <= i, "find(\"%s\")=%ld, host %zu has it",
	      want, at, i);
	CHECK(strcmp(hl->host[at], want) == 0, "find(\"%s\")=%ld names \"%s\"",
	      want, at, hl->host[at]);
	for (k = 0; k < (size_t)at; k++)
		CHECK(strcmp(hl->host[k], want) != 0,
		      "find(\"%s\")=%ld but host %zu has it first", want, at, k);
}

/* find(name) is the first index holding name, or -1 when none does. */
static void find_consistent(const char *expr, unsigned flags,
			    const struct de_hostlist *hl, const char *name)
{
	struct de_err err;
	long at = de_hostlist_find(expr, flags, name, &err);
	size_t k, end = at >= 0 ? (size_t)at : hl->count;

	CHECK(at >= -1 && (at < 0 || (size_t)at < hl->count),
	      "find(\"%s\")=%ld of %zu hosts", name, at, hl->count);
	if (at >= 0)
		CHECK(strcmp(hl->host[at], name) == 0,
		      "find(\"%s\")=%ld names \"%s\"", name, at, hl->host[at]);
	else
		check_err(&err);
	for (k = 0; k < end; k++)
		CHECK(strcmp(hl->host[k], name) != 0,
		      "find(\"%s\")=%ld but host %zu has it", name, at, k);
}

/* Checks expr in one grammar; returns expand's status with its list in
 * *out (empty on failure). */
static int one(const char *expr, unsigned flags, struct de_hostlist *out)
{
	struct de_hostlist hl;
	struct de_err err;
	char buf[DE_HOSTLIST_MAX_NAME + 1];
	size_t count = 7, i;
	int rc_e, rc_c;

	memset(&hl, 0x5a, sizeof(hl));
	rc_e = de_hostlist_expand(expr, flags, &hl, &err);
	if (rc_e != 0) {
		CHECK(rc_e == -1, "expand returned %d", rc_e);
		check_err(&err);
		CHECK(hl.count == 0 && hl.host == NULL && hl.store == NULL,
		      "a failed expand left the list non-empty");
	}
	rc_c = de_hostlist_count(expr, flags, &count, &err);
	CHECK(rc_c == rc_e, "count returned %d, expand %d (flags %u)", rc_c,
	      rc_e, flags);
	if (rc_e != 0) {
		check_err(&err);
		CHECK(de_hostlist_nth(expr, flags, 0, buf, sizeof(buf), &err) == -1,
		      "nth(0) of an expression expand refuses");
		CHECK(de_hostlist_find(expr, flags, expr, &err) == -1,
		      "find in an expression expand refuses");
		*out = hl;
		return rc_e;
	}
	CHECK(count == hl.count, "count=%zu, expand gave %zu hosts", count,
	      hl.count);
	CHECK(hl.count <= DE_HOSTLIST_MAX_HOSTS, "%zu hosts", hl.count);
	CHECK(hl.count == 0 || hl.host != NULL, "hosts without an array");

	/* nth and find may walk the whole list (names with white space), so
	 * long lists get fewer of them: an input stays well under a second. */
	if (hl.count <= BIG)
		for (i = 0; i < hl.count && i < FIRST; i++)
			check_host(expr, flags, &hl, i);
	if (hl.count > FIRST && hl.count <= HUGE)
		check_host(expr, flags, &hl, hl.count / 2);
	if (hl.count > FIRST)
		check_host(expr, flags, &hl, hl.count - 1);
	if (hl.count <= HUGE) {
		CHECK(de_hostlist_nth(expr, flags, hl.count, buf, sizeof(buf), &err) == -1,
		      "nth(%zu) past the end of %zu hosts", hl.count, hl.count);
		check_err(&err);
		CHECK(de_hostlist_nth(expr, flags, SIZE_MAX, buf, sizeof(buf), &err) == -1,
		      "nth(SIZE_MAX)");
	}

	/* Names that may or may not be hosts: the expression itself (a host
	 * when it is one plain name) and one no expression here holds. */
	if (hl.count <= HUGE) {
		find_consistent(expr, flags, &hl, expr);
		find_consistent(expr, flags, &hl, "no-such-host-0");
	}

	*out = hl;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct de_hostlist a, b;
	char *expr = malloc(size + 1);
	size_t i;
	int ra, rb;

	if (expr == NULL)
		return 0;
	memcpy(expr, data, size);
	expr[size] = '\0'; /* an embedded NUL ends the expression, as in C */
	ra = one(expr, 0, &a);
	rb = one(expr, DE_HL_SUFFIX, &b);
	/* Without '\n' the grammars differ only in what one of them refuses:
	 * where both expand it, they give the same hosts. */
	if (ra == 0 && rb == 0 && strchr(expr, '\n') == NULL) {
		CHECK(a.count == b.count, "%zu hosts in the 22.05 grammar, %zu with DE_HL_SUFFIX",
		      a.count, b.count);
		for (i = 0; i < a.count; i++)
			CHECK(strcmp(a.host[i], b.host[i]) == 0,
			      "host %zu is \"%s\" in the 22.05 grammar, \"%s\" with DE_HL_SUFFIX",
			      i, a.host[i], b.host[i]);
	}
	de_hostlist_free(&a);
	de_hostlist_free(&b);
	CHECK(a.count == 0 && a.host == NULL && a.store == NULL,
	      "free left the list non-empty");
	de_hostlist_free(&a); /* twice is safe */
	free(expr);
	return 0;
}
