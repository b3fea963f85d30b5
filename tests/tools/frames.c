/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tests' frame builder (frames.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frames.h"
#include "parse.h"
#include "wire.h"

void frames_sample_hello(struct de_hello *h)
{
	uint32_t i;

	memset(h, 0, sizeof(*h));
	snprintf(h->token, sizeof(h->token), "slurm:4242.0");
	h->rank = 1;
	h->world = 2;
	h->local_rank = 0;
	h->local_world = 1;
	h->node_rank = 1;
	h->pid = 31337;
	h->backend = 1;
	h->port = 29517;
	h->probe_port = 29518;
	snprintf(h->host, sizeof(h->host), "node2");
	snprintf(h->addr, sizeof(h->addr), "10.77.0.12");
	snprintf(h->iface, sizeof(h->iface), "eth0");
	snprintf(h->params, sizeof(h->params), "check float32 count=262147");
	for (i = 0; i < DE_NONCE_BYTES; i++)
		h->nonce[i] = (uint8_t)(i * 37 + 1);
}

void frames_sample_data(struct de_data_hello *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->token, sizeof(d->token), "slurm:4242.0");
	d->rank = 2;
	d->purpose = DE_PURPOSE_RING;
}

static int hex_bytes(const char *key, const char *hex, uint8_t *out, size_t n, struct de_err *err)
{
	size_t i;

	if (strlen(hex) != 2 * n)
		return de_errf(err, "%s=%s: expected %zu hex digits", key, hex, 2 * n);
	for (i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return de_errf(err, "%s=%s: expected hex digits", key, hex);
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int str_field(const char *key, const char *val, char *out, size_t max, struct de_err *err)
{
	if (strlen(val) > max)
		return de_errf(err, "%s: %zu bytes (at most %zu)", key, strlen(val), max);
	snprintf(out, max + 1, "%s", val);
	return 0;
}

static int num_field(const char *key, const char *val, unsigned long max, uint32_t *out,
		     struct de_err *err)
{
	unsigned long v;

	if (de_parse_ulong(key, val, 0, max, &v, err))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int frames_hello_set(struct de_hello *h, const char *key, const char *val, struct de_err *err)
{
	static const struct {
		const char *name;
		size_t off;
		unsigned long max; /* 0: a string of max(len) */
		size_t len;
	} f[] = {
#define N(x, m) { #x, offsetof(struct de_hello, x), m, sizeof(((struct de_hello *)0)->x) }
#define S(x, m) { #x, offsetof(struct de_hello, x), 0, m }
		N(rank, 0xffffffffu), N(world, 0xffffffffu), N(local_rank, 0xffffffffu),
		N(local_world, 0xffffffffu), N(node_rank, 0xffffffffu), N(pid, 0xffffffffu),
		N(backend, 0xff), N(port, 0xffff), N(probe_port, 0xffff), N(failed, 0xffff),
		S(token, DE_PROTO_MAX_TOKEN), S(host, DE_PROTO_MAX_STR), S(addr, DE_PROTO_MAX_STR),
		S(iface, DE_PROTO_MAX_STR), S(params, DE_PROTO_MAX_STR), S(why, DE_PROTO_MAX_WHY),
		S(auth, DE_PROTO_MAX_AUTH),
#undef N
#undef S
	};
	size_t i;

	if (strcmp(key, "nonce") == 0)
		return hex_bytes(key, val, h->nonce, DE_NONCE_BYTES, err);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char *p = (char *)h + f[i].off;
		uint32_t v;

		if (strcmp(key, f[i].name) != 0)
			continue;
		if (f[i].max == 0)
			return str_field(key, val, p, f[i].len, err);
		if (num_field(key, val, f[i].max, &v, err))
			return -1;
		if (f[i].len == 1)
			*(uint8_t *)p = (uint8_t)v;
		else if (f[i].len == 2)
			*(uint16_t *)(void *)p = (uint16_t)v;
		else
			*(uint32_t *)(void *)p = v;
		return 0;
	}
	return de_errf(err, "HELLO has no field %s", key);
}

int frames_data_set(struct de_data_hello *d, const char *key, const char *val, struct de_err *err)
{
	uint32_t v;

	if (strcmp(key, "token") == 0)
		return str_field(key, val, d->token, DE_PROTO_MAX_TOKEN, err);
	if (strcmp(key, "rank") == 0)
		return num_field(key, val, 0xffffffffu, &d->rank, err);
	if (strcmp(key, "mac") == 0)
		return hex_bytes(key, val, d->mac, DE_MAC_BYTES, err);
	if (strcmp(key, "purpose") != 0)
		return de_errf(err, "DATA has no field %s", key);
	if (strcasecmp(val, "ring") == 0)
		v = DE_PURPOSE_RING;
	else if (strcasecmp(val, "bulk") == 0)
		v = DE_PURPOSE_BULK;
	else if (strcasecmp(val, "pair") == 0)
		v = DE_PURPOSE_PAIR;
	else if (num_field(key, val, 0xff, &v, err))
		return -1;
	d->purpose = (uint8_t)v;
	return 0;
}

void frames_header(struct de_buf *b, uint16_t version, uint16_t type, uint32_t len)
{
	de_w_put_u32(b, DE_PROTO_MAGIC);
	de_w_put_u16(b, version);
	de_w_put_u16(b, type);
	de_w_put_u32(b, len);
}

int frames_raw(struct de_buf *b, uint16_t type, const char *hex, struct de_err *err)
{
	size_t n = strlen(hex) / 2;
	uint8_t *p;

	if (strlen(hex) % 2)
		return de_errf(err, "payload %s: an odd number of hex digits", hex);
	p = malloc(n ? n : 1);
	if (p == NULL)
		return de_errf(err, "out of memory");
	if (hex_bytes("payload", hex, p, n, err)) {
		free(p);
		return -1;
	}
	frames_header(b, DE_PROTO_VERSION, type, (uint32_t)n);
	de_w_put(b, p, n);
	free(p);
	return b->oom ? de_errf(err, "out of memory") : 0;
}

int frames_msg_type(const char *s)
{
	unsigned long v;
	int t;

	for (t = DE_MSG_HELLO; t <= DE_MSG_CHALLENGE; t++)
		if (strcasecmp(s, de_msg_name((enum de_msg)t)) == 0)
			return t;
	if (de_parse_ulong("type", s, 0, 0xffff, &v, NULL) == 0)
		return (int)v;
	return -1;
}
