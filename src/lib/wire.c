/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bytes under every message (wire.h). */
#include "config.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

void de_buf_free(struct de_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void de_w_put(struct de_buf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (d == NULL) {
			b->oom = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void de_w_put_u8(struct de_buf *b, uint8_t v)
{
	de_w_put(b, &v, 1);
}

void de_w_put_u16(struct de_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	de_w_put(b, x, 2);
}

void de_w_put_u32(struct de_buf *b, uint32_t v)
{
	uint8_t x[4];

	de_w_wr32(x, v);
	de_w_put(b, x, 4);
}

void de_w_put_u64(struct de_buf *b, uint64_t v)
{
	uint8_t x[8];

	de_w_wr64(x, v);
	de_w_put(b, x, 8);
}

int de_w_put_str(struct de_buf *b, const char *what, const char *s,
		   size_t max, struct de_err *err)
{
	size_t n = strlen(s);

	if (n > max)
		return de_errf(err, "%s \"%.40s...\" is %zu bytes (at most %zu)",
			       what, s, n, max);
	de_w_put_u16(b, (uint16_t)n);
	de_w_put(b, s, n);
	return 0;
}

void de_w_wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void de_w_wr64(uint8_t *p, uint64_t v)
{
	de_w_wr32(p, (uint32_t)(v >> 32));
	de_w_wr32(p + 4, (uint32_t)v);
}

uint64_t de_w_rd64(const uint8_t *p)
{
	return (uint64_t)de_w_rd32(p) << 32 | de_w_rd32(p + 4);
}

uint32_t de_w_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

void de_w_get(struct de_rd *r, void *out, size_t n)
{
	if (r->bad || r->left < n) {
		r->bad = 1;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
}

uint8_t de_w_get_u8(struct de_rd *r)
{
	uint8_t v;

	de_w_get(r, &v, 1);
	return v;
}

uint16_t de_w_get_u16(struct de_rd *r)
{
	uint8_t x[2];

	de_w_get(r, x, 2);
	return (uint16_t)(x[0] << 8 | x[1]);
}

uint32_t de_w_get_u32(struct de_rd *r)
{
	uint8_t x[4];

	de_w_get(r, x, 4);
	return de_w_rd32(x);
}

uint64_t de_w_get_u64(struct de_rd *r)
{
	uint64_t hi = de_w_get_u32(r);

	return hi << 32 | de_w_get_u32(r);
}

void de_w_get_str(struct de_rd *r, char *out, size_t max)
{
	uint16_t n = de_w_get_u16(r);

	if (r->bad || n > max || n > r->left || memchr(r->p, '\0', n)) {
		r->bad = 1;
		out[0] = '\0';
		return;
	}
	memcpy(out, r->p, n);
	out[n] = '\0';
	r->p += n;
	r->left -= n;
}
