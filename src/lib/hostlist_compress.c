/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Host names to a Slurm ranged expression (see hostlist.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

struct hname {
	const char *name;
	size_t plen;         /* prefix length: all but the trailing digits */
	unsigned long num;
	int has_num;
	int width;           /* digits when zero-padded, else 0 (natural) */
};

static int cmp(const void *pa, const void *pb)
{
	const struct hname *a = pa, *b = pb;
	size_t m = a->plen < b->plen ? a->plen : b->plen;
	int c = memcmp(a->name, b->name, m);

	if (c != 0)
		return c;
	if (a->plen != b->plen)
		return a->plen < b->plen ? -1 : 1;
	if (a->has_num != b->has_num)
		return a->has_num - b->has_num;
	if (a->width != b->width)
		return a->width - b->width;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	return 0;
}

static int same_group(const struct hname *a, const struct hname *b)
{
	return a->plen == b->plen && memcmp(a->name, b->name, a->plen) == 0 &&
	       a->has_num && b->has_num && a->width == b->width;
}

static void split(const char *s, struct hname *h)
{
	size_t len = strlen(s), i = len;

	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	memset(h, 0, sizeof(*h));
	h->name = s;
	h->plen = i;
	h->has_num = i < len && len - i <= 18;
	if (!h->has_num) {
		h->plen = len;
		return;
	}
	h->num = strtoul(s + i, NULL, 10);
	h->width = (len - i > 1 && s[i] == '0') ? (int)(len - i) : 0;
}

/* Output with the room left; full once something did not fit. */
struct out {
	char *p;
	size_t len, off;
	int full;
};

static void put_n(struct out *o, const char *s, size_t n)
{
	if (o->full)
		return;
	if (o->off + n + 1 > o->len) {
		o->full = 1;
		return;
	}
	memcpy(o->p + o->off, s, n);
	o->off += n;
	o->p[o->off] = '\0';
}

static void put_range(struct out *o, unsigned long a, unsigned long b, int w)
{
	char tmp[64];
	int n = a == b ? snprintf(tmp, sizeof(tmp), "%0*lu", w, a)
		       : snprintf(tmp, sizeof(tmp), "%0*lu-%0*lu", w, a, w, b);

	put_n(o, tmp, (size_t)n);
}

int de_hostlist_compress(const char *const *hosts, size_t n, char *out, size_t len)
{
	struct hname *h;
	struct out o = { out, len, 0, 0 };
	size_t i, j, k, groups = 0, done = 0;
	char more[48];

	if (len == 0)
		return 1;
	out[0] = '\0';
	if (n == 0)
		return 0;
	h = malloc(n * sizeof(*h));
	if (h == NULL)
		return -1;
	for (i = 0; i < n; i++)
		split(hosts[i], &h[i]);
	qsort(h, n, sizeof(*h), cmp);
	/* Keep room for the "...(N more)" tail while writing. */
	o.len = len > sizeof(more) ? len - sizeof(more) : 0;
	for (i = 0; i < n && !o.full; i = j) {
		size_t before = o.off;

		j = i + 1;
		if (!h[i].has_num) {
			while (j < n && cmp(&h[i], &h[j]) == 0)
				j++; /* duplicates */
			put_n(&o, ",", groups ? 1 : 0);
			put_n(&o, h[i].name, h[i].plen);
		} else {
			size_t distinct = 1;

			while (j < n && same_group(&h[i], &h[j])) {
				if (h[j].num != h[j - 1].num)
					distinct++;
				j++;
			}
			put_n(&o, ",", groups ? 1 : 0);
			put_n(&o, h[i].name, h[i].plen);
			if (distinct > 1)
				put_n(&o, "[", 1);
			for (k = i; k < j && !o.full;) {
				size_t e = k + 1;

				/* A run of consecutive numbers (duplicates folded in). */
				while (e < j && (h[e].num == h[e - 1].num || h[e].num == h[e - 1].num + 1))
					e++;
				if (k > i)
					put_n(&o, ",", 1);
				put_range(&o, h[k].num, h[e - 1].num, h[i].width);
				k = e;
			}
			if (distinct > 1)
				put_n(&o, "]", 1);
		}
		if (o.full) {
			o.off = before; /* drop the group that did not fit */
			out[o.off] = '\0';
			break;
		}
		groups++;
		done = j;
	}
	if (done < n) {
		size_t left = 0;

		/* Hosts not shown, counted without duplicates. */
		for (k = done; k < n; k++)
			if (k == done || cmp(&h[k - 1], &h[k]) != 0)
				left++;
		snprintf(more, sizeof(more), "%s...(%zu more)", o.off ? "," : "", left);
		snprintf(out + o.off, len - o.off, "%s", more);
		free(h);
		return 1;
	}
	free(h);
	return 0;
}
