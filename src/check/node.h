/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --node (node.c): this node alone, one line, and with
 * --drain its verdict told to Slurm. */
#ifndef DISTENV_CHECK_NODE_H
#define DISTENV_CHECK_NODE_H

#include "check.h"

/* The node check, once the options are read: prints its line and
 * returns the exit status (0 passed, 1 not, 2 a usage error). */
int de_node_mode(struct de_check *c);

#endif
