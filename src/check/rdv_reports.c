/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rank 0's server, the phases: every rank reports, and rank 0 answers GO
 * or ABORT with one diagnosis for everybody. What the verdict is comes
 * from rdv_verdict.c (pure); here it is kept and told to every rank. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "exclude.h"
#include "pairs.h"
#include "rdv_server.h"

void rdv_mark_told(struct rdv_server *s, uint32_t rank)
{
	if (rank < s->c->id.world && !s->told[rank]) {
		s->told[rank] = 1;
		s->ntold++;
	}
}

/* The job's verdict, kept to tell the ranks that come after it. */
void rdv_keep_verdict(struct rdv_server *s, enum de_diag d, uint32_t about, const char *text)
{
	if (s->have_verdict)
		return;
	s->have_verdict = 1;
	s->verdict.code = (uint16_t)d;
	s->verdict.rank = about;
	snprintf(s->verdict.text, sizeof(s->verdict.text), "%s", text);
}

/* Everyone hears the verdict kept (s->verdict, its record too). */
static void broadcast(struct rdv_server *s)
{
	uint32_t i;

	for (i = 0; i < s->c->id.world; i++)
		if (s->byrank[i] != NULL) {
			rdv_send_frame(s->byrank[i], DE_MSG_ABORT, &s->verdict);
			rdv_mark_told(s, i);
		}
	if (s->extra != NULL) {
		rdv_send_frame(s->extra, DE_MSG_ABORT, &s->verdict);
		rdv_mark_told(s, s->extra->h.rank);
	}
	s->done = 1;
}

static void rdv_vabort(struct rdv_server *s, enum de_diag d, uint32_t about, const char *fmt,
		       va_list ap)
	__attribute__((format(printf, 4, 0)));
static void rdv_vabort(struct rdv_server *s, enum de_diag d, uint32_t about, const char *fmt,
		       va_list ap)
{
	char text[sizeof(((struct de_text *)0)->text)];

	vsnprintf(text, sizeof(text), fmt, ap);
	rdv_keep_verdict(s, d, about, text);
	broadcast(s);
}

/* The blamed ranks' nodes, by Slurm's name for where the rank was placed
 * when it is known (what --exclude takes), else the host the rank
 * reported. Too many to fit a frame: no hint (a cut list would exclude too
 * little). */
static void blame_rec(struct rdv_server *s, const struct de_rdv_verdict *v, struct de_text *t)
{
	const struct de_rdv_rank *r = rdv_view(s);
	const char *name[DE_RDV_BLAME_MAX];
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < v->nblame; i++) {
		uint32_t k = v->blame[i];

		if (k >= s->c->id.world)
			continue;
		if (s->job.expect_host != NULL && s->job.expect_host[k] != NULL)
			name[n++] = s->job.expect_host[k];
		else if (r[k].host != NULL)
			name[n++] = r[k].host;
		else if (s->extra != NULL && s->extra->h.rank == k)
			name[n++] = s->extra->h.host; /* failed before it could join */
		else if (k == s->c->id.rank)
			name[n++] = s->c->id.host; /* rank 0 itself, before it joined */
	}
	if (n == 0 || de_exclude_hosts(name, n, t->r.exclude.hosts, sizeof(t->r.exclude.hosts)))
		return;
	t->rec = DE_REC_EXCLUDE;
	t->r.exclude.sure = v->blame_sure ? 1 : 0;
}

void rdv_keep(struct rdv_server *s, const struct de_rdv_verdict *v)
{
	if (s->have_verdict)
		return;
	rdv_keep_verdict(s, v->diag, v->rank, v->text);
	blame_rec(s, v, &s->verdict);
}

void rdv_tell(struct rdv_server *s, const struct de_rdv_verdict *v)
{
	rdv_keep(s, v);
	broadcast(s);
}

void rdv_abort(struct rdv_server *s, enum de_diag d, uint32_t about, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rdv_vabort(s, d, about, fmt, ap);
	va_end(ap);
}

int rdv_abort_by(struct rdv_server *s, struct rdv_conn *k, enum de_diag d, const char *fmt, ...)
{
	va_list ap;

	k->rank = -2;
	s->extra = k;
	va_start(ap, fmt);
	rdv_vabort(s, d, k->h.rank, fmt, ap);
	va_end(ap);
	return 0;
}

const struct de_rdv_rank *rdv_view(struct rdv_server *s)
{
	uint32_t i;

	for (i = 0; i < s->c->id.world; i++) {
		const struct rdv_conn *k = s->byrank[i];
		struct de_rdv_rank *r = &s->view[i];

		r->joined = k != NULL;
		r->reported = k != NULL && k->reported;
		r->host = k != NULL ? k->h.host : NULL;
		r->diag = k != NULL ? (enum de_diag)k->report.code : DE_OK;
		r->text = k != NULL ? k->report.text : "";
		r->unreached = k != NULL && k->report.rec == DE_REC_UNREACHED ? &k->report.r.unreached : NULL;
	}
	return s->view;
}

void rdv_abort_timeout(struct rdv_server *s)
{
	double secs = (double)(de_now_ms() - s->since) / 1000.0;

	if (s->phase < 0) {
		char text[sizeof(((struct de_fail *)0)->msg)];

		struct de_rdv_verdict v;

		de_rdv_missing(&s->job, rdv_view(s), secs, s->rejected, text, sizeof(text));
		v.diag = DE_D_MISSING_RANKS;
		v.rank = 0;
		snprintf(v.text, sizeof(v.text), "%s", text);
		de_rdv_blame_missing(&s->job, rdv_view(s), &v);
		rdv_tell(s, &v);
	} else {
		char list[1200];

		de_rdv_waiting_for(&s->job, rdv_view(s), 0, list, sizeof(list));
		rdv_abort(s, DE_D_TIMEOUT, 0,
			  "phase %d: no report in %.1f s from rank(s) %s: --timeout=%d s ran out",
			  s->phase, secs, list, s->c->o.timeout_s);
	}
}

/* Everyone hears GO (go: its record, or NULL): the next phase, with its
 * own wait. */
static void next_phase(struct rdv_server *s, const struct de_text *go, int more)
{
	static const struct de_text plain;
	struct de_buf b = { 0 };
	struct de_err e;
	uint32_t i;

	if (de_enc_text(&b, DE_MSG_GO, go != NULL ? go : &plain, &e)) {
		de_buf_free(&b);
		rdv_abort(s, DE_D_INTERNAL, 0, "cannot encode GO: %s", e.msg);
		return;
	}
	for (i = 0; i < s->c->id.world; i++) {
		s->byrank[i]->reported = 0;
		de_send_all(s->byrank[i]->fd, b.data, b.len, de_now_ms() + 2000);
	}
	de_buf_free(&b);
	s->phase++;
	s->since = de_now_ms();
	s->deadline = s->c->deadline + DE_BUDGET_JUDGE_MS;
	if (!more)
		s->done = 1;
}

/* --pairs: a probe that failed goes on into the sweep (its verdict
 * names it); each round's reports go to pairs.c, which says what comes
 * next. Any other failure ends the job as always. */
static void pairs_phase_end(struct rdv_server *s)
{
	static struct de_text go; /* the server thread's own */
	const struct de_text **rep;
	struct de_rdv_verdict v;
	struct de_fail f;
	uint32_t i;
	int more;

	if (de_rdv_judge_pairs_phase(rdv_view(s), s->c->id.world, s->phase, &v)) {
		rdv_tell(s, &v);
		return;
	}
	rep = malloc(s->c->id.world * sizeof(*rep));
	if (rep == NULL) {
		rdv_abort(s, DE_D_INTERNAL, 0, "out of memory for the pair reports");
		return;
	}
	for (i = 0; i < s->c->id.world; i++)
		rep[i] = &s->byrank[i]->report;
	memset(&go, 0, sizeof(go));
	more = de_pairs_phase_done(s->c, s->phase, rep, &go, &f);
	free(rep);
	if (more < 0) {
		rdv_abort(s, f.diag, 0, "%s", f.msg);
		return;
	}
	next_phase(s, &go, more);
}

void rdv_on_report(struct rdv_server *s, struct rdv_conn *k, const struct de_text *t)
{
	struct de_rdv_verdict v;
	uint32_t i;

	if (s->phase < 0 || k->reported) {
		rdv_abort(s, DE_D_INTERNAL, (uint32_t)k->rank,
			  "rank %" PRId64 " reported out of turn", k->rank);
		return;
	}
	k->reported = 1;
	k->report = *t;
	if (de_rdv_ends_at_once(s->phase, (enum de_diag)t->code)) {
		de_rdv_rank_failed(&v, (uint32_t)k->rank, k->h.host, (enum de_diag)t->code, t->text);
		rdv_tell(s, &v);
		return;
	}
	for (i = 0; i < s->c->id.world; i++)
		if (!s->byrank[i]->reported)
			return;
	if (s->c->o.pairs) {
		pairs_phase_end(s);
		return;
	}
	/* Everyone reported: one verdict for all. */
	if (de_rdv_judge_phase(rdv_view(s), s->c->id.world, s->phase, s->nodes, &v)) {
		rdv_tell(s, &v);
		return;
	}
	next_phase(s, NULL, s->phase + 1 < s->c->nphases);
}
