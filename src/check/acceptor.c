/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The data port: one thread and one epoll loop serve every inbound data
 * connection at once. (The node probe has a listener of its own, which
 * the kernel answers: the loop only closes what shows up there.)
 * Each connection gets a challenge and must answer with a DATA hello
 * proving the job's session key over it; then it is echoed on a thread of
 * its own (bulk probe) or handed to the ring (its left neighbour). A peer that is merely slow keeps its connection until
 * --timeout: an overloaded node is not a refused one. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "check.h"
#include "pairs.h"
#include "socket.h"

/* Shortest time a caller gets to answer the challenge, whatever --timeout. */
#define MIN_ANSWER_MS 3000
#define HELLO_MAX 1024

struct pend {
	int fd;
	int64_t since, deadline;
	uint8_t challenge[DE_NONCE_BYTES];
	uint8_t buf[HELLO_MAX];
	size_t have, want; /* one frame: the header, then its length */
	int parked;        /* hello read, waiting for our session key */
	struct de_data_hello d;
	char from[80];
	struct pend *prev, *next;
};

struct acceptor {
	struct de_check *c;
	int efd;
	struct pend *list;
};

/* Echoes one bulk probe back on its own thread: a path that stalls must
 * not hold the loop, which answers every other node's probe. */
struct echo {
	int fd;
	int64_t deadline;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	uint8_t *buf = malloc(BULK_BYTES);
	size_t moved;

	if (buf != NULL && de_move_all(e->fd, buf, BULK_BYTES, 0, e->deadline, &moved) == 0)
		de_move_all(e->fd, buf, BULK_BYTES, 1, e->deadline, &moved);
	free(buf);
	close(e->fd);
	free(e);
	return NULL;
}

/* Takes fd: the echo needs only the connection, nothing of the check. */
static void echo_start(int fd, int64_t deadline)
{
	struct echo *e = malloc(sizeof(*e));
	pthread_attr_t at;
	pthread_t th;

	if (e == NULL) {
		close(fd);
		return;
	}
	e->fd = fd;
	e->deadline = deadline;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, echo_main, e) != 0) {
		close(fd);
		free(e);
	}
	pthread_attr_destroy(&at);
}

static void drop(struct acceptor *a, struct pend *p)
{
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		a->list = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	if (p->fd >= 0) {
		epoll_ctl(a->efd, EPOLL_CTL_DEL, p->fd, NULL);
		close(p->fd);
	}
	free(p);
}

/* The connection leaves the loop (answered, echoed or handed to the
 * ring): forget it without closing what was handed on. */
static void release(struct acceptor *a, struct pend *p, int keep_fd)
{
	if (keep_fd) {
		epoll_ctl(a->efd, EPOLL_CTL_DEL, p->fd, NULL);
		p->fd = -1;
	}
	drop(a, p);
}

static int session_ready(struct de_check *c)
{
	int ready;

	pthread_mutex_lock(&c->acc.mu);
	ready = c->acc.key_ready;
	pthread_mutex_unlock(&c->acc.mu);
	return ready;
}

/* Keeps fd as rank `from`'s recursive doubling link when this world uses
 * them and `from` is a peer of ours that dials us, once: 1 kept. */
static int rd_keep(struct de_check *c, uint32_t from, int fd)
{
	uint32_t peers[DE_RD_MAX_PEERS], np, i;
	int ok = 0;

	if (!de_rd_used(c->id.world) || de_rd_link(c->id.rank, c->id.world, from) != DE_LINK_ACCEPT)
		return 0;
	np = de_rd_peers(c->id.rank, c->id.world, peers, DE_RD_MAX_PEERS);
	for (i = 0; i < np; i++)
		ok |= peers[i] == from;
	pthread_mutex_lock(&c->acc.mu);
	for (i = 0; i < c->acc.rd_n; i++)
		ok &= c->acc.rd_rank[i] != from;
	if (ok && c->acc.rd_n < DE_RD_MAX_PEERS) {
		c->acc.rd_rank[c->acc.rd_n] = from;
		c->acc.rd_fd[c->acc.rd_n++] = fd;
		pthread_cond_broadcast(&c->acc.cv);
	} else {
		ok = 0;
	}
	pthread_mutex_unlock(&c->acc.mu);
	return ok;
}

/* The hello is whole and the session key known: prove, then serve. */
static void finish(struct acceptor *a, struct pend *p)
{
	struct de_check *c = a->c;
	struct de_data_hello *d = &p->d;

	if (de_auth_data_check(&c->auth, p->challenge, d->rank, d->purpose, d->mac)) {
		de_log("data port", "rejected %s (claims rank %u): no proof of this job's session key",
		       p->from, d->rank);
		drop(a, p);
		return;
	}
	if (d->purpose == DE_PURPOSE_BULK) {
		echo_start(p->fd, de_now_ms() + (int64_t)c->o.timeout_s * 1000);
		release(a, p, 1);
		return;
	}
	if (d->purpose == DE_PURPOSE_PAIR && c->pairs != NULL) {
		de_pairs_serve_start(c, p->fd, de_now_ms() + (int64_t)c->o.timeout_s * 1000);
		release(a, p, 1);
		return;
	}
	if (d->purpose == DE_PURPOSE_RING) {
		int taken = 0;

		pthread_mutex_lock(&c->acc.mu);
		if (c->acc.left_fd < 0 && d->rank == (c->id.rank + c->id.world - 1) % c->id.world) {
			c->acc.left_fd = p->fd;
			taken = 1;
			pthread_cond_broadcast(&c->acc.cv);
		}
		pthread_mutex_unlock(&c->acc.mu);
		if (taken) {
			/* The ring sets its own flags on the fd. */
			release(a, p, 1);
			return;
		}
		de_log("data port", "rejected ring connection from rank %u (%s): not our left neighbour",
		       d->rank, p->from);
	}
	if (d->purpose == DE_PURPOSE_RD) {
		if (rd_keep(c, d->rank, p->fd)) {
			release(a, p, 1);
			return;
		}
		de_log("data port", "rejected recursive doubling link from rank %u (%s): not a peer of ours that dials",
		       d->rank, p->from);
	}
	drop(a, p);
}

/* Reads what is there of the one hello frame, never past it: a ring
 * caller streams its data right behind. */
static void on_readable(struct acceptor *a, struct pend *p)
{
	struct de_check *c = a->c;
	struct de_err e;
	enum de_msg type;
	size_t flen;
	ssize_t n;

	while (p->have < p->want) {
		n = recv(p->fd, p->buf + p->have, p->want - p->have, MSG_DONTWAIT);
		if (n > 0) {
			p->have += (size_t)n;
			if (p->have == DE_PROTO_HDR && p->want == DE_PROTO_HDR) {
				size_t body = (size_t)p->buf[8] << 24 | (size_t)p->buf[9] << 16 |
					      (size_t)p->buf[10] << 8 | p->buf[11];

				if (de_frame_check(p->buf, p->have, HELLO_MAX - DE_PROTO_HDR, &type,
						   &flen, &e) < 0) {
					de_log("data port", "rejected %s: %s", p->from, e.msg);
					drop(a, p);
					return;
				}
				p->want = DE_PROTO_HDR + body;
			}
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		drop(a, p); /* closed or reset before its hello */
		return;
	}
	if (de_frame_check(p->buf, p->have, HELLO_MAX - DE_PROTO_HDR, &type, &flen, &e) != 1 ||
	    de_dec_data_hello(p->buf, flen, &p->d, &e)) {
		de_log("data port", "rejected %s: %s", p->from, e.msg);
		drop(a, p);
		return;
	}
	if (strcmp(p->d.token, c->id.token) != 0 || p->d.rank >= c->id.world) {
		de_log("data port", "rejected %s: not a rank of this job", p->from);
		drop(a, p);
		return;
	}
	/* Nothing more to read: a ring caller's data waits in the socket. */
	epoll_ctl(a->efd, EPOLL_CTL_DEL, p->fd, NULL);
	if (session_ready(c))
		finish(a, p);
	else
		p->parked = 1; /* a peer may call before our peer table (and key) arrived */
}

static void on_accept(struct acceptor *a)
{
	struct de_check *c = a->c;

	for (;;) {
		struct de_addr addr;
		struct epoll_event ev;
		struct de_buf b = { 0 };
		struct de_err e;
		struct pend *p;
		int fd, ok;

		fd = de_accept(c->net.data_fd, &addr);
		if (fd < 0)
			return;
		p = calloc(1, sizeof(*p));
		if (p == NULL) {
			close(fd);
			continue;
		}
		p->fd = fd;
		p->want = DE_PROTO_HDR;
		p->since = de_now_ms();
		p->deadline = p->since + ((int64_t)c->o.timeout_s * 1000 > MIN_ANSWER_MS ?
					  (int64_t)c->o.timeout_s * 1000 : MIN_ANSWER_MS);
		de_addr_str(&addr, p->from, sizeof(p->from));
		de_auth_nonce(p->challenge);
		/* A fresh socket's send buffer takes the small challenge whole. */
		ok = de_enc_challenge(&b, p->challenge, &e) == 0 &&
		     send(fd, b.data, b.len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)b.len;
		de_buf_free(&b);
		ev.events = EPOLLIN;
		ev.data.ptr = p;
		if (!ok || epoll_ctl(a->efd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			free(p);
			continue;
		}
		p->next = a->list;
		if (a->list != NULL)
			a->list->prev = p;
		a->list = p;
	}
}

/* The probe port: a probe resets before it is ever a socket to accept;
 * what gets here sent data or outstayed TCP_DEFER_ACCEPT: not ours. */
static void on_probe_port(int lfd)
{
	int fd;

	while ((fd = de_accept(lfd, NULL)) >= 0)
		close(fd);
}

/* Parked callers once the key is there; callers past their time. */
static int sweep(struct acceptor *a)
{
	int64_t now = de_now_ms();
	int ready = -1, parked = 0;
	struct pend *p = a->list, *next;

	for (; p != NULL; p = next) {
		next = p->next;
		if (p->parked) {
			if (ready < 0)
				ready = session_ready(a->c);
			if (ready) {
				finish(a, p);
				continue;
			}
			parked++;
		}
		if (now >= p->deadline) {
			de_log("data port", "dropped %s: %s in %.1f s", p->from,
			       p->parked ? "this rank never got the session key" : "no hello",
			       (double)(now - p->since) / 1000.0);
			drop(a, p);
		}
	}
	return parked;
}

static void *acceptor_main(void *arg)
{
	struct acceptor a = { arg, -1, NULL };
	struct de_check *c = arg;
	struct epoll_event ev, probe_ev, evs[64];
	int64_t swept = 0;
	int parked = 0;

	a.efd = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	probe_ev.events = EPOLLIN;
	probe_ev.data.ptr = &a; /* neither NULL (the data port) nor a caller */
	if (a.efd < 0 || epoll_ctl(a.efd, EPOLL_CTL_ADD, c->net.data_fd, &ev) != 0 ||
	    epoll_ctl(a.efd, EPOLL_CTL_ADD, c->net.probe_fd, &probe_ev) != 0) {
		de_log("data port", "cannot watch the data port: %s", strerror(errno));
		if (a.efd >= 0)
			close(a.efd);
		return NULL;
	}
	while (!c->acc.stop) {
		/* Short naps while callers wait for our key, else 100 ms. */
		int n = epoll_wait(a.efd, evs, 64, parked ? 10 : 100), i;
		int64_t now;

		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL)
				on_accept(&a);
			else if (evs[i].data.ptr == &a)
				on_probe_port(c->net.probe_fd);
			else
				on_readable(&a, evs[i].data.ptr);
		}
		/* The list is walked at most every 10 ms, not per event. */
		now = de_now_ms();
		if (parked || n == 0 || now - swept >= 10) {
			parked = sweep(&a);
			swept = now;
		}
	}
	while (a.list != NULL)
		drop(&a, a.list);
	close(a.efd);
	return NULL;
}

int de_acceptor_start(struct de_check *c, struct de_fail *f)
{
	c->acc.left_fd = -1;
	c->acc.left_taken = 0;
	pthread_mutex_init(&c->acc.mu, NULL);
	pthread_cond_init(&c->acc.cv, NULL);
	de_set_nonblock(c->net.data_fd, 1);
	de_set_nonblock(c->net.probe_fd, 1);
	if (pthread_create(&c->acc.thread, NULL, acceptor_main, c) != 0)
		return de_fail_set(f, DE_D_INTERNAL, "cannot start the acceptor thread");
	c->acc.running = 1;
	return 0;
}

void de_acceptor_key_ready(struct de_check *c)
{
	pthread_mutex_lock(&c->acc.mu);
	c->acc.key_ready = 1;
	pthread_cond_broadcast(&c->acc.cv);
	pthread_mutex_unlock(&c->acc.mu);
}

/* Waits on c->acc.cv (c->acc.mu held) for at most ms < 1000 milliseconds:
 * the caller loops on its condition and its own deadline. */
static void cv_wait_ms(struct de_check *c, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c->acc.cv, &c->acc.mu, &ts);
}

int de_acceptor_take_left(struct de_check *c, int64_t deadline)
{
	int fd;

	pthread_mutex_lock(&c->acc.mu);
	while (c->acc.left_fd < 0 && de_now_ms() < deadline)
		cv_wait_ms(c, 100);
	fd = c->acc.left_fd;
	/* The fd stays in left_fd, so a second caller for it is refused. */
	c->acc.left_taken = fd >= 0;
	pthread_mutex_unlock(&c->acc.mu);
	return fd;
}

int de_acceptor_take_rd(struct de_check *c, uint32_t from, int64_t deadline)
{
	int fd = -1;
	unsigned i;

	pthread_mutex_lock(&c->acc.mu);
	for (;;) {
		for (i = 0; i < c->acc.rd_n && fd < 0; i++) {
			if (c->acc.rd_rank[i] == from && !(c->acc.rd_taken & 1u << i)) {
				fd = c->acc.rd_fd[i];
				c->acc.rd_taken |= 1u << i;
			}
		}
		if (fd >= 0 || de_now_ms() >= deadline)
			break;
		cv_wait_ms(c, 100);
	}
	pthread_mutex_unlock(&c->acc.mu);
	return fd;
}

void de_acceptor_stop(struct de_check *c)
{
	if (!c->acc.running)
		return;
	c->acc.stop = 1;
	pthread_join(c->acc.thread, NULL);
	c->acc.running = 0;
	/* Handed over but never taken (the run ended first). */
	if (c->acc.left_fd >= 0 && !c->acc.left_taken)
		close(c->acc.left_fd);
	c->acc.left_fd = -1;
	{
		unsigned i;

		for (i = 0; i < c->acc.rd_n; i++)
			if (!(c->acc.rd_taken & 1u << i))
				close(c->acc.rd_fd[i]);
		c->acc.rd_n = 0;
	}
}
