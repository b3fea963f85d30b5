/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The data plane over TCP: the framing of data connections, and the
 * socket backend: a pipelined ring allreduce (reduce-scatter then
 * allgather, ring.c's schedule) for big buffers, and for small ones the
 * algorithm with the fewest hops (rdouble.h: the ring's allgather of
 * whole buffers, or recursive doubling). Every wait is
 * bounded, and the rendezvous connection is watched throughout so a
 * failure anywhere stops every rank with rank 0's diagnosis. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "backend.h"
#include "budget.h"
#include "check.h"
#include "pace.h"
#include "rdouble.h"
#include "rendezvous.h"
#include "socket.h"

/* Most bytes moved per system call, and the reduce-scatter's receive
 * buffer; a multiple of every dtype size. 1 MiB measured 10-25% faster
 * than 256 KiB from 2 to 64 MiB on loopback, and still fits in L2. */
#define CHUNK (1u << 20)
/* How long a stalled transfer spins (yielding) before sleeping in poll.
 * Waking a halted core costs tens of microseconds (more in a VM), longer
 * than most transfers wait; with a core per rank, as Slurm binds them,
 * spinning costs nothing, and sched_yield lets an oversubscribed peer run.
 * Measured on 2 cores: 20-25% more bandwidth at 2-8 MiB than a 30 us
 * spin; 8 ranks on 2 cores (2 hosts), 8 B-32 KiB took 55-110 us spinning
 * against 95-160 us sleeping at once. On a machine busy with other work
 * the spin takes their CPU too: 4 ranks on 2 cores beside other builds
 * ran 2-3x faster up to 256 KiB with no spin. DISTENV_SPIN_US sets it. */
#define SPIN_US 1000
/* With a CPU per local rank, the first microseconds of a spin skip even
 * sched_yield (a system call): 10-20% lower latency for small messages;
 * dropped once the rank sees it shares its CPU (de_pace_pure_spin). */
#define SPIN_PURE_US 20

/* The socket backend's state (c->bstate): its two neighbours, and the
 * recursive doubling peers where the world uses them. */
struct ring {
	int left_fd;          /* from rank-1, handed over by the acceptor */
	int right_fd;         /* to rank+1 */
	uint32_t rd_n;        /* recursive doubling peers (rdouble.h) */
	uint32_t rd_rank[DE_RD_MAX_PEERS];
	int rd_fd[DE_RD_MAX_PEERS];   /* left_fd/right_fd where the peer is a neighbour */
	int rd_own[DE_RD_MAX_PEERS];  /* a connection of its own: ours to close */
	unsigned rd_mss[DE_RD_MAX_PEERS]; /* its TCP MSS, 0 unknown (de_pace_send_max) */
	int own_cpu;          /* a CPU per local rank: spin without yielding at first */
	int pure;             /* spin without yielding now (de_pace_pure_spin) */
	int yielded;          /* this allreduce yielded the CPU */
	long nivcsw;          /* involuntary switches at the last look */
	unsigned long shared; /* involuntary switches seen around yields */
	unsigned mss;         /* the right link's TCP MSS, 0 unknown (de_pace_send_max) */
	int64_t spin_us;      /* the spin before a poll (SPIN_US, DISTENV_SPIN_US) */
	uint32_t node_block;  /* ranks per aligned block on one node (de_rh_node_block) */
	uint8_t *tmp;         /* the reduce-scatter's receive buffer, one for every allreduce */
};

static const char *host_of(const struct de_check *c, uint32_t r)
{
	return c->peers.peer != NULL ? c->peers.peer[r].host : "?";
}

int de_send_data(const struct de_check *c, int fd, uint8_t purpose,
		 const uint8_t *challenge, int64_t deadline)
{
	struct de_data_hello d;
	struct de_buf b = { 0 };
	struct de_err e;
	int rc;

	memset(&d, 0, sizeof(d));
	snprintf(d.token, sizeof(d.token), "%s", c->id.token);
	d.rank = c->id.rank;
	d.purpose = purpose;
	if (challenge != NULL)
		de_auth_data_mac(&c->auth, challenge, c->id.rank, purpose, d.mac);
	rc = de_enc_data_hello(&b, &d, &e);
	if (rc == 0)
		rc = de_send_all(fd, b.data, b.len, deadline);
	de_buf_free(&b);
	return rc;
}

/* Moves len bytes over fd (nonblocking) before deadline: 0 done, -1
 * closed/reset, -2 out of time. *moved counts what got through. */
int de_move_all(int fd, uint8_t *buf, size_t len, int out, int64_t deadline,
		    size_t *moved)
{
	struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };

	*moved = 0;
	while (*moved < len) {
		ssize_t n = out ? send(fd, buf + *moved, len - *moved, MSG_DONTWAIT | MSG_NOSIGNAL)
				: recv(fd, buf + *moved, len - *moved, MSG_DONTWAIT);
		int64_t now;

		if (n > 0) {
			*moved += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		now = de_now_ms();
		if (now >= deadline)
			return -2;
		poll(&p, 1, (int)(deadline - now));
	}
	return 0;
}

int de_recv_one_frame(int fd, uint8_t *buf, size_t cap, size_t *len,
		      int64_t deadline, struct de_err *err)
{
	size_t have = 0, want = DE_PROTO_HDR;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		enum de_msg type;
		size_t flen;
		int rc;

		while (have < want) {
			ssize_t n = recv(fd, buf + have, want - have, MSG_DONTWAIT);

			if (n > 0) {
				have += (size_t)n;
				continue;
			}
			if (n == 0)
				return de_errf(err, "closed");
			if (errno != EAGAIN && errno != EINTR)
				return de_errf(err, "%s", strerror(errno));
			if (de_now_ms() >= deadline)
				return de_errf(err, "no hello within 3 s");
			poll(&p, 1, (int)(deadline - de_now_ms()));
		}
		rc = de_frame_check(buf, have, (uint32_t)(cap - DE_PROTO_HDR), &type,
				    &flen, err);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			*len = flen;
			return 0;
		}
		want = DE_PROTO_HDR + ((size_t)buf[8] << 24 | (size_t)buf[9] << 16 |
				       (size_t)buf[10] << 8 | buf[11]);
	}
}

/* ---------------------------------------------------------------- */

/* Dials rank q's data port for purpose and proves the session key: *fd
 * nonblocking and tuned, or a failure naming q. */
static int dial(struct de_check *c, uint32_t q, uint8_t purpose, const char *what, int *out,
		struct de_fail *f)
{
	const struct de_peer *p = &c->peers.peer[q];
	int64_t deadline = c->deadline;
	struct de_addr a;
	struct de_err e = { "" };
	enum de_conn rc;
	int err_no, fd;
	uint8_t frame[256], ch[DE_NONCE_BYTES];
	size_t flen = 0;

	if (de_resolve(p->addr, p->port, &a, &e))
		return de_fail_set(f, DE_D_PEER_REFUSED, "rank %u on %s: %s", q, p->host, e.msg);
	rc = de_connect(&a, deadline, &fd, &err_no);
	if (rc != DE_CONN_OK)
		return de_fail_set(f, rc == DE_CONN_TIMEOUT ? DE_D_PEER_TIMEOUT : DE_D_PEER_REFUSED,
				   "connecting to rank %u's data port on %s (%s:%u): %s",
				   q, p->host, p->addr, p->port, de_conn_name(rc));
	if (de_recv_one_frame(fd, frame, sizeof(frame), &flen, deadline, &e) ||
	    de_dec_challenge(frame, flen, ch, &e) ||
	    de_send_data(c, fd, purpose, ch, deadline)) {
		close(fd);
		return de_fail_set(f, DE_D_PEER_LOST, "rank %u on %s closed our %s connection (%s)",
				   q, p->host, what, e.msg);
	}
	de_sock_tune(fd);
	de_set_nonblock(fd, 1);
	*out = fd;
	return 0;
}

/* fd's TCP MSS, 0 unknown: what de_pace_send_max paces by. */
static unsigned link_mss(int fd)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	return getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) == 0 && mss > 0 ? (unsigned)mss : 0;
}

/* Recursive doubling's links (rdouble.h): the ring's own where the peer
 * is a neighbour, else one of their own, dialled by the lower rank. All
 * dials first, then the accepts, so that no two ranks wait on each
 * other. */
static int rd_connect(struct de_check *c, struct ring *rg, struct de_fail *f)
{
	uint32_t r = c->id.rank, n = c->id.world, i;
	int pass;

	rg->rd_n = de_rd_peers(r, n, rg->rd_rank, DE_RD_MAX_PEERS);
	for (i = 0; i < rg->rd_n; i++)
		rg->rd_fd[i] = -1;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < rg->rd_n; i++) {
			uint32_t q = rg->rd_rank[i];
			enum de_rd_link_kind l = de_rd_link(r, n, q);

			if (pass == 0 && l == DE_LINK_RIGHT)
				rg->rd_fd[i] = rg->right_fd;
			else if (pass == 0 && l == DE_LINK_LEFT)
				rg->rd_fd[i] = rg->left_fd;
			else if (pass == 0 && l == DE_LINK_DIAL) {
				if (dial(c, q, DE_PURPOSE_RD, "recursive doubling", &rg->rd_fd[i], f))
					return -1;
				rg->rd_own[i] = 1;
			} else if (pass == 1 && l == DE_LINK_ACCEPT) {
				int fd = de_acceptor_take_rd(c, q, c->deadline);

				if (fd < 0)
					return de_fail_set(f, DE_D_PEER_TIMEOUT,
							   "rank %u on %s never made its recursive doubling connection to our data port (%s:%u) by the end of --timeout=%d s",
							   q, host_of(c, q), c->peers.peer[r].addr,
							   c->peers.peer[r].port, c->o.timeout_s);
				de_sock_tune(fd);
				de_set_nonblock(fd, 1);
				rg->rd_fd[i] = fd;
				rg->rd_own[i] = 1;
			}
		}
	}
	for (i = 0; i < rg->rd_n; i++)
		rg->rd_mss[i] = link_mss(rg->rd_fd[i]);
	return 0;
}

static int ring_connect(struct de_check *c, struct de_fail *f)
{
	uint32_t right = (c->id.rank + 1) % c->id.world;
	uint32_t left = (c->id.rank + c->id.world - 1) % c->id.world;
	int64_t deadline = c->deadline;
	struct ring *rg;
	int fd;

	if (c->id.world == 1)
		return 0;
	rg = calloc(1, sizeof(*rg));
	if (rg == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	rg->left_fd = rg->right_fd = -1;
	c->bstate = rg;
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		struct rusage ru;

		rg->own_cpu = cpus > 0 && c->id.local_world <= (unsigned long)cpus;
		rg->pure = de_pace_pure_spin(rg->own_cpu, 0);
		if (getrusage(RUSAGE_THREAD, &ru) == 0)
			rg->nivcsw = ru.ru_nivcsw;
		rg->spin_us = c->id.spin_us >= 0 ? c->id.spin_us : SPIN_US;
	}
	rg->tmp = malloc(CHUNK);
	if (rg->tmp == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	if (dial(c, right, DE_PURPOSE_RING, "ring", &rg->right_fd, f))
		return -1;
	rg->mss = link_mss(rg->right_fd);
	fd = rg->left_fd = de_acceptor_take_left(c, deadline);
	if (fd < 0)
		return de_fail_set(f, DE_D_PEER_TIMEOUT,
				   "rank %u on %s never connected to our data port (%s:%u) by the end of --timeout=%d s",
				   left, host_of(c, left), c->peers.peer[c->id.rank].addr,
				   c->peers.peer[c->id.rank].port, c->o.timeout_s);
	de_sock_tune(fd);
	de_set_nonblock(fd, 1);
	if (!de_rd_used(c->id.world))
		return 0;
	rg->node_block = 1;
	if (c->peers.peer != NULL && c->peers.world == c->id.world) {
		uint32_t *node = malloc(c->id.world * sizeof(*node)), q;

		if (node == NULL)
			return de_fail_set(f, DE_D_INTERNAL, "out of memory");
		for (q = 0; q < c->id.world; q++)
			node[q] = c->peers.peer[q].node;
		rg->node_block = de_rh_node_block(node, c->id.world);
		free(node);
	}
	return rd_connect(c, rg, f);
}

static void ring_close(struct de_check *c)
{
	struct ring *rg = c->bstate;

	if (rg == NULL)
		return;
	if (rg->right_fd >= 0)
		close(rg->right_fd);
	if (rg->left_fd >= 0)
		close(rg->left_fd);
	{
		uint32_t i;

		for (i = 0; i < rg->rd_n; i++)
			if (rg->rd_own[i] && rg->rd_fd[i] >= 0)
				close(rg->rd_fd[i]);
	}
	free(rg->tmp);
	free(rg);
	c->bstate = NULL;
}

/* A ring stream (ring.h): a sequence of steps, each sending one span to
 * the right neighbour while receiving one from the left (summed into it
 * via tmp when reduce is set, else written). A chained step sends what
 * the previous step received, as far as that is final, so its first bytes
 * go out while the rest still arrive: no pause between steps, phases or
 * slices. Both directions are tried without waiting first, and a spin
 * precedes a poll (SPIN_US). */
struct span {
	uint8_t *p;
	size_t len;
};

struct step {
	struct span send, recv;
	int reduce;   /* sum what arrives into recv (else overwrite) */
	int chained;  /* send is the previous step's recv */
};

struct stream {
	const struct step *step;
	uint32_t steps;
	uint8_t *tmp;       /* CHUNK bytes (struct ring's), for reduce steps */
	enum de_dtype t;
	int out_fd, in_fd;  /* send to rank out, receive from rank in */
	uint32_t out, in;
	unsigned mss;       /* out_fd's TCP MSS, 0 unknown (de_pace_send_max) */
};

/* Reduce-scatter bytes are summed once this many have arrived (or the
 * step is complete): small enough that the next hop starts early, large
 * enough that the sum loop and the syscalls stay efficient. */
#define REDUCE_MIN (32u << 10)

/* The run's budget ended inside a collective: where it stood. */
static int ran_out(const struct de_check *c, const struct stream *s, size_t got, size_t rtotal,
		   size_t sent, size_t stotal, int64_t last, struct de_fail *f)
{
	uint32_t right = s->out, left = s->in;

	return de_fail_set(f, DE_D_TIMEOUT,
			   "--timeout=%d s ran out mid-collective: %zu of %zu bytes from rank %u on %s, "
			   "%zu of %zu bytes to rank %u on %s (the last progress %.1f s ago)",
			   c->o.timeout_s, got, rtotal, left, host_of(c, left), sent, stotal, right,
			   host_of(c, right), (double)(de_now_ms() - last) / 1000.0);
}

static int ring_stream(struct de_check *c, const struct stream *s, struct de_fail *f)
{
	struct ring *rg = c->bstate;
	size_t esz = de_dtype_size(s->t), soff = 0, roff = 0, fill = 0;
	size_t stotal = 0, rtotal = 0, sent = 0, got = 0;
	uint32_t si = 0, ri = 0, i;
	int64_t last = de_now_ms();
	uint32_t right = s->out, left = s->in;
	struct pollfd p[3];
	int64_t spin_since = 0;

	for (i = 0; i < s->steps; i++) {
		stotal += s->step[i].send.len;
		rtotal += s->step[i].recv.len;
	}
	while (si < s->steps || ri < s->steps) {
		int progress = 0;
		size_t ready = 0;
		const struct span *out = NULL;

		/* A step's receive is done once all its bytes are final. */
		while (ri < s->steps && roff == s->step[ri].recv.len) {
			ri++;
			roff = 0;
		}
		/* A chained step can send as much of step si-1's receive as is
		 * final: all of it once ri has moved past, else what is summed
		 * or written so far. */
		while (si < s->steps) {
			out = &s->step[si].send;
			if (!s->step[si].chained || ri > si - 1)
				ready = out->len;
			else
				ready = ri == si - 1 ? roff - fill : 0;
			if (soff < out->len)
				break;
			si++;
			soff = 0;
		}
		if (si == s->steps && ri == s->steps)
			break;
		if (si < s->steps && ready > soff) {
			size_t most = de_pace_send_max(out->len, s->mss, CHUNK);
			size_t want = ready - soff > most ? most : ready - soff;
			ssize_t k = send(s->out_fd, out->p + soff, want,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (k > 0) {
				soff += (size_t)k;
				sent += (size_t)k;
				progress = 1;
			} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
				return de_fail_set(f, DE_D_PEER_LOST,
						   "rank %u on %s dropped our connection mid-collective (%s)",
						   right, host_of(c, right), strerror(errno));
			}
		}
		if (ri < s->steps) {
			const struct span *in = &s->step[ri].recv;
			int reduce = s->step[ri].reduce;
			size_t want = in->len - roff;
			ssize_t k;

			if (reduce && want > CHUNK - fill)
				want = CHUNK - fill;
			k = recv(s->in_fd, reduce ? s->tmp + fill : in->p + roff, want, MSG_DONTWAIT);
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
				return de_fail_set(f, DE_D_PEER_LOST,
						   "rank %u on %s lost mid-collective (%s after %zu of %zu bytes)",
						   left, host_of(c, left),
						   k == 0 ? "connection closed" : strerror(errno),
						   got, rtotal);
			if (k > 0) {
				roff += (size_t)k;
				got += (size_t)k;
				progress = 1;
				if (reduce) {
					size_t whole;

					fill += (size_t)k;
					whole = fill - fill % esz;
					if (whole >= REDUCE_MIN || roff == in->len) {
						de_reduce_sum(s->t, in->p + roff - fill, s->tmp, whole / esz);
						memmove(s->tmp, s->tmp + whole, fill - whole);
						fill -= whole;
					}
				}
			}
		}
		if (progress) {
			spin_since = 0;
			last = de_now_ms();
			/* A slow collective that still moves ends with the budget too. */
			if (last >= c->deadline)
				return ran_out(c, s, got, rtotal, sent, stotal, last, f);
			continue;
		}
		{
			int64_t now = de_now_us();

			if (spin_since == 0)
				spin_since = now;
			if (now - spin_since < rg->spin_us) {
				if (!rg->pure || now - spin_since >= SPIN_PURE_US) {
					sched_yield();
					rg->yielded = 1;
				}
				continue;
			}
		}
		spin_since = 0;
		p[0].fd = si < s->steps && ready > soff ? s->out_fd : -1;
		p[0].events = POLLOUT;
		p[1].fd = ri < s->steps ? s->in_fd : -1;
		p[1].events = POLLIN;
		p[2].fd = c->net.rdv_fd;
		p[2].events = POLLIN;
		p[0].revents = p[1].revents = p[2].revents = 0;
		{
			int64_t now = de_now_ms(), ms = de_budget_by(now, 1000, c->deadline) - now;

			if (poll(p, 3, ms > 0 ? (int)ms : 0) < 0 && errno != EINTR)
				return de_fail_set(f, DE_D_INTERNAL, "poll: %s", strerror(errno));
		}
		if (p[2].revents && de_rdv_poll_abort(c, f))
			return -1;
		/* One budget for the whole run (budget.h): a stall ends with it,
		 * and says how long nothing moved. */
		if (de_now_ms() >= c->deadline)
			return ran_out(c, s, got, rtotal, sent, stotal, last, f);
		if (p[0].revents || p[1].revents)
			last = de_now_ms();
	}
	return 0;
}

/* A stream around the ring: to the right neighbour, from the left. */
static struct stream ring_dir(const struct de_check *c, const struct step *step, uint32_t steps,
			      enum de_dtype t)
{
	const struct ring *rg = c->bstate;
	struct stream s = { step, steps, rg->tmp, t, rg->right_fd, rg->left_fd,
			    (c->id.rank + 1) % c->id.world,
			    (c->id.rank + c->id.world - 1) % c->id.world, rg->mss };

	return s;
}

/* Small buffers: latency, not bandwidth (de_allreduce_algo). Allgather
 * every rank's whole buffer around the ring (n-1 steps instead of
 * 2(n-1)), then every rank sums the n buffers in rank order: the same
 * operations on the same operands, so the result is bitwise identical
 * everywhere. */

static int small_allreduce(struct de_check *c, uint8_t *buf, size_t count,
			   enum de_dtype t, struct de_fail *f)
{
	uint32_t n = c->id.world, r = c->id.rank, i;
	size_t bytes = count * de_dtype_size(t);
	uint8_t *all = malloc((size_t)n * bytes);
	struct step step[DE_ALLGATHER_MAX_WORLD];
	struct stream s = ring_dir(c, step, n - 1, t);

	if (all == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	memcpy(all + (size_t)r * bytes, buf, bytes);
	/* Step i receives what the left neighbour got at step i-1, the
	 * buffer of rank r-1-i, and passes on what it got at step i-1. */
	for (i = 0; i + 1 < n; i++) {
		step[i].recv.p = all + (size_t)((r + 2 * n - 1 - i) % n) * bytes;
		step[i].recv.len = bytes;
		step[i].send = i == 0 ? (struct span){ all + (size_t)r * bytes, bytes } :
					step[i - 1].recv;
		step[i].reduce = 0;
		step[i].chained = i > 0;
	}
	if (ring_stream(c, &s, f)) {
		free(all);
		return -1;
	}
	memcpy(buf, all, bytes);
	for (i = 1; i < n; i++)
		de_reduce_sum(t, buf, all + (size_t)i * bytes, count);
	free(all);
	return 0;
}

static int ring_allreduce(struct de_check *c, void *buf, size_t count,
			  enum de_dtype t, struct de_fail *f)
{
	uint32_t n = c->id.world, r = c->id.rank, per = de_ring_stream_steps(n), i;
	size_t esz = de_dtype_size(t), slices, k;
	uint8_t *b = buf;
	struct stream s = ring_dir(c, NULL, 0, t);
	struct step *step;
	int rc;

	slices = de_ring_slice_count(count, esz, n);
	if (slices > UINT32_MAX / per)
		return de_fail_set(f, DE_D_INTERNAL, "%zu elements: too many ring steps", count);
	s.steps = (uint32_t)slices * per;
	step = calloc(s.steps, sizeof(*step));
	if (step == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	/* Slice after slice, each a whole reduce-scatter and allgather. */
	for (k = 0; k < slices; k++) {
		struct de_seg sl, g;
		uint8_t *base;

		de_ring_slice(count, esz, n, k, &sl);
		base = b + sl.off * esz;
		for (i = 0; i < per; i++) {
			struct step *st = &step[k * per + i];

			de_ring_segment(sl.len, n, de_ring_stream_send(r, n, i), &g);
			st->send = (struct span){ base + g.off * esz, g.len * esz };
			de_ring_segment(sl.len, n, de_ring_stream_recv(r, n, i), &g);
			st->recv = (struct span){ base + g.off * esz, g.len * esz };
			st->reduce = i < n - 1;
			st->chained = i > 0;
		}
	}
	s.step = step;
	rc = ring_stream(c, &s, f);
	free(step);
	return rc;
}

/* One exchange with rank q over the link to it: send snd.len bytes
 * while receiving rcv.len (either may be 0), summed into rcv when reduce
 * is set, else written. */
static int link_swap(struct de_check *c, uint32_t q, struct span snd, struct span rcv, int reduce,
		     enum de_dtype t, struct de_fail *f)
{
	const struct ring *rg = c->bstate;
	struct step st = { snd, rcv, reduce, 0 };
	struct stream s = { &st, 1, rg->tmp, t, -1, -1, q, q, 0 };
	uint32_t i;

	for (i = 0; i < rg->rd_n; i++)
		if (rg->rd_rank[i] == q) {
			s.out_fd = s.in_fd = rg->rd_fd[i];
			s.mss = rg->rd_mss[i];
		}
	if (s.out_fd < 0)
		return de_fail_set(f, DE_D_INTERNAL, "no recursive doubling link to rank %u", q);
	return ring_stream(c, &s, f);
}

static const struct span none = { NULL, 0 };

/* The fold around recursive doubling's and halving's power-of-two part
 * (rdouble.h): a FOLDED rank sends its buffer to its fold peer and takes
 * the result back; a FOLD_HOST sums that buffer in as it arrives, runs
 * core with the other active ranks, then sends the result back; a PLAIN
 * rank runs core. */
typedef int (*rd_core)(struct de_check *c, uint8_t *buf, size_t count, enum de_dtype t,
		       struct de_fail *f);

static int with_fold(struct de_check *c, uint8_t *buf, size_t count, enum de_dtype t,
		     rd_core core, struct de_fail *f)
{
	uint32_t r = c->id.rank, n = c->id.world, fold = de_rd_fold_peer(r, n);
	enum de_rd_role role = de_rd_role(r, n);
	struct span whole = { buf, count * de_dtype_size(t) };

	if (role == DE_RD_FOLDED)
		return link_swap(c, fold, whole, none, 0, t, f) ||
		       link_swap(c, fold, none, whole, 0, t, f) ? -1 : 0;
	if (role == DE_RD_FOLD_HOST && link_swap(c, fold, none, whole, 1, t, f))
		return -1;
	if (core(c, buf, count, t, f))
		return -1;
	if (role == DE_RD_FOLD_HOST)
		return link_swap(c, fold, whole, none, 0, t, f);
	return 0;
}

/* Recursive doubling's log2(p) whole-buffer swaps, each summed in
 * (a + b == b + a, so both partners hold the same bits). The swaps
 * receive into the ring's CHUNK buffer: small buffers only
 * (DE_RD_MAX_BYTES). */
static int rd_steps(struct de_check *c, uint8_t *buf, size_t count, enum de_dtype t,
		    struct de_fail *f)
{
	const struct ring *rg = c->bstate;
	uint32_t r = c->id.rank, n = c->id.world, k;
	size_t bytes = count * de_dtype_size(t);

	for (k = 0; k < de_rd_steps(n); k++) {
		if (link_swap(c, de_rd_partner(r, n, k), (struct span){ buf, bytes },
			      (struct span){ rg->tmp, bytes }, 0, t, f))
			return -1;
		de_reduce_sum(t, buf, rg->tmp, count);
	}
	return 0;
}

static int rd_allreduce(struct de_check *c, uint8_t *buf, size_t count, enum de_dtype t,
			struct de_fail *f)
{
	size_t bytes = count * de_dtype_size(t);

	if (bytes > CHUNK)
		return de_fail_set(f, DE_D_INTERNAL, "%zu bytes: too big for recursive doubling", bytes);
	return with_fold(c, buf, count, t, rd_steps, f);
}

/* Reduce-scatter by recursive halving, allgather by recursive doubling
 * (rdouble.h, de_rh_block): step k sends the half the partner keeps
 * while the partner's copy of ours is summed into it, then the allgather
 * swaps what each holds, last step first. */
static int rh_steps(struct de_check *c, uint8_t *buf, size_t count, enum de_dtype t,
		    struct de_fail *f)
{
	uint32_t r = c->id.rank, n = c->id.world, k, steps = de_rd_steps(n);
	size_t esz = de_dtype_size(t);

	for (k = 0; k < 2 * steps; k++) {
		/* Steps 0..steps-1 halve, then steps-1..0 gather back. */
		int halving = k < steps;
		uint32_t j = halving ? k : 2 * steps - 1 - k, q = de_rd_partner(r, n, j);
		struct de_seg mine, theirs;
		struct span m, o;

		de_rh_block(r, n, j + 1, count, &mine);
		de_rh_block(q, n, j + 1, count, &theirs);
		m = (struct span){ buf + mine.off * esz, mine.len * esz };
		o = (struct span){ buf + theirs.off * esz, theirs.len * esz };
		if (halving ? link_swap(c, q, o, m, 1, t, f) : link_swap(c, q, m, o, 0, t, f))
			return -1;
	}
	return 0;
}

static int socket_allreduce(struct de_check *c, void *buf, size_t count,
			    enum de_dtype t, double *usec, struct de_fail *f)
{
	int64_t a = de_now_us();
	int rc = 0;
	struct ring *rg = c->bstate;

	if (c->id.world > 1 && count > 0) {
		/* The same choice on every rank: it depends on count, the world
		 * and the rank table's nodes. */
		enum de_algo algo = de_allreduce_algo(count * de_dtype_size(t), c->id.world,
						       rg->node_block);

		rg->yielded = 0;
		switch (algo) {
		case DE_ALGO_RHALVING: rc = with_fold(c, buf, count, t, rh_steps, f); break;
		case DE_ALGO_RDOUBLE: rc = rd_allreduce(c, buf, count, t, f); break;
		case DE_ALGO_ALLGATHER: rc = small_allreduce(c, buf, count, t, f); break;
		case DE_ALGO_RING: rc = ring_allreduce(c, buf, count, t, f); break;
		}
	}
	if (rc)
		return -1;
	*usec = (double)(de_now_us() - a);
	/* Does the pure spin hold a CPU someone else wants? Looked at only
	 * after a yield, so that the fast path pays no system call. */
	if (rg != NULL && rg->pure && rg->yielded) {
		struct rusage ru;

		if (getrusage(RUSAGE_THREAD, &ru) == 0) {
			rg->shared += (unsigned long)(ru.ru_nivcsw - rg->nivcsw);
			rg->nivcsw = ru.ru_nivcsw;
			rg->pure = de_pace_pure_spin(rg->own_cpu, rg->shared);
		}
	}
	return 0;
}

static int socket_usable(struct de_err *why)
{
	(void)why;
	return 1;
}

static int socket_select(struct de_check *c, struct de_fail *f)
{
	(void)f;
	snprintf(c->device, sizeof(c->device), "cpu");
	return 0;
}

const struct de_backend_ops de_socket_backend = {
	.name = "socket",
	.id = DE_BACKEND_SOCKET,
	.usable = socket_usable,
	.select = socket_select,
	.root_prepare = NULL,
	.init = ring_connect,
	.allreduce = socket_allreduce,
	.fini = ring_close,
	.describe = NULL,
};
