/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <string.h>

#include "port.h"

int de_port_range_check(unsigned long min, unsigned long max,
			struct de_err *err)
{
	if (min < 1024 || max > 65535 || min > max)
		return de_errf(err, "port range %lu-%lu: expected 1024 <= port_min <= port_max <= 65535",
			       min, max);
	return 0;
}

static uint32_t step_slot(uint32_t step_id, uint32_t range)
{
	/* Special steps count down from the top of the range. */
	if (step_id >= DE_STEP_SPECIAL_MIN)
		return range - 1 - ((0xFFFFFFFFu - step_id) % range);
	return step_id % range;
}

uint16_t de_port_for(uint32_t job_id, uint32_t step_id, uint16_t min,
		     uint16_t max)
{
	uint32_t range = (uint32_t)max - min + 1;
	/* Knuth's multiplicative hash, then a final mix: consecutive job ids
	 * (arrays, bursts of submissions) land far apart. */
	uint32_t h = job_id * 2654435761u;

	h ^= h >> 16;
	h *= 0x45d9f3bu;
	h ^= h >> 16;
	return (uint16_t)(min + (h % range + step_slot(step_id, range)) % range);
}

/* One decimal port 1..65535 at *p; advances *p. */
static int read_port(const char **p, unsigned long *out)
{
	unsigned long v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9' && digits < 6) {
		v = v * 10 + (unsigned long)(*(*p)++ - '0');
		digits++;
	}
	if (digits == 0 || v == 0 || v > 65535)
		return -1;
	*out = v;
	return 0;
}

int de_resv_ports_first(const char *name, const char *val, uint16_t *port,
			struct de_err *err)
{
	const char *p = val;
	unsigned long first = 0, lo, hi;

	if (val == NULL)
		return de_errf(err, "%s is not set", name);
	if (*val == '\0')
		return de_errf(err, "%s is empty (expected Slurm's reserved ports, e.g. \"12001-12002\")",
			       name);
	for (;;) {
		if (read_port(&p, &lo))
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (read_port(&p, &hi) || hi < lo)
				goto bad;
		}
		if (first == 0)
			first = lo;
		if (*p == '\0')
			break;
		if (*p != ',' || p[1] == '\0')
			goto bad;
		p++;
	}
	*port = (uint16_t)first;
	return 0;
bad:
	return de_errf(err, "%s=\"%s\": malformed at position %zu (expected ports 1..65535 as N or N-M, comma-separated, e.g. \"12001-12002\")",
		       name, val, (size_t)(p - val));
}

int de_ephemeral_parse(const char *text, uint16_t *lo, uint16_t *hi,
		       struct de_err *err)
{
	unsigned long a, b;
	const char *p = text;

	if (text == NULL)
		return de_errf(err, "ip_local_port_range: no text");
	if (read_port(&p, &a) || (*p != '\t' && *p != ' '))
		goto bad;
	while (*p == '\t' || *p == ' ')
		p++;
	if (read_port(&p, &b) || b < a)
		goto bad;
	if (*p == '\n')
		p++;
	if (*p != '\0')
		goto bad;
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
bad:
	return de_errf(err, "ip_local_port_range \"%.40s\": expected two ports, LOW and HIGH", text);
}

int de_port_ranges_overlap(uint16_t a1, uint16_t a2, uint16_t b1, uint16_t b2)
{
	return a1 <= b2 && b1 <= a2;
}

int de_port_range_parse(const char *what, const char *s, uint16_t *lo, uint16_t *hi,
			struct de_err *err)
{
	const char *p = s;
	unsigned long a, b;

	if (read_port(&p, &a) || *p != '-')
		goto bad;
	p++;
	if (read_port(&p, &b) || *p != '\0')
		goto bad;
	if (a < 1024 || a > b)
		return de_errf(err, "%s \"%s\": expected 1024 <= LO <= HI <= 65535", what, s);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
bad:
	return de_errf(err, "%s \"%s\": expected LO-HI, e.g. 20000-29399", what, s);
}

long de_ports_unreserved(const char *text, uint16_t lo, uint16_t hi, uint16_t *first,
			 struct de_err *err)
{
	/* One bit per port: the list may name ranges in any order. */
	unsigned char taken[65536 / 8];
	const char *p = text;
	unsigned long a, b, port;
	long n = 0;

	if (text == NULL)
		return de_errf(err, "ip_local_reserved_ports: no text");
	memset(taken, 0, sizeof(taken));
	while (*p != '\0' && *p != '\n') {
		if (read_port(&p, &a))
			goto bad;
		b = a;
		if (*p == '-') {
			p++;
			if (read_port(&p, &b) || b < a)
				goto bad;
		}
		for (port = a; port <= b; port++)
			taken[port / 8] |= (unsigned char)(1u << (port % 8));
		if (*p == ',')
			p++;
		else if (*p != '\0' && *p != '\n')
			goto bad;
	}
	if (*p == '\n' && p[1] != '\0')
		goto bad;
	for (port = lo; port <= hi; port++) {
		if (taken[port / 8] & (1u << (port % 8)))
			continue;
		if (n++ == 0 && first != NULL)
			*first = (uint16_t)port;
	}
	return n;
bad:
	n = (long)strcspn(text, "\n");
	return de_errf(err, "ip_local_reserved_ports \"%.*s\": expected ports as N or N-M, comma-separated",
		       (int)(n > 60 ? 60 : n), text);
}
