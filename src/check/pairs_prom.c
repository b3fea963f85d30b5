/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pairs.prom: the sweep in Prometheus' text format, for node_exporter's
 * textfile collector. */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "pairs.h"
#include "pairs_report.h"
#include "prom.h"

/* ------------------------------------------------------- pairs.prom */

/* Did v name node a (DE_FIND_NODE_FAIL, DE_FIND_SLOW_NODE) or the pair
 * a-b (DE_FIND_SLOW_LINK)? */
static int found(const struct de_pairs_verdict *v, enum de_finding_kind kind, uint32_t a, uint32_t b)
{
	size_t i;

	for (i = 0; i < v->nfind; i++)
		if (v->find[i].kind == kind && v->find[i].a == a &&
		    (kind != DE_FIND_SLOW_LINK || v->find[i].b == b))
			return 1;
	return 0;
}

static void put_pair(FILE *fp, const struct de_check *c, const char *metric, uint32_t src,
		     uint32_t dst, double v)
{
	const char *l[] = { "src", de_pr_name(c, src), "dst", de_pr_name(c, dst) };

	de_prom_sample(fp, metric, l, 2, v);
}

static void put_node(FILE *fp, const struct de_check *c, const char *metric, uint32_t x, double v)
{
	const char *l[] = { "node", de_pr_name(c, x) };

	de_prom_sample(fp, metric, l, 1, v);
}

/* For node_exporter's textfile collector; the admin guide's "Pair matrix"
 * lists the metrics. Undirected figures once per pair, src/dst being
 * pairs.csv's a/b; bandwidth per direction; a failed pair has no
 * bandwidth sample, only distenv_pair_failed 1. */
int de_pr_fill_prom(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	size_t i, np = de_pairs_count(s->n);
	const struct de_pair_result *p;
	uint32_t x;

	de_prom_family(fp, "distenv_pair_bandwidth_bytes_per_second", "gauge",
		       "distenv-check --pairs: bytes per second from src to dst, the best of up to 3 transfers");
	for (i = 0, p = s->res; i < np; i++, p++)
		if (!de_pr_failed(p)) {
			put_pair(fp, c, "distenv_pair_bandwidth_bytes_per_second", p->a, p->b, p->bw_ab);
			put_pair(fp, c, "distenv_pair_bandwidth_bytes_per_second", p->b, p->a, p->bw_ba);
		}
	de_prom_family(fp, "distenv_pair_rtt_seconds", "gauge",
		       "distenv-check --pairs: round trip of 16 bytes between src and dst, median of 20");
	for (i = 0, p = s->res; i < np; i++, p++)
		if (p->rtt_us > 0)
			put_pair(fp, c, "distenv_pair_rtt_seconds", p->a, p->b, p->rtt_us / 1e6);
	de_prom_family(fp, "distenv_pair_failed", "gauge",
		       "distenv-check --pairs: 1 when the pair src-dst failed (pairs.json says why)");
	for (i = 0, p = s->res; i < np; i++, p++)
		put_pair(fp, c, "distenv_pair_failed", p->a, p->b, de_pr_failed(p));
	de_prom_family(fp, "distenv_pair_slow", "gauge",
		       "distenv-check --pairs: 1 when src-dst was named a slow link");
	for (i = 0, p = s->res; i < np; i++, p++)
		put_pair(fp, c, "distenv_pair_slow", p->a, p->b, found(&s->v, DE_FIND_SLOW_LINK, p->a, p->b));
	/* The NCCL pairs, where a calling node could use NCCL. */
	if (s->nsum.measured > 0) {
		de_prom_family(fp, "distenv_pair_nccl_bandwidth_bytes_per_second", "gauge",
			       "distenv-check --pairs: bytes per second (algbw) of the pair's 2-rank NCCL allreduce");
		for (i = 0, p = s->res; i < np; i++, p++)
			if (p->nccl == DE_PAIR_NCCL_OK)
				put_pair(fp, c, "distenv_pair_nccl_bandwidth_bytes_per_second", p->a, p->b,
					 p->nccl_bw);
		de_prom_family(fp, "distenv_pair_nccl_failed", "gauge",
			       "distenv-check --pairs: 1 when the pair's 2-rank NCCL allreduce failed");
		for (i = 0, p = s->res; i < np; i++, p++)
			if (p->nccl != DE_PAIR_NCCL_NONE)
				put_pair(fp, c, "distenv_pair_nccl_failed", p->a, p->b,
					 p->nccl == DE_PAIR_NCCL_FAIL);
	}
	de_prom_family(fp, "distenv_node_failed", "gauge",
		       "distenv-check --pairs: 1 when the node was named failing (its pairs and its retest failed)");
	for (x = 0; x < s->n; x++)
		put_node(fp, c, "distenv_node_failed", x, found(&s->v, DE_FIND_NODE_FAIL, x, 0));
	de_prom_family(fp, "distenv_node_slow", "gauge",
		       "distenv-check --pairs: 1 when all the node's pairs were below the threshold times the median pair");
	for (x = 0; x < s->n; x++)
		put_node(fp, c, "distenv_node_slow", x, found(&s->v, DE_FIND_SLOW_NODE, x, 0));
	de_prom_family(fp, "distenv_sweep_nodes", "gauge", "distenv-check --pairs: nodes swept");
	de_prom_sample(fp, "distenv_sweep_nodes", NULL, 0, s->n);
	de_prom_family(fp, "distenv_sweep_ok", "gauge",
		       "distenv-check --pairs: 1 when no pair (TCP or NCCL) or probe failed and nothing was named");
	de_prom_sample(fp, "distenv_sweep_ok", NULL, 0, s->v.ok && s->probe[0] == '\0' && s->nsum.failed == 0);
	de_prom_family(fp, "distenv_sweep_median_bandwidth_bytes_per_second", "gauge",
		       "distenv-check --pairs: the median pair's bytes per second (its slower direction)");
	de_prom_sample(fp, "distenv_sweep_median_bandwidth_bytes_per_second", NULL, 0, s->v.median_bw);
	de_prom_family(fp, "distenv_sweep_duration_seconds", "gauge",
		       "distenv-check --pairs: the sweep's rounds and retests, in seconds");
	de_prom_sample(fp, "distenv_sweep_duration_seconds", NULL, 0, s->sweep_ms / 1000.0);
	/* node_exporter stamps no time on textfile samples: this says how old
	 * the sweep is (alert on time() - it). */
	de_prom_family(fp, "distenv_sweep_timestamp_seconds", "gauge",
		       "distenv-check --pairs: when the sweep ended, Unix time");
	de_prom_sample(fp, "distenv_sweep_timestamp_seconds", NULL, 0, (double)time(NULL));
	return 0;
}
