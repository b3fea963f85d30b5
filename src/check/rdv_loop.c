/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rank 0's server, the loop: one thread, one epoll loop (no thread per
 * peer) over the listener and every connection, until the last phase or
 * a verdict; connections that never say HELLO are dropped, and after a
 * verdict the ranks that come late still hear it (the linger). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "auth.h"
#include "budget.h"
#include "rdv_server.h"

/* A connection that has not said HELLO within this long is dropped. */
#define HELLO_GRACE_MS 5000

/* Connections that have not said HELLO yet, in s->pending: each carries
 * its start time, and the sweep after every wait drops the silent ones. */
static void track_pending(struct rdv_server *s, struct rdv_conn *k)
{
	int i;

	for (i = 0; i < s->max_pending; i++)
		if (s->pending[i] == NULL) {
			s->pending[i] = k;
			return;
		}
}

static void untrack(struct rdv_server *s, struct rdv_conn *k)
{
	int i;

	if (s->pending == NULL)
		return;
	for (i = 0; i < s->max_pending; i++)
		if (s->pending[i] == k)
			s->pending[i] = NULL;
}

void rdv_conn_close(struct rdv_server *s, struct rdv_conn *k)
{
	if (k == s->extra)
		s->extra = NULL;
	untrack(s, k);
	epoll_ctl(s->efd, EPOLL_CTL_DEL, k->fd, NULL);
	close(k->fd);
	if (k->rank < 0)
		s->npending--;
	else if (s->byrank[k->rank] == k)
		s->byrank[k->rank] = NULL;
	de_rbuf_free(&k->rb);
	free(k);
}

void rdv_send_frame(struct rdv_conn *k, enum de_msg type, const struct de_text *t)
{
	struct de_buf b = { 0 };
	struct de_err e;

	if (de_enc_text(&b, type, t, &e) == 0)
		de_send_all(k->fd, b.data, b.len, de_now_ms() + 2000);
	de_buf_free(&b);
}

void rdv_send_text(struct rdv_conn *k, enum de_msg type, enum de_diag code,
		   uint32_t about, const char *text)
{
	struct de_buf b = { 0 };
	struct de_text t;
	struct de_err e;

	memset(&t, 0, sizeof(t));
	t.code = (uint16_t)code;
	t.rank = about;
	snprintf(t.text, sizeof(t.text), "%s", text);
	if (de_enc_text(&b, type, &t, &e) == 0)
		de_send_all(k->fd, b.data, b.len, de_now_ms() + 2000);
	de_buf_free(&b);
}

/* Every few seconds of a long wait, rank 0 says who it waits for. */
#define PROGRESS_MS 5000

static void progress(struct rdv_server *s)
{
	char list[1200];
	uint32_t n = de_rdv_waiting_for(&s->job, rdv_view(s), s->phase < 0, list, sizeof(list));

	if (n == 0)
		return;
	if (s->phase < 0)
		de_log("rank 0", "%.0f s: %u of %u ranks joined; waiting for rank%s %s",
		       (double)(de_now_ms() - s->since) / 1000.0, s->joined, s->c->id.world,
		       n == 1 ? "" : "s", list);
	else
		de_log("rank 0", "%.0f s into phase %d (%s): waiting for the report of rank%s %s",
		       (double)(de_now_ms() - s->since) / 1000.0, s->phase,
		       s->phase == 0 ? "node probe" : s->c->o.pairs ? "pair round" : "collective",
		       n == 1 ? "" : "s", list);
}

static void on_readable(struct rdv_server *s, struct rdv_conn *k)
{
	enum de_msg type;
	const uint8_t *frame;
	size_t len;
	struct de_err e;
	/* Peers may only send small frames; rank 0 never reads big ones. */
	int rc = de_rbuf_fill(k->fd, &k->rb, DE_PROTO_MAX_SMALL, &type, &frame,
			      &len, &e);

	while (rc == 1 && !s->done) {
		if (k->rank < 0 && type == DE_MSG_HELLO) {
			struct de_hello h;

			if (de_dec_hello(frame, len, &h, &e)) {
				de_log("rank 0", "rejected %s: %s", k->from, e.msg);
				rdv_conn_close(s, k);
				return;
			}
			if (rdv_on_hello(s, k, &h))
				return; /* closed */
			if (k->rank == -2 || s->done)
				return; /* closed at the end with the others */
		} else if (k->rank >= 0 && type == DE_MSG_REPORT) {
			struct de_text t;

			if (de_dec_text(frame, len, &t, &e)) {
				rdv_abort(s, DE_D_INTERNAL, (uint32_t)k->rank,
					  "bad report from rank %" PRId64 ": %s",
					  k->rank, e.msg);
				return;
			}
			rdv_on_report(s, k, &t);
		} else {
			de_log("rank 0", "rejected %s: unexpected %s frame", k->from,
				de_msg_name(type));
			if (k->rank >= 0) {
				rdv_abort(s, DE_D_INTERNAL, (uint32_t)k->rank,
					  "rank %" PRId64 " sent an unexpected %s frame",
					  k->rank, de_msg_name(type));
				return;
			}
			rdv_conn_close(s, k);
			return;
		}
		rc = de_rbuf_fill(k->fd, &k->rb, DE_PROTO_MAX_SMALL, &type,
				  &frame, &len, &e);
	}
	if (s->done)
		return;
	if (rc == -1) {
		if (k->rank >= 0) {
			rdv_abort(s, DE_D_INTERNAL, (uint32_t)k->rank,
				  "rank %" PRId64 " sent a bad frame: %s", k->rank, e.msg);
			return;
		}
		de_log("rank 0", "rejected %s: %s", k->from, e.msg);
		rdv_conn_close(s, k);
	} else if (rc == -2) {
		if (k->rank >= 0) {
			uint32_t r = (uint32_t)k->rank;

			rdv_abort(s, DE_D_PEER_LOST, r,
				  "rank %u (pid %u on %s) exited or lost its connection to rank 0",
				  r, k->h.pid, k->h.host);
			return;
		}
		rdv_conn_close(s, k);
	}
}

static void on_accept(struct rdv_server *s)
{
	struct de_addr a;
	struct rdv_conn *k;
	struct epoll_event ev;
	int fd;

	fd = de_accept(s->lfd, &a);
	if (fd < 0)
		return;
	if (s->npending >= s->max_pending) {
		close(fd); /* flood: shed, the real ranks retry */
		return;
	}
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		close(fd);
		return;
	}
	k->fd = fd;
	k->rank = -1;
	k->since = de_now_ms();
	de_addr_str(&a, k->from, sizeof(k->from));
	snprintf(k->from + strlen(k->from), sizeof(k->from) - strlen(k->from),
		 ":%u", de_addr_port(&a));
	s->npending++;
	track_pending(s, k);
	/* Challenge first: a HELLO must be made for this connection. */
	{
		struct de_buf b = { 0 };
		struct de_err e;

		de_auth_nonce(k->nonce);
		if (de_enc_challenge(&b, k->nonce, &e) == 0)
			de_send_all(fd, b.data, b.len, de_now_ms() + 1000);
		de_buf_free(&b);
	}
	ev.events = EPOLLIN;
	ev.data.ptr = k;
	epoll_ctl(s->efd, EPOLL_CTL_ADD, fd, &ev);
}

/* Drops what has not said HELLO within HELLO_GRACE_MS. */
static void sweep_silent(struct rdv_server *s)
{
	int i;
	int64_t now = de_now_ms();

	for (i = 0; i < s->max_pending; i++) {
		struct rdv_conn *k = s->pending[i];

		if (k == NULL)
			continue;
		if (k->rank != -1) {
			s->pending[i] = NULL;
			continue;
		}
		if (now - k->since > HELLO_GRACE_MS) {
			de_log("rank 0", "dropped %s: no HELLO within %d s", k->from,
				HELLO_GRACE_MS / 1000);
			s->pending[i] = NULL;
			rdv_conn_close(s, k);
		}
	}
}

/* After a verdict reached while ranks were still arriving, those that
 * come later hear it too (instead of waiting out their own timeout on a
 * port nobody serves): each that proves it is a rank of this job gets
 * the ABORT, until every rank heard it or the gathering's deadline. */
static void linger_readable(struct rdv_server *s, struct rdv_conn *k)
{
	enum de_msg type;
	const uint8_t *frame;
	size_t len;
	struct de_err e;
	int rc = de_rbuf_fill(k->fd, &k->rb, DE_PROTO_MAX_SMALL, &type, &frame, &len, &e);
	struct de_hello h;

	if (rc == 0)
		return;
	if (rc == 1 && k->rank == -1 && type == DE_MSG_HELLO && de_dec_hello(frame, len, &h, &e) == 0) {
		if (rdv_turned_away(s, k, &h))
			return;
		rdv_send_frame(k, DE_MSG_ABORT, &s->verdict);
		rdv_mark_told(s, h.rank);
	}
	rdv_conn_close(s, k);
}

static void linger(struct rdv_server *s)
{
	struct epoll_event evs[64];
	char list[1200], item[16];
	struct de_cutlist l;
	uint32_t i, n = 0;

	while (s->ntold < s->c->id.world && de_now_ms() < s->gather_deadline) {
		int64_t wait = s->gather_deadline - de_now_ms();
		int j, m = epoll_wait(s->efd, evs, 64, wait > 200 ? 200 : (int)wait);

		for (j = 0; j < m; j++) {
			struct rdv_conn *k = evs[j].data.ptr;

			if (k == NULL) {
				on_accept(s);
			} else if (k == (struct rdv_conn *)&s->wake) {
				uint64_t v;

				/* Rank 0's main is done; we are not yet. */
				if (read(s->wake, &v, sizeof(v)) < 0)
					v = 0;
			} else {
				linger_readable(s, k);
			}
		}
		sweep_silent(s);
	}
	if (s->ntold >= s->c->id.world)
		return;
	de_cutlist_init(&l, list, sizeof(list));
	for (i = 0; i < s->c->id.world; i++)
		if (!s->told[i]) {
			snprintf(item, sizeof(item), "%u", i);
			de_cutlist_add(&l, item);
			n++;
		}
	de_log("rank 0", "the verdict reached %u of %u ranks: rank%s %s never came to hear it",
	       s->ntold, s->c->id.world, n == 1 ? "" : "s", de_cutlist_end(&l));
}

void *rdv_main(void *arg)
{
	struct rdv_server *s = arg;
	struct epoll_event evs[64];
	int64_t next_progress;
	uint32_t i;

	s->since = de_now_ms();
	/* One budget for the whole run: the gathering, each phase and the
	 * linger all end by rank 0's, plus the time to judge. */
	s->deadline = s->gather_deadline = s->c->deadline + DE_BUDGET_JUDGE_MS;
	next_progress = s->since + PROGRESS_MS;
	while (!s->done) {
		int64_t wait = s->deadline - de_now_ms();
		int n, j;

		if (wait <= 0) {
			rdv_abort_timeout(s);
			break;
		}
		n = epoll_wait(s->efd, evs, 64, wait > 200 ? 200 : (int)wait);
		for (j = 0; j < n && !s->done; j++) {
			struct rdv_conn *k = evs[j].data.ptr;

			if (k == NULL) {
				on_accept(s);
				continue;
			}
			if (k == (struct rdv_conn *)&s->wake) {
				s->done = 1;
				break;
			}
			on_readable(s, k);
		}
		sweep_silent(s);
		if (de_now_ms() >= next_progress && !s->done) {
			/* Counted from the start of this phase: quiet when fast. */
			if (de_now_ms() - s->since >= PROGRESS_MS)
				progress(s);
			next_progress = de_now_ms() + PROGRESS_MS;
		}
	}
	/* Close everything: the ranks have their verdict. */
	for (i = 0; i < s->c->id.world; i++)
		if (s->byrank[i] != NULL) {
			struct rdv_conn *k = s->byrank[i];

			s->byrank[i] = NULL;
			k->rank = -1;
			s->npending++;
			untrack(s, k);
			rdv_conn_close(s, k);
		}
	if (s->have_verdict)
		linger(s);
	for (i = 0; i < (uint32_t)s->max_pending; i++)
		if (s->pending[i] != NULL) {
			struct rdv_conn *k = s->pending[i];

			s->pending[i] = NULL;
			if (k->rank == -1)
				rdv_conn_close(s, k);
		}
	return NULL;
}
