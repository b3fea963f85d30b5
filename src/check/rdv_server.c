/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rank-0 rendezvous server on MASTER_ADDR:MASTER_PORT, started and
 * stopped (rendezvous.h). It validates the whole world before anyone
 * gets the peer table, then runs phases: every rank reports, rank 0
 * answers GO or ABORT with one diagnosis for everybody. Anything on the
 * port that is not a rank of this job is turned away without disturbing
 * the job. Its parts are in rdv_server.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdv_server.h"
#include "rendezvous.h"

/* Unidentified connections held at once, beyond the world's: every rank
 * may be between connect and HELLO at the same time. */
#define EXTRA_PENDING 256

/* rendezvous.h's API has no handle: rank 0 runs one server. */
static struct rdv_server *the_server;

static void server_free(struct rdv_server *s)
{
	free(s->byrank);
	free(s->told);
	free(s->view);
	free(s->node);
	free(s->pending);
	free(s);
}

static struct rdv_server *server_new(struct de_check *c)
{
	struct rdv_server *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->c = c;
	s->job.world = c->id.world;
	s->job.master = c->id.master;
	s->job.master_port = c->id.master_port;
	s->job.expect_host = c->id.expect_host;
	s->job.nodelist = c->id.nodelist;
	s->phase = -1;
	s->lfd = s->efd = s->wake = -1;
	s->byrank = calloc(c->id.world, sizeof(*s->byrank));
	s->told = calloc(c->id.world, 1);
	s->view = calloc(c->id.world, sizeof(*s->view));
	s->max_pending = (int)c->id.world + EXTRA_PENDING;
	s->pending = calloc((size_t)s->max_pending, sizeof(*s->pending));
	if (s->byrank == NULL || s->told == NULL || s->view == NULL || s->pending == NULL) {
		server_free(s);
		return NULL;
	}
	return s;
}

static int server_start(struct de_check *c, const struct de_fail *doom, struct de_fail *f)
{
	struct rdv_server *s = server_new(c);
	struct de_addr any;
	struct epoll_event ev;
	struct de_err e;

	if (s == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	if (doom != NULL) {
		/* Rank 0 failed before it could join: serve only its verdict. */
		struct de_rdv_verdict v;

		de_rdv_rank_failed(&v, 0, c->id.host, doom->diag, doom->msg);
		snprintf(v.text, sizeof(v.text), "rank 0 on %s failed before it could join: %s",
			 c->id.host, doom->msg);
		rdv_keep(s, &v);
		rdv_mark_told(s, 0);
		s->done = 1;
	}
	/* All interfaces, as torch's TCPStore: MASTER_ADDR names this host
	 * as the others see it, which need not be an address we can bind. */
	memset(&any, 0, sizeof(any));
	any.ss.ss_family = c->net.master_addr.ss.ss_family;
	any.len = c->net.master_addr.len;
	de_addr_set_port(&any, c->id.master_port);
	s->lfd = de_listen(&any, 4096, &e);
	if (s->lfd < 0) {
		int err_no = errno;

		server_free(s);
		errno = err_no;
		if (errno == EADDRINUSE)
			return de_fail_set(f, DE_D_PORT_IN_USE,
					   "rank 0 cannot listen on MASTER_PORT=%u on %s: already in use",
					   c->id.master_port, c->id.host);
		return de_fail_set(f, DE_D_PORT_IN_USE, "rank 0: %s", e.msg);
	}
	de_set_nonblock(s->lfd, 1);
	s->efd = epoll_create1(EPOLL_CLOEXEC);
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(s->efd, EPOLL_CTL_ADD, s->lfd, &ev);
	ev.data.ptr = &s->wake;
	epoll_ctl(s->efd, EPOLL_CTL_ADD, s->wake, &ev);
	if (pthread_create(&s->th, NULL, rdv_main, s) != 0) {
		close(s->lfd);
		close(s->wake);
		close(s->efd);
		server_free(s);
		return de_fail_set(f, DE_D_INTERNAL, "cannot start the rendezvous thread");
	}
	s->running = 1;
	the_server = s;
	return 0;
}

int de_rdv_server_start(struct de_check *c, struct de_fail *f)
{
	return server_start(c, NULL, f);
}

int de_rdv_server_doom(struct de_check *c, const struct de_fail *mine)
{
	struct de_fail f;

	return server_start(c, mine, &f);
}

void de_rdv_server_stop(void)
{
	struct rdv_server *s = the_server;
	uint64_t one = 1;

	if (s == NULL || !s->running)
		return;
	if (write(s->wake, &one, sizeof(one)) < 0)
		s->done = 1;
	pthread_join(s->th, NULL);
	/* The claimant that ended the job stayed open to the end (it heard
	 * the verdict, and its connection lives as long as rank 0). */
	if (s->extra != NULL)
		rdv_conn_close(s, s->extra);
	close(s->lfd);
	close(s->wake);
	close(s->efd);
	the_server = NULL;
	server_free(s);
}
