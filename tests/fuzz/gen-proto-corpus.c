/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writes the seed frames of fuzz-proto into DIR, one file per frame, made
 * by the real encoders and the tests' frame builder (tests/tools/frames.h): what ranks and rank 0 send in a 2- and a 4-rank
 * job, the longest strings allowed, and a few streams (two frames back to
 * back, a cut frame). tests/fuzz/run.sh runs it before each fuzz run, so
 * the seeds follow the protocol; tests/fuzz/corpus/proto holds its output
 * at the time of writing.  Usage: gen-proto-corpus DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "proto.h"

static const char *dir;
static int failed;

static void save(const char *name, const uint8_t *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		failed = 1;
	}
}

/* Saves b's frames as name, then empties b. */
static void emit(const char *name, struct de_buf *b, int rc,
		 const struct de_err *err)
{
	if (rc != 0) {
		fprintf(stderr, "gen-proto-corpus: %s: %s\n", name, err->msg);
		failed = 1;
	} else {
		save(name, b->data, b->len);
	}
	de_buf_free(b);
}

static void fill(char *s, size_t n, char c)
{
	memset(s, c, n);
	s[n] = '\0';
}

int main(int argc, char **argv)
{
	struct de_buf b = { 0 };
	struct de_err err = { { 0 } };
	static struct de_hello h;
	static struct de_text t;
	static struct de_peers p;
	struct de_data_hello d;
	struct de_peer peer[4];
	uint32_t i;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-proto-corpus DIR\n");
		return 2;
	}
	dir = argv[1];

	/* HELLO: rank 1 of 2 on node2 (the builder's sample, with a proof);
	 * then the longest of everything. */
	frames_sample_hello(&h);
	for (i = 0; i < 64; i++)
		h.auth[i] = "0123456789abcdef"[(i * 7) % 16];
	emit("hello", &b, de_enc_hello(&b, &h, &err), &err);
	fill(h.token, DE_PROTO_MAX_TOKEN, 't');
	fill(h.host, DE_PROTO_MAX_STR, 'h');
	fill(h.addr, DE_PROTO_MAX_STR, 'a');
	fill(h.iface, DE_PROTO_MAX_STR, 'i');
	fill(h.params, DE_PROTO_MAX_STR, 'p');
	fill(h.why, DE_PROTO_MAX_WHY, 'w');
	h.failed = 0xffff;
	h.rank = h.world = h.local_rank = h.local_world = h.node_rank = h.pid = 0xffffffffu;
	h.backend = 0xff;
	h.port = 0xffff;
	h.probe_port = 0xffff;
	emit("hello-longest", &b, de_enc_hello(&b, &h, &err), &err);
	memset(&h, 0, sizeof(h));
	emit("hello-empty", &b, de_enc_hello(&b, &h, &err), &err);

	/* PEERS: the 4-rank table of two nodes, with and without an NCCL id. */
	memset(peer, 0, sizeof(peer));
	for (i = 0; i < 4; i++) {
		peer[i].rank = i;
		peer[i].local_rank = i % 2;
		peer[i].node = i / 2;
		peer[i].port = (uint16_t)(29517 + i);
		peer[i].probe_port = (uint16_t)(30517 + i);
		snprintf(peer[i].host, sizeof(peer[i].host), "node%u", i / 2 + 1);
		snprintf(peer[i].addr, sizeof(peer[i].addr), "10.77.0.%u", 11 + i / 2);
	}
	p.peer = peer;
	p.world = 4;
	snprintf(p.auth, sizeof(p.auth), "MUNGE:AwQDAACm9kKZ6Q0d4xVd:");
	emit("peers-4", &b, de_enc_peers(&b, &p, &err), &err);
	p.world = 1;
	p.nccl_id_len = DE_NCCL_ID_BYTES;
	for (i = 0; i < DE_NCCL_ID_BYTES; i++)
		p.nccl_id[i] = (uint8_t)(255 - i);
	emit("peers-1-nccl", &b, de_enc_peers(&b, &p, &err), &err);

	/* REJECT, ABORT, REPORT, GO. */
	t.code = 0;
	t.rank = 3;
	t.value = 0x400921fb54442d18ull; /* a double's bits */
	snprintf(t.text, sizeof(t.text), "allreduce verified");
	emit("report", &b, de_enc_text(&b, DE_MSG_REPORT, &t, &err), &err);
	t.code = 7;
	snprintf(t.text, sizeof(t.text), "missing-ranks: rank 1 (expected on node2)");
	emit("abort", &b, de_enc_text(&b, DE_MSG_ABORT, &t, &err), &err);
	t.code = 1;
	snprintf(t.text, sizeof(t.text), "another job (token mismatch)");
	emit("reject", &b, de_enc_text(&b, DE_MSG_REJECT, &t, &err), &err);
	memset(&t, 0, sizeof(t));
	emit("go", &b, de_enc_text(&b, DE_MSG_GO, &t, &err), &err);

	/* The records: the probe's, a pair's, the sweep's rounds, a verdict's nodes. */
	t.rec = DE_REC_UNREACHED;
	t.r.unreached.n = 3;
	for (i = 0; i < 3; i++)
		t.r.unreached.rank[i] = 2 * i + 2;
	snprintf(t.text, sizeof(t.text), "node2 (10.77.0.12:29518) refused");
	t.code = 11;
	emit("report-unreached", &b, de_enc_text(&b, DE_MSG_REPORT, &t, &err), &err);
	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_PAIR;
	t.r.pair.a = 0;
	t.r.pair.b = 3;
	t.r.pair.bw_ab = 1.2e9;
	t.r.pair.bw_ba = 1.1e9;
	t.r.pair.rtt_us = 41.5;
	emit("report-pair", &b, de_enc_text(&b, DE_MSG_REPORT, &t, &err), &err);
	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_ROUND;
	t.r.round.kind = DE_ROUND_RETEST;
	t.r.round.round = 0;
	t.r.round.of = 2;
	t.r.round.njobs = 2;
	t.r.round.job[0].node = 0;
	t.r.round.job[0].with = 2;
	t.r.round.job[1].node = 1;
	t.r.round.job[1].with = 3;
	emit("go-retest", &b, de_enc_text(&b, DE_MSG_GO, &t, &err), &err);
	t.r.round.kind = DE_ROUND_END;
	t.r.round.njobs = 0;
	t.r.round.failed = 1;
	emit("go-end", &b, de_enc_text(&b, DE_MSG_GO, &t, &err), &err);
	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_EXCLUDE;
	t.code = 15;
	t.r.exclude.sure = 1;
	snprintf(t.r.exclude.hosts, sizeof(t.r.exclude.hosts), "node[3,7]");
	snprintf(t.text, sizeof(t.text), "node3 accepts no new TCP connections");
	emit("abort-exclude", &b, de_enc_text(&b, DE_MSG_ABORT, &t, &err), &err);
	memset(&t, 0, sizeof(t));

	/* DATA: a bulk probe's and a ring connection. */
	frames_sample_data(&d);
	d.purpose = DE_PURPOSE_BULK;
	emit("data-probe", &b, de_enc_data_hello(&b, &d, &err), &err);
	d.purpose = DE_PURPOSE_RING;
	for (i = 0; i < DE_MAC_BYTES; i++)
		d.mac[i] = (uint8_t)(i ^ 0xa5);
	emit("data-ring", &b, de_enc_data_hello(&b, &d, &err), &err);

	{
		uint8_t nonce[DE_NONCE_BYTES];

		for (i = 0; i < DE_NONCE_BYTES; i++)
			nonce[i] = (uint8_t)(i + 1);
		emit("challenge", &b, de_enc_challenge(&b, nonce, &err), &err);
	}

	/* Streams: GO then REPORT back to back; a HELLO cut short. */
	t.code = 0;
	rc = de_enc_text(&b, DE_MSG_GO, &t, &err);
	if (rc == 0)
		rc = de_enc_text(&b, DE_MSG_REPORT, &t, &err);
	emit("stream-go-report", &b, rc, &err);
	snprintf(h.token, sizeof(h.token), "job=1.0");
	rc = de_enc_hello(&b, &h, &err);
	if (rc == 0)
		b.len -= 3;
	emit("stream-hello-cut", &b, rc, &err);
	return failed;
}
