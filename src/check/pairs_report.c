/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's verdict on rank 0's terminal: the finding lines, the
 * PASS/FAIL line with the resubmit hint, the matrices, the worst pairs;
 * and the helpers its files share (pairs_files.c, pairs_prom.c,
 * pairs_png.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exclude.h"
#include "pairs.h"
#include "pairs_report.h"

const char *de_pr_name(const struct de_check *c, uint32_t x)
{
	return c->peers.peer[c->pairs->leader[x]].host;
}

const struct de_pair_result *de_pr_res(const struct de_check *c, uint32_t a, uint32_t b)
{
	return &c->pairs->res[de_pair_index(c->pairs->n, a, b)];
}

int de_pr_failed(const struct de_pair_result *p)
{
	return !p->measured || p->diag != DE_OK;
}

enum de_diag de_pr_diag(const struct de_pair_result *p)
{
	return p->measured ? p->diag : DE_D_TIMEOUT;
}

/* Row -> column: the directed figure. */
double de_pr_directed_bw(const struct de_check *c, uint32_t from, uint32_t to)
{
	const struct de_pair_result *p = de_pr_res(c, from, to);

	return from < to ? p->bw_ab : p->bw_ba;
}

static void finding_line(const struct de_check *c, const struct de_finding *f)
{
	const struct de_pairs_state *s = c->pairs;
	char with[300] = "";

	switch (f->kind) {
	case DE_FIND_NODE_FAIL:
		if (f->with != DE_PAIR_NONE)
			snprintf(with, sizeof(with), "; its retest against %s failed too", de_pr_name(c, f->with));
		printf("FAIL node %s: %u of %u pairs fail: %s%s: %s\n", de_pr_name(c, f->a), f->count, s->n - 1,
		       de_diag_name(f->diag), with, de_diag_hint(f->diag));
		break;
	case DE_FIND_LINK_FAIL: {
		const struct de_pair_result *p = de_pr_res(c, f->a, f->b);

		if (f->with != DE_PAIR_NONE)
			snprintf(with, sizeof(with), "; retested against %s", de_pr_name(c, f->with));
		printf("FAIL pair %s-%s: %s: %s (both nodes pass with the others%s): %s\n", de_pr_name(c, f->a),
		       de_pr_name(c, f->b), de_diag_name(f->diag), p->measured ? p->why : "no report",
		       with, de_diag_hint(f->diag));
		break;
	}
	case DE_FIND_SLOW_NODE:
		printf("SLOW node %s: all %u of its pairs below %.2g x the median pair (its best %.2f GB/s, %.2f x)\n",
		       de_pr_name(c, f->a), f->count, c->o.pair_threshold, f->bw / 1e9, f->ratio);
		break;
	case DE_FIND_SLOW_LINK:
		printf("SLOW link %s-%s: %.2f GB/s, %.2f x the median pair (%.2f GB/s); both nodes fine with the others\n",
		       de_pr_name(c, f->a), de_pr_name(c, f->b), f->bw / 1e9, f->ratio, s->v.median_bw / 1e9);
		break;
	}
}

/* A matrix's title and column names; row_head(): a row's name, starred
 * when the verdict named that node. */
static void col_heads(const struct de_check *c, const char *title)
{
	uint32_t j;

	printf("\n%s\n%-14s", title, "");
	for (j = 0; j < c->pairs->n; j++)
		printf(" %7.7s", de_pr_name(c, j));
	printf("\n");
}

static void row_head(const struct de_check *c, uint32_t i)
{
	printf("%-12.12s %c", de_pr_name(c, i), de_pairs_node_named(&c->pairs->v, i) ? '*' : ' ');
}

static void matrices(const struct de_check *c)
{
	const struct de_pairs_state *s = c->pairs;
	uint32_t i, j;

	col_heads(c, "bandwidth GB/s, row -> column (* named above)");
	for (i = 0; i < s->n; i++) {
		row_head(c, i);
		for (j = 0; j < s->n; j++) {
			if (i == j)
				printf(" %7s", "-");
			else if (de_pr_failed(de_pr_res(c, i, j)))
				printf(" %7s", "FAIL");
			else
				printf(" %7.2f", de_pr_directed_bw(c, i, j) / 1e9);
		}
		printf("\n");
	}
	col_heads(c, "latency us, round trip of 16 bytes");
	for (i = 0; i < s->n; i++) {
		row_head(c, i);
		for (j = 0; j < s->n; j++) {
			const struct de_pair_result *p = i == j ? NULL : de_pr_res(c, i, j);

			if (p == NULL)
				printf(" %7s", "-");
			else if (p->rtt_us > 0)
				printf(" %7.0f", p->rtt_us);
			else
				printf(" %7s", "FAIL");
		}
		printf("\n");
	}
}

/* Failed pairs first, then the slowest. */
static int worse(const struct de_pair_result *x, const struct de_pair_result *y)
{
	if (de_pr_failed(x) != de_pr_failed(y))
		return de_pr_failed(x);
	return de_pair_bw(x) < de_pair_bw(y);
}

static void worst(const struct de_check *c)
{
	const struct de_pairs_state *s = c->pairs;
	size_t np = de_pairs_count(s->n), k = 0, i, j;
	size_t *top = malloc(DE_PAIRS_WORST * sizeof(*top));

	if (top == NULL || np == 0) {
		free(top);
		return;
	}
	/* A bounded insertion: O(pairs x 10), no copy of the table. */
	for (i = 0; i < np; i++) {
		for (j = k; j > 0 && worse(&s->res[i], &s->res[top[j - 1]]); j--)
			if (j < DE_PAIRS_WORST)
				top[j] = top[j - 1];
		if (j < DE_PAIRS_WORST) {
			top[j] = i;
			if (k < DE_PAIRS_WORST)
				k++;
		}
	}
	printf("\nworst pairs (of %zu):\n", np);
	for (i = 0; i < k; i++) {
		const struct de_pair_result *p = &s->res[top[i]];

		if (de_pr_failed(p))
			printf("%3zu. %s-%s FAIL %s: %s\n", i + 1, de_pr_name(c, p->a), de_pr_name(c, p->b),
			       de_diag_name(de_pr_diag(p)), p->measured ? p->why : "no report");
		else
			printf("%3zu. %s-%s %.2f GB/s (%.2f -> / %.2f <-), %.0f us\n", i + 1, de_pr_name(c, p->a),
			       de_pr_name(c, p->b), de_pair_bw(p) / 1e9, p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
	}
	free(top);
}

/* The resubmit hint's hosts (exclude.h), "" when the sweep blames none. */
int de_pr_exclude(const struct de_check *c, char *hosts, size_t len, int *sure)
{
	const struct de_pairs_state *s = c->pairs;
	uint32_t *idx = calloc(s->n ? s->n : 1, sizeof(*idx));
	const char **nm = calloc(s->n ? s->n : 1, sizeof(*nm));
	size_t n = 0, i;
	int rc = -1;

	hosts[0] = '\0';
	*sure = 0;
	if (idx != NULL && nm != NULL) {
		n = de_pairs_blame(&s->v, idx, s->n, sure);
		/* The NCCL pairs name nodes only when TCP named none. */
		if (n == 0)
			n = de_pairs_nccl_blame(s->n, s->res, idx, s->n, sure);
		for (i = 0; i < n; i++)
			nm[i] = de_pr_name(c, idx[i]);
		rc = n > 0 ? de_exclude_hosts(nm, n, hosts, len) : -1;
	}
	free(idx);
	free(nm);
	return rc == 0;
}

/* The NCCL pairs: skipped and why, or how many ran, the median, and each
 * failed pair on its own line. */
static void nccl_lines(const struct de_check *c)
{
	const struct de_pairs_state *s = c->pairs;
	const struct de_pairs_nccl_sum *ns = &s->nsum;
	size_t i, np = de_pairs_count(s->n);

	char untried[80] = "";

	if (ns->measured == 0 && (ns->untried == 0 || s->nccl_skip[0] != '\0')) {
		printf("NCCL pairs: skipped: %s\n", s->nccl_skip[0] ? s->nccl_skip :
		       "no calling node could use NCCL (each says why with --verbose)");
		return;
	}
	if (ns->untried > 0)
		snprintf(untried, sizeof(untried), "; %zu not tried, their TCP pair failed", ns->untried);
	printf("NCCL pairs: %zu of %zu measured (a 2-rank allreduce of %zu bytes each), %zu failed, median %.2f GB/s%s%s\n",
	       ns->measured, np, c->o.pair_bytes, ns->failed, ns->median_bw / 1e9, untried,
	       ns->skipped > ns->untried ? "; the others' calling node could not use NCCL" : "");
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &s->res[i];

		if (p->nccl == DE_PAIR_NCCL_FAIL)
			printf("FAIL nccl pair %s-%s: %s: %s\n", de_pr_name(c, p->a), de_pr_name(c, p->b),
			       de_diag_name(p->nccl_diag), p->nccl_why);
	}
}

void de_pairs_report(const struct de_check *c)
{
	char hosts[256], hint[600];
	int sure;
	const struct de_pairs_state *s = c->pairs;
	size_t i;

	printf("distenv-check --pairs: %u nodes, %zu pair%s in %u round%s (+%u retest), %zu bytes each way, %.2f s\n",
	       s->n, de_pairs_count(s->n), de_pairs_count(s->n) == 1 ? "" : "s", s->rounds,
	       s->rounds == 1 ? "" : "s", s->rt_rounds, c->o.pair_bytes, s->sweep_ms / 1000.0);
	nccl_lines(c);
	if (s->probe[0] != '\0')
		printf("FAIL probe: %s\n", s->probe);
	for (i = 0; i < s->v.nfind; i++)
		finding_line(c, &s->v.find[i]);
	if (s->v.ok && s->probe[0] == '\0' && s->nsum.failed == 0)
		printf("PASS pairs: %zu pair%s of %u nodes, none failed, no outlier (median %.2f GB/s, %.0f us; threshold %.2g x the median)\n",
		       de_pairs_count(s->n), de_pairs_count(s->n) == 1 ? "" : "s", s->n, s->v.median_bw / 1e9,
		       s->v.median_rtt_us, c->o.pair_threshold);
	else {
		char nccl[64] = "";

		hint[0] = '\0';
		if (de_pr_exclude(c, hosts, sizeof(hosts), &sure)) {
			snprintf(hint, sizeof(hint), " -- ");
			de_exclude_hint(hosts, sure, hint + 4, sizeof(hint) - 4);
		}
		if (s->nsum.failed > 0)
			snprintf(nccl, sizeof(nccl), ", %zu NCCL pair%s failed", s->nsum.failed,
				 s->nsum.failed == 1 ? "" : "s");
		printf("FAIL pairs: %u of %zu pairs failed%s, %zu finding%s (median %.2f GB/s, %.0f us)%s\n",
		       s->v.failed_pairs, de_pairs_count(s->n), nccl, s->v.nfind, s->v.nfind == 1 ? "" : "s",
		       s->v.median_bw / 1e9, s->v.median_rtt_us, hint);
	}
	if (s->n <= DE_PAIRS_MATRIX_MAX && s->n >= 2)
		matrices(c);
	worst(c);
}

/* path.tmp written by fill, then renamed onto path: readers never see
 * half a file. */
int de_pr_write_whole(const char *dir, const char *file,
		       de_pr_fill_fn fill, const struct de_check *c,
		       struct de_err *err)
{
	char path[4200], tmp[4300];
	FILE *fp;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, file);
	fp = fopen(tmp, "w");
	if (fp == NULL)
		return de_errf(err, "--pairs-out: cannot write %s: %s", tmp, strerror(errno));
	bad = fill(c, fp);
	bad |= ferror(fp);
	if (fclose(fp) != 0 || bad) {
		unlink(tmp);
		return de_errf(err, "--pairs-out: writing %s failed", tmp);
	}
	if (rename(tmp, path) != 0) {
		unlink(tmp);
		return de_errf(err, "--pairs-out: cannot rename %s to %s: %s", tmp, path, strerror(errno));
	}
	return 0;
}
