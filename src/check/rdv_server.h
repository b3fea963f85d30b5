/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rank 0's rendezvous server, inside: one struct rdv_server that every
 * part is handed. rdv_server.c starts and stops it (rendezvous.h's API),
 * rdv_loop.c runs the thread's epoll loop over the connections and the
 * linger after a verdict, rdv_world.c admits ranks and assembles the
 * world, rdv_reports.c takes the phases' reports and tells every rank the
 * job's verdict, which src/lib's rdv_verdict.c decides. */
#ifndef DISTENV_CHECK_RDV_SERVER_H
#define DISTENV_CHECK_RDV_SERVER_H

#include <pthread.h>
#include <stdint.h>

#include "check.h"
#include "rdv_verdict.h"

/* One connection to rank 0's port: a rank, or something not yet one. */
struct rdv_conn {
	int fd;
	struct de_rbuf rb;
	int64_t since;
	int64_t rank; /* -1 until HELLO; -2 a rank of this job that ended it */
	char from[80];
	struct de_hello h;
	int reported;
	struct de_text report;
	uint8_t nonce[DE_NONCE_BYTES]; /* our challenge to it */
};

struct rdv_server {
	struct de_check *c;
	struct de_rdv_job job;     /* c's identity, as rdv_verdict.h reads it */
	struct de_rdv_rank *view;  /* by rank, rebuilt from byrank to judge (rdv_view) */
	pthread_t th;
	int running;
	int lfd, efd, wake;
	struct rdv_conn **byrank;
	uint32_t joined;
	/* Connections that have not said HELLO: counted, and listed for the
	 * sweep that drops the silent ones. */
	int npending, max_pending;
	struct rdv_conn **pending;
	int phase; /* -1 gathering, then 0..nphases-1 */
	int64_t since, deadline; /* this phase (or the gathering) */
	int done;
	struct rdv_conn *extra; /* a rejected claimant who should hear why too */
	uint32_t *node, nodes;  /* rank -> node index, once the world is whole */
	unsigned rejected;      /* connections refused for authentication */
	/* The verdict, kept to tell ranks that come after it (the linger). */
	int have_verdict;
	struct de_text verdict;
	uint8_t *told; /* by rank: heard the verdict */
	uint32_t ntold;
	int64_t gather_deadline;
};

/* rdv_loop.c */
void *rdv_main(void *arg); /* the server thread: arg is the struct rdv_server */
void rdv_conn_close(struct rdv_server *s, struct rdv_conn *k);
/* One frame of t (its record too) to k. */
void rdv_send_frame(struct rdv_conn *k, enum de_msg type, const struct de_text *t);
void rdv_send_text(struct rdv_conn *k, enum de_msg type, enum de_diag code,
		   uint32_t about, const char *text);

/* rdv_world.c. 1 when it turned k away (k closed and freed then). */
int rdv_on_hello(struct rdv_server *s, struct rdv_conn *k, const struct de_hello *h);
int rdv_turned_away(struct rdv_server *s, struct rdv_conn *k, const struct de_hello *h);

/* rdv_reports.c */
void rdv_on_report(struct rdv_server *s, struct rdv_conn *k, const struct de_text *t);
/* Ends the job for everyone with one diagnosis. */
void rdv_abort(struct rdv_server *s, enum de_diag d, uint32_t about, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* k, a rank of this job that cannot join, ends the job: it hears the
 * verdict with the others. Returns 0 (k stays open until the end). */
int rdv_abort_by(struct rdv_server *s, struct rdv_conn *k, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The budget ran out: the ranks that never came, or never reported. */
void rdv_abort_timeout(struct rdv_server *s);
void rdv_keep_verdict(struct rdv_server *s, enum de_diag d, uint32_t about, const char *text);
/* The verdict v (rdv_verdict.h), with the nodes it blames, kept (the
 * first one only) to tell; rdv_tell also tells everyone now. */
void rdv_keep(struct rdv_server *s, const struct de_rdv_verdict *v);
void rdv_tell(struct rdv_server *s, const struct de_rdv_verdict *v);
void rdv_mark_told(struct rdv_server *s, uint32_t rank);
/* The ranks as rdv_verdict.h sees them, from the connections. */
const struct de_rdv_rank *rdv_view(struct rdv_server *s);

#endif
