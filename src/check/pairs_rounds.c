/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's rounds (pairs.h): what each rank does in each phase
 * the GO announces, and rank 0's side, run by its rendezvous server when
 * a phase is complete: the results table, the progress line, the retest
 * and remeasure plan, the verdict. The transport is pairs.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pairs.h"
#include "rendezvous.h"

#define REMEASURE_PER_NODE 4

int de_pairs_prepare(struct de_check *c, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	uint32_t r, x, y;

	s->n = de_peers_nodes(&c->peers);
	s->leader = malloc((s->n ? s->n : 1) * sizeof(*s->leader));
	if (s->leader == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %u nodes", s->n);
	for (x = 0; x < s->n; x++)
		s->leader[x] = DE_PAIR_NONE;
	for (r = c->id.world; r-- > 0;)
		s->leader[c->peers.peer[r].node] = r;
	s->mynode = c->peers.peer[c->id.rank].node;
	s->lead = s->leader[s->mynode] == c->id.rank;
	s->rounds = de_pairs_rounds(s->n);
	if (c->id.rank != 0)
		return 0;
	s->res = calloc(de_pairs_count(s->n) ? de_pairs_count(s->n) : 1, sizeof(*s->res));
	if (s->res == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu pair results",
				   de_pairs_count(s->n));
	for (x = 0; x < s->n; x++)
		for (y = x + 1; y < s->n; y++) {
			s->res[de_pair_index(s->n, x, y)].a = x;
			s->res[de_pair_index(s->n, x, y)].b = y;
		}
	return 0;
}

void de_pairs_free(struct de_check *c)
{
	struct de_pairs_state *s = c->pairs;

	if (s == NULL)
		return;
	free(s->leader);
	free(s->res);
	free(s->jobs);
	free(s->rt);
	de_pairs_verdict_free(&s->v);
}

/* My pair in the round go announces: the peer's rank, or DE_PAIR_NONE. */
static uint32_t my_call(const struct de_pairs_state *s, const struct de_round_rec *go)
{
	uint32_t k, i;

	if (!s->lead)
		return DE_PAIR_NONE;
	if (go->kind == DE_ROUND_TOURNAMENT) {
		k = de_pairs_partner(s->n, go->round, s->mynode);
		return k != DE_PAIR_NONE && s->mynode < k ? s->leader[k] : DE_PAIR_NONE;
	}
	/* A retest round: node calls with. */
	for (i = 0; i < go->njobs; i++)
		if (go->job[i].node == s->mynode && go->job[i].with < s->n)
			return s->leader[go->job[i].with];
	return DE_PAIR_NONE;
}

/* As the progress lines name it: "T 3", "R 1/2". */
static const char *round_name(const struct de_round_rec *g)
{
	static char name[32];

	if (g->kind == DE_ROUND_RETEST)
		snprintf(name, sizeof(name), "R %u/%u", g->round + 1, g->of);
	else
		snprintf(name, sizeof(name), "%c %u", g->kind, g->round);
	return name;
}

int de_pairs_run(struct de_check *c, int probe_rc, struct de_text *probe_rep, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	static struct de_text go, rep;
	const struct de_round_rec *g = &go.r.round;

	probe_rep->code = (uint16_t)(probe_rc ? f->diag : DE_OK);
	if (!probe_rc)
		probe_rep->text[0] = '\0';
	if (de_rdv_phase_rec(c, probe_rep, &go, f))
		return -1;
	for (;;) {
		uint32_t peer;

		memset(&rep, 0, sizeof(rep));
		if (go.rec != DE_REC_ROUND)
			return de_fail_set(f, DE_D_INTERNAL, "rank 0's GO announced no pair round");
		if (g->kind == DE_ROUND_END)
			return g->failed ? 1 : 0;
		peer = my_call(s, g);
		if (peer != DE_PAIR_NONE) {
			struct de_pair_result r;

			memset(&r, 0, sizeof(r));
			de_pairs_measure(c, peer, &r);
			/* The NCCL pair in the same round, once per pair: retests
			 * are the TCP verdict's. Not after a failed TCP pair: its
			 * connection would fail the same way, seconds later. */
			if (s->nccl_on && g->kind == DE_ROUND_TOURNAMENT && r.diag == DE_OK &&
			    de_now_ms() < c->deadline)
				de_pairs_nccl_measure(c, peer, &r);
			/* A transfer cut by the run's budget says nothing of the
			 * link: the run timed out, and says so. */
			if (de_now_ms() >= c->deadline) {
				de_fail_set(f, DE_D_TIMEOUT,
					    "--timeout=%d s ran out in the pair sweep (round \"%s\", %s with %s): "
					    "give the sweep more time",
					    c->o.timeout_s, round_name(g), c->id.host, c->peers.peer[peer].host);
				return de_rdv_report_failure(c, f);
			}
			de_pairs_to_rec(&rep, s->mynode, c->peers.peer[peer].node, &r);
		}
		if (de_rdv_phase_rec(c, &rep, &go, f))
			return -1;
	}
}

/* ------------------------------------------------------------ rank 0's server */

static const char *node_name(const struct de_check *c, uint32_t x)
{
	return c->peers.peer[c->pairs->leader[x]].host;
}

static void progress(struct de_check *c, const char *what, uint32_t k, uint32_t of, uint32_t pairs,
		     uint32_t failed, double slow_bw, uint32_t sa, uint32_t sb, int64_t since)
{
	char slow[600] = "";

	if (c->o.quiet)
		return;
	if (sa != DE_PAIR_NONE)
		snprintf(slow, sizeof(slow), ", slowest %s-%s %.2f GB/s", node_name(c, sa),
			 node_name(c, sb), slow_bw / 1e9);
	de_log("rank 0", "pairs %s %u/%u: %u pair%s, %u failed%s (%.2f s)", what, k + 1, of, pairs,
	       pairs == 1 ? "" : "s", failed, slow, (double)(de_now_ms() - since) / 1000.0);
}

/* A slow pair measured again: the better figure of each direction. */
static void keep_best(struct de_pair_result *p, const struct de_pair_result *again)
{
	if (again->bw_ab > p->bw_ab)
		p->bw_ab = again->bw_ab;
	if (again->bw_ba > p->bw_ba)
		p->bw_ba = again->bw_ba;
}

static void announce(struct de_text *go, enum de_round_kind kind, uint32_t round, uint32_t of)
{
	memset(go, 0, sizeof(*go));
	go->rec = DE_REC_ROUND;
	go->r.round.kind = (uint8_t)kind;
	go->r.round.round = round;
	go->r.round.of = of;
}

/* Retest round k: its jobs (each node at most once: within the limit). */
static int compose_retest(struct de_pairs_state *s, uint32_t k, struct de_text *go,
			  struct de_fail *f)
{
	struct de_round_rec *g = &go->r.round;
	size_t i;

	announce(go, DE_ROUND_RETEST, k, s->rt_rounds);
	for (i = 0; i < s->njobs; i++) {
		if (s->jobs[i].round != k)
			continue;
		if (g->njobs == DE_PROTO_MAX_JOBS)
			return de_fail_set(f, DE_D_INTERNAL, "retest round %u has more than %u pairs", k + 1,
					   DE_PROTO_MAX_JOBS);
		g->job[g->njobs].node = s->jobs[i].node;
		g->job[g->njobs++].with = s->jobs[i].with;
	}
	return 0;
}

/* A pair that looks like a slow link is measured once more before it is
 * named: one slow transfer is a busy moment as often as a slow link.
 * The pairs of nodes that look slow as a whole are not (their nodes are
 * the finding). Appended to the jobs, at most REMEASURE_PER_NODE x n of
 * them, all packed into rounds again (each node once per round). */
static int remeasure_slow(struct de_pairs_state *s, double threshold, uint8_t *busy,
			  struct de_fail *f)
{
	struct de_pairs_verdict v0;
	struct de_err e;
	size_t i;

	if (de_pairs_judge(s->n, s->res, NULL, 0, threshold, &v0, &e))
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	memset(busy, 0, s->n);
	for (i = 0; i < v0.nfind; i++) {
		const struct de_finding *x = &v0.find[i];
		struct de_pair_job *j = &s->jobs[s->njobs];

		if (x->kind != DE_FIND_SLOW_LINK || s->njobs >= (1 + REMEASURE_PER_NODE) * (size_t)s->n)
			continue;
		j->node = x->a;
		j->with = x->b;
		j->remeasure = 1;
		s->njobs++;
	}
	de_pairs_verdict_free(&v0);
	if (s->njobs > s->nretest)
		s->rt_rounds = de_pairs_pack(s->n, s->jobs, s->njobs, busy);
	return 0;
}

static int plan_retests(struct de_pairs_state *s, double threshold, struct de_fail *f)
{
	uint32_t *fails = calloc(s->n, sizeof(*fails)), x;
	uint8_t *suspect = calloc(s->n, 1);
	size_t i, np = de_pairs_count(s->n);
	struct de_err e;
	int rc = 0;

	/* The node retests (at most one per node), then the slow pairs
	 * measured again (at most REMEASURE_PER_NODE x n). */
	s->jobs = calloc((1 + REMEASURE_PER_NODE) * (size_t)s->n, sizeof(*s->jobs));
	s->rt = calloc((1 + REMEASURE_PER_NODE) * (size_t)s->n, sizeof(*s->rt));
	if (fails == NULL || suspect == NULL || s->jobs == NULL || s->rt == NULL) {
		rc = de_fail_set(f, DE_D_INTERNAL, "out of memory for the retest plan");
		goto out;
	}
	for (i = 0; i < np; i++)
		if (!s->res[i].measured || s->res[i].diag != DE_OK) {
			fails[s->res[i].a]++;
			fails[s->res[i].b]++;
		}
	for (x = 0; x < s->n; x++)
		suspect[x] = fails[x] > 0;
	if (s->n < 3) /* nobody else to tell node from link with */
		goto out;
	if (de_pairs_retest_plan(s->n, suspect, fails, s->jobs, &s->njobs, &s->rt_rounds, &e)) {
		rc = de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
		goto out;
	}
	s->nretest = s->njobs;
	if (remeasure_slow(s, threshold, suspect, f)) {
		rc = -1;
		goto out;
	}
	for (i = 0; i < s->njobs; i++) {
		s->rt[i].node = s->jobs[i].node;
		s->rt[i].with = s->jobs[i].with;
	}
out:
	free(fails);
	free(suspect);
	return rc;
}

static int finish(struct de_check *c, struct de_text *go, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	struct de_err e;

	s->sweep_ms = (double)(de_now_ms() - s->t0);
	if (de_pairs_judge(s->n, s->res, s->rt, s->nretest, c->o.pair_threshold, &s->v, &e) ||
	    de_pairs_nccl_summary(s->n, s->res, &s->nsum, &e))
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	s->judged = 1;
	announce(go, DE_ROUND_END, 0, 0);
	go->r.round.failed = s->v.ok && s->probe[0] == '\0' && s->nsum.failed == 0 ? 0 : 1;
	s->cur_kind = 'E';
	return 0;
}

/* A pair report's record, checked against the table: 0, or -1 (f). */
static int take_pair(const struct de_pairs_state *s, uint32_t r, const struct de_pair_rec *p,
		     const char *why, struct de_pair_result *x, struct de_fail *f)
{
	if (p->a >= s->n || p->b >= s->n || p->a == p->b || p->diag >= DE_D_COUNT)
		return de_fail_set(f, DE_D_INTERNAL,
				   "rank %u sent a bad pair report: nodes %u-%u of %u, diagnosis %u", r,
				   p->a, p->b, s->n, p->diag);
	memset(x, 0, sizeof(*x));
	x->diag = (enum de_diag)p->diag;
	x->bw_ab = p->bw_ab;
	x->bw_ba = p->bw_ba;
	x->rtt_us = p->rtt_us;
	x->measured = 1;
	x->nccl = p->nccl;
	x->nccl_diag = p->nccl == DE_PAIR_NCCL_FAIL && p->nccl_diag < DE_D_COUNT ?
		       (enum de_diag)p->nccl_diag : p->nccl == DE_PAIR_NCCL_FAIL ? DE_D_INTERNAL : DE_OK;
	x->nccl_bw = p->nccl_bw;
	if (p->diag == DE_OK && p->nccl == DE_PAIR_NCCL_FAIL)
		snprintf(x->nccl_why, sizeof(x->nccl_why), "%.*s", (int)sizeof(x->nccl_why) - 1, why);
	else
		snprintf(x->why, sizeof(x->why), "%.*s", (int)sizeof(x->why) - 1, why);
	return 0;
}

int de_pairs_phase_done(struct de_check *c, int phase, const struct de_text *const *rep,
			struct de_text *go, struct de_fail *f)
{
	struct de_pairs_state *s = c->pairs;
	uint32_t r, pairs = 0, failed = 0, sa = DE_PAIR_NONE, sb = DE_PAIR_NONE;
	double slow_bw = 0;
	static int64_t since;
	size_t off;

	if (phase == 0) {
		/* The probe's failures are part of the verdict, not its end. */
		for (r = 0, off = 0; r < c->id.world; r++)
			if (rep[r]->code != DE_OK && off + 64 < sizeof(s->probe))
				off += (size_t)snprintf(s->probe + off, sizeof(s->probe) - off, "%s%s -> %s",
							off ? "; " : "", c->peers.peer[r].host, rep[r]->text);
		s->t0 = since = de_now_ms();
		if (s->rounds == 0)
			return finish(c, go, f) ? -1 : 0;
		s->cur_kind = 'T';
		s->cur_round = 0;
		announce(go, DE_ROUND_TOURNAMENT, 0, s->rounds);
		return 1;
	}
	for (r = 0; r < c->id.world; r++) {
		struct de_pair_result x;
		uint32_t a, b;
		size_t i;

		if (rep[r]->rec != DE_REC_PAIR)
			continue;
		if (take_pair(s, r, &rep[r]->r.pair, rep[r]->text, &x, f))
			return -1;
		a = rep[r]->r.pair.a;
		b = rep[r]->r.pair.b;
		pairs++;
		failed += x.diag != DE_OK;
		if (x.diag == DE_OK && (sa == DE_PAIR_NONE || de_pair_bw(&x) < slow_bw)) {
			slow_bw = de_pair_bw(&x);
			sa = a;
			sb = b;
		}
		if (s->cur_kind == 'T') {
			if (a > b)
				return de_fail_set(f, DE_D_INTERNAL, "rank %u reported pair %u-%u reversed", r, a, b);
			x.a = a;
			x.b = b;
			s->res[de_pair_index(s->n, a, b)] = x;
			continue;
		}
		for (i = 0; i < s->njobs; i++)
			if (s->jobs[i].round == s->cur_round && s->jobs[i].node == a && s->jobs[i].with == b) {
				s->rt[i].done = 1;
				s->rt[i].diag = x.diag;
				s->rt[i].bw = de_pair_bw(&x);
				if (s->jobs[i].remeasure && x.diag == DE_OK && a < b)
					keep_best(&s->res[de_pair_index(s->n, a, b)], &x);
			}
	}
	progress(c, s->cur_kind == 'T' ? "round" : "retest", s->cur_round,
		 s->cur_kind == 'T' ? s->rounds : s->rt_rounds, pairs, failed, slow_bw, sa, sb, since);
	since = de_now_ms();
	if (s->cur_kind == 'T' && s->cur_round + 1 < s->rounds) {
		announce(go, DE_ROUND_TOURNAMENT, ++s->cur_round, s->rounds);
		return 1;
	}
	if (s->cur_kind == 'T') {
		if (plan_retests(s, c->o.pair_threshold, f))
			return -1;
		if (s->njobs > 0) {
			s->cur_kind = 'R';
			s->cur_round = 0;
			return compose_retest(s, 0, go, f) ? -1 : 1;
		}
	} else if (s->cur_round + 1 < s->rt_rounds) {
		return compose_retest(s, ++s->cur_round, go, f) ? -1 : 1;
	}
	return finish(c, go, f) ? -1 : 0;
}
