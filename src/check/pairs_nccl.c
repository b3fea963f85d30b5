/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's NCCL half (pairs.h): in each tournament round, after
 * the TCP figures, the calling node's first rank and the called one's
 * make a 2-rank NCCL communicator and time an allreduce of --pair-bytes
 * over it, verified on both sides. The unique id travels on an
 * authenticated pair connection (DE_PAIR_OP_NCCL), which also carries
 * the called side's answers: "ready" once its GPU is chosen, then its
 * verdict. Everything is the NCCL backend's own code (nccl.c, through
 * de_nccl_backend) on a context of two ranks, bounded by PAIR_NCCL_MS. */
#include "config.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "budget.h"
#include "pairs.h"
#include "socket.h"

#ifdef HAVE_NCCL

/* The called side's answer: a diagnosis (DE_OK) and why, fixed size. */
#define ANSWER_WHY 200
#define ANSWER_BYTES (4 + ANSWER_WHY)
/* A value per rank that sums exactly in float32: 1 + 2. */
#define CALLER_VALUE 1.0f
#define CALLEE_VALUE 2.0f

static int nccl_fail_pair(struct de_pair_result *r, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int nccl_fail_pair(struct de_pair_result *r, enum de_diag d, const char *fmt, ...)
{
	va_list ap;

	r->nccl = DE_PAIR_NCCL_FAIL;
	r->nccl_diag = d;
	r->nccl_bw = 0;
	va_start(ap, fmt);
	vsnprintf(r->nccl_why, sizeof(r->nccl_why), fmt, ap);
	va_end(ap);
	return -1;
}

/* The backend's context for one side of a pair: this rank's identity
 * and options, world 2, no rendezvous link (nothing to poll for ABORT:
 * the bound is the pair's own). Only what is fixed before the sweep is
 * read from c: the called side runs on the acceptor's thread. */
static struct de_check *pair_ctx(const struct de_check *c, uint32_t rank)
{
	struct de_check *pc = calloc(1, sizeof(*pc));

	if (pc == NULL)
		return NULL;
	pc->o = c->o;
	pc->o.timeout_s = PAIR_NCCL_MS / 1000; /* what nccl.c's messages name */
	pc->id = c->id;
	pc->id.rank = rank;
	pc->id.world = 2;
	memcpy(pc->net.iface, c->net.iface, sizeof(pc->net.iface));
	pc->net.rdv_fd = pc->net.data_fd = pc->net.probe_fd = pc->acc.left_fd = -1;
	pc->deadline = de_budget_by(de_now_ms(), PAIR_NCCL_MS, c->deadline);
	return pc;
}

static void put_answer(uint8_t out[ANSWER_BYTES], enum de_diag d, const char *why)
{
	uint32_t v = htonl((uint32_t)d);

	memset(out, 0, ANSWER_BYTES);
	memcpy(out, &v, 4);
	snprintf((char *)out + 4, ANSWER_WHY, "%s", why);
}

static enum de_diag get_answer(const uint8_t in[ANSWER_BYTES], char *why, size_t len)
{
	uint32_t v;

	memcpy(&v, in, 4);
	v = ntohl(v);
	snprintf(why, len, "%.*s", ANSWER_WHY - 1, (const char *)in + 4);
	return v < DE_D_COUNT ? (enum de_diag)v : DE_D_INTERNAL;
}

/* The called side's answer on fd: 0 when it is DE_OK, else -1 with r
 * failed: its own diagnosis, or "THEM did not WHAT" when none came. */
static int take_answer(int fd, int64_t deadline, const char *them, const char *what,
		       struct de_pair_result *r)
{
	uint8_t ans[ANSWER_BYTES];
	char why[ANSWER_WHY];
	enum de_diag d;
	size_t m;

	if (de_move_all(fd, ans, sizeof(ans), 0, deadline, &m) != 0)
		return nccl_fail_pair(r, DE_D_PEER_LOST, "%s did not %s", them, what);
	d = get_answer(ans, why, sizeof(why));
	if (d != DE_OK)
		return nccl_fail_pair(r, d, "on %s: %s", them, why);
	return 0;
}

/* The timed part, the same on both sides: one warm-up, then
 * PAIR_REPEATS allreduces, each checked element by element. 0 with the
 * best time in *best_us, or -1 with f set. */
static int exchange(struct de_check *pc, float *buf, size_t count, float mine, double *best_us,
		    struct de_fail *f)
{
	const float want = CALLER_VALUE + CALLEE_VALUE;
	int i;

	*best_us = 0;
	for (i = -1; i < PAIR_REPEATS; i++) {
		size_t k, wrong = 0, first = 0;
		double us = 0;

		for (k = 0; k < count; k++)
			buf[k] = mine;
		if (de_nccl_backend.allreduce(pc, buf, count, DE_F32, &us, f))
			return -1;
		for (k = 0; k < count; k++)
			if (buf[k] != want && wrong++ == 0)
				first = k;
		if (wrong)
			return de_fail_set(f, DE_D_WRONG_RESULT,
					   "%zu of %zu float32 elements wrong (element %zu is %g, expected %g)",
					   wrong, count, first, (double)buf[first], (double)want);
		if (i >= 0 && (*best_us == 0 || us < *best_us))
			*best_us = us;
	}
	return 0;
}

static size_t pair_count(const struct de_check *c)
{
	size_t n = c->o.pair_bytes / sizeof(float);

	return n ? n : 1;
}

void de_pairs_nccl_serve(const struct de_check *c, int fd, int64_t deadline)
{
	struct de_check *pc = pair_ctx(c, 1);
	uint8_t id[DE_NCCL_ID_BYTES], ans[ANSWER_BYTES];
	size_t count = pair_count(c), m;
	float *buf = malloc(count * sizeof(float));
	struct de_fail f;
	double us;

	memset(&f, 0, sizeof(f));
	if (pc == NULL || buf == NULL)
		goto out;
	if (deadline < pc->deadline)
		pc->deadline = deadline;
	if (de_move_all(fd, id, sizeof(id), 0, pc->deadline, &m) != 0)
		goto out;
	if (de_nccl_backend.select(pc, &f)) {
		put_answer(ans, f.diag, f.msg);
		(void)de_move_all(fd, ans, sizeof(ans), 1, pc->deadline, &m);
		goto out;
	}
	memcpy(pc->peers.nccl_id, id, sizeof(id));
	pc->peers.nccl_id_len = DE_NCCL_ID_BYTES;
	put_answer(ans, DE_OK, "");
	if (de_move_all(fd, ans, sizeof(ans), 1, pc->deadline, &m) != 0)
		goto out;
	if (de_nccl_backend.init(pc, &f) == 0 && exchange(pc, buf, count, CALLEE_VALUE, &us, &f) == 0)
		put_answer(ans, DE_OK, "");
	else
		put_answer(ans, f.diag, f.msg);
	(void)de_move_all(fd, ans, sizeof(ans), 1, pc->deadline, &m);
out:
	if (pc != NULL) {
		de_nccl_backend.fini(pc);
		free(pc);
	}
	free(buf);
}

void de_pairs_nccl_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r)
{
	const char *them = c->peers.peer[peer].host;
	struct de_check *pc = pair_ctx(c, 0);
	size_t count = pair_count(c), m;
	float *buf = malloc(count * sizeof(float));
	uint8_t ans[ANSWER_BYTES];
	struct de_pair_result conn;
	struct de_fail f;
	char why[ANSWER_WHY];
	enum de_diag d;
	double us = 0;
	int fd = -1;

	memset(&f, 0, sizeof(f));
	memset(&conn, 0, sizeof(conn));
	r->nccl = DE_PAIR_NCCL_OK;
	r->nccl_diag = DE_OK;
	r->nccl_why[0] = '\0';
	if (pc == NULL || buf == NULL) {
		nccl_fail_pair(r, DE_D_INTERNAL, "out of memory");
		goto out;
	}
	if (de_nccl_backend.select(pc, &f) || de_nccl_backend.root_prepare(pc, &f)) {
		nccl_fail_pair(r, f.diag, "on %s: %s", c->id.host, f.msg);
		goto out;
	}
	if (de_pairs_open(c, peer, DE_PAIR_OP_NCCL, c->o.pair_bytes, &fd, &conn)) {
		nccl_fail_pair(r, conn.diag, "%s", conn.why);
		goto out;
	}
	if (de_move_all(fd, pc->peers.nccl_id, DE_NCCL_ID_BYTES, 1, pc->deadline, &m) != 0) {
		nccl_fail_pair(r, DE_D_PEER_LOST, "%s did not answer the NCCL pair's unique id", them);
		goto out;
	}
	if (take_answer(fd, pc->deadline, them, "answer the NCCL pair's unique id", r))
		goto out;
	if (de_nccl_backend.init(pc, &f) || exchange(pc, buf, count, CALLER_VALUE, &us, &f)) {
		/* The called side's own failure, when it has one, says more
		 * than "the peer went away" here. */
		de_nccl_backend.fini(pc);
		if (de_move_all(fd, ans, sizeof(ans), 0, de_budget_by(de_now_ms(), 2000, pc->deadline), &m) == 0 &&
		    (d = get_answer(ans, why, sizeof(why))) != DE_OK)
			nccl_fail_pair(r, d, "on %s: %s (here: %s)", them, why, f.msg);
		else
			nccl_fail_pair(r, f.diag, "%s", f.msg);
		goto out;
	}
	if (take_answer(fd, pc->deadline, them, "report its side of the NCCL pair", r))
		goto out;
	r->nccl_bw = us > 0 ? (double)(count * sizeof(float)) / (us / 1e6) : 0;
out:
	if (fd >= 0)
		close(fd);
	if (pc != NULL) {
		de_nccl_backend.fini(pc);
		free(pc);
	}
	free(buf);
}

#else /* without NCCL's headers there is no NCCL half: it is never asked for */

void de_pairs_nccl_serve(const struct de_check *c, int fd, int64_t deadline)
{
	(void)c;
	(void)fd;
	(void)deadline;
}

void de_pairs_nccl_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r)
{
	(void)c;
	(void)peer;
	r->nccl = DE_PAIR_NCCL_NONE;
}

#endif
