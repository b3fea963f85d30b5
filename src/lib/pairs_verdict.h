/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's verdict: culprits, not numbers. Pure.
 *
 * From every pair's figures (and the retest of the nodes of failed
 * pairs) rank 0 names: a failing node (its retest against a known-good
 * node failed too, or, with nobody to retest against, every pair of it
 * failed), a failing link (a pair that failed while both its nodes pass
 * elsewhere), a slow node (all its pairs below threshold x the median
 * pair) and a slow link (a pair below threshold x median whose nodes are
 * not slow). Relative to the median, never absolute: a cluster of slow
 * NICs is not slow to itself. */
#ifndef DISTENV_PAIRS_VERDICT_H
#define DISTENV_PAIRS_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "err.h"

/* One pair's figures, a < b (pairs_plan.h's index). */
struct de_pair_result {
	uint32_t a, b;
	int measured;        /* its report arrived */
	enum de_diag diag;   /* DE_OK, or why it failed */
	double bw_ab, bw_ba; /* bytes per second, each direction (0 when failed) */
	double rtt_us;       /* small-message round trip, median */
	char why[200];       /* the failure, one phrase */
	/* The pair's 2-rank NCCL allreduce (pairs_nccl.c), in the same round:
	 * enum de_pair_nccl (proto.h: not measured, ok, failed). */
	int nccl;
	enum de_diag nccl_diag;
	double nccl_bw;      /* bytes per second (algbw) */
	char nccl_why[200];
};

/* A retest: node against with; diag DE_OK when it passed. */
struct de_pair_retest {
	uint32_t node, with;
	int done;
	enum de_diag diag;
	double bw;
};

enum de_finding_kind {
	DE_FIND_NODE_FAIL, /* a node: its pairs fail, and so did its retest */
	DE_FIND_LINK_FAIL, /* a pair failed; both nodes pass elsewhere */
	DE_FIND_SLOW_NODE,
	DE_FIND_SLOW_LINK,
};

struct de_finding {
	enum de_finding_kind kind;
	uint32_t a, b;      /* the node (a), or the pair (a < b) */
	enum de_diag diag;  /* failures: the diagnosis (the most common one of a node's) */
	uint32_t count;     /* a node's failed or slow pairs */
	double bw, ratio;   /* slow: its (best) pair bandwidth and bw / median */
	uint32_t with;      /* failures: the node it was retested against, or DE_PAIR_NONE */
};

struct de_pairs_verdict {
	double median_bw;      /* of the measured pairs' min(bw_ab, bw_ba) */
	double median_rtt_us;
	uint32_t failed_pairs, measured_pairs;
	struct de_finding *find; /* the caller frees it (de_pairs_verdict_free) */
	size_t nfind;
	int ok;                /* no pair failed, no outlier */
};

/* A pair's figure for comparisons: the slower direction. */
double de_pair_bw(const struct de_pair_result *p);
/* Median of v (n values, reordered); 0 for n == 0. */
double de_median(double *v, size_t n);

/* n nodes, pairs[de_pair_index(n,a,b)], retests (any order, nretest of
 * them), threshold in (0, 1): fills v. -1 with err on bad input. */
int de_pairs_judge(uint32_t n, const struct de_pair_result *pairs,
		   const struct de_pair_retest *retest, size_t nretest,
		   double threshold, struct de_pairs_verdict *v, struct de_err *err);
void de_pairs_verdict_free(struct de_pairs_verdict *v);

/* The NCCL pairs of a sweep, in sum: measured (ok or failed), failed,
 * and the median bandwidth of those that passed. NCCL's figures are
 * reported, not judged as outliers: a failure is the finding. */
struct de_pairs_nccl_sum {
	size_t measured, failed, skipped;
	size_t untried; /* of the skipped: not tried because the TCP pair failed */
	double median_bw;
};
/* n nodes' pairs (de_pairs_count(n) of them): fills s; -1 with err when
 * out of memory or a pair's nccl field is not an enum de_pair_nccl. */
int de_pairs_nccl_summary(uint32_t n, const struct de_pair_result *pairs,
			  struct de_pairs_nccl_sum *s, struct de_err *err);

/* The nodes v blames, for the resubmit hint (exclude.h): failing and
 * slow nodes, sure; when there are none, the nodes of the failing or slow
 * links, whose culprit the retest did not isolate, not sure. Indices into
 * out (cap of them, each once); returns how many. */
size_t de_pairs_blame(const struct de_pairs_verdict *v, uint32_t *out, size_t cap, int *sure);

/* The nodes the failed NCCL pairs blame, as de_pairs_blame does for TCP:
 * a node whose every measured NCCL pair failed (at least 2 of them, while
 * some other pair passed) is sure; when there is none, both ends of each
 * failed NCCL pair, not sure. Nodes in out (cap, each once); how many. */
size_t de_pairs_nccl_blame(uint32_t n, const struct de_pair_result *pairs, uint32_t *out, size_t cap,
			   int *sure);

/* Is node x named (failing or slow) by v? For the matrix's marks. */
int de_pairs_node_named(const struct de_pairs_verdict *v, uint32_t x);
/* Is pair {a,b} named as a failing or slow link, or failed at all? */
int de_pairs_pair_named(const struct de_pairs_verdict *v, const struct de_pair_result *p);

/* What the verdict proves of one node, for an admin who acts on it (the
 * sweep template's DRAIN and RESUME): FAULT when a finding names the
 * node itself (a failing node: its retest failed too, or all its pairs
 * with none to retest against; or a slow node), LOOK when it is only in
 * a failing or slow link (the sweep could not isolate the culprit: it
 * proves neither node bad), PASS when no finding names it. */
enum de_node_verdict { DE_NODE_PASS, DE_NODE_FAULT, DE_NODE_LOOK };
/* *idx: the finding that decided (a node finding before a link one);
 * v->nfind for a pass. */
enum de_node_verdict de_pairs_node_verdict(const struct de_pairs_verdict *v, uint32_t x, size_t *idx);
/* Is host an end of a failure in the node probe's text that no proven
 * bad node explains? The text is "; "-separated entries "R -> T (addr)
 * what, T2 (addr) what" (R reported, T it could not reach); a failure
 * R-T is explained when R or T is among the nfault names in fault (the
 * sweep isolated it). Whole names only: node1 is not node12. */
int de_pairs_probe_suspect(const char *probe, const char *host, const char *const *fault, size_t nfault);

#endif
