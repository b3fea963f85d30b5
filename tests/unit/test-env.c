/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stddef.h>

#include "env.h"
#include "tap.h"

int main(void)
{
	const char *env[] = { "RANKX=9", "RANK=3", "EMPTY=", "A=b=c", "NOEQUALS", NULL };
	const char *none[] = { NULL };

	is_str(de_env_get(env, "RANK"), "3", "RANK found after RANKX (whole name only)");
	is_str(de_env_get(env, "RANKX"), "9", "RANKX found");
	is_str(de_env_get(env, "RAN"), NULL, "a prefix of a name is not that name");
	is_str(de_env_get(env, "EMPTY"), "", "set but empty: \"\", not NULL");
	is_str(de_env_get(env, "A"), "b=c", "the value keeps later '='");
	is_str(de_env_get(env, "NOEQUALS"), NULL, "an entry without '=' is no variable");
	is_str(de_env_get(none, "RANK"), NULL, "empty environment");
	is_str(de_env_get(NULL, "RANK"), NULL, "NULL environment: nothing set");
	return tap_done();
}
