/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for src/lib/hostlist.c: every grammar rule in both grammars,
 * errors with positions, limits, and count/nth/find agreeing with expand.
 * Expected expansions are what scontrol 22.05.8 prints (22 mode) and what
 * Slurm 23.11's hostlist.c produces (SUFFIX mode). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "tap.h"

#define S22 0u
#define S23 ((unsigned)DE_HL_SUFFIX)

/* Hosts joined with '|' (names here never contain it). */
static char *join(const struct de_hostlist *hl)
{
	size_t len = 1, i;
	char *s, *p;

	for (i = 0; i < hl->count; i++)
		len += strlen(hl->host[i]) + 1;
	s = p = malloc(len);
	if (!s)
		abort();
	*p = '\0';
	for (i = 0; i < hl->count; i++) {
		if (i)
			*p++ = '|';
		strcpy(p, hl->host[i]);
		p += strlen(p);
	}
	return s;
}

/* expr made printable for a test name (four rotating buffers). */
static const char *show(const char *expr)
{
	static char bufs[4][120];
	static int k;
	char *b = bufs[k++ % 4];
	size_t o = 0;

	for (; *expr && o + 8 < sizeof(bufs[0]); expr++) {
		unsigned char ch = (unsigned char)*expr;

		if (ch < 0x20 || ch == '#' || ch == '\\')
			o += (size_t)snprintf(b + o, sizeof(bufs[0]) - o,
					      "\\x%02x", ch);
		else
			b[o++] = (char)ch;
	}
	snprintf(b + o, sizeof(bufs[0]) - o, "%s", *expr ? "..." : "");
	return b;
}

/* Indices checked for nth/find: all of a small list, a sample of a big one. */
static size_t next_index(size_t i, size_t count)
{
	if (count <= 3000)
		return i + 1;
	if (i + 1 == count)
		return count;
	i += count / 200 + 1;
	return i < count ? i : count - 1;
}

/* count, nth and find must agree with expand for every host. */
static bool consistent(const char *expr, unsigned flags,
		       const struct de_hostlist *hl)
{
	char buf[DE_HOSTLIST_MAX_NAME + 1];
	struct de_err err;
	size_t count = 12345, i, j;
	long at;

	if (de_hostlist_count(expr, flags, &count, &err) || count != hl->count) {
		printf("# count: %zu vs %zu (%s)\n", count, hl->count, err.msg);
		return false;
	}
	for (i = 0; i < hl->count; i = next_index(i, hl->count)) {
		if (de_hostlist_nth(expr, flags, i, buf, sizeof(buf), &err) ||
		    strcmp(buf, hl->host[i]) != 0) {
			printf("# nth(%zu): '%s' vs '%s'\n", i, buf, hl->host[i]);
			return false;
		}
		at = de_hostlist_find(expr, flags, hl->host[i], &err);
		if (hl->count <= 3000) {
			for (j = 0; strcmp(hl->host[j], hl->host[i]) != 0; j++)
				;
		} else {
			j = at >= 0 && (size_t)at <= i &&
			    strcmp(hl->host[at], hl->host[i]) == 0 ? (size_t)at : i;
		}
		if (at < 0 || (size_t)at != j) {
			printf("# find('%s'): %ld, want %zu\n", hl->host[i], at, j);
			return false;
		}
	}
	if (de_hostlist_nth(expr, flags, hl->count, buf, sizeof(buf), &err) == 0) {
		printf("# nth(count) succeeded\n");
		return false;
	}
	return true;
}

/* expr expands to want ('|' between hosts), and count/nth/find agree. */
static void expands(const char *expr, unsigned flags, const char *want)
{
	struct de_hostlist hl;
	struct de_err err;
	char *got;

	if (de_hostlist_expand(expr, flags, &hl, &err)) {
		is_str(err.msg, want, "%s expands (%s grammar)", show(expr),
		       flags ? "23" : "22");
		return;
	}
	got = join(&hl);
	is_str(got, want, "%s expands (%s grammar)", show(expr),
	       flags ? "23" : "22");
	ok(consistent(expr, flags, &hl), "%s: count/nth/find agree",
	   show(expr));
	free(got);
	de_hostlist_free(&hl);
}

/* expr is refused by every function, with a message containing want. */
static void refused(const char *expr, unsigned flags, const char *want)
{
	struct de_hostlist hl = { 7, (char **)&hl, NULL };
	struct de_err err;
	char buf[64];
	size_t count = 99;
	int rc;

	err.msg[0] = '\0';
	rc = de_hostlist_expand(expr, flags, &hl, &err);
	ok(rc == -1 && hl.count == 0 && hl.host == NULL && strstr(err.msg, want),
	   "%s refused (%s grammar): %s", show(expr), flags ? "23" : "22",
	   show(err.msg));
	if (!strstr(err.msg, want))
		printf("#  want: '%s'\n", want);
	ok(de_hostlist_count(expr, flags, &count, &err) == -1 && count == 0 &&
	   strstr(err.msg, want) &&
	   de_hostlist_nth(expr, flags, 0, buf, sizeof(buf), &err) == -1 &&
	   buf[0] == '\0' && strstr(err.msg, want) &&
	   de_hostlist_find(expr, flags, "n1", &err) == -1 &&
	   strstr(err.msg, want),
	   "%s: count/nth/find refuse it too", show(expr));
}

static void both(const char *expr, const char *want)
{
	expands(expr, S22, want);
	expands(expr, S23, want);
}

static void test_separators(void)
{
	both("n1", "n1");
	both("node1 node2", "node1|node2");
	both("node1,node2", "node1|node2");
	both("node1\tnode2", "node1|node2");
	both(",, n1 ,\t,n2,,", "n1|n2");
	both("", "");
	both(" ,\t,", "");
	both("n[1-2],", "n1|n2");
	/* '\n' separates from 23.02; 22.05 keeps it inside the name. */
	expands("n1\nn2", S23, "n1|n2");
	expands("n1\nn2", S22, "n1\nn2");
	expands("n[1-2]\nm[1-2]", S23, "n1|n2|m1|m2");
	expands("n[1-2]\nm[1-2]", S22, "n1\nm1|n1\nm2|n2\nm1|n2\nm2");
	/* separators inside brackets do not split */
	both("n[1, 2]", "n1|n02");
	both("n[\t1]", "n01");
	both("n[1]\tm[2]", "n1|m2");
}

static void test_ranges(void)
{
	both("linux[1,2]", "linux1|linux2");
	both("n[1-3]", "n1|n2|n3");
	both("n[9-11]", "n9|n10|n11");
	both("n[09-11]", "n09|n10|n11");
	both("n[098-102]", "n098|n099|n100|n101|n102");
	both("n[1-010]", "n1|n2|n3|n4|n5|n6|n7|n8|n9|n10");
	both("n[99-101]", "n99|n100|n101");
	both("n[0999-1001]", "n0999|n1000|n1001");
	both("n[01-3]", "n01|n02|n03");
	both("n[1-01]", "n1");
	both("n[007-9]", "n007|n008|n009");
	both("n[0]", "n0");
	both("n[00]", "n00");
	both("n[000-000]", "n000");
	both("n[3-]", "n3");
	both("nid[001234-001235,001240]", "nid001234|nid001235|nid001240");
	both("b04-[09-10]", "b04-09|b04-10");
	both("ml-16-node-[001-002,004],ml-17-node-[001-003]",
	     "ml-16-node-001|ml-16-node-002|ml-16-node-004|"
	     "ml-17-node-001|ml-17-node-002|ml-17-node-003");
	/* Numbers are read by strtoul(): blanks and a sign count for the width. */
	both("n[+1-3]", "n01|n02|n03");
	both("n[ 1]", "n01");
	both("n[1- 3]", "n1|n2|n3");
	both("n[0- -0]", "n0");
	/* Slurm checks the low end for junk only when there is no high end. */
	both("n[1a-3]", "n01|n02|n03");
	/* names without brackets come back unchanged */
	both("123", "123");
	both("007", "007");
	both("n007,n7", "n007|n7");
	both("a]", "a]");
	both("a]x[1]y[2]", "a]x1y2");
	/* no prefix */
	both("[1-2]", "1|2");
	both("[1]", "1");
	/* duplicates and order are kept */
	both("n[1-3],n[2-4]", "n1|n2|n3|n2|n3|n4");
	both("n1,n1,n[1-2]", "n1|n1|n1|n2");
	both("n[3,1,2]", "n3|n1|n2");
	both("a,a1,a2", "a|a1|a2");
	both("n18446744073709551614", "n18446744073709551614");
	both("n[18446744073709551613-18446744073709551614]",
	     "n18446744073709551613|n18446744073709551614");
}

static void test_range_errors(void)
{
	unsigned f;

	for (f = 0; f <= S23; f += S23) {
		refused("n[5-3]", f, "invalid range \"5-3\" at position 2 (5 is above 3)");
		refused("n[]", f, "invalid range \"\" at position 2");
		refused("[]", f, "invalid range \"\" at position 1");
		refused("n[1,,2]", f, "invalid range \"\" at position 4");
		refused("n[1,]", f, "invalid range \"\" at position 4");
		refused("n[,1]", f, "invalid range \"\" at position 2");
		refused("n[ ]", f, "invalid range \" \" at position 2");
		refused("n[1x2]", f, "invalid range \"1x2\" at position 2");
		refused("n[0x1]", f, "invalid range");
		refused("n[1--3]", f, "negative number");
		refused("n[-3]", f, "invalid range \"-3\"");
		refused("n[1-3 ]", f, "invalid range \"1-3 \"");
		refused("n[a]", f, "invalid range \"a\"");
		refused("n[1-2-3]", f, "invalid range");
		refused("ok1,n[5-3]", f, "\"5-3\" at position 6");
		refused("n[0-65536]", f, "range \"0-65536\" at position 2 has more than 65536 hosts");
		refused("n[0-999999999]", f, "has more than 65536 hosts");
		/* the bracket just before the last one must be valid too */
		refused("a[1-2]b]c[3]", f, "invalid range \"1-2]b\" at position 2");
		refused("a[]b[1]", f, "invalid range \"\" at position 2");
		refused("a[1-2]b[0-65535,7]c[1]", f,
			"bracket at position 7 has more than 65536 hosts");
	}
}

static void test_brackets(void)
{
	both("rack[1-2]-node[01-02]",
	     "rack1-node01|rack1-node02|rack2-node01|rack2-node02");
	both("n[1-2][3-4]", "n13|n14|n23|n24");
	both("a[1-2]x[3]", "a1x3|a2x3");
	both("n[1-2]0[3-4]", "n103|n104|n203|n204");
	/* Slurm recurses from the right: the second bracket turns slowest. */
	both("a[1-2]b[3-4]c[5-6]",
	     "a1b3c5|a1b3c6|a2b3c5|a2b3c6|a1b4c5|a1b4c6|a2b4c5|a2b4c6");
	both("n[1-2][3-4][5-6]", "n135|n136|n235|n236|n145|n146|n245|n246");
	both("w[1-2]x[1,3]y[0-1]z[7]",
	     "w1x1y0z7|w2x1y0z7|w1x3y0z7|w2x3y0z7|"
	     "w1x1y1z7|w2x1y1z7|w1x3y1z7|w2x3y1z7");
	both("x[1]y[2],x[1]y[3]", "x1y2|x1y3");
	/* a '[' with no ']' after it, left of the brackets, is plain text */
	both("a[1]x[y[2]", "a[1]x[y2");
	both("a[b[1-2]", "a[b1|a[b2");
	both("a[[1-2]", "a[1|a[2");
	both("a[1[2],3]", "a[12|3]");
	/* Slurm ignores errors in brackets left of the one before the last:
	 * such a token expands to nothing... */
	both("x,a[]b[1-2]c[1],y", "x|y");
	both("a[5-3]b[1]c[1]", "");
	/* ...and a bracket there with too many hosts loses entries. */
	{
		struct de_err err;
		size_t n = 0;
		char buf[32];

		ok(de_hostlist_count("a[0-65535,70000-70001]b[1]c[1]", S22, &n,
				     &err) == 0 && n == 65536,
		   "a deep bracket is cut at 65536 hosts (%zu)", n);
		ok(de_hostlist_nth("a[1-3,0-65535,5]b[1-2]c[1]", S23, 5, buf,
				   sizeof(buf), &err) == 0 &&
		   strcmp(buf, "a3b2c1") == 0,
		   "only the entries before the limit are kept (%s)", buf);
		ok(de_hostlist_count("a[1-3,0-65535,5]b[1-2]c[1]", S23, &n,
				     &err) == 0 && n == 6,
		   "so the count is 6 (%zu)", n);
	}
}

static void test_suffix(void)
{
	expands("node[1-2]-ib", S23, "node1-ib|node2-ib");
	expands("rack[1-2]-node[01-02]-ib", S23,
		"rack1-node01-ib|rack1-node02-ib|rack2-node01-ib|rack2-node02-ib");
	expands("gpu[1-2].cluster,cpu1", S23, "gpu1.cluster|gpu2.cluster|cpu1");
	expands("[1-3]-x", S23, "1-x|2-x|3-x");
	expands("n[1]x]", S23, "n1x]");
	expands("a[1-2]]b", S23, "a1]b|a2]b");
	expands("n[ 1-2]x", S23, "n01x|n02x");
	expands("x[1]y[2]z", S23, "x1y2z");
	expands("n[1-2]-[3-4]x", S23, "n1-3x|n1-4x|n2-3x|n2-4x");
	expands("n[[1-2]]", S23, "n[1]|n[2]");
	expands("[[1]]", S23, "[1]");
	refused("node[1-2]-ib", S22,
		"text after ']' at position 9 (Slurm 22.05 refuses it; a suffix is accepted from 23.11.0)");
	refused("rack[1-2]-node[01-02]-ib", S22, "text after ']' at position 21");
	refused("n[[1-2]]", S22, "text after ']' at position 7");
	refused("x[1]a b[2]", S22, "text after ']' at position 4");
}

static void test_unterminated(void)
{
	refused("node[1-", S23,
		"hostlist \"node[1-\": unterminated '[' at position 4 (expected ']')");
	refused("[1-2", S23, "unterminated '[' at position 0");
	refused("a[1],b[2", S23, "unterminated '[' at position 6");
	refused("n[1-2]x[3", S23, "unterminated '[' at position 7");
	refused("a,[,b", S23, "unterminated '[' at position 2");
	/* 22.05 "fixes" the name instead */
	expands("node[1-", S22, "node]");
	expands("[1-2", S22, "1-2");
	expands("a[1],b[2", S22, "a1|b]");
	expands("n[1-2]x[3", S22, "n[1-2]x]");
	expands("a[", S22, "a]");
	expands("a,[,b", S22, "a||b");
	expands("[", S22, "");
}

static void test_white_space_names(void)
{
	/* Slurm joins a range to the previous one when the prefixes compare
	 * equal under strnatcmp(), which skips white space; the joined hosts
	 * take the earlier prefix. */
	both("\va1,a2", "\va1|\va2");
	both("a1,\va2", "a1|a2");
	both("a1,\va3", "a1|\va3");
	both("n1,n2,n3", "n1|n2|n3");
	expands("x\ny1,xy2", S22, "x\ny1|x\ny2");
	expands("a[[1],a[ [2]", S22, "a[1|a[2");
	expands("a1,a[ [2]", S22, "a1|a[ 2");
	expands("a[ [1]", S23, "a[ 1");
	both("a\r1,a1 2", "a\r1|a1|2");
	/* digit runs must match exactly even then */
	both("x1\v2y5,x12y6", "x1\v2y5|x12y6");
	both("x\v12y5,x12y6", "x\v12y5|x\v12y6");
	both("\vn[1-2],n[3-4]", "\vn1|\vn2|\vn3|\vn4");
	both("\vn[1-2],n[4-5]", "\vn1|\vn2|n4|n5");
	both("\vn[01-02],n[3-4]", "\vn01|\vn02|n3|n4");
	both("\vn[8-9],n[10-11]", "\vn8|\vn9|\vn10|\vn11");
	expands("\vn[1-2]-x,n3", S23, "\vn1-x|\vn2-x|n3");
}

static void test_limits(void)
{
	char name[300], expr[400], want[600];
	struct de_hostlist hl;
	struct de_err err;
	size_t n = 0;
	char *big, *p;
	int i;

	ok(de_hostlist_count("n[0-65535]", S22, &n, &err) == 0 && n == 65536,
	   "65536 hosts in one range (%zu)", n);
	ok(de_hostlist_expand("a[0-65535]b[0-15]", S23, &hl, &err) == 0 &&
	   hl.count == DE_HOSTLIST_MAX_HOSTS &&
	   strcmp(hl.host[0], "a0b0") == 0 &&
	   strcmp(hl.host[17], "a1b1") == 0 &&
	   strcmp(hl.host[hl.count - 1], "a65535b15") == 0,
	   "exactly DE_HOSTLIST_MAX_HOSTS hosts expand");
	if (hl.count)
		ok(consistent("a[0-65535]b[0-15]", S23, &hl),
		   "1M hosts: count/nth/find agree");
	de_hostlist_free(&hl);
	de_hostlist_free(&hl);
	refused("a[0-65535]b[0-16]", S23, "expands to more than 1048576 hosts");
	refused("n[0-65535],m[0-65535],a[0-65535]b[0-15]", S22,
		"expands to more than 1048576 hosts");
	refused("a[0-65535]b[0-65535]c[0-65535]d[0-65535]e[0-65535]", S23,
		"expands to more than 1048576 hosts");
	refused("n[99999999999999999999]", S22,
		"number in \"99999999999999999999\" at position 2 is too large");
	refused("n[1-18446744073709551615]", S22, "is too large");
	refused("n18446744073709551615", S23,
		"number at position 1 is too large (at most 18446744073709551614)");
	refused("x,n[0-18446744073709551615],m1", S22, "too large");

	memset(name, 'h', 255);
	name[255] = '\0';
	expands(name, S23, name);
	snprintf(expr, sizeof(expr), "%.254s[1-2]", name);
	snprintf(want, sizeof(want), "%.254s1|%.254s2", name, name);
	expands(expr, S22, want);
	snprintf(expr, sizeof(expr), "x,%sh", name);
	refused(expr, S23, "host name at position 2 is longer than 255 characters");
	snprintf(expr, sizeof(expr), "%.250s[99999-100000]", name);
	refused(expr, S22, "host name at position 0 is longer than 255 characters");
	snprintf(expr, sizeof(expr), "%.250s[1]-[1-2]-ib", name);
	refused(expr, S23, "longer than 255 characters");
	memset(expr, '0', sizeof(expr));
	memcpy(expr, "n[", 2);
	strcpy(expr + 256, "1]");
	refused(expr, S22, "longer than 255 characters");
	/* 1M names of ~80 characters are more than 64 MiB */
	snprintf(expr, sizeof(expr), "%.70s[0-65535]-[0-15]", name);
	refused(expr, S23, "host names need more than 67108864 bytes");

	/* Slurm dies (fatal) beyond 262144 entries in one bracket. */
	big = malloc(2 * 262145 + 8);
	if (!big)
		abort();
	p = big + sprintf(big, "n[");
	for (i = 0; i < 262144; i++)
		p += sprintf(p, i ? ",%d" : "%d", i % 10);
	strcpy(p, "]");
	ok(de_hostlist_count(big, S22, &n, &err) == 0 && n == 262144,
	   "262144 entries in one bracket (%zu)", n);
	strcpy(p, ",1]");
	refused(big, S22, "bracket at position 1 has more than 262144 entries");
	free(big);
}

static void test_nth_find(void)
{
	char buf[16], small[4];
	struct de_err err;
	const char *e = "rack[1-2]-node[01-02]";

	ok(de_hostlist_nth(e, S22, 2, buf, sizeof(buf), &err) == 0 &&
	   strcmp(buf, "rack2-node01") == 0, "nth 2 of %s: %s", e, buf);
	ok(de_hostlist_nth(e, S22, 4, buf, sizeof(buf), &err) == -1 &&
	   strstr(err.msg, "no host 4: it has 4 hosts") && buf[0] == '\0',
	   "nth past the end: %s", err.msg);
	ok(de_hostlist_nth(e, S22, 0, small, sizeof(small), &err) == -1 &&
	   strstr(err.msg, "host name needs 13 bytes, the buffer has 4"),
	   "nth into a small buffer: %s", err.msg);
	ok(de_hostlist_nth("", S22, 0, buf, sizeof(buf), &err) == -1 &&
	   strstr(err.msg, "it has 0 hosts"), "nth of an empty list");
	is_int(de_hostlist_find(e, S22, "rack2-node02", &err), 3, "find last");
	is_int(de_hostlist_find("n[1-3],n[2-4]", S22, "n3", &err), 2,
	       "find returns the first duplicate");
	is_int(de_hostlist_find(e, S22, "rack2-node2", &err), -1,
	       "find: padding must match");
	ok(strstr(err.msg, "host \"rack2-node2\" is not in the list") != NULL,
	   "find: %s", err.msg);
	is_int(de_hostlist_find("n[1-2]", S22, "n01", &err), -1,
	       "find n01 in n[1-2]");
	is_int(de_hostlist_find("n[9-11]", S22, "n10", &err), 1,
	       "find n10 in n[9-11]");
	is_int(de_hostlist_find("n[09-11]", S22, "n9", &err), -1,
	       "find n9 in n[09-11]");
	is_int(de_hostlist_find("n[0-3]", S22, "n", &err), -1, "find n");
	is_int(de_hostlist_find("n[0-3]", S22, "n+1", &err), -1, "find n+1");
	is_int(de_hostlist_find("n[0-3]", S22, "n 1", &err), -1, "find 'n 1'");
	is_int(de_hostlist_find("nid0000[2-7]", S22, "nid00005", &err), 3,
	       "find in a range whose prefix ends in zeros");
	is_int(de_hostlist_find("node[1-2]-ib", S23, "node2-ib", &err), 1,
	       "find with a suffix");
	is_int(de_hostlist_find("node[1-2]-ib", S23, "node2", &err), -1,
	       "find without the suffix");
	is_int(de_hostlist_find("a,b,c", S22, "c", &err), 2, "find a plain name");
	is_int(de_hostlist_find("n[5-3]", S22, "n4", &err), -1,
	       "find in an invalid list");
	ok(strstr(err.msg, "5 is above 3") != NULL, "find reports why: %s",
	   err.msg);
}

static void test_bad_arguments(void)
{
	struct de_hostlist hl;
	struct de_err err;
	char buf[8];
	size_t n;

	ok(de_hostlist_expand(NULL, 0, &hl, &err) == -1 && hl.count == 0 &&
	   strstr(err.msg, "no expression"), "NULL expression: %s", err.msg);
	ok(de_hostlist_expand("n1", 0, NULL, &err) == -1, "NULL result");
	ok(de_hostlist_expand("n1", 4, &hl, &err) == -1 &&
	   strstr(err.msg, "unknown flags"), "unknown flags: %s", err.msg);
	ok(de_hostlist_count("n1", 0, NULL, &err) == -1, "NULL count");
	ok(de_hostlist_count(NULL, 0, &n, &err) == -1, "count NULL");
	ok(de_hostlist_nth("n1", 0, 0, NULL, 8, &err) == -1, "nth NULL buffer");
	ok(de_hostlist_nth("n1", 0, 0, buf, 0, &err) == -1, "nth empty buffer");
	ok(de_hostlist_find("n1", 0, NULL, &err) == -1, "find NULL");
	ok(de_hostlist_expand("n[1-", S23, &hl, NULL) == -1,
	   "NULL error holder is allowed");
	de_hostlist_free(NULL);
	de_hostlist_free(&hl);
	ok(hl.count == 0 && hl.host == NULL, "free twice is harmless");
}

static void test_messages(void)
{
	struct de_hostlist hl;
	struct de_err err;
	char expr[200];

	de_hostlist_expand("n[5-3]", S22, &hl, &err);
	is_str(err.msg,
	       "hostlist \"n[5-3]\": invalid range \"5-3\" at position 2 (5 is above 3)",
	       "reversed range message");
	de_hostlist_expand("n1\n\"x\"[", S23, &hl, &err);
	is_str(err.msg,
	       "hostlist \"n1\\n\\\"x\\\"[\": unterminated '[' at position 6 (expected ']')",
	       "the expression is quoted with escapes");
	memset(expr, 'a', sizeof(expr));
	strcpy(expr + 150, "[9-1]");
	de_hostlist_expand(expr, S22, &hl, &err);
	is_str(err.msg,
	       "hostlist \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\": invalid range \"9-1\" at position 151 (9 is above 1)",
	       "a long expression is cut");
}

int main(void)
{
	test_separators();
	test_ranges();
	test_range_errors();
	test_brackets();
	test_suffix();
	test_unterminated();
	test_white_space_names();
	test_limits();
	test_nth_find();
	test_bad_arguments();
	test_messages();
	return tap_done();
}
