/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rank-0 rendezvous server: one thread, one epoll loop (no thread
 * per peer) on MASTER_ADDR:MASTER_PORT. It validates the whole world
 * before anyone gets the peer table, then runs phases: every rank reports,
 * rank 0 answers GO or ABORT with one diagnosis for everybody. Anything on
 * the port that is not a rank of this job is turned away without
 * disturbing the job. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "auth.h"
#include "budget.h"
#include "check.h"
#include "pairs.h"
#include "rendezvous.h"
#include "world.h"

/* A connection that has not said HELLO within this long is dropped. */
#define HELLO_GRACE_MS 5000
/* Unidentified connections held at once, beyond the world's: every rank
 * may be between connect and HELLO at the same time. */
#define EXTRA_PENDING 256


struct conn {
	int fd;
	struct de_rbuf rb;
	int64_t since;
	int64_t rank; /* -1 until HELLO */
	char from[80];
	struct de_hello h;
	int reported;
	struct de_text report;
	uint8_t nonce[DE_NONCE_BYTES]; /* our challenge to it */
};

static struct {
	struct de_check *c;
	pthread_t th;
	int running;
	int lfd, efd, wake;
	struct conn **byrank;
	uint32_t joined;
	int npending;
	int phase; /* -1 gathering, then 0..nphases-1 */
	int64_t since, deadline; /* this phase (or the gathering) */
	int done;
	struct conn *extra; /* a rejected claimant who should hear why too */
	uint32_t *node, nodes; /* rank -> node index, once the world is whole */
	unsigned rejected;  /* connections refused for authentication */
	/* The verdict, kept to tell ranks that come after it (see linger). */
	int have_verdict;
	struct de_text verdict;
	uint8_t *told; /* by rank: heard the verdict */
	uint32_t ntold;
	int64_t gather_deadline;
} S;

static void untrack(struct conn *k);
static void track_pending(struct conn *k);
static struct conn **pending_list;
static int max_pending;

static void conn_close(struct conn *k)
{
	untrack(k);
	epoll_ctl(S.efd, EPOLL_CTL_DEL, k->fd, NULL);
	close(k->fd);
	if (k->rank < 0)
		S.npending--;
	else if (S.byrank[k->rank] == k)
		S.byrank[k->rank] = NULL;
	de_rbuf_free(&k->rb);
	free(k);
}

static void send_text(struct conn *k, enum de_msg type, enum de_diag code,
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

static void mark_told(uint32_t rank)
{
	if (rank < S.c->id.world && !S.told[rank]) {
		S.told[rank] = 1;
		S.ntold++;
	}
}

/* The job's verdict, kept to tell the ranks that come after it. */
static void keep_verdict(enum de_diag d, uint32_t about, const char *text)
{
	if (S.have_verdict)
		return;
	S.have_verdict = 1;
	S.verdict.code = (uint16_t)d;
	S.verdict.rank = about;
	snprintf(S.verdict.text, sizeof(S.verdict.text), "%s", text);
}

/* Ends the job for everyone with one diagnosis. */
static void srv_vabort(enum de_diag d, uint32_t about, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void srv_vabort(enum de_diag d, uint32_t about, const char *fmt, va_list ap)
{
	char text[sizeof(((struct de_text *)0)->text)];
	uint32_t i;

	vsnprintf(text, sizeof(text), fmt, ap);
	keep_verdict(d, about, text);
	for (i = 0; i < S.c->id.world; i++)
		if (S.byrank[i] != NULL) {
			send_text(S.byrank[i], DE_MSG_ABORT, d, about, text);
			mark_told(i);
		}
	if (S.extra != NULL) {
		send_text(S.extra, DE_MSG_ABORT, d, about, text);
		mark_told(S.extra->h.rank);
	}
	S.done = 1;
}

static void srv_abort(enum de_diag d, uint32_t about, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void srv_abort(enum de_diag d, uint32_t about, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	srv_vabort(d, about, fmt, ap);
	va_end(ap);
}

/* k, a rank of this job that cannot join, ends the job: it hears the
 * verdict with the others. Returns 0 (k stays open until the end). */
static int abort_by(struct conn *k, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int abort_by(struct conn *k, enum de_diag d, const char *fmt, ...)
{
	va_list ap;

	k->rank = -2;
	S.extra = k;
	va_start(ap, fmt);
	srv_vabort(d, k->h.rank, fmt, ap);
	va_end(ap);
	return 0;
}

static const char *expected_where(uint32_t rank, char *buf, size_t len)
{
	if (S.c->id.expect_host != NULL && S.c->id.expect_host[rank] != NULL)
		snprintf(buf, len, " (expected on %s)", S.c->id.expect_host[rank]);
	else if (S.c->id.nodelist != NULL)
		snprintf(buf, len, " (expected on one of %s)", S.c->id.nodelist);
	else
		buf[0] = '\0';
	return buf;
}

/* The verdict must fit what every rank prints (a de_fail's message),
 * so the list is cut at a rank, with how many more, never mid-number. */
static void abort_missing(void)
{
	char text[sizeof(((struct de_fail *)0)->msg)], where[300], item[320];
	const char *also = S.rejected ?
		" (and connections were refused for authentication: see rank 0's log)" : "";
	struct de_cutlist l;
	uint32_t i, missing = 0;
	int n;

	for (i = 0; i < S.c->id.world; i++)
		missing += S.byrank[i] == NULL;
	n = snprintf(text, sizeof(text), "%u of %u ranks never reached %s:%u in %.1f s: rank%s ",
		     missing, S.c->id.world, S.c->id.master, S.c->id.master_port,
		     (double)(de_now_ms() - S.since) / 1000.0, missing > 1 ? "s" : "");
	if (n < 0 || (size_t)n + strlen(also) + 32 >= sizeof(text))
		n = 0;
	de_cutlist_init(&l, text + n, sizeof(text) - (size_t)n - strlen(also));
	for (i = 0; i < S.c->id.world; i++) {
		if (S.byrank[i] != NULL)
			continue;
		snprintf(item, sizeof(item), "%u%s", i, expected_where(i, where, sizeof(where)));
		de_cutlist_add(&l, item);
	}
	de_cutlist_end(&l);
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", also);
	srv_abort(DE_D_MISSING_RANKS, 0, "%s", text);
}

/* Who rank 0 still waits for: ranks that have not joined (gathering) or
 * not reported (a phase), the first few by number, with where they are
 * (or were expected). Returns how many. */
static uint32_t waiting_for(char *out, size_t len)
{
	uint32_t i, n = 0;
	size_t off = 0;
	char where[300];

	out[0] = '\0';
	for (i = 0; i < S.c->id.world; i++) {
		int waiting = S.phase < 0 ? S.byrank[i] == NULL : !S.byrank[i]->reported;

		if (!waiting)
			continue;
		if (n++ < 12 && off + 320 < len) {
			if (S.phase < 0)
				expected_where(i, where, sizeof(where));
			else
				snprintf(where, sizeof(where), " (%s)", S.byrank[i]->h.host);
			off += (size_t)snprintf(out + off, len - off, "%s%u%s", off ? ", " : "", i, where);
		}
	}
	if (n > 12 && off + 32 < len)
		snprintf(out + off, len - off, ", ... (%u more)", n - 12);
	return n;
}

/* Every few seconds of a long wait, rank 0 says who it waits for. */
#define PROGRESS_MS 5000

static void progress(void)
{
	char list[1200];
	uint32_t n = waiting_for(list, sizeof(list));

	if (n == 0)
		return;
	if (S.phase < 0)
		de_log("rank 0", "%.0f s: %u of %u ranks joined; waiting for rank%s %s",
		       (double)(de_now_ms() - S.since) / 1000.0, S.joined, S.c->id.world,
		       n == 1 ? "" : "s", list);
	else
		de_log("rank 0", "%.0f s into phase %d (%s): waiting for the report of rank%s %s",
		       (double)(de_now_ms() - S.since) / 1000.0, S.phase,
		       S.phase == 0 ? "node probe" : S.c->o.pairs ? "pair round" : "collective",
		       n == 1 ? "" : "s", list);
}

/* Node index of every rank, by (host, data address) in order of first
 * appearance: two VMs cloned with one hostname are still two nodes. A
 * hash keeps this O(world) at rank 0 for large jobs. Returns the node
 * count, or 0 out of memory. */
static uint32_t assign_nodes(uint32_t *node)
{
	uint32_t world = S.c->id.world, size = 2, i, nodes = 0;
	uint32_t *slot;

	while (size < 2 * world)
		size *= 2;
	slot = malloc((size_t)size * sizeof(*slot));
	if (slot == NULL)
		return 0;
	memset(slot, 0xff, (size_t)size * sizeof(*slot));
	for (i = 0; i < world; i++) {
		const struct de_hello *h = &S.byrank[i]->h;
		uint32_t hash = 2166136261u, k;
		const char *p;

		for (p = h->host; *p; p++)
			hash = (hash ^ (uint8_t)*p) * 16777619u;
		hash = (hash ^ ' ') * 16777619u;
		for (p = h->addr; *p; p++)
			hash = (hash ^ (uint8_t)*p) * 16777619u;
		for (k = hash & (size - 1);; k = (k + 1) & (size - 1)) {
			const struct de_hello *o;

			if (slot[k] == UINT32_MAX) {
				slot[k] = i;
				node[i] = nodes++;
				break;
			}
			o = &S.byrank[slot[k]]->h;
			if (strcmp(o->host, h->host) == 0 && strcmp(o->addr, h->addr) == 0) {
				node[i] = node[slot[k]];
				break;
			}
		}
	}
	free(slot);
	return nodes;
}

/* The layout as a whole (world.c): one verdict for everybody, naming the
 * node, before anyone gets the peer table. Returns 1 if it aborted. */
static int world_disagrees(const uint32_t *node, uint32_t nodes)
{
	uint32_t world = S.c->id.world, i;
	struct de_rank_view *v = calloc(world, sizeof(*v));
	const char **name = calloc(nodes, sizeof(*name));
	enum de_world_verdict w = DE_WORLD_OK;
	struct de_err e;

	if (v == NULL || name == NULL) {
		srv_abort(DE_D_INTERNAL, 0, "out of memory for the layout check");
		w = DE_WORLD_LOCAL_RANK;
		goto out;
	}
	for (i = 0; i < world; i++) {
		const struct de_hello *h = &S.byrank[i]->h;

		v[i].node = node[i];
		v[i].local_rank = h->local_rank;
		v[i].local_world = h->local_world;
		v[i].node_rank = h->node_rank;
		if (name[node[i]] == NULL)
			name[node[i]] = h->host;
	}
	w = de_world_check(v, world, name, nodes, &e);
	if (w != DE_WORLD_OK)
		srv_abort(w == DE_WORLD_NODE_RANK ? DE_D_NODE_RANK : DE_D_LOCAL_RANK, 0,
			  "%s", e.msg);
out:
	free(v);
	free(name);
	return w != DE_WORLD_OK;
}

static void send_peers(const uint32_t *node)
{
	static struct de_peers p; /* large (auth buffer): not on the stack */
	struct de_buf b = { 0 };
	struct de_err e;
	uint32_t i;
	int64_t dl = de_budget_by(de_now_ms(), 10000, S.deadline);

	memset(&p, 0, sizeof(p));
	p.world = S.c->id.world;
	p.peer = calloc(p.world, sizeof(*p.peer));
	if (p.peer == NULL) {
		srv_abort(DE_D_INTERNAL, 0, "out of memory for the peer table");
		return;
	}
	for (i = 0; i < p.world; i++) {
		const struct de_hello *h = &S.byrank[i]->h;

		p.peer[i].rank = i;
		p.peer[i].local_rank = h->local_rank;
		p.peer[i].port = h->port;
		p.peer[i].probe_port = h->probe_port;
		snprintf(p.peer[i].host, sizeof(p.peer[i].host), "%s", h->host);
		snprintf(p.peer[i].addr, sizeof(p.peer[i].addr), "%s", h->addr);
		p.peer[i].node = node[i];
	}
	p.nccl_id_len = S.c->peers.nccl_id_len;
	memcpy(p.nccl_id, S.c->peers.nccl_id, sizeof(p.nccl_id));
	p.auth[0] = '\0';
	/* The table as encoded without proof is what every proof binds. */
	if (de_enc_peers(&b, &p, &e)) {
		srv_abort(DE_D_INTERNAL, 0, "peer table: %s", e.msg);
		goto out;
	}
	for (i = 0; i < p.world; i++) {
		struct de_buf rb = { 0 };
		struct de_fail f;

		if (de_auth_peers_make(&S.c->auth, b.data, b.len, i, S.byrank[i]->h.nonce,
				       p.auth, sizeof(p.auth), &f)) {
			srv_abort(f.diag, i, "%s", f.msg);
			goto out;
		}
		if (de_enc_peers(&rb, &p, &e) == 0 &&
		    de_send_all(S.byrank[i]->fd, rb.data, rb.len, dl))
			de_log("rank 0", "sending the peer table to rank %u: %s", i, strerror(errno));
		de_buf_free(&rb);
	}
out:
	de_buf_free(&b);
	free(p.peer);
}

/* Every rank runs rank 0's backend and collective, or the job is over:
 * 1 (and aborted) if rank r, present with rank 0, differs. */
static int disagrees_with_rank0(uint32_t r)
{
	const struct de_hello *o, *mine;

	if (S.byrank[0] == NULL || S.byrank[r] == NULL)
		return 0;
	o = &S.byrank[r]->h;
	mine = &S.byrank[0]->h;
	if (o->backend != mine->backend) {
		srv_abort(DE_D_BACKEND_MISMATCH, r,
			  "rank %u on %s runs the %s backend, rank 0 on %s the %s backend",
			  r, o->host, o->backend == DE_BACKEND_NCCL ? "nccl" : "socket",
			  mine->host, mine->backend == DE_BACKEND_NCCL ? "nccl" : "socket");
		return 1;
	}
	if (strcmp(o->params, mine->params) != 0) {
		srv_abort(DE_D_SIZE_MISMATCH, r, "rank %u on %s runs \"%s\", rank 0 runs \"%s\"",
			  r, o->host, o->params, mine->params);
		return 1;
	}
	return 0;
}

/* This job's token and a valid proof for k's challenge, or k is turned
 * away: 1 then, k closed and freed. */
static int turned_away(struct conn *k, const struct de_hello *h)
{
	struct de_err why;

	if (strcmp(h->token, S.c->id.token) != 0) {
		de_log("rank 0", "rejected %s: it belongs to job \"%s\", this is \"%s\"",
			k->from, h->token, S.c->id.token);
		send_text(k, DE_MSG_REJECT, DE_D_USAGE, h->rank,
			  "this rendezvous belongs to another job: MASTER_ADDR:MASTER_PORT is another launch's "
			  "rank 0 (a MASTER_PORT two jobs share), or DISTENV_TOKEN differs between the ranks");
		conn_close(k);
		return 1;
	}
	if (de_auth_hello_check(&S.c->auth, k->nonce, h, &why)) {
		de_log("rank 0", "rejected %s (claims rank %u on %s): %s", k->from, h->rank,
		       h->host, why.msg);
		send_text(k, DE_MSG_REJECT, DE_D_AUTH, h->rank, why.msg);
		S.rejected++;
		conn_close(k);
		return 1;
	}
	return 0;
}

/* Returns 1 when it turned k away: k is closed and freed then. */
static int on_hello(struct conn *k, const struct de_hello *h)
{
	uint32_t i;

	if (turned_away(k, h))
		return 1;
	if (S.phase >= 0) {
		de_log("rank 0", "rejected %s (rank %u on %s): the world is already complete",
			k->from, h->rank, h->host);
		send_text(k, DE_MSG_REJECT, DE_D_DUP_RANK, h->rank,
			  "the world is already complete");
		conn_close(k);
		return 1;
	}
	/* From here on the sender is a rank of this job: a disagreement is
	 * the job's problem, reported to everyone. */
	k->h = *h;
	if (h->failed != DE_OK) /* nobody waits for it */
		return abort_by(k, h->failed < DE_D_COUNT ? (enum de_diag)h->failed : DE_D_INTERNAL,
				"rank %u on %s failed before it could join: %s", h->rank, h->host, h->why);
	if (h->world != S.c->id.world)
		return abort_by(k, DE_D_WORLD_MISMATCH,
				"rank %u on %s says WORLD_SIZE=%u but rank 0 on %s says %u",
				h->rank, h->host, h->world, S.c->id.host, S.c->id.world);
	if (h->rank >= S.c->id.world)
		return abort_by(k, DE_D_RANK_RANGE,
				"a process on %s says RANK=%u, outside 0..%u (WORLD_SIZE=%u)",
				h->host, h->rank, S.c->id.world - 1, S.c->id.world);
	if (S.byrank[h->rank] != NULL) {
		const struct de_hello *o = &S.byrank[h->rank]->h;

		return abort_by(k, DE_D_DUP_RANK,
				"RANK=%u is claimed twice: by pid %u on %s and by pid %u on %s",
				h->rank, o->pid, o->host, h->pid, h->host);
	}
	k->rank = h->rank;
	S.npending--;
	S.byrank[h->rank] = k;
	S.joined++;
	/* Rank 0 may join after others: then check those it finds. */
	if (h->rank == 0) {
		for (i = 1; i < S.c->id.world; i++)
			if (disagrees_with_rank0(i))
				return 0;
	} else if (disagrees_with_rank0(h->rank)) {
		return 0;
	}
	if (S.joined == S.c->id.world) {
		S.node = malloc((size_t)S.c->id.world * sizeof(*S.node));
		S.nodes = S.node != NULL ? assign_nodes(S.node) : 0;
		if (S.nodes == 0) {
			srv_abort(DE_D_INTERNAL, 0, "out of memory for the node table");
			return 0;
		}
		if (world_disagrees(S.node, S.nodes))
			return 0;
		send_peers(S.node);
		S.phase = 0;
		S.since = de_now_ms();
		S.deadline = S.c->deadline + DE_BUDGET_JUDGE_MS;
	}
	return 0;
}

/* Probe reports: "host (addr:port) how, host (addr:port) how" from each
 * node's first rank. A node that every other node fails to reach is what
 * a host firewall dropping inbound connections looks like: name it. */
static void abort_probe(void)
{
	char msg[3000], worst[256] = "", from[1024] = "";
	size_t off = 0;
	uint32_t i, j, probers = S.nodes, max = 0, bulk = 0, failed = 0;
	enum de_diag d = DE_D_PEER_REFUSED;

	for (i = 0; i < S.c->id.world; i++) {
		const struct de_text *t = &S.byrank[i]->report;

		failed += t->code != DE_OK;
		bulk += t->code == DE_D_BULK_STALL;
		if (t->code == DE_D_PEER_TIMEOUT)
			d = DE_D_PEER_TIMEOUT;
		if (t->code == DE_OK || off > sizeof(msg) - 400)
			continue;
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s -> %s",
					off ? "; " : "", S.byrank[i]->h.host, t->text);
	}
	/* One prober per node (its first rank). */
	/* For each destination host, how many probers failed to reach it. */
	for (i = 0; i < S.c->id.world; i++) {
		const char *dst = S.byrank[i]->h.host;
		uint32_t fails = 0;
		size_t fo = 0;
		char who[1024] = "";

		for (j = 0; j < S.c->id.world; j++) {
			const struct de_text *t = &S.byrank[j]->report;
			const char *p = t->text;
			size_t dl = strlen(dst);

			if (t->code == DE_OK)
				continue;
			while ((p = strstr(p, dst)) != NULL) {
				if ((p == t->text || p[-1] == ' ') && p[dl] == ' ') {
					fails++;
					if (fo < sizeof(who) - 300)
						fo += (size_t)snprintf(who + fo, sizeof(who) - fo, "%s%s",
								       fo ? ", " : "", S.byrank[j]->h.host);
					break;
				}
				p += dl;
			}
		}
		if (fails > max) {
			max = fails;
			snprintf(worst, sizeof(worst), "%s", dst);
			snprintf(from, sizeof(from), "%s", who);
		}
	}
	if (bulk == failed) {
		srv_abort(DE_D_BULK_STALL, 0,
			  "large transfers between nodes stall while the small probe passed: %s", msg);
		return;
	}
	if (max > 0 && max + 1 >= probers && probers > 2)
		srv_abort(d, 0, "%s accepts no new TCP connections on its data port from any other node (%s): %s",
			  worst, from, msg);
	else
		srv_abort(d, 0, "data connections between nodes fail: %s", msg);
}

/* --pairs: a probe that failed goes on into the sweep (its verdict
 * names it); each round's reports go to pairs.c, which says what comes
 * next. Any other failure ends the job as always. */
static int probe_diag(enum de_diag d)
{
	return d == DE_D_PEER_REFUSED || d == DE_D_PEER_TIMEOUT || d == DE_D_BULK_STALL ||
	       d == DE_D_PEER_LOST || d == DE_D_WRONG_RESULT;
}

static void pairs_phase_end(void)
{
	static char go[sizeof(((struct de_text *)0)->text)];
	const struct de_text **rep = malloc(S.c->id.world * sizeof(*rep));
	struct de_fail f;
	uint32_t i;
	int more;

	if (rep == NULL) {
		srv_abort(DE_D_INTERNAL, 0, "out of memory for the pair reports");
		return;
	}
	for (i = 0; i < S.c->id.world; i++) {
		const struct conn *k = S.byrank[i];
		enum de_diag d = (enum de_diag)k->report.code;

		rep[i] = &k->report;
		if (d != DE_OK && (S.phase > 0 || !probe_diag(d))) {
			free(rep);
			srv_abort(d, i, "rank %u on %s: %s", i, k->h.host, k->report.text);
			return;
		}
	}
	go[0] = '\0';
	more = de_pairs_phase_done(S.c, S.phase, rep, go, sizeof(go), &f);
	free(rep);
	if (more < 0) {
		srv_abort(f.diag, 0, "%s", f.msg);
		return;
	}
	for (i = 0; i < S.c->id.world; i++) {
		S.byrank[i]->reported = 0;
		send_text(S.byrank[i], DE_MSG_GO, DE_OK, 0, go);
	}
	S.phase++;
	S.since = de_now_ms();
	S.deadline = S.c->deadline + DE_BUDGET_JUDGE_MS;
	if (!more)
		S.done = 1;
}

static void on_report(struct conn *k, const struct de_text *t)
{
	uint32_t i;

	if (S.phase < 0 || k->reported) {
		srv_abort(DE_D_INTERNAL, (uint32_t)k->rank,
			  "rank %" PRId64 " reported out of turn", k->rank);
		return;
	}
	k->reported = 1;
	k->report = *t;
	/* In a collective, one failure is the verdict: the other ranks may be
	 * blocked inside it (NCCL) and must hear it now, not at the timeout.
	 * The probe waits for all reports to name the node everyone fails. */
	if (S.phase > 0 && t->code != DE_OK) {
		srv_abort((enum de_diag)t->code, (uint32_t)k->rank, "rank %" PRId64 " on %s: %s",
			  k->rank, k->h.host, t->text);
		return;
	}
	for (i = 0; i < S.c->id.world; i++)
		if (!S.byrank[i]->reported)
			return;
	if (S.c->o.pairs) {
		pairs_phase_end();
		return;
	}
	/* Everyone reported: one verdict for all. */
	for (i = 0; i < S.c->id.world; i++)
		if (S.byrank[i]->report.code != DE_OK)
			break;
	if (i < S.c->id.world) {
		const struct conn *b = S.byrank[i];

		if (S.phase == 0) {
			/* A rank that failed for its own reason (its name is
			 * loopback, ...) is the verdict; probe failures are
			 * judged together to name the node everyone fails. */
			for (i = 0; i < S.c->id.world; i++) {
				const struct conn *k2 = S.byrank[i];
				enum de_diag d = (enum de_diag)k2->report.code;

				if (d != DE_OK && d != DE_D_PEER_REFUSED && d != DE_D_PEER_TIMEOUT &&
				    d != DE_D_BULK_STALL) {
					srv_abort(d, i, "rank %u on %s: %s", i, k2->h.host, k2->report.text);
					return;
				}
			}
			abort_probe();
			return;
		}
		srv_abort((enum de_diag)b->report.code, i, "rank %u on %s: %s", i,
			  b->h.host, b->report.text);
		return;
	}
	for (i = 0; i < S.c->id.world; i++) {
		S.byrank[i]->reported = 0;
		send_text(S.byrank[i], DE_MSG_GO, DE_OK, 0, "");
	}
	S.phase++;
	S.since = de_now_ms();
	S.deadline = S.c->deadline + DE_BUDGET_JUDGE_MS;
	if (S.phase >= S.c->nphases)
		S.done = 1;
}

static void on_readable(struct conn *k)
{
	enum de_msg type;
	const uint8_t *frame;
	size_t len;
	struct de_err e;
	/* Peers may only send small frames; rank 0 never reads big ones. */
	int rc = de_rbuf_fill(k->fd, &k->rb, DE_PROTO_MAX_SMALL, &type, &frame,
			      &len, &e);

	while (rc == 1 && !S.done) {
		if (k->rank < 0 && type == DE_MSG_HELLO) {
			struct de_hello h;

			if (de_dec_hello(frame, len, &h, &e)) {
				de_log("rank 0", "rejected %s: %s", k->from, e.msg);
				conn_close(k);
				return;
			}
			if (on_hello(k, &h))
				return; /* closed */
			if (k->rank == -2 || S.done)
				return; /* closed at the end with the others */
		} else if (k->rank >= 0 && type == DE_MSG_REPORT) {
			struct de_text t;

			if (de_dec_text(frame, len, &t, &e)) {
				srv_abort(DE_D_INTERNAL, (uint32_t)k->rank,
					  "bad report from rank %" PRId64 ": %s",
					  k->rank, e.msg);
				return;
			}
			on_report(k, &t);
		} else {
			de_log("rank 0", "rejected %s: unexpected %s frame", k->from,
				de_msg_name(type));
			if (k->rank >= 0) {
				srv_abort(DE_D_INTERNAL, (uint32_t)k->rank,
					  "rank %" PRId64 " sent an unexpected %s frame",
					  k->rank, de_msg_name(type));
				return;
			}
			conn_close(k);
			return;
		}
		rc = de_rbuf_fill(k->fd, &k->rb, DE_PROTO_MAX_SMALL, &type,
				  &frame, &len, &e);
	}
	if (S.done)
		return;
	if (rc == -1) {
		if (k->rank >= 0) {
			srv_abort(DE_D_INTERNAL, (uint32_t)k->rank,
				  "rank %" PRId64 " sent a bad frame: %s", k->rank, e.msg);
			return;
		}
		de_log("rank 0", "rejected %s: %s", k->from, e.msg);
		conn_close(k);
	} else if (rc == -2) {
		if (k->rank >= 0) {
			uint32_t r = (uint32_t)k->rank;

			srv_abort(DE_D_PEER_LOST, r,
				  "rank %u (pid %u on %s) exited or lost its connection to rank 0",
				  r, k->h.pid, k->h.host);
			return;
		}
		conn_close(k);
	}
}

static void on_accept(void)
{
	struct de_addr a;
	struct conn *k;
	struct epoll_event ev;
	int fd;

	a.len = sizeof(a.ss);
	fd = accept4(S.lfd, (struct sockaddr *)&a.ss, &a.len,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (S.npending >= max_pending) {
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
	S.npending++;
	track_pending(k);
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
	epoll_ctl(S.efd, EPOLL_CTL_ADD, fd, &ev);
}

/* Pending connections are tracked only through epoll: sweep them by
 * walking a side list would need more state; instead each carries its
 * start time and is checked when it next wakes, and a periodic sweep
 * below catches the silent ones. */

static void sweep_silent(void)
{
	/* Rebuilt lazily: see on_accept/track_pending. */
	int i;
	int64_t now = de_now_ms();

	for (i = 0; i < max_pending; i++) {
		struct conn *k = pending_list[i];

		if (k == NULL)
			continue;
		if (k->rank != -1) {
			pending_list[i] = NULL;
			continue;
		}
		if (now - k->since > HELLO_GRACE_MS) {
			de_log("rank 0", "dropped %s: no HELLO within %d s", k->from,
				HELLO_GRACE_MS / 1000);
			pending_list[i] = NULL;
			conn_close(k);
		}
	}
}

static void track_pending(struct conn *k)
{
	int i;

	for (i = 0; i < max_pending; i++)
		if (pending_list[i] == NULL) {
			pending_list[i] = k;
			return;
		}
}

static void untrack(struct conn *k)
{
	int i;

	if (pending_list == NULL)
		return;
	for (i = 0; i < max_pending; i++)
		if (pending_list[i] == k)
			pending_list[i] = NULL;
}

/* After a verdict reached while ranks were still arriving, those that
 * come later hear it too (instead of waiting out their own timeout on a
 * port nobody serves): each that proves it is a rank of this job gets
 * the ABORT, until every rank heard it or the gathering's deadline. */
static void linger_readable(struct conn *k)
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
		if (turned_away(k, &h))
			return;
		send_text(k, DE_MSG_ABORT, (enum de_diag)S.verdict.code, S.verdict.rank, S.verdict.text);
		mark_told(h.rank);
	}
	conn_close(k);
}

static void linger(void)
{
	struct epoll_event evs[64];
	char list[1200], item[16];
	struct de_cutlist l;
	uint32_t i, n = 0;

	while (S.ntold < S.c->id.world && de_now_ms() < S.gather_deadline) {
		int64_t wait = S.gather_deadline - de_now_ms();
		int j, m = epoll_wait(S.efd, evs, 64, wait > 200 ? 200 : (int)wait);

		for (j = 0; j < m; j++) {
			struct conn *k = evs[j].data.ptr;

			if (k == NULL) {
				on_accept();
			} else if (k == (struct conn *)&S.wake) {
				uint64_t v;

				/* Rank 0's main is done; we are not yet. */
				if (read(S.wake, &v, sizeof(v)) < 0)
					v = 0;
			} else {
				linger_readable(k);
			}
		}
		sweep_silent();
	}
	if (S.ntold >= S.c->id.world)
		return;
	de_cutlist_init(&l, list, sizeof(list));
	for (i = 0; i < S.c->id.world; i++)
		if (!S.told[i]) {
			snprintf(item, sizeof(item), "%u", i);
			de_cutlist_add(&l, item);
			n++;
		}
	de_log("rank 0", "the verdict reached %u of %u ranks: rank%s %s never came to hear it",
	       S.ntold, S.c->id.world, n == 1 ? "" : "s", de_cutlist_end(&l));
}

static void *srv_main(void *arg)
{
	struct epoll_event evs[64];
	int64_t next_progress;
	uint32_t i;

	(void)arg;
	S.since = de_now_ms();
	/* One budget for the whole run: the gathering, each phase and the
	 * linger all end by rank 0's, plus the time to judge. */
	S.deadline = S.gather_deadline = S.c->deadline + DE_BUDGET_JUDGE_MS;
	next_progress = S.since + PROGRESS_MS;
	while (!S.done) {
		int64_t wait = S.deadline - de_now_ms();
		int n, j;

		if (wait <= 0) {
			if (S.phase < 0) {
				abort_missing();
			} else {
				char list[1200];

				waiting_for(list, sizeof(list));
				srv_abort(DE_D_TIMEOUT, 0,
					  "phase %d: no report in %.1f s from rank(s) %s: --timeout=%d s ran out",
					  S.phase, (double)(de_now_ms() - S.since) / 1000.0, list,
					  S.c->o.timeout_s);
			}
			break;
		}
		n = epoll_wait(S.efd, evs, 64, wait > 200 ? 200 : (int)wait);
		for (j = 0; j < n && !S.done; j++) {
			struct conn *k = evs[j].data.ptr;

			if (k == NULL) {
				on_accept();
				continue;
			}
			if (k == (struct conn *)&S.wake) {
				S.done = 1;
				break;
			}
			on_readable(k);
		}
		sweep_silent();
		if (de_now_ms() >= next_progress && !S.done) {
			/* Counted from the start of this phase: quiet when fast. */
			if (de_now_ms() - S.since >= PROGRESS_MS)
				progress();
			next_progress = de_now_ms() + PROGRESS_MS;
		}
	}
	/* Close everything: the ranks have their verdict. */
	for (i = 0; i < S.c->id.world; i++)
		if (S.byrank[i] != NULL) {
			struct conn *k = S.byrank[i];

			S.byrank[i] = NULL;
			k->rank = -1;
			S.npending++;
			untrack(k);
			conn_close(k);
		}
	if (S.have_verdict)
		linger();
	for (i = 0; i < (uint32_t)max_pending; i++)
		if (pending_list[i] != NULL) {
			struct conn *k = pending_list[i];

			pending_list[i] = NULL;
			if (k->rank == -1)
				conn_close(k);
		}
	return NULL;
}

static int server_start(struct de_check *c, const struct de_fail *doom, struct de_fail *f)
{
	struct de_addr any;
	struct epoll_event ev;
	struct de_err e;

	memset(&S, 0, sizeof(S));
	S.c = c;
	S.phase = -1;
	S.byrank = calloc(c->id.world, sizeof(*S.byrank));
	S.told = calloc(c->id.world, 1);
	max_pending = (int)c->id.world + EXTRA_PENDING;
	pending_list = calloc((size_t)max_pending, sizeof(*pending_list));
	if (S.byrank == NULL || pending_list == NULL || S.told == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory");
	if (doom != NULL) {
		/* Rank 0 failed before it could join: serve only its verdict. */
		char text[sizeof(S.verdict.text)];

		snprintf(text, sizeof(text), "rank 0 on %s failed before it could join: %s",
			 c->id.host, doom->msg);
		keep_verdict(doom->diag, 0, text);
		mark_told(0);
		S.done = 1;
	}
	/* All interfaces, as torch's TCPStore: MASTER_ADDR names this host
	 * as the others see it, which need not be an address we can bind. */
	memset(&any, 0, sizeof(any));
	any.ss.ss_family = c->net.master_addr.ss.ss_family;
	any.len = c->net.master_addr.len;
	de_addr_set_port(&any, c->id.master_port);
	S.lfd = de_listen(&any, 4096, &e);
	if (S.lfd < 0) {
		int err_no = errno;

		free(S.byrank);
		free(S.told);
		free(pending_list);
		S.byrank = NULL;
		S.told = NULL;
		pending_list = NULL;
		errno = err_no;
		if (errno == EADDRINUSE)
			return de_fail_set(f, DE_D_PORT_IN_USE,
					   "rank 0 cannot listen on MASTER_PORT=%u on %s: already in use",
					   c->id.master_port, c->id.host);
		return de_fail_set(f, DE_D_PORT_IN_USE, "rank 0: %s", e.msg);
	}
	de_set_nonblock(S.lfd, 1);
	S.efd = epoll_create1(EPOLL_CLOEXEC);
	S.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(S.efd, EPOLL_CTL_ADD, S.lfd, &ev);
	ev.data.ptr = &S.wake;
	epoll_ctl(S.efd, EPOLL_CTL_ADD, S.wake, &ev);
	if (pthread_create(&S.th, NULL, srv_main, NULL) != 0) {
		close(S.lfd);
		return de_fail_set(f, DE_D_INTERNAL, "cannot start the rendezvous thread");
	}
	S.running = 1;
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
	uint64_t one = 1;

	if (!S.running)
		return;
	if (write(S.wake, &one, sizeof(one)) < 0)
		S.done = 1;
	pthread_join(S.th, NULL);
	close(S.lfd);
	close(S.wake);
	close(S.efd);
	free(S.byrank);
	free(S.told);
	free(S.node);
	free(pending_list);
	pending_list = NULL;
	S.running = 0;
}
