/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>

#include "exclude.h"
#include "hostlist.h"

int de_exclude_hosts(const char *const *names, size_t n, char *hosts, size_t len)
{
	if (len > 0)
		hosts[0] = '\0';
	if (n == 0 || len == 0)
		return -1;
	if (de_hostlist_compress(names, n, hosts, len) != 0) {
		hosts[0] = '\0';
		return -1;
	}
	return 0;
}

void de_exclude_hint(const char *hosts, int sure, char *out, size_t len)
{
	if (len == 0)
		return;
	if (hosts == NULL || hosts[0] == '\0')
		out[0] = '\0';
	else if (sure)
		snprintf(out, len, "resubmit with --exclude=%s", hosts);
	else
		snprintf(out, len, "which of %s is at fault is not known: --exclude=%s leaves them all out",
			 hosts, hosts);
}
