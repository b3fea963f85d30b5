/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "pairs_plan.h"
#include "proto.h" /* enum de_pair_nccl */
#include "pairs_verdict.h"

double de_pair_bw(const struct de_pair_result *p)
{
	return p->bw_ab < p->bw_ba ? p->bw_ab : p->bw_ba;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

double de_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int failed(const struct de_pair_result *p)
{
	return !p->measured || p->diag != DE_OK;
}

static int add(struct de_pairs_verdict *v, size_t *cap, const struct de_finding *f)
{
	if (v->nfind == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct de_finding *g = realloc(v->find, nc * sizeof(*g));

		if (g == NULL)
			return -1;
		v->find = g;
		*cap = nc;
	}
	v->find[v->nfind++] = *f;
	return 0;
}

/* The diagnosis most of node x's failed pairs share. */
static enum de_diag common_diag(uint32_t n, const struct de_pair_result *pairs, uint32_t x)
{
	unsigned count[DE_D_COUNT] = { 0 };
	enum de_diag best = DE_D_TIMEOUT;
	uint32_t y;
	int d;

	for (y = 0; y < n; y++) {
		const struct de_pair_result *p;

		if (y == x)
			continue;
		p = &pairs[de_pair_index(n, x, y)];
		if (failed(p))
			count[p->measured ? p->diag : DE_D_TIMEOUT]++;
	}
	for (d = 1; d < DE_D_COUNT; d++)
		if (count[d] > count[best])
			best = (enum de_diag)d;
	return best;
}

/* Median bandwidth of the good pairs that do not involve node skip
 * (DE_PAIR_NONE: all of them). */
static double median_without(uint32_t n, const struct de_pair_result *pairs, uint32_t skip,
			     double *scratch)
{
	size_t i, k = 0, np = de_pairs_count(n);

	for (i = 0; i < np; i++)
		if (!failed(&pairs[i]) && pairs[i].a != skip && pairs[i].b != skip)
			scratch[k++] = de_pair_bw(&pairs[i]);
	return de_median(scratch, k);
}

int de_pairs_judge(uint32_t n, const struct de_pair_result *pairs,
		   const struct de_pair_retest *retest, size_t nretest,
		   double threshold, struct de_pairs_verdict *v, struct de_err *err)
{
	size_t np = de_pairs_count(n), i, k = 0, cap = 0;
	uint32_t *fails = calloc(n ? n : 1, sizeof(*fails)), x, y;
	int8_t *bad = calloc(n ? n : 1, 1), *slow = calloc(n ? n : 1, 1);
	uint32_t *with = malloc((n ? n : 1) * sizeof(*with));
	double *scratch = malloc((np ? np : 1) * sizeof(*scratch));
	struct de_finding f;
	int rc = -1;

	memset(v, 0, sizeof(*v));
	if (!(threshold > 0 && threshold <= 1)) {
		de_errf(err, "pair threshold %g: expected a fraction in (0, 1]", threshold);
		goto out;
	}
	if (fails == NULL || bad == NULL || slow == NULL || with == NULL || scratch == NULL) {
		de_errf(err, "out of memory judging %u nodes", n);
		goto out;
	}
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &pairs[i];

		if (failed(p)) {
			v->failed_pairs++;
			fails[p->a]++;
			fails[p->b]++;
			continue;
		}
		v->measured_pairs++;
		scratch[k++] = p->rtt_us;
	}
	v->median_rtt_us = de_median(scratch, k);
	v->median_bw = median_without(n, pairs, DE_PAIR_NONE, scratch);
	/* A bad node: its retest against a good node failed; with none, all
	 * of its pairs (two at least) failed. */
	for (x = 0; x < n; x++) {
		with[x] = DE_PAIR_NONE;
		bad[x] = -1;
	}
	for (i = 0; i < nretest; i++) {
		if (!retest[i].done || retest[i].node >= n)
			continue;
		with[retest[i].node] = retest[i].with;
		bad[retest[i].node] = retest[i].diag != DE_OK;
	}
	for (x = 0; x < n; x++)
		if (bad[x] < 0)
			bad[x] = n >= 3 && fails[x] == n - 1;
	for (x = 0; x < n; x++) {
		if (!bad[x] || fails[x] == 0)
			continue;
		memset(&f, 0, sizeof(f));
		f.kind = DE_FIND_NODE_FAIL;
		f.a = f.b = x;
		f.diag = common_diag(n, pairs, x);
		f.count = fails[x];
		f.with = with[x];
		if (add(v, &cap, &f))
			goto oom;
	}
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &pairs[i];

		if (!failed(p) || bad[p->a] || bad[p->b])
			continue;
		memset(&f, 0, sizeof(f));
		f.kind = DE_FIND_LINK_FAIL;
		f.a = p->a;
		f.b = p->b;
		f.diag = p->measured ? p->diag : DE_D_TIMEOUT;
		f.count = 1;
		f.with = with[p->a] != DE_PAIR_NONE ? with[p->a] : with[p->b];
		if (add(v, &cap, &f))
			goto oom;
	}
	/* A slow node: every good pair of it below threshold x the median of
	 * the pairs without it (so that its own slow pairs do not pull the
	 * reference down on small clusters). */
	for (x = 0; n >= 3 && x < n; x++) {
		double ref, best = 0;
		uint32_t good = 0, below = 0;

		if (bad[x])
			continue;
		ref = median_without(n, pairs, x, scratch);
		for (y = 0; y < n; y++) {
			const struct de_pair_result *p;

			if (y == x)
				continue;
			p = &pairs[de_pair_index(n, x, y)];
			if (failed(p))
				continue;
			good++;
			below += de_pair_bw(p) < threshold * ref;
			if (de_pair_bw(p) > best)
				best = de_pair_bw(p);
		}
		if (good == 0 || below < good || ref <= 0)
			continue;
		slow[x] = 1;
		memset(&f, 0, sizeof(f));
		f.kind = DE_FIND_SLOW_NODE;
		f.a = f.b = x;
		f.count = good;
		f.bw = best;
		f.ratio = best / ref;
		f.with = DE_PAIR_NONE;
		if (add(v, &cap, &f))
			goto oom;
	}
	for (i = 0; n >= 3 && i < np; i++) {
		const struct de_pair_result *p = &pairs[i];

		if (failed(p) || slow[p->a] || slow[p->b] || bad[p->a] || bad[p->b] ||
		    !(de_pair_bw(p) < threshold * v->median_bw))
			continue;
		memset(&f, 0, sizeof(f));
		f.kind = DE_FIND_SLOW_LINK;
		f.a = p->a;
		f.b = p->b;
		f.count = 1;
		f.bw = de_pair_bw(p);
		f.ratio = f.bw / v->median_bw;
		f.with = DE_PAIR_NONE;
		if (add(v, &cap, &f))
			goto oom;
	}
	v->ok = v->failed_pairs == 0 && v->nfind == 0;
	rc = 0;
	goto out;
oom:
	de_errf(err, "out of memory judging %u nodes", n);
	de_pairs_verdict_free(v);
out:
	free(fails);
	free(bad);
	free(slow);
	free(with);
	free(scratch);
	return rc;
}

void de_pairs_verdict_free(struct de_pairs_verdict *v)
{
	free(v->find);
	v->find = NULL;
	v->nfind = 0;
}

int de_pairs_node_named(const struct de_pairs_verdict *v, uint32_t x)
{
	size_t i;

	for (i = 0; i < v->nfind; i++)
		if ((v->find[i].kind == DE_FIND_NODE_FAIL || v->find[i].kind == DE_FIND_SLOW_NODE) &&
		    v->find[i].a == x)
			return 1;
	return 0;
}

int de_pairs_pair_named(const struct de_pairs_verdict *v, const struct de_pair_result *p)
{
	size_t i;

	if (failed(p))
		return 1;
	for (i = 0; i < v->nfind; i++)
		if ((v->find[i].kind == DE_FIND_SLOW_LINK || v->find[i].kind == DE_FIND_LINK_FAIL) &&
		    v->find[i].a == p->a && v->find[i].b == p->b)
			return 1;
	return 0;
}

enum de_node_verdict de_pairs_node_verdict(const struct de_pairs_verdict *v, uint32_t x, size_t *idx)
{
	size_t i, link = v->nfind;

	for (i = 0; i < v->nfind; i++) {
		const struct de_finding *f = &v->find[i];

		if ((f->kind == DE_FIND_NODE_FAIL || f->kind == DE_FIND_SLOW_NODE) && f->a == x) {
			*idx = i;
			return DE_NODE_FAULT;
		}
		if ((f->kind == DE_FIND_LINK_FAIL || f->kind == DE_FIND_SLOW_LINK) && (f->a == x || f->b == x) &&
		    link == v->nfind)
			link = i;
	}
	*idx = link;
	return link < v->nfind ? DE_NODE_LOOK : DE_NODE_PASS;
}

static int word_is(const char *w, size_t len, const char *name)
{
	return strlen(name) == len && strncmp(w, name, len) == 0;
}

static int in_list(const char *w, size_t len, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (word_is(w, len, list[i]))
			return 1;
	return 0;
}

/* The entry [e, end): reporter r (rlen), its targets after "-> " or ", ",
 * each a word followed by " (". 1 when host is an end of a pair of it
 * that neither end's fault explains. */
static int entry_suspect(const char *r, size_t rlen, const char *e, const char *end, const char *host,
			 const char *const *fault, size_t nfault)
{
	int rfault = in_list(r, rlen, fault, nfault), targets = 0;
	const char *p;

	for (p = e; p < end && (p = strstr(p, " (")) != NULL && p < end; p++) {
		const char *w = p;
		size_t tlen;

		while (w > e && w[-1] != ' ')
			w--;
		if (w - e < 2 || !((w[-2] == '>' || w[-2] == ',') && w[-1] == ' '))
			continue;
		tlen = (size_t)(p - w);
		targets++;
		if (rfault || in_list(w, tlen, fault, nfault))
			continue;
		if (word_is(r, rlen, host) || word_is(w, tlen, host))
			return 1;
	}
	/* A failure with no target named: the reporter alone. */
	return targets == 0 && !rfault && word_is(r, rlen, host);
}

int de_pairs_probe_suspect(const char *probe, const char *host, const char *const *fault, size_t nfault)
{
	const char *p = probe, *r = NULL, *e = NULL;
	size_t rlen = 0;

	/* Entries start at the text's start or after "; " with "WORD -> ";
	 * any other "; " part continues the entry before it. */
	for (;;) {
		const char *arrow = strstr(p, " -> "), *sp = strchr(p, ' ');
		const char *next = strstr(p, "; ");
		int starts = arrow != NULL && arrow == sp && arrow > p;

		if (starts) {
			if (r != NULL && entry_suspect(r, rlen, e, p, host, fault, nfault))
				return 1;
			r = p;
			rlen = (size_t)(arrow - p);
			e = arrow + 1;
		}
		if (next == NULL)
			break;
		p = next + 2;
	}
	return r != NULL && entry_suspect(r, rlen, e, probe + strlen(probe), host, fault, nfault);
}

static size_t add_node(uint32_t *out, size_t n, size_t cap, uint32_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (out[i] == x)
			return n;
	if (n < cap)
		out[n++] = x;
	return n;
}

size_t de_pairs_blame(const struct de_pairs_verdict *v, uint32_t *out, size_t cap, int *sure)
{
	size_t i, n = 0;

	*sure = 1;
	for (i = 0; i < v->nfind; i++)
		if (v->find[i].kind == DE_FIND_NODE_FAIL || v->find[i].kind == DE_FIND_SLOW_NODE)
			n = add_node(out, n, cap, v->find[i].a);
	if (n > 0)
		return n;
	*sure = 0;
	for (i = 0; i < v->nfind; i++) {
		n = add_node(out, n, cap, v->find[i].a);
		n = add_node(out, n, cap, v->find[i].b);
	}
	return n;
}

size_t de_pairs_nccl_blame(uint32_t n, const struct de_pair_result *pairs, uint32_t *out, size_t cap,
			   int *sure)
{
	size_t np = de_pairs_count(n), i, k = 0, passed = 0;
	uint32_t x, y;

	*sure = 1;
	for (i = 0; i < np; i++)
		passed += pairs[i].nccl == DE_PAIR_NCCL_OK;
	/* With no passing pair at all nothing tells one node from another. */
	for (x = 0; x < n && passed > 0; x++) {
		size_t meas = 0, bad = 0;

		/* x's own n-1 pairs, by index: the whole sweep stays O(pairs). */
		for (y = 0; y < n; y++) {
			const struct de_pair_result *p;

			if (y == x)
				continue;
			p = &pairs[de_pair_index(n, x, y)];
			if (p->nccl != DE_PAIR_NCCL_NONE) {
				meas++;
				bad += p->nccl == DE_PAIR_NCCL_FAIL;
			}
		}
		if (meas >= 2 && bad == meas)
			k = add_node(out, k, cap, x);
	}
	if (k > 0)
		return k;
	*sure = 0;
	for (i = 0; i < np; i++)
		if (pairs[i].nccl == DE_PAIR_NCCL_FAIL) {
			k = add_node(out, k, cap, pairs[i].a);
			k = add_node(out, k, cap, pairs[i].b);
		}
	return k;
}

int de_pairs_nccl_summary(uint32_t n, const struct de_pair_result *pairs,
			  struct de_pairs_nccl_sum *s, struct de_err *err)
{
	size_t np = de_pairs_count(n), i, k = 0;
	double *bw;

	memset(s, 0, sizeof(*s));
	bw = malloc((np ? np : 1) * sizeof(*bw));
	if (bw == NULL)
		return de_errf(err, "out of memory for %zu NCCL pairs", np);
	for (i = 0; i < np; i++) {
		switch (pairs[i].nccl) {
		case DE_PAIR_NCCL_NONE:
			s->skipped++;
			s->untried += pairs[i].measured && pairs[i].diag != DE_OK;
			break;
		case DE_PAIR_NCCL_OK:
			s->measured++;
			bw[k++] = pairs[i].nccl_bw;
			break;
		case DE_PAIR_NCCL_FAIL:
			s->measured++;
			s->failed++;
			break;
		default:
			free(bw);
			return de_errf(err, "pair %u-%u: NCCL outcome %d, expected 0, 1 or 2",
				       pairs[i].a, pairs[i].b, pairs[i].nccl);
		}
	}
	s->median_bw = de_median(bw, k);
	free(bw);
	return 0;
}
