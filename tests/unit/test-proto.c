/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "proto.h"
#include "tap.h"

/* The tests' sample HELLO (frames.c), with fields set by name as the
 * shell tests set them through de-frame. */
static struct de_hello sample_hello(void)
{
	struct de_hello h;
	struct de_err e;

	frames_sample_hello(&h);
	ok(frames_hello_set(&h, "failed", "7", &e) == 0 &&
	   frames_hello_set(&h, "why", "GLOO_SOCKET_IFNAME=eth9: no such interface", &e) == 0 &&
	   frames_hello_set(&h, "probe_port", "40124", &e) == 0 && h.failed == 7 && h.probe_port == 40124,
	   "the frame builder sets fields by name");
	ok(frames_hello_set(&h, "probe_port", "65536", &e) == -1 && frames_hello_set(&h, "colour", "1", &e) == -1 &&
	   frames_hello_set(&h, "nonce", "00", &e) == -1,
	   "... and refuses a value out of range, an unknown field, a short nonce");
	return h;
}

int main(void)
{
	struct de_buf b = { 0 };
	struct de_hello h = sample_hello(), h2;
	struct de_err e;
	enum de_msg type;
	size_t flen, i;
	int bad;

	ok(de_enc_hello(&b, &h, &e) == 0, "hello encodes");
	ok(de_frame_check(b.data, b.len, DE_PROTO_MAX_SMALL, &type, &flen, &e) == 1 &&
	   type == DE_MSG_HELLO && flen == b.len, "frame check finds one whole HELLO");
	ok(de_dec_hello(b.data, b.len, &h2, &e) == 0, "hello decodes");
	ok(memcmp(&h, &h2, sizeof(h)) == 0 && h2.probe_port == 40124,
	   "hello round-trips field for field (the probe port too)");

	/* Every prefix is "need more", never a false frame. */
	bad = 0;
	for (i = 0; i < b.len; i++)
		if (de_frame_check(b.data, i, DE_PROTO_MAX_SMALL, &type, &flen, &e) != 0)
			bad++;
	ok(bad == 0, "every truncated prefix asks for more bytes");
	/* Decoding a truncated frame with a patched length must fail cleanly. */
	bad = 0;
	for (i = DE_PROTO_HDR; i < b.len; i++) {
		uint8_t *cp = malloc(i);
		size_t pl = i - DE_PROTO_HDR;

		memcpy(cp, b.data, i);
		cp[8] = (uint8_t)(pl >> 24);
		cp[9] = (uint8_t)(pl >> 16);
		cp[10] = (uint8_t)(pl >> 8);
		cp[11] = (uint8_t)pl;
		if (de_dec_hello(cp, i, &h2, &e) == 0)
			bad++;
		free(cp);
	}
	ok(bad == 0, "every payload cut short (length patched) is rejected");

	ok(de_frame_check((const uint8_t *)"GET / HTTP/1.1\r\n", 16, DE_PROTO_MAX_SMALL,
			  &type, &flen, &e) == -1, "HTTP request rejected at once");
	ok(strstr(e.msg, "not a distenv frame") != NULL, "garbage named: %s", e.msg);
	ok(de_frame_check((const uint8_t *)"D", 1, DE_PROTO_MAX_SMALL, &type, &flen, &e) == 0,
	   "one right byte: need more");
	ok(de_frame_check((const uint8_t *)"DX", 2, DE_PROTO_MAX_SMALL, &type, &flen, &e) == -1,
	   "second byte wrong: rejected without waiting");
	{
		uint8_t hdr[12] = { 'D', 'E', 'N', 'V', 0, DE_PROTO_VERSION, 0, 1, 0x7f, 0xff, 0xff, 0xff };

		ok(de_frame_check(hdr, 12, DE_PROTO_MAX_SMALL, &type, &flen, &e) == -1,
		   "oversized length rejected from the header alone");
		ok(strstr(e.msg, "exceeds the limit") != NULL, "oversize named: %s", e.msg);
		hdr[5] = 9;
		hdr[8] = 0;
		ok(de_frame_check(hdr, 12, DE_PROTO_MAX_SMALL, &type, &flen, &e) == -1 &&
		   strstr(e.msg, "protocol version 9") != NULL, "other version rejected, named");
		hdr[5] = 1;
		hdr[7] = 99;
		ok(de_frame_check(hdr, 12, DE_PROTO_MAX_SMALL, &type, &flen, &e) == -1,
		   "unknown type rejected");
	}
	/* A string field claiming more bytes than the frame has. */
	{
		uint8_t *cp = malloc(b.len);

		memcpy(cp, b.data, b.len);
		cp[DE_PROTO_HDR] = 0xff;
		ok(de_dec_hello(cp, b.len, &h2, &e) == -1, "string length past the end rejected");
		memcpy(cp, b.data, b.len);
		cp[DE_PROTO_HDR + 2] = '\0';
		ok(de_dec_hello(cp, b.len, &h2, &e) == -1, "NUL inside a string rejected");
		free(cp);
	}
	/* A HELLO decoded as another type is refused. */
	{
		struct de_text t;

		ok(de_dec_text(b.data, b.len, &t, &e) == -1, "HELLO is not a text frame");
	}
	de_buf_free(&b);

	/* Peers */
	{
		struct de_peers p, q;
		uint32_t r;
		int same = 1;

		memset(&p, 0, sizeof(p));
		p.world = 5;
		p.peer = calloc(5, sizeof(*p.peer));
		for (r = 0; r < 5; r++) {
			p.peer[r].rank = r;
			p.peer[r].local_rank = r % 2;
			p.peer[r].node = r / 2;
			p.peer[r].port = (uint16_t)(30000 + r);
			p.peer[r].probe_port = (uint16_t)(31000 + r);
			snprintf(p.peer[r].host, sizeof(p.peer[r].host), "node%u", r / 2 + 1);
			snprintf(p.peer[r].addr, sizeof(p.peer[r].addr), "10.0.0.%u", r);
		}
		p.nccl_id_len = DE_NCCL_ID_BYTES;
		for (i = 0; i < DE_NCCL_ID_BYTES; i++)
			p.nccl_id[i] = (uint8_t)i;
		ok(de_enc_peers(&b, &p, &e) == 0, "peers encode");
		ok(de_dec_peers(b.data, b.len, &q, &e) == 0, "peers decode: %s", e.msg);
		for (r = 0; r < 5 && q.peer; r++)
			if (memcmp(&p.peer[r], &q.peer[r], sizeof(p.peer[r])) != 0)
				same = 0;
		ok(same && q.world == 5 && q.nccl_id_len == DE_NCCL_ID_BYTES &&
		   memcmp(p.nccl_id, q.nccl_id, DE_NCCL_ID_BYTES) == 0, "peers round-trip");
		de_peers_free(&q);
		/* A world count the payload cannot hold: refused before allocating. */
		b.data[DE_PROTO_HDR] = 0x00;
		b.data[DE_PROTO_HDR + 1] = 0x0f;
		ok(de_dec_peers(b.data, b.len, &q, &e) == -1 && q.peer == NULL,
		   "impossible world count refused without allocating");
		/* Ranks out of order are refused. */
		de_buf_free(&b);
		p.peer[1].rank = 7;
		de_enc_peers(&b, &p, &e);
		ok(de_dec_peers(b.data, b.len, &q, &e) == -1, "peer table out of rank order refused");
		p.nccl_id_len = 5;
		ok(de_enc_peers(&b, &p, &e) == -1, "NCCL id of the wrong size refused");
		free(p.peer);
		de_buf_free(&b);
	}
	/* Text and data hello */
	{
		struct de_text t, u;
		struct de_data_hello d, d2;

		memset(&t, 0, sizeof(t));
		t.code = 14;
		t.rank = 2;
		t.value = 0x0102030405060708ull;
		strcpy(t.text, "rank 2 on node3 never arrived");
		ok(de_enc_text(&b, DE_MSG_ABORT, &t, &e) == 0, "abort encodes");
		ok(de_dec_text(b.data, b.len, &u, &e) == 0 && u.code == 14 && u.rank == 2 &&
		   u.value == t.value && strcmp(u.text, t.text) == 0 && u.type == DE_MSG_ABORT,
		   "abort round-trips (64-bit value) and decodes as an ABORT");
		de_buf_free(&b);
		ok(de_enc_text(&b, DE_MSG_REJECT, &t, &e) == 0 &&
		   de_dec_text(b.data, b.len, &u, &e) == 0 && u.type == DE_MSG_REJECT,
		   "the decoder says which text frame it was (REJECT)");
		de_buf_free(&b);
		memset(&d, 0, sizeof(d));
		strcpy(d.token, "slurm:1.2");
		d.rank = 9;
		d.purpose = 2;
		ok(de_enc_data_hello(&b, &d, &e) == 0 && de_dec_data_hello(b.data, b.len, &d2, &e) == 0 &&
		   memcmp(&d, &d2, sizeof(d)) == 0, "data hello round-trips");
		de_buf_free(&b);
	}
	/* Two frames back to back: the checker delimits the first. */
	{
		struct de_hello x = sample_hello();

		de_enc_hello(&b, &x, &e);
		de_enc_hello(&b, &x, &e);
		ok(de_frame_check(b.data, b.len, DE_PROTO_MAX_SMALL, &type, &flen, &e) == 1 &&
		   flen == b.len / 2, "back-to-back frames delimited");
		de_buf_free(&b);
		memset(x.token, 'x', DE_PROTO_MAX_TOKEN + 1);
		x.token[DE_PROTO_MAX_TOKEN] = 'x';
		x.token[DE_PROTO_MAX_TOKEN + 1 - 1] = '\0';
		ok(de_enc_hello(&b, &x, &e) == 0, "token at the limit encodes");
		de_buf_free(&b);
	}
	/* The largest HELLO a rank can make still passes rank 0's limit. */
	{
		static struct de_hello x;

		memset(&x, 0, sizeof(x));
		memset(x.token, 't', DE_PROTO_MAX_TOKEN);
		memset(x.host, 'h', DE_PROTO_MAX_STR);
		memset(x.addr, 'a', DE_PROTO_MAX_STR);
		memset(x.iface, 'i', DE_PROTO_MAX_STR);
		memset(x.params, 'p', DE_PROTO_MAX_STR);
		memset(x.why, 'w', DE_PROTO_MAX_WHY);
		memset(x.auth, 'A', DE_PROTO_MAX_AUTH);
		x.failed = 0xffff;
		ok(de_enc_hello(&b, &x, &e) == 0 &&
		   de_frame_check(b.data, b.len, DE_PROTO_MAX_SMALL, &type, &flen, &e) == 1 &&
		   de_dec_hello(b.data, b.len, &h2, &e) == 0 && memcmp(&x, &h2, sizeof(x)) == 0,
		   "the longest HELLO (failure and largest credential) fits DE_PROTO_MAX_SMALL");
		de_buf_free(&b);
	}
	is_str(de_msg_name(DE_MSG_PEERS), "PEERS", "message names");
	return tap_done();
}
