/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: the rendezvous and data-plane frame codec
 * (src/lib/proto.c), which reads what anyone on the network sends.
 *
 * The input is a byte stream as a socket delivers it. de_frame_check must
 * delimit it the same way whatever prefix of it has arrived; every decoder
 * gets the whole input and the delimited frame; and a frame a decoder
 * accepts must encode back to exactly its bytes and decode again to the
 * same value (the codec has one spelling of each message). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz-proto: %s:%d: %s: ",          \
				__FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			abort();                                            \
		}                                                           \
	} while (0)

static void check_err(const struct de_err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));

	CHECK(n > 0 && n < sizeof(e->msg), "error message empty or unterminated");
}

/* The encoder's output is the frame, byte for byte. */
static void same_bytes(const char *what, const struct de_buf *b,
		       const uint8_t *frame, size_t len)
{
	CHECK(!b->oom, "%s: encoder out of memory", what);
	CHECK(b->len == len && memcmp(b->data, frame, len) == 0,
	      "%s: decoded then encoded: %zu bytes, the frame has %zu", what,
	      b->len, len);
}

static int hello(const uint8_t *f, size_t len)
{
	static struct de_hello h, h2;
	struct de_buf b = { 0 };
	struct de_err err;

	if (de_dec_hello(f, len, &h, &err) != 0) {
		check_err(&err);
		return 0;
	}
	CHECK(de_enc_hello(&b, &h, &err) == 0, "HELLO re-encode: %s", err.msg);
	same_bytes("HELLO", &b, f, len);
	CHECK(de_dec_hello(b.data, b.len, &h2, &err) == 0, "HELLO again: %s", err.msg);
	CHECK(memcmp(&h, &h2, sizeof(h)) == 0, "HELLO decodes differently");
	de_buf_free(&b);
	return 1;
}

static int peers(const uint8_t *f, size_t len)
{
	static struct de_peers p, p2;
	struct de_buf b = { 0 };
	struct de_err err;

	if (de_dec_peers(f, len, &p, &err) != 0) {
		check_err(&err);
		CHECK(p.peer == NULL && p.world == 0, "a refused PEERS kept a table");
		return 0;
	}
	CHECK(p.world >= 1 && p.world <= DE_PROTO_MAX_WORLD && p.peer != NULL,
	      "PEERS of %u ranks", p.world);
	CHECK(de_enc_peers(&b, &p, &err) == 0, "PEERS re-encode: %s", err.msg);
	same_bytes("PEERS", &b, f, len);
	CHECK(de_dec_peers(b.data, b.len, &p2, &err) == 0, "PEERS again: %s", err.msg);
	CHECK(p2.world == p.world && p2.nccl_id_len == p.nccl_id_len &&
		      memcmp(p2.nccl_id, p.nccl_id, sizeof(p.nccl_id)) == 0 &&
		      memcmp(p2.peer, p.peer, p.world * sizeof(*p.peer)) == 0,
	      "PEERS decodes differently");
	CHECK(strcmp(p.auth, p2.auth) == 0, "PEERS authenticator differs");
	de_peers_free(&p);
	de_peers_free(&p2);
	de_peers_free(&p2); /* twice is safe */
	de_buf_free(&b);
	return 1;
}

static int text(const uint8_t *f, size_t len)
{
	static struct de_text t, t2;
	struct de_buf b = { 0 };
	struct de_err err;
	enum de_msg type;

	if (de_dec_text(f, len, &t, &err) != 0) {
		check_err(&err);
		return 0;
	}
	type = (enum de_msg)(f[6] << 8 | f[7]); /* it took a whole header */
	CHECK(type == DE_MSG_REJECT || type == DE_MSG_ABORT ||
		      type == DE_MSG_REPORT || type == DE_MSG_GO,
	      "de_dec_text took a %s frame", de_msg_name(type));
	CHECK(de_enc_text(&b, type, &t, &err) == 0, "%s re-encode: %s",
	      de_msg_name(type), err.msg);
	same_bytes(de_msg_name(type), &b, f, len);
	CHECK(de_dec_text(b.data, b.len, &t2, &err) == 0, "%s again: %s",
	      de_msg_name(type), err.msg);
	CHECK(memcmp(&t, &t2, sizeof(t)) == 0, "%s decodes differently",
	      de_msg_name(type));
	de_buf_free(&b);
	return 1;
}

static int data_hello(const uint8_t *f, size_t len)
{
	static struct de_data_hello d, d2;
	struct de_buf b = { 0 };
	struct de_err err;

	if (de_dec_data_hello(f, len, &d, &err) != 0) {
		check_err(&err);
		return 0;
	}
	CHECK(de_enc_data_hello(&b, &d, &err) == 0, "DATA re-encode: %s", err.msg);
	same_bytes("DATA", &b, f, len);
	CHECK(de_dec_data_hello(b.data, b.len, &d2, &err) == 0, "DATA again: %s", err.msg);
	CHECK(memcmp(&d, &d2, sizeof(d)) == 0, "DATA decodes differently");
	de_buf_free(&b);
	return 1;
}

static int challenge(const uint8_t *f, size_t len)
{
	uint8_t n[DE_NONCE_BYTES], n2[DE_NONCE_BYTES];
	struct de_buf b = { 0 };
	struct de_err err;

	if (de_dec_challenge(f, len, n, &err) != 0) {
		check_err(&err);
		return 0;
	}
	CHECK(de_enc_challenge(&b, n, &err) == 0, "CHALLENGE re-encode: %s", err.msg);
	same_bytes("CHALLENGE", &b, f, len);
	CHECK(de_dec_challenge(b.data, b.len, n2, &err) == 0, "CHALLENGE again: %s", err.msg);
	CHECK(memcmp(n, n2, sizeof(n)) == 0, "CHALLENGE decodes differently");
	de_buf_free(&b);
	return 1;
}

/* Every decoder on these bytes; how many accept them. A frame has one
 * type, so at most one does (de_dec_text takes four types). */
static int decode_all(const uint8_t *f, size_t len)
{
	return hello(f, len) + peers(f, len) + text(f, len) +
	       data_hello(f, len) + challenge(f, len);
}

/* de_frame_check on the first `have` bytes: -1, 0 or 1 with a sane frame. */
static int frame(const uint8_t *data, size_t have, uint32_t max,
		 enum de_msg *type, size_t *flen)
{
	struct de_err err;
	int rc;

	*flen = 0;
	rc = de_frame_check(data, have, max, type, flen, &err);
	CHECK(rc >= -1 && rc <= 1, "de_frame_check returned %d", rc);
	if (rc < 0)
		check_err(&err);
	if (rc == 1) {
		CHECK(*flen >= DE_PROTO_HDR && *flen <= have &&
			      *flen - DE_PROTO_HDR <= max,
		      "frame of %zu bytes in %zu (max payload %u)", *flen, have, max);
		CHECK(strcmp(de_msg_name(*type), "unknown") != 0,
		      "frame of unknown type %u", (unsigned)*type);
	}
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t maxes[] = { DE_PROTO_MAX_SMALL, DE_PROTO_MAX_PEERS };
	enum de_msg type = 0, t2;
	size_t flen = 0, f2, k, cut[4];
	int rc = 0, r2, i, j;
	uint8_t *copy;

	for (i = 0; i < 2; i++) {
		rc = frame(data, size, maxes[i], &type, &flen);
		if (rc == 1)
			break;
	}
	/* The same verdict from every prefix: need more, or the same error;
	 * and the delimited frame alone is one whole frame. */
	if (rc != 0) {
		uint32_t max = maxes[i < 2 ? i : 1];
		size_t end = rc == 1 ? flen : size;

		cut[0] = 0;
		cut[1] = DE_PROTO_HDR - 1;
		cut[2] = DE_PROTO_HDR;
		cut[3] = end ? end - 1 : 0;
		for (j = 0; j < 4; j++) {
			k = cut[j] < end ? cut[j] : end;
			r2 = frame(data, k, max, &t2, &f2);
			if (rc == 1)
				CHECK(r2 == 0 || k == flen,
				      "a %zu-byte prefix of a %zu-byte frame gave %d", k,
				      flen, r2);
			else
				CHECK(r2 <= 0, "a prefix of a refused stream is a frame");
		}
		if (rc == 1) {
			r2 = frame(data, flen, max, &t2, &f2);
			CHECK(r2 == 1 && f2 == flen && t2 == type,
			      "the frame alone is not the same frame");
		}
	}
	if (rc == 1 && flen < size)
		CHECK(decode_all(data, size) == 0,
		      "a decoder took a frame with %zu trailing bytes", size - flen);

	/* Decoders get exactly one frame in a buffer of its size, so that
	 * ASan sees any read past its end. */
	k = rc == 1 ? flen : size;
	copy = malloc(k ? k : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, k);
	r2 = decode_all(copy, k);
	CHECK(r2 <= 1, "%d decoders took one frame", r2);
	CHECK(r2 == 0 || rc == 1, "a decoder took what de_frame_check refused");
	free(copy);
	return 0;
}
