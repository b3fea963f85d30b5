/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proto_rec.c: the records REPORT and GO carry, and the pair sweep's
 * command and answer, round trip and refused where they do not fit. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "tap.h"

static struct de_text t, u;

/* Encodes t as type, decodes it into u: 0, or -1 (e says why). */
static int round_trip(enum de_msg type, struct de_err *e)
{
	struct de_buf b = { 0 };
	int rc;

	e->msg[0] = '\0';
	rc = de_enc_text(&b, type, &t, e);

	if (rc == 0)
		rc = de_dec_text(b.data, b.len, &u, e);
	de_buf_free(&b);
	return rc;
}

static void test_records(void)
{
	struct de_err e = { "" };
	uint32_t i;
	int same;

	memset(&t, 0, sizeof(t));
	ok(round_trip(DE_MSG_GO, &e) == 0 && u.rec == DE_REC_NONE && u.type == DE_MSG_GO,
	   "a GO without a record");

	t.rec = DE_REC_UNREACHED;
	t.code = 11;
	snprintf(t.text, sizeof(t.text), "n3 (10.0.0.3:4000) refused");
	t.r.unreached.n = DE_PROTO_MAX_UNREACHED;
	for (i = 0; i < t.r.unreached.n; i++)
		t.r.unreached.rank[i] = i * 7;
	ok(round_trip(DE_MSG_REPORT, &e) == 0, "the probe's report with the longest list: %s", e.msg);
	ok(u.rec == DE_REC_UNREACHED && u.r.unreached.n == DE_PROTO_MAX_UNREACHED &&
	   memcmp(u.r.unreached.rank, t.r.unreached.rank, sizeof(t.r.unreached.rank)) == 0 &&
	   strcmp(u.text, t.text) == 0 && u.code == 11, "... every rank back, and the words");
	t.r.unreached.n = DE_PROTO_MAX_UNREACHED + 1;
	ok(round_trip(DE_MSG_REPORT, &e) == -1 && strstr(e.msg, "unreached ranks") != NULL,
	   "one unreached rank too many: refused by the encoder (%s)", e.msg);
	t.r.unreached.n = 2;
	ok(round_trip(DE_MSG_GO, &e) == -1 && strstr(e.msg, "cannot carry") != NULL,
	   "the probe's record in a GO: refused (%s)", e.msg);
	ok(round_trip(DE_MSG_ABORT, &e) == -1, "... and in an ABORT");

	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_PAIR;
	t.r.pair.a = 3;
	t.r.pair.b = 4000000000u;
	t.r.pair.diag = 9;
	t.r.pair.bw_ab = 1.25e9;
	t.r.pair.bw_ba = 1.0 / 3.0;
	t.r.pair.rtt_us = NAN;
	t.r.pair.nccl = DE_PAIR_NCCL_FAIL;
	t.r.pair.nccl_diag = 17;
	t.r.pair.nccl_bw = 2.5e10;
	snprintf(t.text, sizeof(t.text), "no answer");
	ok(round_trip(DE_MSG_REPORT, &e) == 0, "a pair's report: %s", e.msg);
	ok(u.rec == DE_REC_PAIR && u.r.pair.a == 3 && u.r.pair.b == 4000000000u && u.r.pair.diag == 9 &&
	   u.r.pair.bw_ab == 1.25e9 && u.r.pair.bw_ba == 1.0 / 3.0 && isnan(u.r.pair.rtt_us) &&
	   u.r.pair.nccl == DE_PAIR_NCCL_FAIL && u.r.pair.nccl_diag == 17 && u.r.pair.nccl_bw == 2.5e10 &&
	   strcmp(u.text, "no answer") == 0, "... every field exact (doubles by their bits), the NCCL pair's too");
	t.r.pair.nccl = 3;
	ok(round_trip(DE_MSG_REPORT, &e) == -1 && strstr(e.msg, "nccl is 3") != NULL,
	   "a pair record's NCCL outcome outside 0-2: refused by the encoder (%s)", e.msg);

	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_ROUND;
	t.r.round.kind = DE_ROUND_RETEST;
	t.r.round.round = 1;
	t.r.round.of = 3;
	t.r.round.njobs = DE_PROTO_MAX_JOBS;
	for (i = 0; i < DE_PROTO_MAX_JOBS; i++) {
		t.r.round.job[i].node = i;
		t.r.round.job[i].with = 2 * i + 1;
	}
	ok(round_trip(DE_MSG_GO, &e) == 0, "a retest round with the most jobs: %s", e.msg);
	same = u.rec == DE_REC_ROUND && u.r.round.kind == DE_ROUND_RETEST && u.r.round.round == 1 &&
	       u.r.round.of == 3 && u.r.round.njobs == DE_PROTO_MAX_JOBS;
	for (i = 0; same && i < DE_PROTO_MAX_JOBS; i++)
		same = u.r.round.job[i].node == i && u.r.round.job[i].with == 2 * i + 1;
	ok(same, "... every job back");
	t.r.round.njobs = DE_PROTO_MAX_JOBS + 1;
	ok(round_trip(DE_MSG_GO, &e) == -1, "one job too many: refused (%s)", e.msg);
	t.r.round.njobs = 0;
	t.r.round.kind = 'X';
	ok(round_trip(DE_MSG_GO, &e) == -1 && strstr(e.msg, "round kind") != NULL,
	   "a round kind that is not T, R or E: refused (%s)", e.msg);
	t.r.round.kind = DE_ROUND_END;
	t.r.round.failed = 1;
	ok(round_trip(DE_MSG_GO, &e) == 0 && u.r.round.kind == DE_ROUND_END && u.r.round.failed == 1,
	   "the end of the sweep, failed");
	ok(round_trip(DE_MSG_REPORT, &e) == -1, "a round record in a REPORT: refused");
}

/* Frames the encoder would never write: the decoder still refuses them. */
static void test_forged(void)
{
	struct de_buf b = { 0 };
	struct de_err e = { "" };
	size_t at;

	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_ROUND;
	t.r.round.kind = DE_ROUND_RETEST;
	t.r.round.njobs = 2;
	ok(de_enc_text(&b, DE_MSG_GO, &t, &e) == 0, "a GO with two jobs");
	/* The kind byte follows the record byte, after the empty text. */
	at = DE_PROTO_HDR + 2 + 4 + 8 + 2 + 1;
	ok(b.data[at - 1] == DE_REC_ROUND && b.data[at] == DE_ROUND_RETEST, "... its record where expected");
	b.data[at + 13] = 0xff; /* njobs: 0xff000002 */
	ok(de_dec_text(b.data, b.len, &u, &e) == -1 && strstr(e.msg, "jobs") != NULL,
	   "a forged job count past the limit: refused (%s)", e.msg);
	b.data[at + 13] = 0;
	b.data[at - 1] = 77;
	ok(de_dec_text(b.data, b.len, &u, &e) == -1, "an unknown record: refused (%s)", e.msg);
	b.data[at - 1] = DE_REC_ROUND;
	ok(de_dec_text(b.data, b.len - 1, &u, &e) == -1, "a record cut short: refused");
	ok(de_dec_text(b.data, b.len, &u, &e) == 0 && u.r.round.njobs == 2, "the frame mended: taken");
	de_buf_free(&b);
}

static void test_pair_messages(void)
{
	struct de_pair_cmd c = { DE_PAIR_OP_SINK, 2000, (4ull << 30) + 5 }, c2;
	struct de_pair_answer a = { 1ull << 40, (1ull << 40) - 65536, 123456789 }, a2;
	uint8_t cb[DE_PAIR_CMD_BYTES], ab[DE_PAIR_ANSWER_BYTES];
	static const uint8_t want[DE_PAIR_CMD_BYTES] = { 0, 0, 0, 2, 0, 0, 7, 0xd0, 0, 0, 0, 1, 0, 0, 0, 5 };

	de_enc_pair_cmd(cb, &c);
	ok(memcmp(cb, want, sizeof(want)) == 0, "the pair command's 16 bytes: op, bound, length, big-endian");
	de_dec_pair_cmd(cb, &c2);
	ok(c2.op == c.op && c2.bound_ms == c.bound_ms && c2.len == c.len, "... and back");
	de_enc_pair_answer(ab, &a);
	de_dec_pair_answer(ab, &a2);
	ok(a2.moved == a.moved && a2.timed == a.timed && a2.usec == a.usec && ab[2] == 1,
	   "the sink's 24-byte answer and back");
}

/* ABORT's record: the nodes a verdict blames. */
static void test_exclude(void)
{
	struct de_err e = { "" };
	struct de_buf b = { 0 };
	size_t at;

	memset(&t, 0, sizeof(t));
	t.rec = DE_REC_EXCLUDE;
	t.code = 15;
	t.r.exclude.sure = 1;
	snprintf(t.r.exclude.hosts, sizeof(t.r.exclude.hosts), "node[3,7]");
	snprintf(t.text, sizeof(t.text), "node3 accepts no new TCP connections");
	ok(round_trip(DE_MSG_ABORT, &e) == 0, "an ABORT with the nodes it blames: %s", e.msg);
	ok(u.rec == DE_REC_EXCLUDE && u.r.exclude.sure == 1 &&
	   strcmp(u.r.exclude.hosts, "node[3,7]") == 0 && strcmp(u.text, t.text) == 0,
	   "... the hosts and sure back, and the words");
	t.r.exclude.sure = 0;
	ok(round_trip(DE_MSG_ABORT, &e) == 0 && u.r.exclude.sure == 0, "... not sure, too");
	ok(round_trip(DE_MSG_REPORT, &e) == -1 && strstr(e.msg, "cannot carry") != NULL,
	   "the exclude record in a REPORT: refused (%s)", e.msg);
	ok(round_trip(DE_MSG_GO, &e) == -1, "... and in a GO");
	t.r.exclude.sure = 2;
	ok(round_trip(DE_MSG_ABORT, &e) == -1 && strstr(e.msg, "sure is 2") != NULL,
	   "sure outside 0..1: refused by the encoder (%s)", e.msg);
	/* Forged: sure 2 on the wire, the decoder says no. */
	t.r.exclude.sure = 1;
	ok(de_enc_text(&b, DE_MSG_ABORT, &t, &e) == 0, "encode one to forge");
	/* The record follows the text: its sure byte is the one before the
	 * hosts' length and bytes. */
	at = b.len - strlen(t.r.exclude.hosts) - 2 - 1;
	ok(b.data[at] == 1, "the sure byte found where the layout puts it");
	b.data[at] = 2;
	ok(de_dec_text(b.data, b.len, &u, &e) == -1 && strstr(e.msg, "sure is 2") != NULL,
	   "a forged sure byte: refused by the decoder (%s)", e.msg);
	de_buf_free(&b);
}

int main(void)
{
	test_records();
	test_exclude();
	test_forged();
	test_pair_messages();
	return tap_done();
}
