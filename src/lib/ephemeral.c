/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node's ephemeral port range, read from the kernel (the parsing is
 * port.c's, pure). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "port.h"

int de_ephemeral_read(const char *path, uint16_t *lo, uint16_t *hi, struct de_err *err)
{
	char buf[64];
	size_t n;
	FILE *f = fopen(path, "re");

	if (f == NULL)
		return de_errf(err, "%s: cannot read it: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return de_ephemeral_parse(buf, lo, hi, err);
}
