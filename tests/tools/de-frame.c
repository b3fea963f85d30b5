/* SPDX-License-Identifier: GPL-2.0-or-later */
/* de-frame: hand-made distenv protocol frames on stdout, for the tests
 * that play a foreign or forged client (test-auth, test-check,
 * test-sanitizers), made by proto.c's encoders through frames.c. Never
 * installed. Run `de-frame --help`. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "parse.h"
#include "wire.h"

static const char usage[] =
	"usage: de-frame version            this protocol's version number\n"
	"       de-frame hello [KEY=VALUE]  a HELLO: rank 1 of 2 on node2 unless KEYs say\n"
	"                                   (token rank world local_rank local_world node_rank\n"
	"                                   pid backend port probe_port host addr iface params\n"
	"                                   failed why nonce=HEX auth)\n"
	"       de-frame data [KEY=VALUE]   a DATA frame (token rank purpose=ring|bulk|pair|N mac=HEX)\n"
	"       de-frame header TYPE LEN [VERSION]\n"
	"                                   a frame header alone (TYPE: HELLO, ... or a number)\n"
	"       de-frame raw TYPE HEX       a frame of this version around the payload HEX\n"
	"       de-frame type HEX           the message a header (in hex) starts: its name, or\n"
	"                                   'not-a-frame'\n";

static int die(const char *msg)
{
	fprintf(stderr, "de-frame: %s\n", msg);
	return 2;
}

static int out(struct de_buf *b)
{
	int rc = fwrite(b->data, 1, b->len, stdout) == b->len && fflush(stdout) == 0 ? 0 : 1;

	de_buf_free(b);
	return rc;
}

static int kv(int argc, char **argv, void *msg,
	      int (*set)(void *, const char *, const char *, struct de_err *), struct de_err *e)
{
	int i;

	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL)
			return de_errf(e, "%s: expected KEY=VALUE", argv[i]);
		*eq = '\0';
		if (set(msg, argv[i], eq + 1, e))
			return -1;
	}
	return 0;
}

static int set_hello(void *m, const char *k, const char *v, struct de_err *e)
{
	return frames_hello_set(m, k, v, e);
}

static int set_data(void *m, const char *k, const char *v, struct de_err *e)
{
	return frames_data_set(m, k, v, e);
}

/* The header's message type, from its hex. */
static int type_of(const char *hex)
{
	uint8_t h[DE_PROTO_HDR];
	unsigned v;
	size_t i;

	if (strlen(hex) < 2 * DE_PROTO_HDR) {
		puts("not-a-frame");
		return 0;
	}
	for (i = 0; i < DE_PROTO_HDR; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return die("type: expected hex digits");
		h[i] = (uint8_t)v;
	}
	if (de_w_rd32(h) != DE_PROTO_MAGIC) {
		puts("not-a-frame");
		return 0;
	}
	puts(de_msg_name((enum de_msg)(h[6] << 8 | h[7])));
	return 0;
}

int main(int argc, char **argv)
{
	static struct de_hello h;
	struct de_data_hello d;
	struct de_buf b = { 0 };
	struct de_err e = { "" };
	unsigned long len, ver = DE_PROTO_VERSION;
	int t;

	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "version") == 0 && argc == 2)
		return printf("%d\n", DE_PROTO_VERSION) < 0;
	if (strcmp(argv[1], "hello") == 0) {
		frames_sample_hello(&h);
		if (kv(argc, argv, &h, set_hello, &e) || de_enc_hello(&b, &h, &e))
			return die(e.msg);
		return out(&b);
	}
	if (strcmp(argv[1], "data") == 0) {
		frames_sample_data(&d);
		if (kv(argc, argv, &d, set_data, &e) || de_enc_data_hello(&b, &d, &e))
			return die(e.msg);
		return out(&b);
	}
	if (strcmp(argv[1], "header") == 0 && (argc == 4 || argc == 5)) {
		if ((t = frames_msg_type(argv[2])) < 0)
			return die("header: TYPE is a message name or a number");
		if (de_parse_ulong("LEN", argv[3], 0, 0xffffffffu, &len, &e) ||
		    (argc == 5 && de_parse_ulong("VERSION", argv[4], 0, 0xffff, &ver, &e)))
			return die(e.msg);
		frames_header(&b, (uint16_t)ver, (uint16_t)t, (uint32_t)len);
		return out(&b);
	}
	if (strcmp(argv[1], "raw") == 0 && argc == 4) {
		if ((t = frames_msg_type(argv[2])) < 0)
			return die("raw: TYPE is a message name or a number");
		if (frames_raw(&b, (uint16_t)t, argv[3], &e))
			return die(e.msg);
		return out(&b);
	}
	if (strcmp(argv[1], "type") == 0 && argc == 3)
		return type_of(argv[2]);
	fputs(usage, stderr);
	return 2;
}
