/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "settings.h"
#include "parse.h"
#include "port.h"

int de_check_argv(struct de_check_argv *a, const char *path, enum de_backend check,
		  const char *opts, struct de_err *err)
{
	size_t argc = 0, len = opts != NULL ? strlen(opts) : 0;
	char *save = NULL, *tok;

	if (len >= sizeof(a->store))
		return de_errf(err, "DISTENV_CHECK_OPTS is %zu characters long: expected at most %zu",
			       len, sizeof(a->store) - 1);
	memcpy(a->store, opts != NULL ? opts : "", len + 1);
	snprintf(a->backend, sizeof(a->backend), "--backend=%s", de_backend_name(check));
	a->argv[argc++] = (char *)path;
	a->argv[argc++] = a->backend;
	for (tok = strtok_r(a->store, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc + 1 >= DE_CHECK_ARGV_MAX)
			return de_errf(err, "DISTENV_CHECK_OPTS has more than %d words: expected at most %d options",
				       DE_CHECK_ARGV_MAX - 3, DE_CHECK_ARGV_MAX - 3);
		a->argv[argc++] = tok;
	}
	a->argv[argc] = NULL;
	return 0;
}

void de_config_init(struct de_config *c)
{
	c->enabled = 1;
	c->force = 0;
	c->port_min = DE_PORT_MIN_DEFAULT;
	c->port_max = DE_PORT_MAX_DEFAULT;
	c->port = 0;
	c->run_id = 0;
	c->check = DE_BACKEND_OFF;
	snprintf(c->check_path, sizeof(c->check_path), "%s", DE_CHECK_PATH_DEFAULT);
}

int de_config_parse_check(struct de_config *c, const char *what,
			  const char *val, struct de_err *err)
{
	if (val == NULL || *val == '\0') {
		c->check = DE_BACKEND_AUTO;
		return 0;
	}
	if (de_backend_parse(val, &c->check) == 0)
		return 0;
	return de_errf(err, "%s=%s: expected auto, socket, nccl or off", what, val);
}

#define ARGS_EXPECTED "default=on|off, port_min=N, port_max=N, force=0|1, check=off|auto|socket|nccl, check_path=PATH, run_id=0|1"

int de_config_parse_args(struct de_config *c, int argc, char *const argv[],
			 struct de_err *err)
{
	static const char *const keys[] = { "default", "port_min", "port_max",
					    "force", "check", "check_path", "run_id" };
	int seen[sizeof(keys) / sizeof(keys[0])] = { 0 };
	unsigned long min = c->port_min, max = c->port_max, v;
	struct de_err e2;
	int i;

	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t klen, k;
		char what[96];

		if (eq == NULL || eq == arg)
			return de_errf(err, "plugstack.conf argument \"%s\": expected key=value (%s)",
				       arg, ARGS_EXPECTED);
		klen = (size_t)(eq - arg);
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strlen(keys[k]) == klen &&
			    strncmp(arg, keys[k], klen) == 0)
				break;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return de_errf(err, "plugstack.conf argument \"%s\": unknown key (expected %s)",
				       arg, ARGS_EXPECTED);
		if (seen[k]++)
			return de_errf(err, "plugstack.conf argument \"%s\": %s given twice",
				       arg, keys[k]);
		snprintf(what, sizeof(what), "plugstack.conf argument %s",
			 keys[k]);
		switch (k) {
		case 0:
			if (strcasecmp(eq + 1, "on") == 0)
				c->enabled = 1;
			else if (strcasecmp(eq + 1, "off") == 0)
				c->enabled = 0;
			else
				return de_errf(err, "plugstack.conf argument \"%s\": expected default=on or default=off",
					       arg);
			break;
		case 1:
		case 2:
			if (de_parse_ulong(what, eq + 1, 1024, 65535, &v, err))
				return -1;
			if (k == 1)
				min = v;
			else
				max = v;
			break;
		case 3:
			if (de_parse_bool(what, eq + 1, &c->force, err))
				return -1;
			break;
		case 4:
			if (de_config_parse_check(c, "plugstack.conf argument check", eq + 1, err))
				return -1;
			break;
		case 5:
			if (eq[1] != '/' || strlen(eq + 1) >= sizeof(c->check_path))
				return de_errf(err, "plugstack.conf argument \"%s\": expected an absolute path",
					       arg);
			snprintf(c->check_path, sizeof(c->check_path), "%s", eq + 1);
			break;
		case 6:
			if (de_parse_bool(what, eq + 1, &c->run_id, err))
				return -1;
			break;
		}
	}
	if (de_port_range_check(min, max, &e2))
		return de_errf(err, "plugstack.conf arguments: %s", e2.msg);
	c->port_min = (uint16_t)min;
	c->port_max = (uint16_t)max;
	return 0;
}

int de_config_parse_dist_env(struct de_config *c, const char *val,
			     struct de_err *err)
{
	if (val == NULL || *val == '\0' || strcasecmp(val, "auto") == 0 ||
	    strcasecmp(val, "on") == 0 || strcmp(val, "1") == 0)
		c->enabled = 1;
	else if (strcasecmp(val, "off") == 0 || strcmp(val, "0") == 0)
		c->enabled = 0;
	else
		return de_errf(err, "--dist-env=%s: expected auto or off", val);
	return 0;
}

int de_config_parse_dist_port(struct de_config *c, const char *val,
			      struct de_err *err)
{
	unsigned long v;

	if (de_parse_ulong("--dist-port", val, 1024, 65535, &v, err))
		return -1;
	c->port = (uint16_t)v;
	return 0;
}
