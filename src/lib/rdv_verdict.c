/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rank 0's conclusions from the ranks' reports, apart from the server's
 * sockets so that each case has a unit test (tests/unit/test-rdv-verdict.c)
 * rather than only a whole cluster run. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "rdv_verdict.h"

int de_rdv_ends_at_once(int phase, enum de_diag d)
{
	return phase > 0 && d != DE_OK;
}

int de_rdv_probe_together(enum de_diag d)
{
	return d == DE_D_PEER_REFUSED || d == DE_D_PEER_TIMEOUT || d == DE_D_BULK_STALL;
}

int de_rdv_probe_goes_on(enum de_diag d)
{
	return d == DE_D_PEER_REFUSED || d == DE_D_PEER_TIMEOUT || d == DE_D_BULK_STALL ||
	       d == DE_D_PEER_LOST || d == DE_D_WRONG_RESULT;
}

int de_rdv_probe_names(const struct de_rdv_rank *r, uint32_t world, uint32_t prober,
		       const char *host)
{
	const struct de_unreached_rec *u = r[prober].unreached;
	uint32_t i;

	if (u == NULL || host == NULL)
		return 0;
	for (i = 0; i < u->n && i < DE_PROTO_MAX_UNREACHED; i++)
		if (u->rank[i] < world && r[u->rank[i]].host != NULL &&
		    strcmp(r[u->rank[i]].host, host) == 0)
			return 1;
	return 0;
}

int de_rdv_node_fault(enum de_diag d)
{
	return d == DE_D_HOST_LOOPBACK || d == DE_D_NCCL_MISSING;
}

static void blame(struct de_rdv_verdict *v, uint32_t rank)
{
	uint32_t i;

	for (i = 0; i < v->nblame; i++)
		if (v->blame[i] == rank)
			return;
	if (v->nblame < DE_RDV_BLAME_MAX)
		v->blame[v->nblame++] = rank;
}

void de_rdv_rank_failed(struct de_rdv_verdict *v, uint32_t rank, const char *host,
			enum de_diag d, const char *text)
{
	v->diag = d;
	v->rank = rank;
	v->nblame = 0;
	v->blame_sure = 1;
	if (de_rdv_node_fault(d))
		blame(v, rank);
	snprintf(v->text, sizeof(v->text), "rank %u on %s: %s", rank, host, text);
}

void de_rdv_blame_missing(const struct de_rdv_job *j, const struct de_rdv_rank *r,
			  struct de_rdv_verdict *v)
{
	uint32_t i;

	v->nblame = 0;
	v->blame_sure = 1;
	for (i = 0; i < j->world && j->expect_host != NULL; i++)
		if (!r[i].joined && j->expect_host[i] != NULL)
			blame(v, i);
}

void de_rdv_judge_probe(const struct de_rdv_rank *r, uint32_t world, uint32_t probers,
			struct de_rdv_verdict *v)
{
	char msg[3000], worst[256] = "", from[1024] = "";
	size_t off = 0;
	uint32_t i, j, max = 0, bulk = 0, failed = 0;
	enum de_diag d = DE_D_PEER_REFUSED;

	msg[0] = '\0';
	for (i = 0; i < world; i++) {
		failed += r[i].diag != DE_OK;
		bulk += r[i].diag == DE_D_BULK_STALL;
		if (r[i].diag == DE_D_PEER_TIMEOUT)
			d = DE_D_PEER_TIMEOUT;
		if (r[i].diag == DE_OK || off > sizeof(msg) - 400)
			continue;
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s -> %s",
					off ? "; " : "", r[i].host, r[i].text);
	}
	/* For each destination host, how many probers failed to reach it. */
	for (i = 0; i < world; i++) {
		const char *dst = r[i].host;
		uint32_t fails = 0;
		size_t fo = 0;
		char who[1024] = "";

		for (j = 0; j < world; j++) {
			if (r[j].diag == DE_OK || !de_rdv_probe_names(r, world, j, dst))
				continue;
			fails++;
			if (fo < sizeof(who) - 300)
				fo += (size_t)snprintf(who + fo, sizeof(who) - fo, "%s%s",
						       fo ? ", " : "", r[j].host);
		}
		if (fails > max) {
			max = fails;
			snprintf(worst, sizeof(worst), "%s", dst);
			snprintf(from, sizeof(from), "%s", who);
		}
	}
	v->rank = 0;
	v->nblame = 0;
	v->blame_sure = 0;
	/* Both ends of every failing connection: which end is at fault is not
	 * known, unless every other node fails to reach one (below). */
	for (i = 0; i < world; i++) {
		const struct de_unreached_rec *u = r[i].unreached;

		if (r[i].diag == DE_OK)
			continue;
		blame(v, i);
		for (j = 0; u != NULL && j < u->n && j < DE_PROTO_MAX_UNREACHED; j++)
			if (u->rank[j] < world)
				blame(v, u->rank[j]);
	}
	if (bulk == failed) {
		v->diag = DE_D_BULK_STALL;
		snprintf(v->text, sizeof(v->text),
			 "large transfers between nodes stall while the small probe passed: %s", msg);
		return;
	}
	v->diag = d;
	if (max > 0 && max + 1 >= probers && probers > 2) {
		v->nblame = 0;
		v->blame_sure = 1;
		for (i = 0; i < world; i++)
			if (r[i].host != NULL && strcmp(r[i].host, worst) == 0) {
				blame(v, i);
				break;
			}
		snprintf(v->text, sizeof(v->text),
			 "%s accepts no new TCP connections on its data port from any other node (%s): %s",
			 worst, from, msg);
	} else {
		snprintf(v->text, sizeof(v->text), "data connections between nodes fail: %s", msg);
	}
}

int de_rdv_judge_phase(const struct de_rdv_rank *r, uint32_t world, int phase,
		       uint32_t probers, struct de_rdv_verdict *v)
{
	uint32_t i, j;

	for (i = 0; i < world; i++)
		if (r[i].diag != DE_OK)
			break;
	if (i == world)
		return 0;
	if (phase == 0) {
		/* A rank that failed for its own reason (its name is loopback,
		 * ...) is the verdict; probe failures are judged together to
		 * name the node everyone fails. */
		for (j = 0; j < world; j++)
			if (r[j].diag != DE_OK && !de_rdv_probe_together(r[j].diag)) {
				de_rdv_rank_failed(v, j, r[j].host, r[j].diag, r[j].text);
				return 1;
			}
		de_rdv_judge_probe(r, world, probers, v);
		return 1;
	}
	de_rdv_rank_failed(v, i, r[i].host, r[i].diag, r[i].text);
	return 1;
}

int de_rdv_judge_pairs_phase(const struct de_rdv_rank *r, uint32_t world, int phase,
			     struct de_rdv_verdict *v)
{
	uint32_t i;

	for (i = 0; i < world; i++)
		if (r[i].diag != DE_OK && (phase > 0 || !de_rdv_probe_goes_on(r[i].diag))) {
			de_rdv_rank_failed(v, i, r[i].host, r[i].diag, r[i].text);
			return 1;
		}
	return 0;
}

const char *de_rdv_expected_where(const struct de_rdv_job *j, uint32_t rank, char *buf,
				  size_t len)
{
	if (j->expect_host != NULL && j->expect_host[rank] != NULL)
		snprintf(buf, len, " (expected on %s)", j->expect_host[rank]);
	else if (j->nodelist != NULL)
		snprintf(buf, len, " (expected on one of %s)", j->nodelist);
	else if (len > 0)
		buf[0] = '\0';
	return buf;
}

uint32_t de_rdv_waiting_for(const struct de_rdv_job *j, const struct de_rdv_rank *r,
			    int gathering, char *out, size_t len)
{
	uint32_t i, n = 0;
	size_t off = 0;
	char where[300];

	out[0] = '\0';
	for (i = 0; i < j->world; i++) {
		int waiting = gathering ? !r[i].joined : !r[i].reported;

		if (!waiting)
			continue;
		if (n++ < 12 && off + 320 < len) {
			if (gathering)
				de_rdv_expected_where(j, i, where, sizeof(where));
			else
				snprintf(where, sizeof(where), " (%s)", r[i].host ? r[i].host : "");
			off += (size_t)snprintf(out + off, len - off, "%s%u%s", off ? ", " : "", i, where);
		}
	}
	if (n > 12 && off + 32 < len)
		snprintf(out + off, len - off, ", ... (%u more)", n - 12);
	return n;
}

/* The verdict must fit what every rank prints (a de_fail's message), so
 * the list is cut at a rank, with how many more, never mid-number. */
void de_rdv_missing(const struct de_rdv_job *j, const struct de_rdv_rank *r, double secs,
		    unsigned rejected, char *out, size_t len)
{
	char where[300], item[320];
	const char *also = rejected ?
		" (and connections were refused for authentication: see rank 0's log)" : "";
	struct de_cutlist l;
	uint32_t i, missing = 0;
	int n;

	if (len == 0)
		return;
	for (i = 0; i < j->world; i++)
		missing += !r[i].joined;
	n = snprintf(out, len, "%u of %u ranks never reached %s:%u in %.1f s: rank%s ",
		     missing, j->world, j->master, j->master_port, secs, missing > 1 ? "s" : "");
	if (n < 0 || (size_t)n + strlen(also) + 32 >= len)
		n = 0;
	out[n] = '\0';
	de_cutlist_init(&l, out + n, len - (size_t)n > strlen(also) ? len - (size_t)n - strlen(also) : 0);
	for (i = 0; i < j->world; i++) {
		if (r[i].joined)
			continue;
		snprintf(item, sizeof(item), "%u%s", i, de_rdv_expected_where(j, i, where, sizeof(where)));
		de_cutlist_add(&l, item);
	}
	de_cutlist_end(&l);
	snprintf(out + strlen(out), len - strlen(out), "%s", also);
}
