/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's files (--pairs-out): pairs.json, pairs.csv and
 * pairs.nodes here, pairs.prom (pairs_prom.c) and pairs.png
 * (pairs_png.c), each written whole. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "pairs.h"
#include "pairs_report.h"

static const char *kind_name(enum de_finding_kind k)
{
	static const char *const n[] = { "failing-node", "failing-link", "slow-node", "slow-link" };

	return n[k];
}

int de_pairs_out_ready(const struct de_check *c, struct de_err *err)
{
	const char *dir = c->o.pairs_out;
	char gp[4200];
	struct stat st;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return de_errf(err, "--pairs-out %s: cannot make the folder: %s", dir, strerror(errno));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return de_errf(err, "--pairs-out %s: not a folder", dir);
	if (access(dir, W_OK) != 0)
		return de_errf(err, "--pairs-out %s: not writable here: %s", dir, strerror(errno));
	return de_pr_find_gnuplot(gp, sizeof(gp), err);
}

static int fill_json(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	char hosts[256];
	int sure;
	size_t i, np = de_pairs_count(s->n);
	uint32_t x;

	fprintf(fp, "{\n  \"nodes\": [");
	for (x = 0; x < s->n; x++) {
		fputs(x ? ", " : "", fp);
		de_json_put(fp, de_pr_name(c, x));
	}
	fprintf(fp, "],\n  \"rounds\": %u,\n  \"retest_rounds\": %u,\n  \"pair_bytes\": %zu,\n"
		    "  \"threshold\": %g,\n  \"median_gbps\": %.6g,\n  \"median_rtt_us\": %.6g,\n"
		    "  \"seconds\": %.3f,\n  \"nccl\": {\"skipped\": ",
		s->rounds, s->rt_rounds, c->o.pair_bytes, c->o.pair_threshold, s->v.median_bw / 1e9,
		s->v.median_rtt_us, s->sweep_ms / 1000.0);
	de_json_put(fp, s->nsum.measured ? "" : s->nccl_skip);
	fprintf(fp, ", \"measured\": %zu, \"failed\": %zu, \"untried\": %zu, \"median_gbps\": %.6g},\n  \"probe\": ",
		s->nsum.measured, s->nsum.failed, s->nsum.untried, s->nsum.median_bw / 1e9);
	de_json_put(fp, s->probe);
	fprintf(fp, ",\n  \"pairs\": [\n");
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &s->res[i];

		fprintf(fp, "    {\"a\": ");
		de_json_put(fp, de_pr_name(c, p->a));
		fprintf(fp, ", \"b\": ");
		de_json_put(fp, de_pr_name(c, p->b));
		fprintf(fp, ", \"status\": \"%s\", \"diagnosis\": \"%s\", \"gbps_ab\": %.6g, \"gbps_ba\": %.6g, "
			    "\"rtt_us\": %.6g, \"why\": ",
			de_pr_failed(p) ? "fail" : "ok", de_pr_failed(p) ? de_diag_name(de_pr_diag(p)) : "ok",
			p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
		de_json_put(fp, p->measured ? p->why : "no report");
		fprintf(fp, ", \"nccl\": {\"status\": \"%s\", \"diagnosis\": \"%s\", \"gbps\": %.6g, \"why\": ",
			p->nccl == DE_PAIR_NCCL_OK ? "ok" : p->nccl == DE_PAIR_NCCL_FAIL ? "fail" : "skipped",
			p->nccl == DE_PAIR_NCCL_FAIL ? de_diag_name(p->nccl_diag) : p->nccl == DE_PAIR_NCCL_OK ? "ok" : "",
			p->nccl_bw / 1e9);
		de_json_put(fp, p->nccl == DE_PAIR_NCCL_FAIL ? p->nccl_why : "");
		fprintf(fp, "}}%s\n", i + 1 < np ? "," : "");
	}
	fprintf(fp, "  ],\n  \"retests\": [");
	for (i = 0; i < s->njobs; i++) {
		fprintf(fp, "%s{\"node\": ", i ? ", " : "");
		de_json_put(fp, de_pr_name(c, s->rt[i].node));
		fprintf(fp, ", \"with\": ");
		de_json_put(fp, de_pr_name(c, s->rt[i].with));
		fprintf(fp, ", \"kind\": \"%s\", \"status\": \"%s\", \"gbps\": %.6g}",
			s->jobs[i].remeasure ? "slow-pair-again" : "node-retest",
			!s->rt[i].done ? "not-run" : s->rt[i].diag == DE_OK ? "ok" : de_diag_name(s->rt[i].diag),
			s->rt[i].bw / 1e9);
	}
	fprintf(fp, "],\n  \"findings\": [");
	for (i = 0; i < s->v.nfind; i++) {
		const struct de_finding *f = &s->v.find[i];
		int pair = f->kind == DE_FIND_LINK_FAIL || f->kind == DE_FIND_SLOW_LINK;

		fprintf(fp, "%s\n    {\"kind\": \"%s\", \"%s\": ", i ? "," : "", kind_name(f->kind),
			pair ? "pair" : "node");
		if (pair) {
			fputc('[', fp);
			de_json_put(fp, de_pr_name(c, f->a));
			fputs(", ", fp);
			de_json_put(fp, de_pr_name(c, f->b));
			fputc(']', fp);
		} else {
			de_json_put(fp, de_pr_name(c, f->a));
		}
		if (f->kind == DE_FIND_NODE_FAIL || f->kind == DE_FIND_LINK_FAIL)
			fprintf(fp, ", \"diagnosis\": \"%s\"", de_diag_name(f->diag));
		else
			fprintf(fp, ", \"gbps\": %.6g, \"ratio\": %.4g", f->bw / 1e9, f->ratio);
		fprintf(fp, ", \"pairs\": %u}", f->count);
	}
	fprintf(fp, "%s],\n  \"exclude\": ", s->v.nfind ? "\n  " : "");
	if (de_pr_exclude(c, hosts, sizeof(hosts), &sure)) {
		de_json_put(fp, hosts);
		fprintf(fp, ",\n  \"exclude_sure\": %s", sure ? "true" : "false");
	} else {
		fprintf(fp, "null,\n  \"exclude_sure\": false");
	}
	fprintf(fp, ",\n  \"png\": {\"width\": %u, \"height\": %u},\n  \"ok\": %s\n}\n",
		de_pairs_png_size(s->n), de_pairs_png_size(s->n),
		s->v.ok && s->probe[0] == '\0' ? "true" : "false");
	return 0;
}

static int fill_csv(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	size_t i, np = de_pairs_count(s->n);

	fprintf(fp, "a,b,status,diagnosis,gbps_ab,gbps_ba,rtt_us\n");
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &s->res[i];

		fprintf(fp, "%s,%s,%s,%s,%.6g,%.6g,%.6g\n", de_pr_name(c, p->a), de_pr_name(c, p->b),
			de_pr_failed(p) ? "fail" : "ok", de_pr_failed(p) ? de_diag_name(de_pr_diag(p)) : "ok",
			p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
	}
	return 0;
}

/* pairs.nodes: what the sweep proves of each node, for the sweep
 * template's DRAIN and RESUME (compute nodes may have no JSON reader):
 * NODE<TAB>fault|look|pass<TAB>why, one line a node, in rank order.
 * fault: the sweep isolated the node (failing or slow node, or failing
 * NCCL node: nccl_why); look: it is
 * in a failing or slow link whose culprit was not isolated, or in a
 * failure of the node probe that no faulty node explains; pass: neither. */
static void node_why(const struct de_check *c, const struct de_finding *f, char *out, size_t len)
{
	const struct de_pairs_state *s = c->pairs;

	switch (f->kind) {
	case DE_FIND_NODE_FAIL:
		if (f->with != DE_PAIR_NONE)
			snprintf(out, len, "failing-node: %u of %u pairs fail: %s; its retest against %s failed too",
				 f->count, s->n - 1, de_diag_name(f->diag), de_pr_name(c, f->with));
		else
			snprintf(out, len, "failing-node: %u of %u pairs fail: %s", f->count, s->n - 1,
				 de_diag_name(f->diag));
		break;
	case DE_FIND_SLOW_NODE:
		snprintf(out, len, "slow-node: all %u of its pairs below %.2g x the median pair (its best %.2f GB/s, %.2f x)",
			 f->count, c->o.pair_threshold, f->bw / 1e9, f->ratio);
		break;
	case DE_FIND_LINK_FAIL:
		snprintf(out, len, "failing-link %s-%s: %s; both nodes pass with the others, culprit not isolated",
			 de_pr_name(c, f->a), de_pr_name(c, f->b), de_diag_name(f->diag));
		break;
	case DE_FIND_SLOW_LINK:
		snprintf(out, len, "slow-link %s-%s: %.2f x the median pair; both nodes fine with the others, culprit not isolated",
			 de_pr_name(c, f->a), de_pr_name(c, f->b), f->ratio);
		break;
	}
}

/* A node TCP passed, by its NCCL pairs (de_pairs_nccl_blame's nblame,
 * nnb of them, sure or not): fault when it fails every NCCL pair, look
 * when it is an end of a failed one, else pass. */
static enum de_node_verdict nccl_why(const struct de_check *c, uint32_t x, const uint32_t *nblame,
				     size_t nnb, int sure, char *out, size_t len)
{
	const struct de_pairs_state *s = c->pairs;
	size_t i, np = de_pairs_count(s->n);

	for (i = 0; i < nnb && nblame[i] != x; i++)
		;
	if (i == nnb)
		return DE_NODE_PASS;
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &s->res[i];

		if (p->nccl != DE_PAIR_NCCL_FAIL || (p->a != x && p->b != x))
			continue;
		if (sure)
			snprintf(out, len, "failing-nccl-node: every NCCL pair of it fails: %s",
				 de_diag_name(p->nccl_diag));
		else
			snprintf(out, len, "failing-nccl-pair %s-%s: %s; culprit not isolated",
				 de_pr_name(c, p->a), de_pr_name(c, p->b), de_diag_name(p->nccl_diag));
		break;
	}
	return sure ? DE_NODE_FAULT : DE_NODE_LOOK;
}

static int fill_nodes(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	static const char *const word[] = { "pass", "fault", "look" };
	const char **fault = malloc((s->v.nfind + 1) * sizeof(*fault));
	size_t nfault = 0, i;
	char why[1024];
	uint32_t x;

	uint32_t *nblame = malloc((s->n + 1) * sizeof(*nblame));
	size_t nnb;
	int nsure;

	if (fault == NULL || nblame == NULL) {
		free(fault);
		free(nblame);
		return -1;
	}
	nnb = de_pairs_nccl_blame(s->n, s->res, nblame, s->n, &nsure);
	for (i = 0; i < s->v.nfind; i++)
		if (s->v.find[i].kind == DE_FIND_NODE_FAIL || s->v.find[i].kind == DE_FIND_SLOW_NODE)
			fault[nfault++] = de_pr_name(c, s->v.find[i].a);
	for (x = 0; x < s->n; x++) {
		size_t idx;
		enum de_node_verdict nv = de_pairs_node_verdict(&s->v, x, &idx);

		if (nv != DE_NODE_PASS)
			node_why(c, &s->v.find[idx], why, sizeof(why));
		else
			snprintf(why, sizeof(why), "named in no finding");
		if (nv == DE_NODE_PASS && de_pairs_probe_suspect(s->probe, de_pr_name(c, x), fault, nfault)) {
			nv = DE_NODE_LOOK;
			snprintf(why, sizeof(why), "in a failure of the node probe (FAIL probe) that no finding explains");
		}
		if (nv == DE_NODE_PASS)
			nv = nccl_why(c, x, nblame, nnb, nsure, why, sizeof(why));
		fprintf(fp, "%s\t%s\t%s\n", de_pr_name(c, x), word[nv], why);
	}
	free(fault);
	free(nblame);
	return 0;
}

int de_pairs_write(const struct de_check *c, struct de_err *err)
{
	const char *dir = c->o.pairs_out;

	if (de_pr_write_whole(dir, "pairs.json", fill_json, c, err) ||
	    de_pr_write_whole(dir, "pairs.prom", de_pr_fill_prom, c, err) ||
	    de_pr_write_whole(dir, "pairs.csv", fill_csv, c, err) ||
	    de_pr_write_whole(dir, "pairs.nodes", fill_nodes, c, err))
		return -1;
	return de_pr_draw_png(c, err);
}
