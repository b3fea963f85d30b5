/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pairs_plan.h"
#include "pairs_verdict.h"
#include "proto.h"
#include "tap.h"

static struct de_pair_result P[64];

/* n healthy nodes: every pair 1 GB/s both ways, 50 us. */
static void healthy(uint32_t n)
{
	uint32_t a, b;

	memset(P, 0, sizeof(P));
	for (a = 0; a < n; a++)
		for (b = a + 1; b < n; b++) {
			struct de_pair_result *p = &P[de_pair_index(n, a, b)];

			p->a = a;
			p->b = b;
			p->measured = 1;
			p->diag = DE_OK;
			p->bw_ab = p->bw_ba = 1e9;
			p->rtt_us = 50;
		}
}

static struct de_pair_result *pair(uint32_t n, uint32_t a, uint32_t b)
{
	return &P[de_pair_index(n, a, b)];
}

static void fail_pair(uint32_t n, uint32_t a, uint32_t b, enum de_diag d)
{
	struct de_pair_result *p = pair(n, a, b);

	p->diag = d;
	p->bw_ab = p->bw_ba = 0;
}

/* "kind:a-b/diag" for each finding, space separated. */
static const char *findings(const struct de_pairs_verdict *v)
{
	static char buf[512];
	static const char *const kind[] = { "node-fail", "link-fail", "slow-node", "slow-link" };
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < v->nfind && off < sizeof(buf) - 64; i++) {
		const struct de_finding *f = &v->find[i];

		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s:%u", off ? " " : "",
					kind[f->kind], f->a);
		if (f->kind == DE_FIND_LINK_FAIL || f->kind == DE_FIND_SLOW_LINK)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "-%u", f->b);
		if (f->kind == DE_FIND_NODE_FAIL || f->kind == DE_FIND_LINK_FAIL)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "/%s", de_diag_name(f->diag));
	}
	return buf;
}

int main(void)
{
	struct de_pairs_verdict v;
	struct de_pair_retest rt[8];
	struct de_err e;
	double m[] = { 3, 1, 2 }, m2[] = { 4, 1, 3, 2 };
	uint32_t x;

	ok(de_median(m, 3) == 2, "median of 3 values");
	ok(de_median(m2, 4) == 2.5, "median of 4 values: the mean of the middle two");
	ok(de_median(NULL, 0) == 0, "median of nothing: 0");

	healthy(5);
	ok(de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e) == 0, "judge a healthy 5-node sweep");
	ok(v.ok && v.nfind == 0 && v.failed_pairs == 0 && v.measured_pairs == 10, "healthy: ok, nothing named, 10 pairs");
	{
		uint32_t b[8];
		int sure = 0;

		ok(de_pairs_blame(&v, b, 8, &sure) == 0, "healthy: nobody blamed");
	}
	ok(v.median_bw == 1e9 && v.median_rtt_us == 50, "healthy: median 1 GB/s, 50 us");
	de_pairs_verdict_free(&v);

	/* Node 2's link is rate-limited: all its pairs at 0.1 GB/s. */
	for (x = 4; x <= 6; x += 2) {
		uint32_t y;

		healthy(x);
		for (y = 0; y < x; y++)
			if (y != 2)
				pair(x, 2, y)->bw_ab = pair(x, 2, y)->bw_ba = 1e8;
		de_pairs_judge(x, P, NULL, 0, 0.5, &v, &e);
		is_str(findings(&v), "slow-node:2", "%u nodes, node 2 rate-limited: node 2 slow, nobody else", x);
		{
			uint32_t b[8];
			int sure = 0;
			size_t nb = de_pairs_blame(&v, b, 8, &sure);

			ok(nb == 1 && b[0] == 2 && sure, "... blamed: node 2 alone, sure");
		}
		ok(!v.ok && v.find[0].ratio < 0.2, "... not ok, its ratio %.2f", v.nfind ? v.find[0].ratio : -1);
		de_pairs_verdict_free(&v);
	}
	/* One slow direction is enough: the slower one counts. */
	healthy(5);
	pair(5, 1, 3)->bw_ba = 2e8;
	de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e);
	is_str(findings(&v), "slow-link:1-3", "one slow pair, its nodes fine elsewhere: a slow link");
	{
		uint32_t b[8];
		int sure = 1;
		size_t nb = de_pairs_blame(&v, b, 8, &sure);

		ok(nb == 2 && b[0] == 1 && b[1] == 3 && !sure,
		   "a slow link: both its nodes blamed, not sure which");
	}
	de_pairs_verdict_free(&v);
	/* Thresholds are relative: 0.6x passes at 0.5, not at 0.7. */
	healthy(5);
	pair(5, 0, 4)->bw_ab = 6e8;
	de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e);
	ok(v.ok, "a pair at 0.6x median passes the default 0.5 threshold");
	de_pairs_verdict_free(&v);
	de_pairs_judge(5, P, NULL, 0, 0.7, &v, &e);
	is_str(findings(&v), "slow-link:0-4", "... and is a slow link at --pair-threshold 0.7");
	de_pairs_verdict_free(&v);
	/* A uniformly slow cluster is not slow to itself. */
	healthy(5);
	for (x = 0; x < 10; x++)
		P[x].bw_ab = P[x].bw_ba = 1e6;
	de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e);
	ok(v.ok, "all pairs equally slow: nothing named (never absolute)");
	de_pairs_verdict_free(&v);

	/* A firewalled pair, both nodes pass their retest: the link. */
	healthy(5);
	fail_pair(5, 1, 3, DE_D_PEER_TIMEOUT);
	rt[0] = (struct de_pair_retest){ 1, 0, 1, DE_OK, 1e9 };
	rt[1] = (struct de_pair_retest){ 3, 2, 1, DE_OK, 1e9 };
	de_pairs_judge(5, P, rt, 2, 0.5, &v, &e);
	is_str(findings(&v), "link-fail:1-3/peer-timeout", "firewalled pair: that pair fails, both nodes fine");
	ok(!v.ok && v.failed_pairs == 1 && v.find[0].with == 0, "... not ok, 1 failed pair, retested against node 0");
	de_pairs_verdict_free(&v);
	/* The same without retests (nobody to test against is not the case
	 * here, but the matrix alone tells it too). */
	de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e);
	is_str(findings(&v), "link-fail:1-3/peer-timeout", "firewalled pair without retests: still the link");
	de_pairs_verdict_free(&v);

	/* Node 2 stalls large packets: all its pairs fail, so does its retest. */
	healthy(5);
	for (x = 0; x < 5; x++)
		if (x != 2)
			fail_pair(5, 2, x, DE_D_BULK_STALL);
	pair(5, 2, 4)->diag = DE_D_PEER_LOST;
	rt[0] = (struct de_pair_retest){ 2, 0, 1, DE_D_BULK_STALL, 0 };
	rt[1] = (struct de_pair_retest){ 0, 1, 1, DE_OK, 1e9 };
	rt[2] = (struct de_pair_retest){ 1, 3, 1, DE_OK, 1e9 };
	rt[3] = (struct de_pair_retest){ 3, 4, 1, DE_OK, 1e9 };
	rt[4] = (struct de_pair_retest){ 4, 0, 1, DE_OK, 1e9 };
	de_pairs_judge(5, P, rt, 5, 0.5, &v, &e);
	is_str(findings(&v), "node-fail:2/bulk-stall", "node 2 drops large packets: node 2 named, bulk-stall (most of its pairs)");
	ok(v.nfind == 1 && v.find[0].count == 4 && v.failed_pairs == 4, "... 4 failed pairs, all its own");
	ok(de_pairs_node_named(&v, 2) && !de_pairs_node_named(&v, 1), "node 2 is marked, node 1 not");
	de_pairs_verdict_free(&v);
	de_pairs_judge(5, P, NULL, 0, 0.5, &v, &e);
	is_str(findings(&v), "node-fail:2/bulk-stall", "... without retests: every pair of it failed, still the node");
	de_pairs_verdict_free(&v);
	/* A pair fails but node 1's retest fails too: node 1, not the link. */
	healthy(5);
	fail_pair(5, 1, 3, DE_D_PEER_REFUSED);
	rt[0] = (struct de_pair_retest){ 1, 0, 1, DE_D_PEER_REFUSED, 0 };
	rt[1] = (struct de_pair_retest){ 3, 2, 1, DE_OK, 1e9 };
	de_pairs_judge(5, P, rt, 2, 0.5, &v, &e);
	is_str(findings(&v), "node-fail:1/peer-refused", "retest tells node from link: node 1 fails against a good node too");
	de_pairs_verdict_free(&v);
	/* A pair whose report never came: failed, timeout. */
	healthy(4);
	pair(4, 0, 1)->measured = 0;
	de_pairs_judge(4, P, NULL, 0, 0.5, &v, &e);
	is_str(findings(&v), "link-fail:0-1/timeout", "a pair never reported: failed with timeout");
	de_pairs_verdict_free(&v);
	/* Two nodes: one pair, nothing to compare with; a failure is the link. */
	healthy(2);
	de_pairs_judge(2, P, NULL, 0, 0.5, &v, &e);
	ok(v.ok, "two nodes, one pair: ok");
	de_pairs_verdict_free(&v);
	fail_pair(2, 0, 1, DE_D_BULK_STALL);
	de_pairs_judge(2, P, NULL, 0, 0.5, &v, &e);
	is_str(findings(&v), "link-fail:0-1/bulk-stall", "two nodes, failed pair: named as the pair");
	de_pairs_verdict_free(&v);

	/* What the verdict proves of each node (DRAIN and RESUME act on it). */
	healthy(5);
	for (x = 0; x < 5; x++)
		if (x != 2)
			pair(5, 2, x)->bw_ab = pair(5, 2, x)->bw_ba = 1e7;
	fail_pair(5, 1, 3, DE_D_PEER_TIMEOUT);
	rt[0] = (struct de_pair_retest){ 1, 0, 1, DE_OK, 1e9 };
	rt[1] = (struct de_pair_retest){ 3, 4, 1, DE_OK, 1e9 };
	de_pairs_judge(5, P, rt, 2, 0.5, &v, &e);
	is_str(findings(&v), "link-fail:1-3/peer-timeout slow-node:2", "a slow node and a failing link in one sweep");
	{
		size_t idx = 99;

		ok(de_pairs_node_verdict(&v, 2, &idx) == DE_NODE_FAULT && idx == 1,
		   "the slow node: FAULT, decided by its own finding");
		ok(de_pairs_node_verdict(&v, 1, &idx) == DE_NODE_LOOK && idx == 0 &&
			   de_pairs_node_verdict(&v, 3, &idx) == DE_NODE_LOOK,
		   "both nodes of the failing link (culprit not isolated): LOOK, never FAULT");
		ok(de_pairs_node_verdict(&v, 0, &idx) == DE_NODE_PASS && idx == v.nfind &&
			   de_pairs_node_verdict(&v, 4, &idx) == DE_NODE_PASS,
		   "the others: PASS, no finding");
	}
	de_pairs_verdict_free(&v);
	/* A slow node that is also in a failing link: the node finding decides. */
	healthy(5);
	for (x = 0; x < 5; x++)
		if (x != 2)
			pair(5, 2, x)->bw_ab = pair(5, 2, x)->bw_ba = 1e7;
	fail_pair(5, 2, 4, DE_D_PEER_TIMEOUT);
	rt[0] = (struct de_pair_retest){ 2, 0, 1, DE_OK, 1e7 };
	rt[1] = (struct de_pair_retest){ 4, 1, 1, DE_OK, 1e9 };
	de_pairs_judge(5, P, rt, 2, 0.5, &v, &e);
	{
		size_t idx = 99;

		ok(de_pairs_node_verdict(&v, 2, &idx) == DE_NODE_FAULT && v.find[idx].kind == DE_FIND_SLOW_NODE,
		   "slow node in a failing link too: FAULT by its slow-node finding (%s)", findings(&v));
		ok(de_pairs_node_verdict(&v, 4, &idx) == DE_NODE_LOOK, "... its partner in the link: LOOK");
	}
	de_pairs_verdict_free(&v);
	/* A failing node (its retest failed too): FAULT; its partners PASS. */
	healthy(4);
	for (x = 1; x < 4; x++)
		fail_pair(4, 0, x, DE_D_BULK_STALL);
	rt[0] = (struct de_pair_retest){ 0, 1, 1, DE_D_BULK_STALL, 0 };
	de_pairs_judge(4, P, rt, 1, 0.5, &v, &e);
	{
		size_t idx;

		ok(de_pairs_node_verdict(&v, 0, &idx) == DE_NODE_FAULT && de_pairs_node_verdict(&v, 1, &idx) == DE_NODE_PASS &&
			   de_pairs_node_verdict(&v, 3, &idx) == DE_NODE_PASS,
		   "failing node: FAULT; the nodes whose pairs with it failed: PASS");
	}
	de_pairs_verdict_free(&v);
	/* Two nodes, their pair fails: neither is proven bad. */
	healthy(2);
	fail_pair(2, 0, 1, DE_D_BULK_STALL);
	de_pairs_judge(2, P, NULL, 0, 0.5, &v, &e);
	{
		size_t idx;

		ok(de_pairs_node_verdict(&v, 0, &idx) == DE_NODE_LOOK && de_pairs_node_verdict(&v, 1, &idx) == DE_NODE_LOOK,
		   "two nodes, failed pair: both LOOK, neither FAULT");
	}
	de_pairs_verdict_free(&v);

	/* The probe's failure text: which nodes it leaves under suspicion. */
	{
		const char *fw = "node2 -> node4 (10.77.0.14:4000) timed out; node4 -> node2 (10.77.0.12:4000) timed out";
		/* A bulk stall's text has "; " inside an entry. */
		const char *mtu = "node3 -> node4 (10.77.0.14:46783) 64 KiB stalled after 0 bytes in 15.0 s while small "
				  "messages passed; eth0 has MTU 1500 here; node4 -> node1 (10.77.0.11:36955) 64 KiB "
				  "stalled; eth0 has MTU 1500 here";
		const char *many = "node12 -> node1 (10.77.0.11:1) refused, node14 (10.77.0.24:1) timed out";
		const char *f4[] = { "node4" }, *f12[] = { "node12" };

		ok(de_pairs_probe_suspect(fw, "node2", NULL, 0) && de_pairs_probe_suspect(fw, "node4", NULL, 0) &&
			   !de_pairs_probe_suspect(fw, "node1", NULL, 0) && !de_pairs_probe_suspect(fw, "node", NULL, 0) &&
			   !de_pairs_probe_suspect(fw, "ode2", NULL, 0),
		   "a firewalled pair in the probe, nobody proven bad: both its nodes suspect, no other (nor a part of a name)");
		ok(!de_pairs_probe_suspect(fw, "node2", f4, 1), "... node4 proven bad: node2's failure with it is explained");
		ok(!de_pairs_probe_suspect(mtu, "node1", f4, 1) && !de_pairs_probe_suspect(mtu, "node3", f4, 1),
		   "node4 drops large packets and is proven bad: its peers in the probe are not suspect");
		ok(de_pairs_probe_suspect(mtu, "node1", NULL, 0) && de_pairs_probe_suspect(mtu, "node3", NULL, 0) &&
			   !de_pairs_probe_suspect(mtu, "node2", NULL, 0),
		   "... with nobody proven bad: node1 and node3 suspect (entries past a \"; \" inside a message), node2 not");
		ok(de_pairs_probe_suspect(many, "node1", NULL, 0) && de_pairs_probe_suspect(many, "node14", NULL, 0) &&
			   !de_pairs_probe_suspect(many, "node12", f12, 1) && !de_pairs_probe_suspect(many, "node1", f12, 1),
		   "two targets of one reporter; node1 is not node12 nor node14");
		ok(de_pairs_probe_suspect("node5 -> out of memory", "node5", NULL, 0) &&
			   !de_pairs_probe_suspect("node5 -> out of memory", "node6", NULL, 0),
		   "a failure naming no target: its reporter suspect");
		ok(!de_pairs_probe_suspect("", "node1", NULL, 0), "no probe failure: nobody suspect");
	}
	ok(de_pairs_judge(5, P, NULL, 0, 0, &v, &e) == -1, "threshold 0 refused");
	is_str(e.msg, "pair threshold 0: expected a fraction in (0, 1]", "... naming the expected form");
	ok(de_pairs_judge(5, P, NULL, 0, 1.5, &v, &e) == -1, "threshold 1.5 refused");

	/* The NCCL pairs, summed: 4 nodes, 6 pairs. */
	{
		struct de_pairs_nccl_sum ns;

		healthy(4);
		ok(de_pairs_nccl_summary(4, P, &ns, &e) == 0 && ns.measured == 0 && ns.failed == 0 &&
		   ns.skipped == 6 && ns.median_bw == 0, "NCCL summary: nothing measured, 6 skipped, median 0");
		pair(4, 0, 1)->nccl = DE_PAIR_NCCL_OK;
		pair(4, 0, 1)->nccl_bw = 4e9;
		pair(4, 2, 3)->nccl = DE_PAIR_NCCL_OK;
		pair(4, 2, 3)->nccl_bw = 2e9;
		pair(4, 0, 2)->nccl = DE_PAIR_NCCL_OK;
		pair(4, 0, 2)->nccl_bw = 1e9;
		pair(4, 1, 3)->nccl = DE_PAIR_NCCL_FAIL;
		pair(4, 1, 3)->nccl_bw = 9e9; /* a failed pair's figure never counts */
		ok(de_pairs_nccl_summary(4, P, &ns, &e) == 0 && ns.measured == 4 && ns.failed == 1 &&
		   ns.skipped == 2, "NCCL summary: 4 measured (1 failed), 2 skipped");
		ok(ns.median_bw == 2e9, "... median of the passing pairs only: 2 GB/s");
		ok(ns.untried == 0, "... none untried: every TCP pair passed");
		fail_pair(4, 0, 3, DE_D_PEER_TIMEOUT);
		ok(de_pairs_nccl_summary(4, P, &ns, &e) == 0 && ns.skipped == 2 && ns.untried == 1,
		   "NCCL summary: a failed TCP pair left untried is counted among the skipped, and as untried");
		pair(4, 0, 3)->nccl = 7;
		ok(de_pairs_nccl_summary(4, P, &ns, &e) == -1, "NCCL outcome 7 refused");
		is_str(e.msg, "pair 0-3: NCCL outcome 7, expected 0, 1 or 2", "... naming the pair and the expected values");
	}

	/* Whom the failed NCCL pairs blame: 4 nodes, all measured. */
	{
		uint32_t idx[4];
		int sure = -1;
		size_t k;
		uint32_t a, b;

		healthy(4);
		for (a = 0; a < 4; a++)
			for (b = a + 1; b < 4; b++)
				pair(4, a, b)->nccl = DE_PAIR_NCCL_OK;
		ok(de_pairs_nccl_blame(4, P, idx, 4, &sure) == 0, "NCCL blame: none failed, nobody");
		pair(4, 0, 2)->nccl = DE_PAIR_NCCL_FAIL;
		pair(4, 1, 2)->nccl = DE_PAIR_NCCL_FAIL;
		pair(4, 2, 3)->nccl = DE_PAIR_NCCL_FAIL;
		k = de_pairs_nccl_blame(4, P, idx, 4, &sure);
		ok(k == 1 && idx[0] == 2 && sure == 1, "NCCL blame: node 2 fails all its 3 pairs: node 2, sure");
		pair(4, 2, 3)->nccl = DE_PAIR_NCCL_OK;
		pair(4, 0, 2)->nccl = DE_PAIR_NCCL_OK;
		k = de_pairs_nccl_blame(4, P, idx, 4, &sure);
		ok(k == 2 && idx[0] == 1 && idx[1] == 2 && sure == 0, "NCCL blame: one failed pair 1-2: both ends, not sure");
		pair(4, 0, 2)->nccl = DE_PAIR_NCCL_NONE;
		pair(4, 2, 3)->nccl = DE_PAIR_NCCL_NONE;
		k = de_pairs_nccl_blame(4, P, idx, 4, &sure);
		ok(k == 2 && sure == 0, "NCCL blame: node 2's only measured pair failed: both ends, not sure (one pair proves nothing)");
		for (a = 0; a < 4; a++)
			for (b = a + 1; b < 4; b++)
				pair(4, a, b)->nccl = DE_PAIR_NCCL_FAIL;
		k = de_pairs_nccl_blame(4, P, idx, 4, &sure);
		ok(k == 4 && sure == 0, "NCCL blame: every pair failed: every node, not sure");
	}
	return tap_done();
}
