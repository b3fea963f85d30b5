/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's transport (pairs.h): the callee's side of a pair, the
 * caller's measurement and the line it reports. Per pair, the lower
 * node's first rank calls the other's data port three times, each
 * connection authenticated by the job's session key as the ring's are
 * (DE_PURPOSE_PAIR): small-message round trips, then one bounded transfer
 * each way, timed by the receiving side. Nothing waits unbounded: a
 * connection gets PAIR_CONNECT_MS, a transfer PAIR_TIME_MS. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "budget.h"
#include "pairs.h"
#include "socket.h"

#define PAIR_CHUNK (1u << 20)
static int pair_fail(struct de_pair_result *r, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int pair_fail(struct de_pair_result *r, enum de_diag d, const char *fmt, ...)
{
	va_list ap;

	r->diag = d;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* ------------------------------------------------------------ callee */

struct serve {
	const struct de_check *c;
	int fd;
	int64_t deadline;
};

/* A receiver's clock: the rate is timed from the first bytes' arrival
 * to the last's, without those first bytes. Starting the clock earlier
 * would count the other side's connection set-up (its thread, its hello)
 * as transfer time: milliseconds against a few-MiB transfer on a busy
 * node, a false slow pair. */
struct rx_clock {
	int64_t first, last;
	uint64_t first_n, moved;
};

static void rx_count(struct rx_clock *k, size_t n)
{
	int64_t now = de_now_us();

	if (k->moved == 0) {
		k->first = now;
		k->first_n = n;
	}
	k->moved += n;
	k->last = now;
}

/* Bytes timed and their microseconds (0, 0 when all came at once). */
static void rx_rate(const struct rx_clock *k, uint64_t *timed, uint64_t *usec)
{
	*timed = k->moved - k->first_n;
	*usec = (uint64_t)(k->last - k->first);
}

/* Reads until len bytes came or the bound passed; answers how many and
 * in how long, then drains until the caller closes (an early close would
 * reset the connection and lose the answer). */
static void serve_sink(int fd, uint8_t *buf, uint64_t len, uint32_t bound_ms)
{
	int64_t t0 = de_now_us(), end = t0 + (int64_t)bound_ms * 1000;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct rx_clock k = { 0, 0, 0, 0 };
	struct de_pair_answer an;
	uint8_t ans[DE_PAIR_ANSWER_BYTES];
	size_t m;

	while (k.moved < len) {
		size_t want = len - k.moved > PAIR_CHUNK ? PAIR_CHUNK : (size_t)(len - k.moved);
		ssize_t n = recv(fd, buf, want, MSG_DONTWAIT);
		int64_t now;

		if (n > 0) {
			rx_count(&k, (size_t)n);
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return;
		now = de_now_us();
		if (now >= end)
			break;
		poll(&p, 1, (int)((end - now) / 1000) + 1);
	}
	rx_rate(&k, &an.timed, &an.usec);
	an.moved = k.moved;
	de_enc_pair_answer(ans, &an);
	if (de_move_all(fd, ans, sizeof(ans), 1, de_now_ms() + 2000, &m) != 0)
		return;
	shutdown(fd, SHUT_WR);
	while (de_move_all(fd, buf, PAIR_CHUNK, 0, de_now_ms() + 2000, &m) == 0)
		;
}

static void serve_source(int fd, uint8_t *buf, uint64_t len, uint32_t bound_ms)
{
	int64_t end = de_now_ms() + bound_ms;
	uint64_t moved = 0;
	size_t m;

	while (moved < len && de_now_ms() < end) {
		size_t want = len - moved > PAIR_CHUNK ? PAIR_CHUNK : (size_t)(len - moved);
		int rc = de_move_all(fd, buf, want, 1, end, &m);

		moved += m;
		if (rc != 0)
			break;
	}
}

static void *serve_main(void *arg)
{
	struct serve *s = arg;
	/* What is sent is never looked at: uninitialised would do, but
	 * calloc's zero pages cost nothing either. */
	uint8_t cmd[DE_PAIR_CMD_BYTES], *buf = calloc(1, PAIR_CHUNK);
	size_t m;

	if (buf != NULL && de_move_all(s->fd, cmd, sizeof(cmd), 0, de_now_ms() + PAIR_CONNECT_MS, &m) == 0) {
		struct de_pair_cmd k;

		de_dec_pair_cmd(cmd, &k);
		/* Authenticated, but bounded all the same. */
		if (k.bound_ms > PAIR_TIME_MS)
			k.bound_ms = PAIR_TIME_MS;
		de_sock_tune(s->fd);
		if (k.op == DE_PAIR_OP_PING) {
			while (de_move_all(s->fd, cmd, sizeof(cmd), 0, s->deadline, &m) == 0 &&
			       de_move_all(s->fd, cmd, sizeof(cmd), 1, s->deadline, &m) == 0)
				;
		} else if (k.op == DE_PAIR_OP_SINK && k.len <= (4ull << 30)) {
			serve_sink(s->fd, buf, k.len, k.bound_ms);
		} else if (k.op == DE_PAIR_OP_SOURCE && k.len <= (4ull << 30)) {
			serve_source(s->fd, buf, k.len, k.bound_ms);
		} else if (k.op == DE_PAIR_OP_NCCL && k.len <= (4ull << 30)) {
			de_pairs_nccl_serve(s->c, s->fd, s->deadline);
		}
	}
	free(buf);
	close(s->fd);
	free(s);
	return NULL;
}

void de_pairs_serve_start(const struct de_check *c, int fd, int64_t deadline)
{
	struct serve *s = malloc(sizeof(*s));
	pthread_attr_t at;
	pthread_t th;

	if (s == NULL) {
		close(fd);
		return;
	}
	s->c = c;
	s->fd = fd;
	s->deadline = deadline;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, serve_main, s) != 0) {
		close(fd);
		free(s);
	}
	pthread_attr_destroy(&at);
}

/* ------------------------------------------------------------ caller */

int de_pairs_open(struct de_check *c, uint32_t peer, uint32_t op, uint64_t len, int *fdp,
		     struct de_pair_result *r)
{
	const struct de_peer *p = &c->peers.peer[peer];
	/* Each transfer's own bound, within the run's budget. */
	int64_t dl = de_budget_by(de_now_ms(), PAIR_CONNECT_MS, c->deadline);
	struct de_rbuf rb = { 0 };
	uint8_t ch[DE_NONCE_BYTES], cmd[DE_PAIR_CMD_BYTES];
	struct de_pair_cmd k = { op, PAIR_TIME_MS, len };
	struct de_addr a;
	struct de_err e = { "" };
	enum de_conn rc;
	enum de_msg type;
	const uint8_t *frame;
	size_t flen;
	int fd, err_no, got;

	*fdp = -1;
	if (de_resolve(p->addr, p->port, &a, &e))
		return pair_fail(r, DE_D_PEER_REFUSED, "%s: %s", p->host, e.msg);
	rc = de_connect(&a, dl, &fd, &err_no);
	if (rc != DE_CONN_OK)
		return pair_fail(r, rc == DE_CONN_TIMEOUT ? DE_D_PEER_TIMEOUT : DE_D_PEER_REFUSED,
				 "connecting to %s's data port (%s:%u): %s in %.1f s", p->host, p->addr,
				 p->port, de_conn_name(rc), PAIR_CONNECT_MS / 1000.0);
	/* The acceptor sends its challenge first, and nothing behind it. */
	got = de_recv_frame(fd, &rb, 256, dl, &type, &frame, &flen, &e);
	if (got != 1 || type != DE_MSG_CHALLENGE || de_dec_challenge(frame, flen, ch, &e) ||
	    de_send_data(c, fd, DE_PURPOSE_PAIR, ch, dl)) {
		de_rbuf_free(&rb);
		close(fd);
		return pair_fail(r, got == 0 ? DE_D_PEER_LOST : DE_D_PEER_TIMEOUT,
				 "%s's data port accepted but did not complete the authenticated hello (%s)",
				 p->host, got == 0 ? "closed" : e.msg[0] ? e.msg : "no answer");
	}
	de_rbuf_free(&rb);
	de_enc_pair_cmd(cmd, &k);
	if (de_send_all(fd, cmd, sizeof(cmd), dl)) {
		close(fd);
		return pair_fail(r, DE_D_PEER_LOST, "%s closed the pair connection", p->host);
	}
	de_sock_tune(fd);
	de_set_nonblock(fd, 1);
	*fdp = fd;
	return 0;
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* Median of PAIR_PINGS round trips of 16 bytes, after one untimed. */
static int pair_ping(struct de_check *c, uint32_t peer, struct de_pair_result *r)
{
	double t[PAIR_PINGS];
	uint8_t msg[16] = { 0 };
	int64_t dl;
	size_t m;
	int fd, i;

	if (de_pairs_open(c, peer, DE_PAIR_OP_PING, 0, &fd, r))
		return -1;
	dl = de_budget_by(de_now_ms(), PAIR_TIME_MS, c->deadline); /* the connection had its own bound */
	for (i = -1; i < PAIR_PINGS; i++) {
		int64_t t0 = de_now_us();

		if (de_move_all(fd, msg, sizeof(msg), 1, dl, &m) != 0 ||
		    de_move_all(fd, msg, sizeof(msg), 0, dl, &m) != 0) {
			close(fd);
			return pair_fail(r, de_now_ms() >= dl ? DE_D_TIMEOUT : DE_D_PEER_LOST,
					 "16-byte round trips to %s: %s after %d", c->peers.peer[peer].host,
					 de_now_ms() >= dl ? "no answer" : "connection lost", i + 1);
		}
		if (i >= 0)
			t[i] = (double)(de_now_us() - t0);
	}
	close(fd);
	qsort(t, PAIR_PINGS, sizeof(t[0]), cmp_d);
	r->rtt_us = t[PAIR_PINGS / 2];
	return 0;
}

/* What a bounded transfer of len bytes that moved `moved` in usec says. */
static int judge_transfer(struct de_pair_result *r, const char *from, const char *to,
			  uint64_t len, uint64_t moved, uint64_t timed, uint64_t usec, double *bw)
{
	if (moved < len && moved < PAIR_MIN_BYTES)
		return pair_fail(r, DE_D_BULK_STALL,
				 "%s -> %s: %" PRIu64 " of %" PRIu64 " bytes within the %.1f s bound while 16-byte messages passed",
				 from, to, moved, len, PAIR_TIME_MS / 1000.0);
	if (timed == 0 || usec == 0)
		return pair_fail(r, DE_D_INTERNAL, "%s -> %s: %" PRIu64 " bytes arrived at once: "
				 "--pair-bytes too small to time", from, to, moved);
	*bw = (double)timed / ((double)usec / 1e6);
	return 0;
}

/* This node -> peer: we send, the peer times what arrives. */
static int pair_send(struct de_check *c, uint32_t peer, struct de_pair_result *r, uint8_t *buf)
{
	const char *to = c->peers.peer[peer].host;
	uint64_t len = c->o.pair_bytes, sent = 0;
	int64_t dl = de_budget_by(de_now_ms(), PAIR_TIME_MS + 2000, c->deadline);
	uint8_t ans[DE_PAIR_ANSWER_BYTES];
	struct de_pair_answer an;
	size_t have = 0;
	int fd;

	if (de_pairs_open(c, peer, DE_PAIR_OP_SINK, len, &fd, r))
		return -1;
	while (have < sizeof(ans)) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0) };
		int64_t now = de_now_ms();
		ssize_t n;

		if (now >= dl) {
			close(fd);
			return pair_fail(r, DE_D_TIMEOUT, "%s -> %s: no answer within %.1f s after %" PRIu64 " bytes sent",
					 c->id.host, to, (PAIR_TIME_MS + 2000) / 1000.0, sent);
		}
		if (poll(&p, 1, (int)(dl - now)) <= 0)
			continue;
		if (p.revents & POLLIN) {
			n = recv(fd, ans + have, sizeof(ans) - have, MSG_DONTWAIT);
			if (n > 0) {
				have += (size_t)n;
				continue;
			}
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				break;
		}
		if (sent < len && (p.revents & POLLOUT)) {
			size_t want = len - sent > PAIR_CHUNK ? PAIR_CHUNK : (size_t)(len - sent);

			n = send(fd, buf, want, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				sent += (uint64_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
		} else if (p.revents & (POLLERR | POLLHUP)) {
			break;
		}
	}
	close(fd);
	if (have < sizeof(ans))
		return pair_fail(r, DE_D_PEER_LOST, "%s -> %s: the connection was lost after %" PRIu64 " bytes",
				 c->id.host, to, sent);
	de_dec_pair_answer(ans, &an);
	return judge_transfer(r, c->id.host, to, len, an.moved, an.timed, an.usec, &r->bw_ab);
}

/* peer -> this node: the peer sends, we time what arrives. */
static int pair_recv(struct de_check *c, uint32_t peer, struct de_pair_result *r, uint8_t *buf)
{
	const char *from = c->peers.peer[peer].host;
	uint64_t len = c->o.pair_bytes, timed, usec;
	struct rx_clock k = { 0, 0, 0, 0 };
	int64_t end;
	int fd;

	if (de_pairs_open(c, peer, DE_PAIR_OP_SOURCE, len, &fd, r))
		return -1;
	end = de_budget_by(de_now_us(), (int64_t)(PAIR_TIME_MS + 500) * 1000, c->deadline * 1000);
	while (k.moved < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t want = len - k.moved > PAIR_CHUNK ? PAIR_CHUNK : (size_t)(len - k.moved);
		ssize_t n = recv(fd, buf, want, MSG_DONTWAIT);
		int64_t now;

		if (n > 0) {
			rx_count(&k, (size_t)n);
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			break; /* the sender's bound, or a reset: judged by what came */
		now = de_now_us();
		if (now >= end)
			break;
		poll(&p, 1, (int)((end - now) / 1000) + 1);
	}
	close(fd);
	rx_rate(&k, &timed, &usec);
	return judge_transfer(r, from, c->id.host, len, k.moved, timed, usec, &r->bw_ba);
}

/* Each direction PAIR_REPEATS times, the best kept: a busy node, or the
 * other pairs of the round sharing its CPUs, only ever slow a transfer
 * down, and a few MiB last a few scheduler slices. The first failure is
 * the pair's verdict. */
static void best_of(struct de_check *c, uint32_t peer, struct de_pair_result *r, uint8_t *buf)
{
	double ab = 0, ba = 0;
	int i;

	for (i = 0; i < PAIR_REPEATS; i++) {
		int64_t t0 = de_now_ms();

		if (pair_send(c, peer, r, buf) || pair_recv(c, peer, r, buf))
			return;
		if (r->bw_ab > ab)
			ab = r->bw_ab;
		if (r->bw_ba > ba)
			ba = r->bw_ba;
		/* Transfers this long span many slices already: a slow pair
		 * is not measured three times over. */
		if (de_now_ms() - t0 > PAIR_TIME_MS / 4)
			break;
	}
	r->bw_ab = ab;
	r->bw_ba = ba;
}

/* One pair, this node (a) with the node of rank peer (b). */
void de_pairs_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r)
{
	uint8_t *buf = malloc(PAIR_CHUNK);

	r->diag = DE_OK;
	r->why[0] = '\0';
	r->bw_ab = r->bw_ba = r->rtt_us = 0;
	if (buf == NULL) {
		pair_fail(r, DE_D_INTERNAL, "out of memory");
		return;
	}
	memset(buf, 0x5a, PAIR_CHUNK);
	if (pair_ping(c, peer, r) == 0)
		best_of(c, peer, r, buf);
	free(buf);
}

void de_pairs_to_rec(struct de_text *t, uint32_t a, uint32_t b, const struct de_pair_result *r)
{
	t->rec = DE_REC_PAIR;
	t->r.pair.a = a;
	t->r.pair.b = b;
	t->r.pair.diag = (uint16_t)r->diag;
	t->r.pair.bw_ab = r->bw_ab;
	t->r.pair.bw_ba = r->bw_ba;
	t->r.pair.rtt_us = r->rtt_us;
	t->r.pair.nccl = (uint8_t)r->nccl;
	t->r.pair.nccl_diag = (uint16_t)(r->nccl == DE_PAIR_NCCL_FAIL ? r->nccl_diag : DE_OK);
	t->r.pair.nccl_bw = r->nccl_bw;
	/* One text: the TCP failure, else the NCCL one. */
	snprintf(t->text, sizeof(t->text), "%s",
		 r->diag == DE_OK && r->nccl == DE_PAIR_NCCL_FAIL ? r->nccl_why : r->why);
}
