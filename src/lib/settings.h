/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The plugin's settings: plugstack.conf arguments and the per-job
 * --dist-* options, parsed with errors that name the argument. */
#ifndef DISTENV_SETTINGS_H
#define DISTENV_SETTINGS_H

#include <stdint.h>

#include "backend_id.h"
#include "err.h"

struct de_config {
	int enabled;       /* default=on|off, then --dist-env */
	int force;         /* force=1: overwrite values the user set */
	uint16_t port_min; /* port_min= */
	uint16_t port_max; /* port_max= */
	uint16_t port;     /* --dist-port=N, 0 when not given */
	int run_id;        /* run_id=1 / --dist-run-id: set TORCHELASTIC_RUN_ID */
	enum de_backend check; /* check= / --dist-check: DE_BACKEND_OFF when none */
	char check_path[256]; /* check_path=: the distenv-check binary */
};

/* --dist-check=auto|socket|nccl|off (no value: auto). */
int de_config_parse_check(struct de_config *c, const char *what,
			  const char *val, struct de_err *err);

/* The distenv-check command line both launchers (the plugin's
 * --dist-check, distenv-exec --check) run: path, --backend=NAME, then the
 * words of opts (DISTENV_CHECK_OPTS) split on blanks; the check's options
 * take no values with spaces, so there is no quoting. argv points into a
 * (and at path); it ends with NULL. Fails, naming DISTENV_CHECK_OPTS,
 * when opts is longer than the store or has too many words: a cut-off
 * option list would run a check the user did not ask for. */
#define DE_CHECK_ARGV_MAX 40
struct de_check_argv {
	char store[1024];
	char backend[32];
	char *argv[DE_CHECK_ARGV_MAX];
};
int de_check_argv(struct de_check_argv *a, const char *path, enum de_backend check,
		  const char *opts, struct de_err *err);

void de_config_init(struct de_config *c);

/* Parses plugstack.conf arguments (`key=value` words). Unknown keys,
 * malformed values, repeated keys and an empty port range are errors. */
int de_config_parse_args(struct de_config *c, int argc, char *const argv[],
			 struct de_err *err);

/* --dist-env=auto|off (also on/1 and 0). A missing value means auto. */
int de_config_parse_dist_env(struct de_config *c, const char *val,
			     struct de_err *err);

/* --dist-port=N, 1024..65535. */
int de_config_parse_dist_port(struct de_config *c, const char *val,
			      struct de_err *err);

#endif
