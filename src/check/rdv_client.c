/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rendezvous client, run by every rank (rank 0 included), after the
 * join (rdv_join.c): report each phase and wait for the job's verdict,
 * and tell a lost rank 0 from rank 0's verdict. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "budget.h"
#include "check.h"
#include "rdv_client.h"
#include "rendezvous.h"


/* Rank 0's rendezvous connection ended: one line however it ended (EOF,
 * reset, a failed send), so a killed rank 0 reads the same every time. */
static int rank0_gone(struct de_check *c, struct de_fail *f)
{
	return de_fail_set(f, DE_D_PEER_LOST,
			   "rank 0 (%s) closed the rendezvous connection: it exited or was killed",
			   c->id.master);
}

/* rank0_closed: waits up to ms for word from rank 0 after a lost data
 * connection; 1 when rank 0 closed its end of the rendezvous connection
 * with nothing for us to read (it died), 0 when it sent something (its
 * verdict) or nothing came. A killed process's connections all close at
 * once, and rank 0's server judges a rank whose rendezvous connection
 * closed at once: this long covers either trailing the data connection,
 * so a dead rank reads the same whichever socket noticed first. Rank 0's
 * own client waits so too, for its server's verdict. */
#define RANK0_GONE_MS 200
static int rank0_closed(struct de_check *c, int ms)
{
	struct pollfd p = { .fd = c->net.rdv_fd, .events = POLLIN | POLLRDHUP };
	char b;
	ssize_t k;

	/* Bytes read but not yet taken as a frame: something from rank 0 (the
	 * last frame taken stays in the buffer, counted in consumed). */
	if (c->net.rdv_fd < 0 || c->net.rdv_rb.len > c->net.rdv_rb.consumed)
		return 0;
	/* Rank 0's own client waits for its server's verdict; its server
	 * closing is never rank 0 gone. */
	if (poll(&p, 1, ms) <= 0 || c->id.rank == 0)
		return 0;
	k = recv(c->net.rdv_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR);
}

/* since: when this wait began, for the time the failure states. */
int de_rdvc_wait_frame(struct de_check *c, int64_t since, int64_t deadline, enum de_msg *type,
		       const uint8_t **frame, size_t *len, struct de_fail *f)
{
	struct de_err e;
	int rc = de_recv_frame(c->net.rdv_fd, &c->net.rdv_rb, DE_PROTO_MAX_PEERS,
			       deadline, type, frame, len, &e);

	if (rc == 1)
		return 0;
	if (rc == 0)
		return rank0_gone(c, f);
	if (de_now_ms() >= deadline)
		return de_fail_set(f, DE_D_TIMEOUT,
				   "no answer from rank 0 (%s:%u) in %.1f s (--timeout=%d s, and %d s more for rank 0's verdict)",
				   c->id.master, c->id.master_port,
				   (double)(de_now_ms() - since) / 1000.0, c->o.timeout_s,
				   DE_BUDGET_VERDICT_MS / 1000);
	return de_fail_set(f, DE_D_INTERNAL, "from rank 0: %s", e.msg);
}

int de_rdvc_take_abort(const uint8_t *frame, size_t len, struct de_fail *f)
{
	struct de_text t;
	struct de_err e;

	if (de_dec_text(frame, len, &t, &e))
		return de_fail_set(f, DE_D_INTERNAL, "bad ABORT from rank 0: %s", e.msg);
	if (t.text[0] == '\0')
		de_fail_set(f, (enum de_diag)t.code, "rank 0 refused this rank");
	else if (t.type == DE_MSG_REJECT)
		de_fail_set(f, (enum de_diag)t.code, "rank 0 refused this rank: %s", t.text);
	else
		de_fail_set(f, (enum de_diag)t.code, "%s", t.text);
	f->from_rank0 = 1;
	if (t.rec == DE_REC_EXCLUDE) {
		snprintf(f->exclude, sizeof(f->exclude), "%s", t.r.exclude.hosts);
		f->exclude_sure = t.r.exclude.sure;
	}
	return -1;
}

int de_rdv_phase_rec(struct de_check *c, struct de_text *rep, struct de_text *go,
		     struct de_fail *f)
{
	struct de_buf b = { 0 };
	static struct de_text t; /* only the main thread reports */
	struct de_err e;
	enum de_msg type;
	const uint8_t *frame;
	size_t len;
	int64_t since = de_now_ms();
	/* Rank 0 judges by the end of its budget: the verdict's slack. */
	int64_t deadline = c->deadline + DE_BUDGET_VERDICT_MS;

	rep->rank = c->id.rank;
	if (de_enc_text(&b, DE_MSG_REPORT, rep, &e) != 0) {
		de_buf_free(&b);
		return de_fail_set(f, DE_D_INTERNAL, "cannot encode our report: %s", e.msg);
	}
	if (de_send_all(c->net.rdv_fd, b.data, b.len, deadline) != 0) {
		de_buf_free(&b);
		return rank0_gone(c, f);
	}
	de_buf_free(&b);
	if (de_rdvc_wait_frame(c, since, deadline, &type, &frame, &len, f))
		return -1;
	if (type == DE_MSG_ABORT)
		return de_rdvc_take_abort(frame, len, f);
	if (type != DE_MSG_GO)
		return de_fail_set(f, DE_D_INTERNAL, "rank 0 sent %s, expected GO",
				   de_msg_name(type));
	if (go == NULL)
		go = &t;
	if (de_dec_text(frame, len, go, &e))
		return de_fail_set(f, DE_D_INTERNAL, "bad GO from rank 0: %s", e.msg);
	return 0;
}

/* A report of text alone. */
static void text_report(struct de_text *t, enum de_diag d, uint64_t value, const char *text)
{
	memset(t, 0, sizeof(*t));
	t->code = (uint16_t)d;
	t->value = value;
	snprintf(t->text, sizeof(t->text), "%s", text ? text : "");
}

int de_rdv_phase(struct de_check *c, enum de_diag mine, uint64_t value, const char *text,
		 struct de_fail *f)
{
	static struct de_text t;

	text_report(&t, mine, value, text);
	return de_rdv_phase_rec(c, &t, NULL, f);
}

int de_rdv_report_failure_rec(struct de_check *c, struct de_text *rep, struct de_fail *f)
{
	struct de_fail mine = *f;

	/* A lost data connection and a rank 0 that is gone: rank 0 died, the
	 * cause of both (however the data connection noticed first); or rank
	 * 0 knows more (a rank whose rendezvous connection closed): its
	 * verdict. */
	if (mine.diag == DE_D_PEER_LOST && !mine.from_rank0 && rank0_closed(c, RANK0_GONE_MS))
		return rank0_gone(c, f), -1;
	if (de_rdv_phase_rec(c, rep, NULL, f) == 0 || !f->from_rank0)
		*f = mine;
	return -1;
}

int de_rdv_report_failure(struct de_check *c, struct de_fail *f)
{
	static struct de_text t;

	text_report(&t, f->diag, 0, f->msg);
	return de_rdv_report_failure_rec(c, &t, f);
}

int de_rdv_poll_abort(struct de_check *c, struct de_fail *f)
{
	enum de_msg type;
	const uint8_t *frame;
	size_t len;
	struct de_err e;
	int rc = de_rbuf_fill(c->net.rdv_fd, &c->net.rdv_rb, DE_PROTO_MAX_SMALL, &type,
			      &frame, &len, &e);

	if (rc == 0)
		return 0;
	if (rc == -2)
		return rank0_gone(c, f), 1;
	if (rc == 1 && type == DE_MSG_ABORT)
		return de_rdvc_take_abort(frame, len, f), 1;
	return de_fail_set(f, DE_D_INTERNAL, "unexpected frame from rank 0 mid-collective"), 1;
}
