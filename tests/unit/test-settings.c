/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <string.h>

#include "settings.h"
#include "tap.h"

static int parse(struct de_config *c, int argc, char *const *argv,
		 struct de_err *e)
{
	de_config_init(c);
	return de_config_parse_args(c, argc, argv, e);
}

int main(void)
{
	struct de_config c;
	struct de_err e;

	de_config_init(&c);
	ok(c.enabled == 1 && c.force == 0 && c.port == 0, "defaults: on, no force, no fixed port");
	is_int(c.port_min, 20000, "default port_min");
	is_int(c.port_max, 29399, "default port_max: below torchrun's own 29400 and 29500");

	{
		char *const a[] = { "default=off", "port_min=30000", "port_max=30099", "force=1" };

		ok(parse(&c, 4, a, &e) == 0, "all four arguments accepted");
		ok(c.enabled == 0 && c.force == 1 && c.port_min == 30000 && c.port_max == 30099,
		   "values applied");
	}
	{
		char *const a[] = { "default=on" };

		ok(parse(&c, 1, a, &e) == 0 && c.enabled == 1, "default=on");
	}
	{
		char *const a[] = { "port_min=abc" };

		ok(parse(&c, 1, a, &e) == -1, "malformed port_min rejected");
		is_str(e.msg, "plugstack.conf argument port_min=\"abc\": expected an integer in 1024..65535",
		       "error names the argument and the value");
	}
	{
		char *const a[] = { "bogus=1" };

		ok(parse(&c, 1, a, &e) == -1, "unknown key rejected");
		is_str(e.msg, "plugstack.conf argument \"bogus=1\": unknown key (expected default=on|off, port_min=N, port_max=N, force=0|1, check=off|auto|socket|nccl, check_path=PATH)",
		       "unknown key error lists the valid keys");
	}
	{
		char *const a[] = { "force" };

		ok(parse(&c, 1, a, &e) == -1, "bare word rejected");
	}
	{
		char *const a[] = { "default=maybe" };

		ok(parse(&c, 1, a, &e) == -1, "default=maybe rejected");
	}
	{
		char *const a[] = { "force=2" };

		ok(parse(&c, 1, a, &e) == -1, "force=2 rejected");
	}
	{
		char *const a[] = { "port_min=29000", "port_max=28000" };

		ok(parse(&c, 2, a, &e) == -1, "inverted range rejected");
		is_str(e.msg, "plugstack.conf arguments: port range 29000-28000: expected 1024 <= port_min <= port_max <= 65535",
		       "range error");
	}
	{
		char *const a[] = { "port_max=10000" };

		ok(parse(&c, 1, a, &e) == -1, "port_max below default port_min rejected");
	}
	{
		char *const a[] = { "force=1", "force=0" };

		ok(parse(&c, 2, a, &e) == -1, "repeated key rejected");
	}
	{
		char *const a[] = { "=1" };

		ok(parse(&c, 1, a, &e) == -1, "empty key rejected");
	}

	{
		char *const a[] = { "check=socket", "check_path=/opt/x/distenv-check" };

		ok(parse(&c, 2, a, &e) == 0 && c.check == DE_BACKEND_SOCKET &&
		   strcmp(c.check_path, "/opt/x/distenv-check") == 0, "check= and check_path= applied");
	}
	{
		char *const a[] = { "check=maybe" };

		ok(parse(&c, 1, a, &e) == -1, "check=maybe rejected");
		is_str(e.msg, "plugstack.conf argument check=maybe: expected auto, socket, nccl or off",
		       "check error");
	}
	{
		char *const a[] = { "check_path=relative/bin" };

		ok(parse(&c, 1, a, &e) == -1, "relative check_path rejected");
	}
	de_config_init(&c);
	ok(c.check == DE_BACKEND_OFF, "check off by default");
	ok(de_config_parse_check(&c, "--dist-check", NULL, &e) == 0 && c.check == DE_BACKEND_AUTO,
	   "--dist-check alone = auto");
	ok(de_config_parse_check(&c, "--dist-check", "nccl", &e) == 0 && c.check == DE_BACKEND_NCCL,
	   "--dist-check=nccl");
	de_config_init(&c);
	ok(de_config_parse_dist_env(&c, "off", &e) == 0 && c.enabled == 0, "--dist-env=off");
	ok(de_config_parse_dist_env(&c, "auto", &e) == 0 && c.enabled == 1, "--dist-env=auto");
	ok(de_config_parse_dist_env(&c, NULL, &e) == 0 && c.enabled == 1, "--dist-env alone = auto");
	ok(de_config_parse_dist_env(&c, "sometimes", &e) == -1, "--dist-env=sometimes rejected");
	is_str(e.msg, "--dist-env=sometimes: expected auto or off", "--dist-env error");
	ok(de_config_parse_dist_port(&c, "23456", &e) == 0 && c.port == 23456, "--dist-port=23456");
	ok(de_config_parse_dist_port(&c, "80", &e) == -1, "--dist-port=80 rejected");
	is_str(e.msg, "--dist-port=80: out of range (expected 1024..65535)", "--dist-port error");
	ok(de_config_parse_dist_port(&c, "x", &e) == -1, "--dist-port=x rejected");
	{
		struct de_check_argv a;
		char many[400] = "", big[1100];
		int i;

		ok(de_check_argv(&a, "/usr/bin/distenv-check", DE_BACKEND_SOCKET, NULL, &e) == 0 &&
		   strcmp(a.argv[0], "/usr/bin/distenv-check") == 0 &&
		   strcmp(a.argv[1], "--backend=socket") == 0 && a.argv[2] == NULL,
		   "check argv: path and backend, no DISTENV_CHECK_OPTS");
		ok(de_check_argv(&a, "/x", DE_BACKEND_AUTO, " --timeout=20\t --quiet  ", &e) == 0 &&
		   strcmp(a.argv[1], "--backend=auto") == 0 && strcmp(a.argv[2], "--timeout=20") == 0 &&
		   strcmp(a.argv[3], "--quiet") == 0 && a.argv[4] == NULL,
		   "check argv: options split on blanks and tabs, empty words dropped");
		ok(de_check_argv(&a, "/x", DE_BACKEND_NCCL, "", &e) == 0 && a.argv[2] == NULL,
		   "check argv: empty DISTENV_CHECK_OPTS");
		for (i = 0; i < DE_CHECK_ARGV_MAX - 3; i++)
			strcat(many, "-q ");
		ok(de_check_argv(&a, "/x", DE_BACKEND_AUTO, many, &e) == 0 &&
		   a.argv[DE_CHECK_ARGV_MAX - 2] != NULL && a.argv[DE_CHECK_ARGV_MAX - 1] == NULL,
		   "check argv: the most words that fit");
		strcat(many, "-q");
		ok(de_check_argv(&a, "/x", DE_BACKEND_AUTO, many, &e) == -1,
		   "check argv: one word too many is refused, not cut off");
		is_str(e.msg, "DISTENV_CHECK_OPTS has more than 37 words: expected at most 37 options",
		       "check argv: too many words named");
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		ok(de_check_argv(&a, "/x", DE_BACKEND_AUTO, big, &e) == -1 &&
		   strstr(e.msg, "DISTENV_CHECK_OPTS is 1099 characters long") != NULL,
		   "check argv: too long is refused, naming the variable");
	}
	return tap_done();
}
