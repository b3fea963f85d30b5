/* SPDX-License-Identifier: GPL-2.0-or-later */
/* exclude.c: the resubmit hint's hosts and words. */
#include "config.h"

#include <string.h>

#include "exclude.h"
#include "tap.h"

int main(void)
{
	const char *two[] = { "node7", "node3", "node7" };
	const char *pad[] = { "gpu002", "gpu001", "gpu003", "login1" };
	const char *one[] = { "node3" };
	char hosts[128], tiny[24], hint[256];

	ok(de_exclude_hosts(two, 3, hosts, sizeof(hosts)) == 0, "hosts: compressed");
	is_str(hosts, "node[3,7]", "... sorted, each once");
	ok(de_exclude_hosts(pad, 4, hosts, sizeof(hosts)) == 0, "zero-padded hosts and another name");
	is_str(hosts, "gpu[001-003],login1", "... as Slurm writes them");
	ok(de_exclude_hosts(one, 0, hosts, sizeof(hosts)) == -1 && hosts[0] == '\0', "no host: no hint");
	ok(de_exclude_hosts(pad, 4, tiny, sizeof(tiny)) == -1 && tiny[0] == '\0',
	   "a list that does not fit: no hint at all (a cut list would exclude too little)");

	de_exclude_hint("node3", 1, hint, sizeof(hint));
	is_str(hint, "resubmit with --exclude=node3", "sure: the option to resubmit with");
	de_exclude_hint("node[1-2]", 0, hint, sizeof(hint));
	is_str(hint, "which of node[1-2] is at fault is not known: --exclude=node[1-2] leaves them all out",
	       "not sure: says so, and gives them all");
	de_exclude_hint("", 1, hint, sizeof(hint));
	is_str(hint, "", "no hosts: no words");
	return tap_done();
}
