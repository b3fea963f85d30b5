/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading a variable from an environment array, for the de_getenv_fn
 * callbacks of layout.c: the plugin reads the task's environment
 * (S_JOB_ENV), distenv-exec its own (environ), the tests their arrays. */
#ifndef DISTENV_ENV_H
#define DISTENV_ENV_H

/* envp is a NULL-terminated "NAME=VALUE" array (char **), or NULL for an
 * empty environment. The value of name, or NULL when it is not set. */
const char *de_env_get(void *envp, const char *name);

#endif
