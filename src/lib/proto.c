/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "wire.h"

/* Starts a frame; returns the offset of the length field to patch. */
static size_t begin(struct de_buf *b, enum de_msg type)
{
	size_t at;

	de_w_put_u32(b, DE_PROTO_MAGIC);
	de_w_put_u16(b, DE_PROTO_VERSION);
	de_w_put_u16(b, (uint16_t)type);
	at = b->len;
	de_w_put_u32(b, 0);
	return at;
}

static int finish(struct de_buf *b, size_t at, struct de_err *err)
{
	size_t n;

	if (b->oom)
		return de_errf(err, "out of memory encoding a frame");
	n = b->len - at - 4;
	de_w_wr32(b->data + at, (uint32_t)n);
	return 0;
}

int de_enc_hello(struct de_buf *b, const struct de_hello *h, struct de_err *err)
{
	size_t start = b->len, at = begin(b, DE_MSG_HELLO);

	if (de_w_put_str(b, "token", h->token, DE_PROTO_MAX_TOKEN, err))
		goto fail;
	de_w_put_u32(b, h->rank);
	de_w_put_u32(b, h->world);
	de_w_put_u32(b, h->local_rank);
	de_w_put_u32(b, h->local_world);
	de_w_put_u32(b, h->node_rank);
	de_w_put_u32(b, h->pid);
	de_w_put_u8(b, h->backend);
	de_w_put_u16(b, h->port);
	de_w_put_u16(b, h->probe_port);
	if (de_w_put_str(b, "host name", h->host, DE_PROTO_MAX_STR, err) ||
	    de_w_put_str(b, "address", h->addr, DE_PROTO_MAX_STR, err) ||
	    de_w_put_str(b, "interface", h->iface, DE_PROTO_MAX_STR, err) ||
	    de_w_put_str(b, "parameters", h->params, DE_PROTO_MAX_STR, err))
		goto fail;
	de_w_put_u16(b, h->failed);
	if (de_w_put_str(b, "failure", h->why, DE_PROTO_MAX_WHY, err))
		goto fail;
	de_w_put(b, h->nonce, DE_NONCE_BYTES);
	if (de_w_put_str(b, "authenticator", h->auth, DE_PROTO_MAX_AUTH, err))
		goto fail;
	return finish(b, at, err);
fail:
	b->len = start;
	return -1;
}

int de_enc_peers(struct de_buf *b, const struct de_peers *p, struct de_err *err)
{
	size_t start = b->len, at = begin(b, DE_MSG_PEERS);
	uint32_t i;

	if (p->world == 0 || p->world > DE_PROTO_MAX_WORLD) {
		b->len = start;
		return de_errf(err, "world size %u outside 1..%u", p->world,
			       DE_PROTO_MAX_WORLD);
	}
	de_w_put_u32(b, p->world);
	for (i = 0; i < p->world; i++) {
		de_w_put_u32(b, p->peer[i].rank);
		de_w_put_u32(b, p->peer[i].local_rank);
		de_w_put_u32(b, p->peer[i].node);
		de_w_put_u16(b, p->peer[i].port);
		de_w_put_u16(b, p->peer[i].probe_port);
		if (de_w_put_str(b, "host name", p->peer[i].host, DE_PROTO_MAX_STR, err) ||
		    de_w_put_str(b, "address", p->peer[i].addr, DE_PROTO_MAX_STR, err)) {
			b->len = start;
			return -1;
		}
	}
	if (p->nccl_id_len != 0 && p->nccl_id_len != DE_NCCL_ID_BYTES) {
		b->len = start;
		return de_errf(err, "NCCL id of %u bytes (expected %u)",
			       p->nccl_id_len, DE_NCCL_ID_BYTES);
	}
	de_w_put_u16(b, p->nccl_id_len);
	de_w_put(b, p->nccl_id, p->nccl_id_len);
	if (de_w_put_str(b, "authenticator", p->auth, DE_PROTO_MAX_AUTH, err)) {
		b->len = start;
		return -1;
	}
	if (b->len - at - 4 > DE_PROTO_MAX_PEERS) {
		b->len = start;
		return de_errf(err, "peer table of %u ranks exceeds %u bytes",
			       p->world, DE_PROTO_MAX_PEERS);
	}
	return finish(b, at, err);
}

int de_enc_text(struct de_buf *b, enum de_msg type, const struct de_text *t,
		struct de_err *err)
{
	size_t start = b->len, at = begin(b, type);

	de_w_put_u16(b, t->code);
	de_w_put_u32(b, t->rank);
	de_w_put_u64(b, t->value);
	if (de_w_put_str(b, "message", t->text, DE_PROTO_MAX_TEXT, err) ||
	    de_w_put_rec(b, type, t, err)) {
		b->len = start;
		return -1;
	}
	return finish(b, at, err);
}

int de_enc_data_hello(struct de_buf *b, const struct de_data_hello *d,
		      struct de_err *err)
{
	size_t start = b->len, at = begin(b, DE_MSG_DATA);

	if (de_w_put_str(b, "token", d->token, DE_PROTO_MAX_TOKEN, err)) {
		b->len = start;
		return -1;
	}
	de_w_put_u32(b, d->rank);
	de_w_put_u8(b, d->purpose);
	de_w_put(b, d->mac, DE_MAC_BYTES);
	return finish(b, at, err);
}

int de_enc_challenge(struct de_buf *b, const uint8_t nonce[DE_NONCE_BYTES],
		     struct de_err *err)
{
	size_t at = begin(b, DE_MSG_CHALLENGE);

	de_w_put(b, nonce, DE_NONCE_BYTES);
	return finish(b, at, err);
}

int de_frame_check(const uint8_t *buf, size_t have, uint32_t max_payload,
		   enum de_msg *type, size_t *frame_len, struct de_err *err)
{
	static const uint8_t magic[4] = { 'D', 'E', 'N', 'V' };
	uint32_t len;
	uint16_t ver, t;
	size_t i;

	/* Reject garbage as early as its first wrong byte. */
	for (i = 0; i < 4 && i < have; i++)
		if (buf[i] != magic[i])
			return de_errf(err, "not a distenv frame (byte %zu is 0x%02x)",
				       i, buf[i]);
	if (have < DE_PROTO_HDR)
		return 0;
	ver = (uint16_t)(buf[4] << 8 | buf[5]);
	t = (uint16_t)(buf[6] << 8 | buf[7]);
	len = de_w_rd32(buf + 8);
	if (ver != DE_PROTO_VERSION)
		return de_errf(err, "protocol version %u (this distenv-check speaks %u: mixed distenv versions?)",
			       ver, DE_PROTO_VERSION);
	if (t < DE_MSG_HELLO || t > DE_MSG_CHALLENGE)
		return de_errf(err, "unknown frame type %u", t);
	if (len > max_payload)
		return de_errf(err, "%s frame of %u bytes exceeds the limit of %u",
			       de_msg_name((enum de_msg)t), len, max_payload);
	if (have < DE_PROTO_HDR + (size_t)len)
		return 0;
	*type = (enum de_msg)t;
	*frame_len = DE_PROTO_HDR + (size_t)len;
	return 1;
}

static int open_frame(const uint8_t *frame, size_t len, enum de_msg want,
		      uint32_t max, struct de_rd *r, struct de_err *err)
{
	enum de_msg type;
	size_t flen;
	int rc = de_frame_check(frame, len, max, &type, &flen, err);

	if (rc < 0)
		return -1;
	if (rc == 0 || flen != len)
		return de_errf(err, "truncated frame (%zu bytes)", len);
	if (type != want)
		return de_errf(err, "expected a %s frame, got %s",
			       de_msg_name(want), de_msg_name(type));
	r->p = frame + DE_PROTO_HDR;
	r->left = len - DE_PROTO_HDR;
	r->bad = 0;
	return 0;
}

static int close_frame(struct de_rd *r, enum de_msg type, struct de_err *err)
{
	if (r->bad)
		return de_errf(err, "malformed %s frame (a field runs past the end or is too long)",
			       de_msg_name(type));
	if (r->left != 0)
		return de_errf(err, "%s frame has %zu trailing bytes",
			       de_msg_name(type), r->left);
	return 0;
}

int de_dec_hello(const uint8_t *frame, size_t len, struct de_hello *h,
		 struct de_err *err)
{
	struct de_rd r;

	memset(h, 0, sizeof(*h));
	if (open_frame(frame, len, DE_MSG_HELLO, DE_PROTO_MAX_SMALL, &r, err))
		return -1;
	de_w_get_str(&r, h->token, DE_PROTO_MAX_TOKEN);
	h->rank = de_w_get_u32(&r);
	h->world = de_w_get_u32(&r);
	h->local_rank = de_w_get_u32(&r);
	h->local_world = de_w_get_u32(&r);
	h->node_rank = de_w_get_u32(&r);
	h->pid = de_w_get_u32(&r);
	h->backend = de_w_get_u8(&r);
	h->port = de_w_get_u16(&r);
	h->probe_port = de_w_get_u16(&r);
	de_w_get_str(&r, h->host, DE_PROTO_MAX_STR);
	de_w_get_str(&r, h->addr, DE_PROTO_MAX_STR);
	de_w_get_str(&r, h->iface, DE_PROTO_MAX_STR);
	de_w_get_str(&r, h->params, DE_PROTO_MAX_STR);
	h->failed = de_w_get_u16(&r);
	de_w_get_str(&r, h->why, DE_PROTO_MAX_WHY);
	de_w_get(&r, h->nonce, DE_NONCE_BYTES);
	de_w_get_str(&r, h->auth, DE_PROTO_MAX_AUTH);
	return close_frame(&r, DE_MSG_HELLO, err);
}

void de_peers_free(struct de_peers *p)
{
	free(p->peer);
	p->peer = NULL;
	p->world = 0;
}

uint32_t de_peers_nodes(const struct de_peers *p)
{
	uint32_t i, m = 0;

	for (i = 0; p->peer != NULL && i < p->world; i++)
		if (p->peer[i].node + 1 > m)
			m = p->peer[i].node + 1;
	return m;
}

int de_dec_peers(const uint8_t *frame, size_t len, struct de_peers *p,
		 struct de_err *err)
{
	struct de_rd r;
	uint32_t i;

	memset(p, 0, sizeof(*p));
	if (open_frame(frame, len, DE_MSG_PEERS, DE_PROTO_MAX_PEERS, &r, err))
		return -1;
	p->world = de_w_get_u32(&r);
	/* Each entry takes at least 20 bytes: a count the payload cannot
	 * hold is rejected before allocating for it. */
	if (r.bad || p->world == 0 || p->world > DE_PROTO_MAX_WORLD ||
	    (size_t)p->world * 20 > r.left) {
		p->world = 0;
		return de_errf(err, "peer table claims an impossible world size");
	}
	p->peer = calloc(p->world, sizeof(*p->peer));
	if (p->peer == NULL) {
		p->world = 0;
		return de_errf(err, "out of memory for %u peers", p->world);
	}
	for (i = 0; i < p->world && !r.bad; i++) {
		p->peer[i].rank = de_w_get_u32(&r);
		p->peer[i].local_rank = de_w_get_u32(&r);
		p->peer[i].node = de_w_get_u32(&r);
		p->peer[i].port = de_w_get_u16(&r);
		p->peer[i].probe_port = de_w_get_u16(&r);
		de_w_get_str(&r, p->peer[i].host, DE_PROTO_MAX_STR);
		de_w_get_str(&r, p->peer[i].addr, DE_PROTO_MAX_STR);
		if (!r.bad && p->peer[i].rank != i)
			r.bad = 1;
	}
	p->nccl_id_len = de_w_get_u16(&r);
	if (p->nccl_id_len != 0 && p->nccl_id_len != DE_NCCL_ID_BYTES)
		r.bad = 1;
	else
		de_w_get(&r, p->nccl_id, p->nccl_id_len);
	de_w_get_str(&r, p->auth, DE_PROTO_MAX_AUTH);
	if (close_frame(&r, DE_MSG_PEERS, err)) {
		de_peers_free(p);
		return -1;
	}
	return 0;
}

int de_dec_text(const uint8_t *frame, size_t len, struct de_text *t,
		struct de_err *err)
{
	enum de_msg type;
	size_t flen;
	struct de_rd r;

	memset(t, 0, sizeof(*t));
	if (de_frame_check(frame, len, DE_PROTO_MAX_SMALL, &type, &flen, err) <= 0)
		return de_errf(err, "malformed message frame");
	if (type != DE_MSG_REJECT && type != DE_MSG_ABORT &&
	    type != DE_MSG_REPORT && type != DE_MSG_GO)
		return de_errf(err, "expected a message frame, got %s", de_msg_name(type));
	if (open_frame(frame, len, type, DE_PROTO_MAX_SMALL, &r, err))
		return -1;
	t->type = type;
	t->code = de_w_get_u16(&r);
	t->rank = de_w_get_u32(&r);
	t->value = de_w_get_u64(&r);
	de_w_get_str(&r, t->text, DE_PROTO_MAX_TEXT);
	if (de_w_get_rec(&r, type, t, err))
		return -1;
	return close_frame(&r, type, err);
}

int de_dec_data_hello(const uint8_t *frame, size_t len,
		      struct de_data_hello *d, struct de_err *err)
{
	struct de_rd r;

	memset(d, 0, sizeof(*d));
	if (open_frame(frame, len, DE_MSG_DATA, DE_PROTO_MAX_SMALL, &r, err))
		return -1;
	de_w_get_str(&r, d->token, DE_PROTO_MAX_TOKEN);
	d->rank = de_w_get_u32(&r);
	d->purpose = de_w_get_u8(&r);
	de_w_get(&r, d->mac, DE_MAC_BYTES);
	return close_frame(&r, DE_MSG_DATA, err);
}

int de_dec_challenge(const uint8_t *frame, size_t len,
		     uint8_t nonce[DE_NONCE_BYTES], struct de_err *err)
{
	struct de_rd r;

	if (open_frame(frame, len, DE_MSG_CHALLENGE, DE_PROTO_MAX_SMALL, &r, err))
		return -1;
	de_w_get(&r, nonce, DE_NONCE_BYTES);
	return close_frame(&r, DE_MSG_CHALLENGE, err);
}

const char *de_msg_name(enum de_msg type)
{
	switch (type) {
	case DE_MSG_HELLO:
		return "HELLO";
	case DE_MSG_REJECT:
		return "REJECT";
	case DE_MSG_PEERS:
		return "PEERS";
	case DE_MSG_ABORT:
		return "ABORT";
	case DE_MSG_REPORT:
		return "REPORT";
	case DE_MSG_GO:
		return "GO";
	case DE_MSG_DATA:
		return "DATA";
	case DE_MSG_CHALLENGE:
		return "CHALLENGE";
	}
	return "unknown";
}

/* The first line of printable text in b, quoted, at most 40 characters. */
static void quote_line(const uint8_t *b, size_t n, char *out, size_t len)
{
	size_t i, j = 0;

	if (len < 4) {
		if (len)
			out[0] = '\0';
		return;
	}
	out[j++] = '"';
	for (i = 0; i < n && i < 40 && j + 3 < len; i++) {
		if (b[i] == '\r' || b[i] == '\n')
			break;
		out[j++] = (char)(b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '?');
	}
	out[j++] = '"';
	out[j] = '\0';
}

void de_foreign_describe(const uint8_t *b, size_t n, char *out, size_t len)
{
	static const struct {
		const char *prefix, *what;
	} known[] = {
		{ "HTTP/", "an HTTP server" },
		{ "SSH-", "an SSH server" },
		{ "220 ", "an FTP or SMTP server" },
		{ "-ERR", "a Redis server" },
		{ "+OK", "a POP3 or Redis server" },
		{ "RFB ", "a VNC server" },
	};
	char q[48];
	size_t i, printable = 0;

	if (len == 0)
		return;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t k = strlen(known[i].prefix);

		if (n >= k && memcmp(b, known[i].prefix, k) == 0) {
			quote_line(b, n, q, sizeof(q));
			snprintf(out, len, "%s (%s)", known[i].what, q);
			return;
		}
	}
	if (n >= 3 && b[0] == 0x16 && b[1] == 0x03)
		snprintf(out, len, "a TLS server (handshake bytes 16 03 %02x)", b[2]);
	else if (n == 0)
		snprintf(out, len, "nothing");
	else {
		for (i = 0; i < n && i < 16; i++)
			printable += (b[i] >= 0x20 && b[i] < 0x7f) || b[i] == '\r' || b[i] == '\n';
		if (printable == (n < 16 ? n : 16)) {
			quote_line(b, n, q, sizeof(q));
			snprintf(out, len, "text %s", q);
		} else {
			size_t off = (size_t)snprintf(out, len, "bytes");

			for (i = 0; i < n && i < 8 && off + 4 < len; i++)
				off += (size_t)snprintf(out + off, len - off, " %02x", b[i]);
			if (n > 8 && off + 5 < len)
				snprintf(out + off, len - off, " ...");
		}
	}
}
