/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rendezvous client's join, run by every rank (rank 0 included):
 * meet rank 0's server, prove who we are, take the peer table; or, for a
 * rank that failed before it could join, tell rank 0 why. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "backend.h"
#include "budget.h"
#include "check.h"
#include "rdv_client.h"
#include "rendezvous.h"
#include "socket.h"
#include "world.h"

/* Rank 0 greets every connection at once with a CHALLENGE; bytes that
 * are not a distenv frame, or silence until the deadline, mean another
 * program holds MASTER_PORT: say what it looks like. */
static int wait_greeting(struct de_check *c, int64_t deadline, enum de_msg *type,
			 const uint8_t **frame, size_t *len, struct de_fail *f)
{
	int64_t since = de_now_ms();
	char what[160];

	if (de_rdvc_wait_frame(c, since, deadline, type, frame, len, f) == 0)
		return 0;
	if (f->diag == DE_D_INTERNAL && c->net.rdv_rb.len > 0) {
		de_foreign_describe(c->net.rdv_rb.data, c->net.rdv_rb.len, what, sizeof(what));
		return de_fail_set(f, DE_D_NOT_DISTENV,
				   "MASTER_ADDR=%s port %u is not a distenv rank 0: it answered like %s",
				   c->id.master, c->id.master_port, what);
	}
	if (f->diag == DE_D_TIMEOUT)
		return de_fail_set(f, DE_D_NOT_DISTENV,
				   "MASTER_ADDR=%s port %u accepted the connection but sent nothing in %.1f s: "
				   "a distenv rank 0 greets at once; something else listens there (a server that waits "
				   "for its client, e.g. HTTP or torch's TCPStore)",
				   c->id.master, c->id.master_port, (double)(de_now_ms() - since) / 1000.0);
	return -1;
}

/* Connects to rank 0 (retrying refusals: it may start after us) until
 * deadline and takes its challenge, which rank 0 sends at once, by
 * reply_by; c->net.rdv_fd is the connection then. */
static int meet(struct de_check *c, int64_t start, int64_t deadline, int64_t reply_by,
		uint8_t challenge[DE_NONCE_BYTES], struct de_fail *f)
{
	enum de_conn last = DE_CONN_REFUSED;
	int err_no = 0, fd = -1;
	struct de_err e;
	enum de_msg type;
	const uint8_t *frame;
	size_t len;

	if (de_now_ms() >= deadline)
		return de_fail_set(f, DE_D_TIMEOUT,
				   "--timeout=%d s ran out before this rank could meet rank 0 (%.1f s went to "
				   "its setup: name resolution, authentication, loading the backend)",
				   c->o.timeout_s, (double)(start - (c->deadline - (int64_t)c->o.timeout_s * 1000)) / 1000.0);
	/* A dropped SYN waits out its attempt; that is the firewall case. */
retry:
	while (de_now_ms() < deadline) {
		int64_t attempt = de_now_ms() + 5000;

		last = de_connect(&c->net.master_addr, attempt < deadline ? attempt : deadline,
				  &fd, &err_no);
		if (last == DE_CONN_OK)
			break;
		if (last != DE_CONN_TIMEOUT)
			usleep(20000);
	}
	if (fd < 0) {
		char a[64];

		de_addr_str(&c->net.master_addr, a, sizeof(a));
		if (last == DE_CONN_TIMEOUT)
			return de_fail_set(f, DE_D_MASTER_TIMEOUT,
					   "connecting to MASTER_ADDR=%s (%s) port %u timed out after %.1f s: nothing answered",
					   c->id.master, a, c->id.master_port,
					   (double)(de_now_ms() - start) / 1000.0);
		if (last == DE_CONN_REFUSED)
			return de_fail_set(f, DE_D_MASTER_REFUSED,
					   "MASTER_ADDR=%s (%s) refused connections to port %u for %.1f s",
					   c->id.master, a, c->id.master_port,
					   (double)(de_now_ms() - start) / 1000.0);
		return de_fail_set(f, DE_D_MASTER_TIMEOUT,
				   "cannot connect to MASTER_ADDR=%s (%s) port %u: %s",
				   c->id.master, a, c->id.master_port, strerror(err_no));
	}
	c->net.rdv_fd = fd;
	if (wait_greeting(c, reply_by, &type, &frame, &len, f)) {
		/* Closed before the challenge: rank 0 shed us under a burst of
		 * connections (or is restarting): try again while time is left. */
		if (f->diag == DE_D_PEER_LOST && de_now_ms() < deadline) {
			close(fd);
			c->net.rdv_fd = fd = -1;
			de_rbuf_free(&c->net.rdv_rb);
			usleep(20000);
			goto retry;
		}
		return -1;
	}
	if (type != DE_MSG_CHALLENGE || de_dec_challenge(frame, len, challenge, &e))
		return de_fail_set(f, DE_D_INTERNAL,
				   "MASTER_ADDR=%s:%u did not speak distenv's protocol (got %s first)",
				   c->id.master, c->id.master_port, de_msg_name(type));
	return 0;
}

/* Our HELLO, proved for rank 0's challenge; why non-NULL: this rank
 * failed before it could join, and says so instead. */
static int send_hello(struct de_check *c, const uint8_t challenge[DE_NONCE_BYTES],
		      struct de_hello *h, const struct de_fail *why, int64_t deadline,
		      struct de_fail *f)
{
	struct de_buf b = { 0 };
	struct de_err e;

	memset(h, 0, sizeof(*h));
	snprintf(h->token, sizeof(h->token), "%s", c->id.token);
	h->rank = c->id.rank;
	h->world = c->id.world;
	/* What the environment said, DE_UNSET where it said nothing: rank 0
	 * checks the layout as a whole (world.c). */
	h->local_rank = c->id.have_local_rank ? c->id.local_rank : DE_UNSET;
	h->local_world = c->id.have_local_world ? c->id.local_world : DE_UNSET;
	h->node_rank = c->id.have_node_rank ? c->id.node_rank : DE_UNSET;
	h->pid = (uint32_t)getpid();
	h->backend = c->be != NULL ? (uint8_t)c->be->id : 0;
	h->port = de_addr_port(&c->net.data_addr);
	h->probe_port = c->net.probe_port;
	snprintf(h->host, sizeof(h->host), "%s", c->id.host);
	de_addr_str(&c->net.data_addr, h->addr, sizeof(h->addr));
	snprintf(h->iface, sizeof(h->iface), "%s", c->net.iface);
	snprintf(h->params, sizeof(h->params), "%s", c->id.params);
	if (why != NULL) {
		h->failed = (uint16_t)why->diag;
		snprintf(h->why, sizeof(h->why), "%.*s", (int)DE_PROTO_MAX_WHY, why->msg);
	}
	if (de_auth_hello_make(&c->auth, challenge, h, f))
		return -1;
	if (de_enc_hello(&b, h, &e)) {
		de_buf_free(&b);
		return de_fail_set(f, DE_D_INTERNAL, "encoding this rank's HELLO: %s", e.msg);
	}
	if (de_send_all(c->net.rdv_fd, b.data, b.len, deadline)) {
		de_buf_free(&b);
		return de_fail_set(f, DE_D_PEER_LOST, "sending HELLO to rank 0: %s",
				   strerror(errno));
	}
	de_buf_free(&b);
	return 0;
}

int de_rdv_join(struct de_check *c, struct de_fail *f)
{
	int64_t start = de_now_ms();
	int64_t deadline = c->deadline, reply_by = c->deadline + DE_BUDGET_VERDICT_MS;
	static struct de_hello h; /* large (auth buffer): not on the stack */
	uint8_t challenge[DE_NONCE_BYTES];
	struct de_err e;
	enum de_msg type;
	const uint8_t *frame;
	size_t len;

	if (meet(c, start, deadline, reply_by, challenge, f) ||
	    send_hello(c, challenge, &h, NULL, reply_by, f))
		return -1;
	/* Rank 0 answers by its own budget's end (missing ranks): allow for it. */
	if (de_rdvc_wait_frame(c, start, reply_by, &type, &frame, &len, f))
		return -1;
	if (type == DE_MSG_ABORT || type == DE_MSG_REJECT)
		return de_rdvc_take_abort(frame, len, f);
	if (type != DE_MSG_PEERS)
		return de_fail_set(f, DE_D_INTERNAL, "rank 0 sent %s, expected PEERS",
				   de_msg_name(type));
	if (de_dec_peers(frame, len, &c->peers, &e))
		return de_fail_set(f, DE_D_INTERNAL, "peer table from rank 0: %s", e.msg);
	{
		/* Re-encode without the proof: the bytes rank 0 bound. */
		static char auth[DE_PROTO_MAX_AUTH + 1];
		struct de_buf tb = { 0 };
		int rc;

		snprintf(auth, sizeof(auth), "%s", c->peers.auth);
		c->peers.auth[0] = '\0';
		rc = de_enc_peers(&tb, &c->peers, &e);
		if (rc == 0)
			rc = de_auth_peers_check(&c->auth, tb.data, tb.len, h.nonce, auth, f);
		else
			de_fail_set(f, DE_D_INTERNAL, "peer table: %s", e.msg);
		de_buf_free(&tb);
		if (rc)
			return -1;
		/* The acceptor answers callers only once the key is ours. */
		de_acceptor_key_ready(c);
	}
	if (c->peers.world != c->id.world)
		return de_fail_set(f, DE_D_WORLD_MISMATCH, "rank 0's world has %u ranks, ours %u",
				   c->peers.world, c->id.world);
	c->net.rdv_ms = (double)(de_now_ms() - start);
	return 0;
}

/* Rank 0 needs only to hear it: a short bound, as this rank's own
 * verdict is already out. */
#define TELL_MS 10000

void de_rdv_tell_failure(struct de_check *c, const struct de_fail *mine)
{
	static struct de_hello h;
	uint8_t challenge[DE_NONCE_BYTES];
	int64_t start = de_now_ms();
	int64_t deadline = de_budget_by(start, TELL_MS, c->deadline);
	int64_t reply_by = de_budget_by(start, TELL_MS, c->deadline + DE_BUDGET_VERDICT_MS);
	struct de_fail f;
	enum de_msg type;
	const uint8_t *frame;
	size_t len;

	memset(&f, 0, sizeof(f));
	/* Rank 0's ABORT says it heard; whatever happens, we are done. */
	if (meet(c, start, deadline, reply_by, challenge, &f) == 0 &&
	    send_hello(c, challenge, &h, mine, reply_by, &f) == 0)
		de_rdvc_wait_frame(c, start, de_budget_by(de_now_ms(), 2000, reply_by), &type, &frame, &len, &f);
	if (c->net.rdv_fd >= 0) {
		close(c->net.rdv_fd);
		c->net.rdv_fd = -1;
	}
	de_rbuf_free(&c->net.rdv_rb);
}
