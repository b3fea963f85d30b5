/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node's ephemeral port range and reserved ports, read from the
 * kernel (the parsing is port.c's, pure). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port.h"

/* A small /proc file's text into buf; -1 with err. */
static int read_text(const char *path, char *buf, size_t len, struct de_err *err)
{
	size_t n;
	FILE *f = fopen(path, "re");

	if (f == NULL)
		return de_errf(err, "%s: cannot read it: %s", path, strerror(errno));
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return 0;
}

int de_ephemeral_read(const char *path, uint16_t *lo, uint16_t *hi, struct de_err *err)
{
	char buf[64];

	if (read_text(path, buf, sizeof(buf), err))
		return -1;
	return de_ephemeral_parse(buf, lo, hi, err);
}

long de_reserved_read(const char *path, uint16_t lo, uint16_t hi, uint16_t *first,
		      struct de_err *err)
{
	/* The kernel prints ranges as N-M, but a list of single ports can
	 * be long: room for every port, one by one. */
	const size_t len = 65536 * 7;
	char *buf = malloc(len);
	long n;

	if (buf == NULL)
		return de_errf(err, "%s: out of memory", path);
	n = read_text(path, buf, len, err) ? -1 : de_ports_unreserved(buf, lo, hi, first, err);
	free(buf);
	return n;
}
