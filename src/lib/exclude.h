/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The resubmit hint: the nodes a verdict blames, as the --exclude= option
 * to give srun or sbatch, worded once for distenv-check's failure line,
 * its JSON and the pair matrix. Pure. */
#ifndef DISTENV_EXCLUDE_H
#define DISTENV_EXCLUDE_H

#include <stddef.h>

/* names[0..n) (duplicates allowed) as one hostlist expression
 * ("node[3,7]"), into hosts. -1 when it does not fit len whole (a cut
 * list would exclude too little: no hint then) or out of memory, or n is
 * 0. */
int de_exclude_hosts(const char *const *names, size_t n, char *hosts, size_t len);

/* The words the failure line ends with. sure: "resubmit with
 * --exclude=node3"; not sure (both ends of a failing connection): "which
 * of node[1-2] is at fault is not known: --exclude=node[1-2] leaves them
 * all out". "" when hosts is empty. */
void de_exclude_hint(const char *hosts, int sure, char *out, size_t len);

#endif
