/* SPDX-License-Identifier: GPL-2.0-or-later */
/* de_opterr against the real getopt_long of this machine: each case runs
 * getopt_long as the tools do (opterr = 0, leading ':'), words the first
 * error with de_opterr, and compares it with the message we expect and
 * with the one glibc itself prints (opterr = 1, no ':'). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opterr.h"
#include "tap.h"

enum { OPT_TIMEOUT = 256, OPT_PAIRS, OPT_PAIRS_OUT, OPT_PAIR_BYTES, OPT_JSON,
       OPT_SUMMARY, OPT_COLOUR };

/* distenv-check's kind of table: prefixes shared, an exact name that is
 * also a prefix (pairs, json), and two aliases of one option. */
static const struct option lo[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "dtype", required_argument, NULL, 'd' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "pairs", no_argument, NULL, OPT_PAIRS },
	{ "pairs-out", required_argument, NULL, OPT_PAIRS_OUT },
	{ "pair-bytes", required_argument, NULL, OPT_PAIR_BYTES },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "json-summary", required_argument, NULL, OPT_SUMMARY },
	{ "colour", no_argument, NULL, OPT_COLOUR },
	{ "color", no_argument, NULL, OPT_COLOUR },
	{ NULL, 0, NULL, 0 },
};
#define SHORTS "vd:"

#define MAXARGS 8

/* argv for one run: getopt_long permutes it, so each run gets a copy. */
static int make_argv(char **argv, const char *const *args)
{
	int n = 0;

	argv[n++] = (char *)"prog";
	for (; args[n - 1] != NULL && n < MAXARGS; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	return n;
}

/* Runs getopt_long as the tools do; on the first error, de_opterr's words
 * in e and the return (':' or '?'); 0 when every option parsed. */
static int ours(const char *const *args, struct de_err *e)
{
	char *argv[MAXARGS + 1];
	int argc = make_argv(argv, args), ch;

	opterr = 0;
	optind = 0; /* glibc: start afresh, forgetting a half-read cluster */
	while ((ch = getopt_long(argc, argv, ":" SHORTS, lo, NULL)) != -1)
		if (ch == '?' || ch == ':') {
			if (de_opterr(e, argc, argv, optind, optopt, lo, ch) != -1)
				snprintf(e->msg, sizeof(e->msg), "(de_opterr did not return -1)");
			return ch;
		}
	return 0;
}

/* What glibc prints for the first error, without "prog: " and the newline. */
static void gnu(const char *const *args, char *out, size_t len)
{
	char *argv[MAXARGS + 1], line[1024] = "";
	int argc = make_argv(argv, args), saved, ch;
	FILE *f = tmpfile();

	snprintf(out, len, "(nothing printed)");
	if (f == NULL)
		return;
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(f), 2);
	opterr = 1;
	optind = 0;
	while ((ch = getopt_long(argc, argv, SHORTS, lo, NULL)) != -1 && ch != '?')
		;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	if (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(out, len, "%s", strncmp(line, "prog: ", 6) == 0 ? line + 6 : line);
	}
	fclose(f);
}

/* One error case: the return, our message, and glibc's message. */
static void error_case(const char *what, int want_ret, const char *want,
		       const char *const *args)
{
	struct de_err e;
	char theirs[1024];
	int ret;

	memset(&e, 0, sizeof(e));
	ret = ours(args, &e);
	is_int(ret, want_ret, "%s: getopt_long returns '%c'", what, want_ret);
	is_str(e.msg, want, "%s: the message", what);
	gnu(args, theirs, sizeof(theirs));
	is_str(e.msg, theirs, "%s: glibc's own words", what);
}

static void fine(const char *what, const char *const *args)
{
	struct de_err e;

	is_int(ours(args, &e), 0, "%s: no error", what);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

int main(void)
{
	/* no_argument given a value: glibc's optopt is the option's val ('v'),
	 * which the tools used to print as "unknown option '-v'". */
	error_case("--verbose=1", '?', "option '--verbose' doesn't allow an argument",
		   ARGS("--verbose=1"));
	error_case("--verb=1 (abbreviated): the full name", '?',
		   "option '--verbose' doesn't allow an argument", ARGS("--verb=1"));
	error_case("--verbose= (empty value)", '?',
		   "option '--verbose' doesn't allow an argument", ARGS("--verbose="));

	error_case("--foo", '?', "unrecognized option '--foo'", ARGS("--foo"));
	error_case("--foo=1: the text as given", '?', "unrecognized option '--foo=1'",
		   ARGS("--foo=1"));
	error_case("--verbosex (longer than the name)", '?',
		   "unrecognized option '--verbosex'", ARGS("--verbosex"));

	error_case("-x", '?', "invalid option -- 'x'", ARGS("-x"));
	error_case("-vx (end of a cluster)", '?', "invalid option -- 'x'", ARGS("-vx"));
	error_case("-xv (inside a cluster, optind not past it)", '?', "invalid option -- 'x'",
		   ARGS("-xv"));
	error_case("-: (the optstring's own colon)", '?', "invalid option -- ':'", ARGS("-:"));
	/* argv[optind - 1] is "--verbose=1", consumed as --pairs-out's value:
	 * not the error ('x' is no option's val). */
	error_case("--pairs-out --verbose=1 -xv", '?', "invalid option -- 'x'",
		   ARGS("--pairs-out", "--verbose=1", "-xv"));

	error_case("--timeout", ':', "option '--timeout' requires an argument",
		   ARGS("--timeout"));
	error_case("--time (abbreviated): the full name", ':',
		   "option '--timeout' requires an argument", ARGS("--time"));
	error_case("-d", ':', "option requires an argument -- 'd'", ARGS("-d"));
	error_case("-vd", ':', "option requires an argument -- 'd'", ARGS("-vd"));
	error_case("HOST --timeout (after a permuted operand)", ':',
		   "option '--timeout' requires an argument", ARGS("HOST", "--timeout"));
	error_case("HOST --foo MORE (permuted)", '?', "unrecognized option '--foo'",
		   ARGS("HOST", "--foo", "MORE"));
	error_case("--p: every candidate, in table order", '?',
		   "option '--p' is ambiguous; possibilities: '--pairs' '--pairs-out' '--pair-bytes'",
		   ARGS("--p"));
	error_case("--pair=3: the text as given", '?',
		   "option '--pair=3' is ambiguous; possibilities: '--pairs' '--pairs-out' '--pair-bytes'",
		   ARGS("--pair=3"));
	error_case("--js", '?',
		   "option '--js' is ambiguous; possibilities: '--json' '--json-summary'",
		   ARGS("--js"));
	/* glibc lists the first match and every one that differs from it:
	 * both aliases here, as they differ from --verbose. */
	error_case("--=x: abbreviates them all", '?',
		   "option '--=x' is ambiguous; possibilities: '--verbose' '--dtype' '--timeout' '--pairs' '--pairs-out' '--pair-bytes' '--json' '--json-summary' '--colour' '--color'",
		   ARGS("--=x"));

	/* Exact beats prefix: --pairs is an option and a prefix of --pairs-out. */
	fine("--pairs (exact, also a prefix)", ARGS("--pairs"));
	fine("--json (exact, also a prefix)", ARGS("--json"));
	error_case("--pairs=1: the exact no_argument option", '?',
		   "option '--pairs' doesn't allow an argument", ARGS("--pairs=1"));
	error_case("--json=x: the exact no_argument option", '?',
		   "option '--json' doesn't allow an argument", ARGS("--json=x"));

	/* Unique abbreviations work. */
	fine("--verb", ARGS("--verb"));
	fine("--pairs-o DIR", ARGS("--pairs-o", "DIR"));
	fine("--time=5", ARGS("--time=5"));
	fine("--json-s=FILE", ARGS("--json-s=FILE"));
	/* Aliases (same has_arg, flag, val) are no ambiguity, as in glibc. */
	fine("--col (two aliases)", ARGS("--col"));
	error_case("--col=1: the first alias named", '?',
		   "option '--colour' doesn't allow an argument", ARGS("--col=1"));

	ok(de_opterr(NULL, 1, (char *const[]){ (char *)"prog", NULL }, 1, 'x', lo, '?') == -1,
	   "NULL err: -1, nothing written");
	return tap_done();
}
