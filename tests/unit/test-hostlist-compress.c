/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for src/lib/hostlist_compress.c: hosts -> the shortest
 * hostlist expression, which expands back to the same hosts (hostlist.c's
 * own tests are test-hostlist.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "tap.h"

/* compress(hosts) == want, and expanding it gives the same set. */
static void compress_is(const char *const *hosts, size_t n, const char *want)
{
	char out[256];
	struct de_hostlist hl;
	struct de_err e;
	size_t i, j;
	int rc = de_hostlist_compress(hosts, n, out, sizeof(out)), same = 1;

	is_str(out, want, "compress to %s", want);
	if (rc != 0 || de_hostlist_expand(out, DE_HL_SUFFIX, &hl, &e) != 0) {
		ok(0, "%s expands back (rc %d)", out, rc);
		return;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < hl.count && strcmp(hl.host[j], hosts[i]) != 0; j++)
			;
		same &= j < hl.count;
	}
	for (j = 0; j < hl.count; j++) {
		for (i = 0; i < n && strcmp(hl.host[j], hosts[i]) != 0; i++)
			;
		same &= i < n;
	}
	ok(same, "%s expands back to the same hosts", out);
	de_hostlist_free(&hl);
}

static void test_compress(void)
{
	static const char *const two[] = { "node2", "node1" };
	static const char *const padded[] = { "node003", "node001", "node002", "node010" };
	static const char *const mixed[] = { "gpu1", "login", "node1", "gpu2", "node3", "node2", "gpu4", "login" };
	static const char *const natural[] = { "n9", "n10", "n11", "n8" };
	static const char *const widths[] = { "n01", "n1", "n02" };
	static const char *const one[] = { "node7" };
	static const char *const dups[] = { "a1", "a1", "a2", "a2" };
	char **many = malloc(1024 * sizeof(*many));
	char out[64];
	size_t i;
	int rc;

	compress_is(two, 2, "node[1-2]");
	compress_is(padded, 4, "node[001-003,010]");
	compress_is(mixed, 8, "gpu[1-2,4],login,node[1-3]");
	compress_is(natural, 4, "n[8-11]");
	compress_is(widths, 3, "n1,n[01-02]");
	compress_is(one, 1, "node7");
	compress_is(dups, 4, "a[1-2]");
	/* 1024 nodes of 128 racks: short, and cut with a count when too long. */
	for (i = 0; i < 1024; i++) {
		many[i] = malloc(32);
		snprintf(many[i], 32, "r%zun%03zu", i / 8, (i * 7) % 8 + 1);
	}
	rc = de_hostlist_compress((const char *const *)many, 8, out, sizeof(out));
	ok(rc == 0 && strcmp(out, "r0n[001-008]") == 0, "8 hosts of one rack: r0n[001-008] (got %s)", out);
	rc = de_hostlist_compress((const char *const *)many, 1024, out, sizeof(out));
	ok(rc == 1 && strlen(out) < sizeof(out) && strstr(out, "...(") != NULL &&
	   strstr(out, " more)") != NULL, "too long for the line: cut with the count left (%s)", out);
	out[0] = 'x';
	is_int(de_hostlist_compress((const char *const *)many, 0, out, sizeof(out)), 0, "no hosts");
	is_str(out, "", "no hosts: empty");
	for (i = 0; i < 1024; i++)
		free(many[i]);
	free(many);
}

int main(void)
{
	test_compress();
	return tap_done();
}
