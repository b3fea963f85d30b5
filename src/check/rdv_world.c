/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rank 0's server, the world: who may join (this job's token, a valid
 * proof, a rank of this world not yet taken, rank 0's backend and
 * collective), then, with every rank there, the node of each, the layout
 * checked as a whole and the peer table, before any phase begins. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "rdv_server.h"
#include "world.h"

/* Node index of every rank, by (host, data address) in order of first
 * appearance: two VMs cloned with one hostname are still two nodes. A
 * hash keeps this O(world) at rank 0 for large jobs. Returns the node
 * count, or 0 out of memory. */
static uint32_t assign_nodes(struct rdv_server *s, uint32_t *node)
{
	uint32_t world = s->c->id.world, size = 2, i, nodes = 0;
	uint32_t *slot;

	while (size < 2 * world)
		size *= 2;
	slot = malloc((size_t)size * sizeof(*slot));
	if (slot == NULL)
		return 0;
	memset(slot, 0xff, (size_t)size * sizeof(*slot));
	for (i = 0; i < world; i++) {
		const struct de_hello *h = &s->byrank[i]->h;
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
			o = &s->byrank[slot[k]]->h;
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
static int world_disagrees(struct rdv_server *s, const uint32_t *node, uint32_t nodes)
{
	uint32_t world = s->c->id.world, i;
	struct de_rank_view *v = calloc(world, sizeof(*v));
	const char **name = calloc(nodes, sizeof(*name));
	enum de_world_verdict w = DE_WORLD_OK;
	struct de_err e;

	if (v == NULL || name == NULL) {
		rdv_abort(s, DE_D_INTERNAL, 0, "out of memory for the layout check");
		w = DE_WORLD_LOCAL_RANK;
		goto out;
	}
	for (i = 0; i < world; i++) {
		const struct de_hello *h = &s->byrank[i]->h;

		v[i].node = node[i];
		v[i].local_rank = h->local_rank;
		v[i].local_world = h->local_world;
		v[i].node_rank = h->node_rank;
		if (name[node[i]] == NULL)
			name[node[i]] = h->host;
	}
	w = de_world_check(v, world, name, nodes, &e);
	if (w != DE_WORLD_OK)
		rdv_abort(s, w == DE_WORLD_NODE_RANK ? DE_D_NODE_RANK : DE_D_LOCAL_RANK, 0,
			  "%s", e.msg);
out:
	free(v);
	free(name);
	return w != DE_WORLD_OK;
}

static void send_peers(struct rdv_server *s, const uint32_t *node)
{
	struct de_peers *p = calloc(1, sizeof(*p)); /* large (auth buffer): not on the stack */
	struct de_buf b = { 0 };
	struct de_err e;
	uint32_t i;
	int64_t dl = de_budget_by(de_now_ms(), 10000, s->deadline);

	if (p != NULL) {
		p->world = s->c->id.world;
		p->peer = calloc(p->world, sizeof(*p->peer));
	}
	if (p == NULL || p->peer == NULL) {
		rdv_abort(s, DE_D_INTERNAL, 0, "out of memory for the peer table");
		free(p);
		return;
	}
	for (i = 0; i < p->world; i++) {
		const struct de_hello *h = &s->byrank[i]->h;

		p->peer[i].rank = i;
		p->peer[i].local_rank = h->local_rank;
		p->peer[i].port = h->port;
		p->peer[i].probe_port = h->probe_port;
		snprintf(p->peer[i].host, sizeof(p->peer[i].host), "%s", h->host);
		snprintf(p->peer[i].addr, sizeof(p->peer[i].addr), "%s", h->addr);
		p->peer[i].node = node[i];
	}
	p->nccl_id_len = s->c->peers.nccl_id_len;
	memcpy(p->nccl_id, s->c->peers.nccl_id, sizeof(p->nccl_id));
	p->auth[0] = '\0';
	/* The table as encoded without proof is what every proof binds. */
	if (de_enc_peers(&b, p, &e)) {
		rdv_abort(s, DE_D_INTERNAL, 0, "peer table: %s", e.msg);
		goto out;
	}
	for (i = 0; i < p->world; i++) {
		struct de_buf rb = { 0 };
		struct de_fail f;

		if (de_auth_peers_make(&s->c->auth, b.data, b.len, i, s->byrank[i]->h.nonce,
				       p->auth, sizeof(p->auth), &f)) {
			rdv_abort(s, f.diag, i, "%s", f.msg);
			goto out;
		}
		if (de_enc_peers(&rb, p, &e) == 0 &&
		    de_send_all(s->byrank[i]->fd, rb.data, rb.len, dl))
			de_log("rank 0", "sending the peer table to rank %u: %s", i, strerror(errno));
		de_buf_free(&rb);
	}
out:
	de_buf_free(&b);
	free(p->peer);
	free(p);
}

/* Every rank runs rank 0's backend and collective, or the job is over:
 * 1 (and aborted) if rank r, present with rank 0, differs. */
static int disagrees_with_rank0(struct rdv_server *s, uint32_t r)
{
	const struct de_hello *o, *mine;

	if (s->byrank[0] == NULL || s->byrank[r] == NULL)
		return 0;
	o = &s->byrank[r]->h;
	mine = &s->byrank[0]->h;
	if (o->backend != mine->backend) {
		rdv_abort(s, DE_D_BACKEND_MISMATCH, r,
			  "rank %u on %s runs the %s backend, rank 0 on %s the %s backend",
			  r, o->host, de_backend_name(o->backend), mine->host,
			  de_backend_name(mine->backend));
		return 1;
	}
	if (strcmp(o->params, mine->params) != 0) {
		rdv_abort(s, DE_D_SIZE_MISMATCH, r, "rank %u on %s runs \"%s\", rank 0 runs \"%s\"",
			  r, o->host, o->params, mine->params);
		return 1;
	}
	return 0;
}

/* This job's token and a valid proof for k's challenge, or k is turned
 * away: 1 then, k closed and freed. */
int rdv_turned_away(struct rdv_server *s, struct rdv_conn *k, const struct de_hello *h)
{
	struct de_err why;

	if (strcmp(h->token, s->c->id.token) != 0) {
		de_log("rank 0", "rejected %s: it belongs to job \"%s\", this is \"%s\"",
			k->from, h->token, s->c->id.token);
		rdv_send_text(k, DE_MSG_REJECT, DE_D_USAGE, h->rank,
			      "this rendezvous belongs to another job: MASTER_ADDR:MASTER_PORT is another launch's "
			      "rank 0 (a MASTER_PORT two jobs share), or DISTENV_TOKEN differs between the ranks");
		rdv_conn_close(s, k);
		return 1;
	}
	if (de_auth_hello_check(&s->c->auth, k->nonce, h, &why)) {
		de_log("rank 0", "rejected %s (claims rank %u on %s): %s", k->from, h->rank,
		       h->host, why.msg);
		rdv_send_text(k, DE_MSG_REJECT, DE_D_AUTH, h->rank, why.msg);
		s->rejected++;
		rdv_conn_close(s, k);
		return 1;
	}
	return 0;
}

/* Returns 1 when it turned k away: k is closed and freed then. */
int rdv_on_hello(struct rdv_server *s, struct rdv_conn *k, const struct de_hello *h)
{
	uint32_t i;

	if (rdv_turned_away(s, k, h))
		return 1;
	if (s->phase >= 0) {
		de_log("rank 0", "rejected %s (rank %u on %s): the world is already complete",
			k->from, h->rank, h->host);
		rdv_send_text(k, DE_MSG_REJECT, DE_D_DUP_RANK, h->rank,
			      "the world is already complete");
		rdv_conn_close(s, k);
		return 1;
	}
	/* From here on the sender is a rank of this job: a disagreement is
	 * the job's problem, reported to everyone. */
	k->h = *h;
	if (h->failed != DE_OK) { /* nobody waits for it */
		struct de_rdv_verdict v;

		de_rdv_rank_failed(&v, h->rank, h->host,
				   h->failed < DE_D_COUNT ? (enum de_diag)h->failed : DE_D_INTERNAL, h->why);
		snprintf(v.text, sizeof(v.text), "rank %u on %s failed before it could join: %s",
			 h->rank, h->host, h->why);
		k->rank = -2;
		s->extra = k;
		rdv_tell(s, &v);
		return 0;
	}
	if (h->world != s->c->id.world)
		return rdv_abort_by(s, k, DE_D_WORLD_MISMATCH,
				    "rank %u on %s says WORLD_SIZE=%u but rank 0 on %s says %u",
				    h->rank, h->host, h->world, s->c->id.host, s->c->id.world);
	if (h->rank >= s->c->id.world)
		return rdv_abort_by(s, k, DE_D_RANK_RANGE,
				    "a process on %s says RANK=%u, outside 0..%u (WORLD_SIZE=%u)",
				    h->host, h->rank, s->c->id.world - 1, s->c->id.world);
	if (s->byrank[h->rank] != NULL) {
		const struct de_hello *o = &s->byrank[h->rank]->h;

		return rdv_abort_by(s, k, DE_D_DUP_RANK,
				    "RANK=%u is claimed twice: by pid %u on %s and by pid %u on %s",
				    h->rank, o->pid, o->host, h->pid, h->host);
	}
	k->rank = h->rank;
	s->npending--;
	s->byrank[h->rank] = k;
	s->joined++;
	/* Rank 0 may join after others: then check those it finds. */
	if (h->rank == 0) {
		for (i = 1; i < s->c->id.world; i++)
			if (disagrees_with_rank0(s, i))
				return 0;
	} else if (disagrees_with_rank0(s, h->rank)) {
		return 0;
	}
	if (s->joined == s->c->id.world) {
		s->node = malloc((size_t)s->c->id.world * sizeof(*s->node));
		s->nodes = s->node != NULL ? assign_nodes(s, s->node) : 0;
		if (s->nodes == 0) {
			rdv_abort(s, DE_D_INTERNAL, 0, "out of memory for the node table");
			return 0;
		}
		if (world_disagrees(s, s->node, s->nodes))
			return 0;
		send_peers(s, s->node);
		s->phase = 0;
		s->since = de_now_ms();
		s->deadline = s->c->deadline + DE_BUDGET_JUDGE_MS;
	}
	return 0;
}
