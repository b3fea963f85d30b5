/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Phase 0, the node probe: every node reaches every other node's probe
 * listener (small connects, the kernel's handshake only) and one bulk
 * transfer per node pair checks that large packets pass too, before any
 * collective: a blocked port or an MTU black hole is named here, not
 * found by the allreduce's --timeout. Used by every backend. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "budget.h"
#include "check.h"
#include "rendezvous.h"
#include "socket.h"

struct target {
	uint32_t rank;
	int fd;
	enum { CONNECTING, CONNECTED, FAILED } state;
	enum de_diag diag;
	const char *what;
};

static int bulk_probe(struct de_check *c, uint32_t mynode, int64_t deadline,
		      struct de_fail *f, struct de_unreached_rec *u);

/* The kernel's hard limit on neighbour (ARP/NDP) entries, or -1. */
static long neigh_limit(void)
{
	FILE *fp = fopen("/proc/sys/net/ipv4/neigh/default/gc_thresh3", "r");
	long v = -1;

	if (fp != NULL) {
		if (fscanf(fp, "%ld", &v) != 1)
			v = -1;
		fclose(fp);
	}
	return v;
}

int de_probe_nodes(struct de_check *c, struct de_fail *f, struct de_text *rep)
{
	char *report = rep->text;
	size_t len = 2048; /* the words; the record lists them all */
	struct de_unreached_rec *u = &rep->r.unreached;
	uint32_t n = c->id.world, i, j, ntgt = 0, mynode = c->peers.peer[c->id.rank].node;
	int64_t deadline = de_budget_by(de_now_ms(), c->o.timeout_s * 1000 / 2 > 2000
				       ? c->o.timeout_s * 1000 / 2 : 2000, c->deadline);
	struct target *t;
	struct pollfd *pf;
	size_t off = 0;
	int left, timeouts = 0;

	memset(rep, 0, sizeof(*rep));
	rep->rec = DE_REC_UNREACHED;
	/* One prober per node: its lowest rank. */
	for (i = 0; i < c->id.rank; i++)
		if (c->peers.peer[i].node == mynode)
			return 0;
	t = calloc(n, sizeof(*t));
	pf = calloc(n, sizeof(*pf));
	if (t == NULL || pf == NULL) {
		free(t);
		free(pf);
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	}
	for (i = 0; i < n; i++) {
		const struct de_peer *p = &c->peers.peer[i];
		struct de_addr a;
		struct de_err e;
		int first = 1;

		if (p->node == mynode)
			continue;
		for (j = 0; j < i; j++)
			if (c->peers.peer[j].node == p->node)
				first = 0;
		if (!first)
			continue;
		t[ntgt].rank = i;
		t[ntgt].fd = -1;
		if (de_resolve(p->addr, p->probe_port, &a, &e)) {
			t[ntgt].state = FAILED;
			t[ntgt].what = "bad address";
			t[ntgt].diag = DE_D_PEER_REFUSED;
		} else {
			t[ntgt].fd = socket(a.ss.ss_family,
					    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (t[ntgt].fd >= 0 &&
			    connect(t[ntgt].fd, (struct sockaddr *)&a.ss, a.len) != 0 &&
			    errno != EINPROGRESS) {
				t[ntgt].state = FAILED;
				t[ntgt].what = errno == ECONNREFUSED ? "refused" : "unreachable";
				t[ntgt].diag = DE_D_PEER_REFUSED;
			}
		}
		ntgt++;
	}
	for (;;) {
		int64_t now = de_now_ms();

		left = 0;
		for (i = 0; i < ntgt; i++) {
			pf[i].fd = t[i].state == CONNECTING ? t[i].fd : -1;
			pf[i].events = POLLOUT;
			pf[i].revents = 0;
			left += t[i].state == CONNECTING;
		}
		if (left == 0 || now >= deadline)
			break;
		if (poll(pf, ntgt, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		for (i = 0; i < ntgt; i++) {
			struct target *x = &t[i];
			socklen_t sl = sizeof(int);
			int e = 0;

			/* The connection is the probe: its outcome is all there is. */
			if (pf[i].revents == 0)
				continue;
			getsockopt(x->fd, SOL_SOCKET, SO_ERROR, &e, &sl);
			if (e != 0) {
				x->state = FAILED;
				x->what = e == ECONNREFUSED ? "refused" :
					  e == ETIMEDOUT ? "timed out" : "unreachable";
				x->diag = e == ETIMEDOUT ? DE_D_PEER_TIMEOUT : DE_D_PEER_REFUSED;
			} else {
				x->state = CONNECTED;
			}
		}
	}
	for (i = 0; i < ntgt; i++) {
		struct target *x = &t[i];

		if (x->state == CONNECTING) {
			x->what = "timed out";
			x->state = FAILED;
			x->diag = DE_D_PEER_TIMEOUT;
		}
		if (x->state == FAILED && u->n < DE_PROTO_MAX_UNREACHED)
			u->rank[u->n++] = x->rank;
		if (x->state == FAILED && off < len - 200) {
			const struct de_peer *p = &c->peers.peer[x->rank];

			off += (size_t)snprintf(report + off, len - off,
						"%s%s (%s:%u) %s", off ? ", " : "",
						p->host, p->addr, p->probe_port, x->what);
			if (x->diag == DE_D_PEER_TIMEOUT)
				timeouts++;
		}
		if (x->fd >= 0) {
			/* A reset, not a FIN exchange: N*(N-1) probes on one box
			 * are packets and TIME_WAIT sockets we can spare. */
			struct linger lg = { 1, 0 };

			setsockopt(x->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(x->fd);
		}
	}
	free(t);
	free(pf);
	if (off == 0) {
		int64_t bulk = (int64_t)c->o.timeout_s * 1000 / 2;

		if (bulk_probe(c, mynode, de_budget_by(de_now_ms(), bulk > 2000 ? bulk : 2000, c->deadline), f, u) == 0)
			return 0;
		snprintf(report, len, "%s", f->msg);
		return -1;
	}
	f->diag = timeouts ? DE_D_PEER_TIMEOUT : DE_D_PEER_REFUSED;
	snprintf(f->msg, sizeof(f->msg), "%.*s", (int)sizeof(f->msg) - 1, report);
	if (timeouts) {
		/* A flat L2 network needs a neighbour entry per peer: past the
		 * kernel's limit, entries are dropped and connections time out
		 * without a trace. */
		long gc3 = neigh_limit();

		if (gc3 > 0 && (unsigned long)gc3 < ntgt)
			snprintf(f->msg + strlen(f->msg), sizeof(f->msg) - strlen(f->msg),
				 "; this node must reach %u peers but its kernel neighbour table holds at most %ld "
				 "(net.ipv4.neigh.default.gc_thresh3): raise gc_thresh1/2/3",
				 ntgt, gc3);
	}
	return -1;
}

/* 64 KiB to the next node of the ring of nodes and back, verified: each
 * node's links to both neighbours carry large segments both ways. */
static int bulk_probe(struct de_check *c, uint32_t mynode, int64_t deadline,
		      struct de_fail *f, struct de_unreached_rec *u)
{
	uint32_t nodes = de_peers_nodes(&c->peers), next = (mynode + 1) % nodes, r;
	const struct de_peer *p = NULL;
	uint8_t *out = NULL, *in = NULL, frame[256], ch[DE_NONCE_BYTES];
	int64_t start = de_now_ms();
	struct de_addr a;
	struct de_err e = { "" };
	size_t flen = 0, moved = 0, i;
	int fd = -1, err_no, rc = -1, how, mtu_v;
	char mtu[128] = "";

	if (nodes < 2)
		return 0;
	for (r = 0; r < c->id.world && p == NULL; r++)
		if (c->peers.peer[r].node == next)
			p = &c->peers.peer[r];
	out = malloc(BULK_BYTES);
	in = malloc(BULK_BYTES);
	if (p == NULL || out == NULL || in == NULL) {
		rc = de_fail_set(f, DE_D_INTERNAL, "bulk probe: out of memory");
		goto done;
	}
	for (i = 0; i < BULK_BYTES; i++)
		out[i] = (uint8_t)(i * 131 + c->id.rank);
	if (de_resolve(p->addr, p->port, &a, &e) ||
	    de_connect(&a, deadline, &fd, &err_no) != DE_CONN_OK ||
	    de_recv_one_frame(fd, frame, sizeof(frame), &flen, deadline, &e) ||
	    de_dec_challenge(frame, flen, ch, &e) ||
	    de_send_data(c, fd, DE_PURPOSE_BULK, ch, deadline)) {
		/* The small exchange just passed the probe: this is new. */
		rc = de_fail_set(f, DE_D_PEER_REFUSED, "%s (%s:%u) refused the bulk probe (%s)",
				 p->host, p->addr, p->port, e.msg[0] ? e.msg : "connect failed");
		goto done;
	}
	de_set_nonblock(fd, 1);
	how = de_move_all(fd, out, BULK_BYTES, 1, deadline, &moved);
	if (how == 0)
		how = de_move_all(fd, in, BULK_BYTES, 0, deadline, &moved);
	if (how == 0) {
		rc = memcmp(in, out, BULK_BYTES) == 0 ? 0 :
		     de_fail_set(f, DE_D_WRONG_RESULT, "%s (%s:%u) echoed 64 KiB with wrong bytes",
				 p->host, p->addr, p->port);
		goto done;
	}
	if ((mtu_v = de_iface_mtu(c->net.iface)) > 0)
		snprintf(mtu, sizeof(mtu), "; %s has MTU %d here", c->net.iface, mtu_v);
	if (how == -1)
		rc = de_fail_set(f, DE_D_PEER_LOST, "%s (%s:%u) closed the bulk probe after %zu bytes",
				 p->host, p->addr, p->port, moved);
	else
		rc = de_fail_set(f, DE_D_BULK_STALL,
				 "%s (%s:%u) 64 KiB stalled after %zu bytes in %.1f s while small messages passed%s",
				 p->host, p->addr, p->port, moved,
				 (double)(de_now_ms() - start) / 1000.0, mtu);
done:
	if (rc != 0 && p != NULL && f->diag != DE_D_INTERNAL)
		u->rank[u->n++] = (uint32_t)(p - c->peers.peer);
	if (fd >= 0)
		close(fd);
	free(out);
	free(in);
	return rc;
}
