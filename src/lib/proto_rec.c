/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The records REPORT and GO carry after their text, and the pair sweep's
 * fixed-size command and answer (proto.h): structured, so that nothing
 * the ranks tell each other is parsed back out of a sentence. */
#include "config.h"

#include <string.h>

#include "wire.h"

static uint64_t dbits(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

static double bitsd(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* Which records a frame of this type may carry. */
static int rec_allowed(enum de_msg type, uint8_t rec)
{
	switch (rec) {
	case DE_REC_NONE:
		return 1;
	case DE_REC_UNREACHED:
	case DE_REC_PAIR:
		return type == DE_MSG_REPORT;
	case DE_REC_ROUND:
		return type == DE_MSG_GO;
	case DE_REC_EXCLUDE:
		return type == DE_MSG_ABORT;
	}
	return 0;
}

static int round_kind_ok(uint8_t k)
{
	return k == DE_ROUND_TOURNAMENT || k == DE_ROUND_RETEST || k == DE_ROUND_END;
}

int de_w_put_rec(struct de_buf *b, enum de_msg type, const struct de_text *t, struct de_err *err)
{
	const struct de_round_rec *g = &t->r.round;
	uint32_t i;

	if (!rec_allowed(type, t->rec))
		return de_errf(err, "%s frames cannot carry record %u", de_msg_name(type), t->rec);
	de_w_put_u8(b, t->rec);
	switch (t->rec) {
	case DE_REC_UNREACHED:
		if (t->r.unreached.n > DE_PROTO_MAX_UNREACHED)
			return de_errf(err, "%u unreached ranks (at most %u)", t->r.unreached.n,
				       DE_PROTO_MAX_UNREACHED);
		de_w_put_u32(b, t->r.unreached.n);
		for (i = 0; i < t->r.unreached.n; i++)
			de_w_put_u32(b, t->r.unreached.rank[i]);
		break;
	case DE_REC_PAIR:
		de_w_put_u32(b, t->r.pair.a);
		de_w_put_u32(b, t->r.pair.b);
		de_w_put_u16(b, t->r.pair.diag);
		de_w_put_u64(b, dbits(t->r.pair.bw_ab));
		de_w_put_u64(b, dbits(t->r.pair.bw_ba));
		de_w_put_u64(b, dbits(t->r.pair.rtt_us));
		if (t->r.pair.nccl > DE_PAIR_NCCL_FAIL)
			return de_errf(err, "pair record: nccl is %u, expected 0, 1 or 2", t->r.pair.nccl);
		de_w_put_u8(b, t->r.pair.nccl);
		de_w_put_u16(b, t->r.pair.nccl_diag);
		de_w_put_u64(b, dbits(t->r.pair.nccl_bw));
		break;
	case DE_REC_ROUND:
		if (!round_kind_ok(g->kind))
			return de_errf(err, "round kind %u is not one of T, R, E", g->kind);
		if (g->njobs > DE_PROTO_MAX_JOBS)
			return de_errf(err, "%u jobs in one round (at most %u)", g->njobs, DE_PROTO_MAX_JOBS);
		de_w_put_u8(b, g->kind);
		de_w_put_u32(b, g->round);
		de_w_put_u32(b, g->of);
		de_w_put_u32(b, g->failed);
		de_w_put_u32(b, g->njobs);
		for (i = 0; i < g->njobs; i++) {
			de_w_put_u32(b, g->job[i].node);
			de_w_put_u32(b, g->job[i].with);
		}
		break;
	case DE_REC_EXCLUDE:
		if (t->r.exclude.sure > 1)
			return de_errf(err, "exclude record: sure is %u, expected 0 or 1", t->r.exclude.sure);
		de_w_put_u8(b, t->r.exclude.sure);
		return de_w_put_str(b, "exclude record's hosts", t->r.exclude.hosts, DE_PROTO_MAX_STR, err);
	}
	return 0;
}

int de_w_get_rec(struct de_rd *r, enum de_msg type, struct de_text *t, struct de_err *err)
{
	struct de_round_rec *g = &t->r.round;
	uint32_t i;

	t->rec = de_w_get_u8(r);
	if (r->bad)
		return 0; /* close_frame says it */
	if (!rec_allowed(type, t->rec))
		return de_errf(err, "%s frame carries record %u, which it cannot", de_msg_name(type),
			       t->rec);
	switch (t->rec) {
	case DE_REC_UNREACHED:
		t->r.unreached.n = de_w_get_u32(r);
		if (t->r.unreached.n > DE_PROTO_MAX_UNREACHED)
			return de_errf(err, "REPORT lists %u unreached ranks (at most %u)",
				       t->r.unreached.n, DE_PROTO_MAX_UNREACHED);
		for (i = 0; i < t->r.unreached.n && !r->bad; i++)
			t->r.unreached.rank[i] = de_w_get_u32(r);
		break;
	case DE_REC_PAIR:
		t->r.pair.a = de_w_get_u32(r);
		t->r.pair.b = de_w_get_u32(r);
		t->r.pair.diag = de_w_get_u16(r);
		t->r.pair.bw_ab = bitsd(de_w_get_u64(r));
		t->r.pair.bw_ba = bitsd(de_w_get_u64(r));
		t->r.pair.rtt_us = bitsd(de_w_get_u64(r));
		t->r.pair.nccl = de_w_get_u8(r);
		t->r.pair.nccl_diag = de_w_get_u16(r);
		t->r.pair.nccl_bw = bitsd(de_w_get_u64(r));
		if (!r->bad && t->r.pair.nccl > DE_PAIR_NCCL_FAIL)
			return de_errf(err, "REPORT's pair record: nccl is %u, expected 0, 1 or 2", t->r.pair.nccl);
		break;
	case DE_REC_ROUND:
		g->kind = de_w_get_u8(r);
		g->round = de_w_get_u32(r);
		g->of = de_w_get_u32(r);
		g->failed = de_w_get_u32(r);
		g->njobs = de_w_get_u32(r);
		if (r->bad)
			return 0;
		if (!round_kind_ok(g->kind))
			return de_errf(err, "GO announces round kind %u, not one of T, R, E", g->kind);
		if (g->njobs > DE_PROTO_MAX_JOBS)
			return de_errf(err, "GO lists %u jobs (at most %u)", g->njobs, DE_PROTO_MAX_JOBS);
		for (i = 0; i < g->njobs && !r->bad; i++) {
			g->job[i].node = de_w_get_u32(r);
			g->job[i].with = de_w_get_u32(r);
		}
		break;
	case DE_REC_EXCLUDE:
		t->r.exclude.sure = de_w_get_u8(r);
		de_w_get_str(r, t->r.exclude.hosts, DE_PROTO_MAX_STR);
		if (r->bad)
			return 0;
		if (t->r.exclude.sure > 1)
			return de_errf(err, "ABORT's exclude record: sure is %u, expected 0 or 1",
				       t->r.exclude.sure);
		break;
	}
	return 0;
}

void de_enc_pair_cmd(uint8_t out[DE_PAIR_CMD_BYTES], const struct de_pair_cmd *c)
{
	de_w_wr32(out, c->op);
	de_w_wr32(out + 4, c->bound_ms);
	de_w_wr64(out + 8, c->len);
}

void de_dec_pair_cmd(const uint8_t in[DE_PAIR_CMD_BYTES], struct de_pair_cmd *c)
{
	c->op = de_w_rd32(in);
	c->bound_ms = de_w_rd32(in + 4);
	c->len = de_w_rd64(in + 8);
}

void de_enc_pair_answer(uint8_t out[DE_PAIR_ANSWER_BYTES], const struct de_pair_answer *a)
{
	de_w_wr64(out, a->moved);
	de_w_wr64(out + 8, a->timed);
	de_w_wr64(out + 16, a->usec);
}

void de_dec_pair_answer(const uint8_t in[DE_PAIR_ANSWER_BYTES], struct de_pair_answer *a)
{
	a->moved = de_w_rd64(in);
	a->timed = de_w_rd64(in + 8);
	a->usec = de_w_rd64(in + 16);
}
