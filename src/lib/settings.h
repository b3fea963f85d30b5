/* The plugin's settings: plugstack.conf arguments and the per-job
 * --dist-* options, parsed with errors that name the argument. */
#ifndef DISTENV_SETTINGS_H
#define DISTENV_SETTINGS_H

#include <stdint.h>

#include "err.h"

struct de_config {
	int enabled;       /* default=on|off, then --dist-env */
	int force;         /* force=1: overwrite values the user set */
	uint16_t port_min; /* port_min= */
	uint16_t port_max; /* port_max= */
	uint16_t port;     /* --dist-port=N, 0 when not given */
	int check;         /* check= / --dist-check: DE_CHECK_* */
	char check_path[256]; /* check_path=: the distenv-check binary */
};

enum { DE_CHECK_OFF, DE_CHECK_AUTO, DE_CHECK_SOCKET, DE_CHECK_NCCL };

/* --dist-check=auto|socket|nccl|off (no value: auto). */
int de_config_parse_check(struct de_config *c, const char *what,
			  const char *val, struct de_err *err);
const char *de_check_name(int check);

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
