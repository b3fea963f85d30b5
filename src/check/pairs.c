/* The pair sweep's transport and rounds (pairs.h). Per pair, the lower
 * node's first rank calls the other's data port three times, each
 * connection authenticated by the job's session key as the ring's are
 * (PURPOSE_PAIR): small-message round trips, then one bounded transfer
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
#include "pairs.h"
#include "rendezvous.h"
#include "socket.h"

#define PAIR_CHUNK (1u << 20)
#define REMEASURE_PER_NODE 4
/* The sink's answer: bytes moved, bytes timed, microseconds. */
#define PAIR_ANSWER 24

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)(v >> 32));
	put_u32(p + 4, (uint32_t)v);
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

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
	uint64_t timed, usec;
	uint8_t ans[PAIR_ANSWER];
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
	rx_rate(&k, &timed, &usec);
	put_u64(ans, k.moved);
	put_u64(ans + 8, timed);
	put_u64(ans + 16, usec);
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
	uint8_t cmd[16], *buf = calloc(1, PAIR_CHUNK);
	size_t m;

	if (buf != NULL && de_move_all(s->fd, cmd, sizeof(cmd), 0, de_now_ms() + PAIR_CONNECT_MS, &m) == 0) {
		uint32_t op = get_u32(cmd), bound = get_u32(cmd + 4);
		uint64_t len = get_u64(cmd + 8);

		/* Authenticated, but bounded all the same. */
		if (bound > PAIR_TIME_MS)
			bound = PAIR_TIME_MS;
		de_sock_tune(s->fd);
		if (op == PAIR_OP_PING) {
			while (de_move_all(s->fd, cmd, sizeof(cmd), 0, s->deadline, &m) == 0 &&
			       de_move_all(s->fd, cmd, sizeof(cmd), 1, s->deadline, &m) == 0)
				;
		} else if (op == PAIR_OP_SINK && len <= (4ull << 30)) {
			serve_sink(s->fd, buf, len, bound);
		} else if (op == PAIR_OP_SOURCE && len <= (4ull << 30)) {
			serve_source(s->fd, buf, len, bound);
		}
	}
	free(buf);
	close(s->fd);
	free(s);
	return NULL;
}

void de_pairs_serve_start(int fd, int64_t deadline)
{
	struct serve *s = malloc(sizeof(*s));
	pthread_attr_t at;
	pthread_t th;

	if (s == NULL) {
		close(fd);
		return;
	}
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

/* An authenticated connection to peer's data port, asked op. */
static int pair_open(struct de_check *c, uint32_t peer, uint32_t op, uint64_t len, int *fdp,
		     struct de_pair_result *r)
{
	const struct de_peer *p = &c->peers.peer[peer];
	int64_t dl = de_now_ms() + PAIR_CONNECT_MS;
	struct de_rbuf rb = { 0 };
	uint8_t ch[DE_NONCE_BYTES], cmd[16];
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
	    de_send_data(c, fd, PURPOSE_PAIR, ch, dl)) {
		de_rbuf_free(&rb);
		close(fd);
		return pair_fail(r, got == 0 ? DE_D_PEER_LOST : DE_D_PEER_TIMEOUT,
				 "%s's data port accepted but did not complete the authenticated hello (%s)",
				 p->host, got == 0 ? "closed" : e.msg[0] ? e.msg : "no answer");
	}
	de_rbuf_free(&rb);
	put_u32(cmd, op);
	put_u32(cmd + 4, PAIR_TIME_MS);
	put_u64(cmd + 8, len);
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

	if (pair_open(c, peer, PAIR_OP_PING, 0, &fd, r))
		return -1;
	dl = de_now_ms() + PAIR_TIME_MS; /* the connection had its own bound */
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
	int64_t dl = de_now_ms() + PAIR_TIME_MS + 2000;
	uint8_t ans[PAIR_ANSWER];
	size_t have = 0;
	int fd;

	if (pair_open(c, peer, PAIR_OP_SINK, len, &fd, r))
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
	return judge_transfer(r, c->id.host, to, len, get_u64(ans), get_u64(ans + 8), get_u64(ans + 16),
			      &r->bw_ab);
}

/* peer -> this node: the peer sends, we time what arrives. */
static int pair_recv(struct de_check *c, uint32_t peer, struct de_pair_result *r, uint8_t *buf)
{
	const char *from = c->peers.peer[peer].host;
	uint64_t len = c->o.pair_bytes, timed, usec;
	struct rx_clock k = { 0, 0, 0, 0 };
	int64_t end;
	int fd;

	if (pair_open(c, peer, PAIR_OP_SOURCE, len, &fd, r))
		return -1;
	end = de_now_us() + (int64_t)(PAIR_TIME_MS + 500) * 1000;
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
static void pair_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r)
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

/* "P a b diag bw_ab bw_ba rtt|why": one pair in a round's report. */
static void encode(char *out, size_t len, uint32_t a, uint32_t b, const struct de_pair_result *r)
{
	snprintf(out, len, "P %u %u %d %.9g %.9g %.9g|%s", a, b, (int)r->diag, r->bw_ab, r->bw_ba,
		 r->rtt_us, r->why);
}

static int decode(const char *s, uint32_t n, uint32_t *a, uint32_t *b, struct de_pair_result *r)
{
	const char *bar = strchr(s, '|');
	int d;

	if (bar == NULL || sscanf(s, "P %u %u %d %lf %lf %lf", a, b, &d, &r->bw_ab, &r->bw_ba,
				  &r->rtt_us) != 6 || *a >= n || *b >= n || *a == *b || d < 0 ||
	    d >= DE_D_COUNT)
		return -1;
	r->diag = (enum de_diag)d;
	r->measured = 1;
	snprintf(r->why, sizeof(r->why), "%s", bar + 1);
	return 0;
}

/* ------------------------------------------------------------ rounds */

int de_pairs_prepare(struct de_check *c, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	uint32_t r, x, y;

	s->n = de_peers_nodes(&c->peers);
	s->leader = malloc((s->n ? s->n : 1) * sizeof(*s->leader));
	if (s->leader == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %u nodes", s->n);
	for (x = 0; x < s->n; x++)
		s->leader[x] = DE_PAIR_NONE;
	for (r = c->id.world; r-- > 0;)
		s->leader[c->peers.peer[r].node] = r;
	s->mynode = c->peers.peer[c->id.rank].node;
	s->lead = s->leader[s->mynode] == c->id.rank;
	s->rounds = de_pairs_rounds(s->n);
	if (c->id.rank != 0)
		return 0;
	s->res = calloc(de_pairs_count(s->n) ? de_pairs_count(s->n) : 1, sizeof(*s->res));
	if (s->res == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu pair results",
				   de_pairs_count(s->n));
	for (x = 0; x < s->n; x++)
		for (y = x + 1; y < s->n; y++) {
			s->res[de_pair_index(s->n, x, y)].a = x;
			s->res[de_pair_index(s->n, x, y)].b = y;
		}
	return 0;
}

void de_pairs_free(struct de_check *c)
{
	struct de_pairs_state *s = c->pairs;

	if (s == NULL)
		return;
	free(s->leader);
	free(s->res);
	free(s->jobs);
	free(s->rt);
	de_pairs_verdict_free(&s->v);
}

/* My pair in the phase go announces: the peer's rank, or DE_PAIR_NONE. */
static uint32_t my_call(const struct de_pairs_state *s, const char *go)
{
	const char *p;
	unsigned long r;
	uint32_t a, b, k;

	if (!s->lead)
		return DE_PAIR_NONE;
	if (go[0] == 'T') {
		r = strtoul(go + 2, NULL, 10);
		k = de_pairs_partner(s->n, (uint32_t)r, s->mynode);
		return k != DE_PAIR_NONE && s->mynode < k ? s->leader[k] : DE_PAIR_NONE;
	}
	/* "R k/K a:b a:b ...": a calls b. */
	for (p = strchr(go, ' '); p != NULL && (p = strchr(p + 1, ' ')) != NULL;) {
		if (sscanf(p + 1, "%u:%u", &a, &b) == 2 && a == s->mynode && b < s->n)
			return s->leader[b];
	}
	return DE_PAIR_NONE;
}

int de_pairs_run(struct de_check *c, int probe_rc, const char *probe_report, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	static char go[DE_PROTO_MAX_SMALL], text[512];

	if (de_rdv_phase(c, probe_rc ? f->diag : DE_OK, 0, probe_rc ? probe_report : "", go,
			 sizeof(go), f))
		return -1;
	for (;;) {
		uint32_t peer;

		text[0] = '\0';
		if (go[0] == 'E')
			return atoi(go + 2) ? 1 : 0;
		if (go[0] != 'T' && go[0] != 'R')
			return de_fail_set(f, DE_D_INTERNAL, "rank 0 announced \"%.40s\", not a pair round", go);
		peer = my_call(s, go);
		if (peer != DE_PAIR_NONE) {
			struct de_pair_result r;

			memset(&r, 0, sizeof(r));
			pair_measure(c, peer, &r);
			encode(text, sizeof(text), s->mynode, c->peers.peer[peer].node, &r);
		}
		if (de_rdv_phase(c, DE_OK, 0, text, go, sizeof(go), f))
			return -1;
	}
}

/* ------------------------------------------------------------ rank 0's server */

static const char *node_name(const struct de_check *c, uint32_t x)
{
	return c->peers.peer[c->pairs->leader[x]].host;
}

static void progress(struct de_check *c, const char *what, uint32_t k, uint32_t of, uint32_t pairs,
		     uint32_t failed, double slow_bw, uint32_t sa, uint32_t sb, int64_t since)
{
	char slow[600] = "";

	if (c->o.quiet)
		return;
	if (sa != DE_PAIR_NONE)
		snprintf(slow, sizeof(slow), ", slowest %s-%s %.2f GB/s", node_name(c, sa),
			 node_name(c, sb), slow_bw / 1e9);
	de_log("rank 0", "pairs %s %u/%u: %u pair%s, %u failed%s (%.2f s)", what, k + 1, of, pairs,
	       pairs == 1 ? "" : "s", failed, slow, (double)(de_now_ms() - since) / 1000.0);
}

/* A slow pair measured again: the better figure of each direction. */
static void keep_best(struct de_pair_result *p, const struct de_pair_result *again)
{
	if (again->bw_ab > p->bw_ab)
		p->bw_ab = again->bw_ab;
	if (again->bw_ba > p->bw_ba)
		p->bw_ba = again->bw_ba;
}

static void compose_retest(struct de_pairs_state *s, uint32_t k, char *go, size_t len)
{
	size_t off, i;

	off = (size_t)snprintf(go, len, "R %u/%u", k + 1, s->rt_rounds);
	for (i = 0; i < s->njobs; i++)
		if (s->jobs[i].round == k && off + 24 < len)
			off += (size_t)snprintf(go + off, len - off, " %u:%u", s->jobs[i].node, s->jobs[i].with);
}

/* A pair that looks like a slow link is measured once more before it is
 * named: one slow transfer is a busy moment as often as a slow link.
 * The pairs of nodes that look slow as a whole are not (their nodes are
 * the finding). Appended to the jobs, at most REMEASURE_PER_NODE x n of
 * them, all packed into rounds again (each node once per round). */
static int remeasure_slow(struct de_pairs_state *s, double threshold, uint8_t *busy,
			  struct de_fail *f)
{
	struct de_pairs_verdict v0;
	struct de_err e;
	size_t i;

	if (de_pairs_judge(s->n, s->res, NULL, 0, threshold, &v0, &e))
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	memset(busy, 0, s->n);
	for (i = 0; i < v0.nfind; i++) {
		const struct de_finding *x = &v0.find[i];
		struct de_pair_job *j = &s->jobs[s->njobs];

		if (x->kind != DE_FIND_SLOW_LINK || s->njobs >= (1 + REMEASURE_PER_NODE) * (size_t)s->n)
			continue;
		j->node = x->a;
		j->with = x->b;
		j->remeasure = 1;
		s->njobs++;
	}
	de_pairs_verdict_free(&v0);
	if (s->njobs > s->nretest)
		s->rt_rounds = de_pairs_pack(s->n, s->jobs, s->njobs, busy);
	return 0;
}

static int plan_retests(struct de_pairs_state *s, double c_threshold, struct de_fail *f)
{
	uint32_t *fails = calloc(s->n, sizeof(*fails)), x;
	uint8_t *suspect = calloc(s->n, 1);
	size_t i, np = de_pairs_count(s->n);
	struct de_err e;
	int rc = 0;

	/* The node retests (at most one per node), then the slow pairs
	 * measured again (at most REMEASURE_PER_NODE x n). */
	s->jobs = calloc((1 + REMEASURE_PER_NODE) * (size_t)s->n, sizeof(*s->jobs));
	s->rt = calloc((1 + REMEASURE_PER_NODE) * (size_t)s->n, sizeof(*s->rt));
	if (fails == NULL || suspect == NULL || s->jobs == NULL || s->rt == NULL) {
		rc = de_fail_set(f, DE_D_INTERNAL, "out of memory for the retest plan");
		goto out;
	}
	for (i = 0; i < np; i++)
		if (!s->res[i].measured || s->res[i].diag != DE_OK) {
			fails[s->res[i].a]++;
			fails[s->res[i].b]++;
		}
	for (x = 0; x < s->n; x++)
		suspect[x] = fails[x] > 0;
	if (s->n < 3) /* nobody else to tell node from link with */
		goto out;
	if (de_pairs_retest_plan(s->n, suspect, fails, s->jobs, &s->njobs, &s->rt_rounds, &e)) {
		rc = de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
		goto out;
	}
	s->nretest = s->njobs;
	if (remeasure_slow(s, c_threshold, suspect, f)) {
		rc = -1;
		goto out;
	}
	for (i = 0; i < s->njobs; i++) {
		s->rt[i].node = s->jobs[i].node;
		s->rt[i].with = s->jobs[i].with;
	}
out:
	free(fails);
	free(suspect);
	return rc;
}

static int finish(struct de_check *c, char *go, size_t len, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	struct de_err e;

	s->sweep_ms = (double)(de_now_ms() - s->t0);
	if (de_pairs_judge(s->n, s->res, s->rt, s->nretest, c->o.pair_threshold, &s->v, &e))
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	s->judged = 1;
	snprintf(go, len, "E %d", s->v.ok && s->probe[0] == '\0' ? 0 : 1);
	s->cur_kind = 'E';
	return 0;
}

int de_pairs_phase_done(struct de_check *c, int phase, const struct de_text *const *rep,
			char *go, size_t go_len, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	uint32_t r, pairs = 0, failed = 0, sa = DE_PAIR_NONE, sb = DE_PAIR_NONE;
	double slow_bw = 0;
	static int64_t since;
	size_t off;

	if (phase == 0) {
		/* The probe's failures are part of the verdict, not its end. */
		for (r = 0, off = 0; r < c->id.world; r++)
			if (rep[r]->code != DE_OK && off + 64 < sizeof(s->probe))
				off += (size_t)snprintf(s->probe + off, sizeof(s->probe) - off, "%s%s -> %s",
							off ? "; " : "", c->peers.peer[r].host, rep[r]->text);
		s->t0 = since = de_now_ms();
		if (s->rounds == 0)
			return finish(c, go, go_len, f) ? -1 : 0;
		s->cur_kind = 'T';
		s->cur_round = 0;
		snprintf(go, go_len, "T 0");
		return 1;
	}
	for (r = 0; r < c->id.world; r++) {
		struct de_pair_result x;
		uint32_t a, b;
		size_t i;

		if (rep[r]->text[0] != 'P')
			continue;
		memset(&x, 0, sizeof(x));
		if (decode(rep[r]->text, s->n, &a, &b, &x))
			return de_fail_set(f, DE_D_INTERNAL, "rank %u sent a bad pair report: %.80s", r,
					   rep[r]->text);
		pairs++;
		failed += x.diag != DE_OK;
		if (x.diag == DE_OK && (sa == DE_PAIR_NONE || de_pair_bw(&x) < slow_bw)) {
			slow_bw = de_pair_bw(&x);
			sa = a;
			sb = b;
		}
		if (s->cur_kind == 'T') {
			if (a > b)
				return de_fail_set(f, DE_D_INTERNAL, "rank %u reported pair %u-%u reversed", r, a, b);
			x.a = a;
			x.b = b;
			s->res[de_pair_index(s->n, a, b)] = x;
			continue;
		}
		for (i = 0; i < s->njobs; i++)
			if (s->jobs[i].round == s->cur_round && s->jobs[i].node == a && s->jobs[i].with == b) {
				s->rt[i].done = 1;
				s->rt[i].diag = x.diag;
				s->rt[i].bw = de_pair_bw(&x);
				if (s->jobs[i].remeasure && x.diag == DE_OK && a < b)
					keep_best(&s->res[de_pair_index(s->n, a, b)], &x);
			}
	}
	progress(c, s->cur_kind == 'T' ? "round" : "retest", s->cur_round,
		 s->cur_kind == 'T' ? s->rounds : s->rt_rounds, pairs, failed, slow_bw, sa, sb, since);
	since = de_now_ms();
	if (s->cur_kind == 'T' && s->cur_round + 1 < s->rounds) {
		snprintf(go, go_len, "T %u", ++s->cur_round);
		return 1;
	}
	if (s->cur_kind == 'T') {
		if (plan_retests(s, c->o.pair_threshold, f))
			return -1;
		if (s->njobs > 0) {
			s->cur_kind = 'R';
			s->cur_round = 0;
			compose_retest(s, 0, go, go_len);
			return 1;
		}
	} else if (s->cur_round + 1 < s->rt_rounds) {
		compose_retest(s, ++s->cur_round, go, go_len);
		return 1;
	}
	return finish(c, go, go_len, f) ? -1 : 0;
}
