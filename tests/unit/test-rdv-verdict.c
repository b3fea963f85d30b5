/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rdv_verdict.c: what rank 0 concludes from the ranks' reports, case by
 * case, without a cluster. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdv_verdict.h"
#include "tap.h"

#define MAXW 1000

static struct de_rdv_rank R[MAXW];
static char host[MAXW][16];

/* world ranks, rank i on host "n<i/per>", all joined, all reported OK. */
static void all_ok(uint32_t world, uint32_t per)
{
	uint32_t i;

	memset(R, 0, sizeof(R));
	for (i = 0; i < world; i++) {
		snprintf(host[i], sizeof(host[i]), "n%u", i / per);
		R[i].joined = R[i].reported = 1;
		R[i].host = host[i];
		R[i].diag = DE_OK;
		R[i].text = "";
	}
}

static struct de_unreached_rec U[MAXW];

static void report(uint32_t i, enum de_diag d, const char *text)
{
	R[i].diag = d;
	R[i].text = text;
}

/* Rank i's probe failed to reach host "n<node>" (its first rank listed),
 * in the words text. */
static void probe(uint32_t i, enum de_diag d, const char *text, uint32_t node, uint32_t world)
{
	char name[16];
	uint32_t q;

	report(i, d, text);
	snprintf(name, sizeof(name), "n%u", node);
	for (q = 0; q < world; q++)
		if (strcmp(host[q], name) == 0)
			break;
	if (R[i].unreached == NULL)
		U[i].n = 0;
	U[i].rank[U[i].n++] = q;
	R[i].unreached = &U[i];
}

static int starts_with(const char *s, const char *head)
{
	return strncmp(s, head, strlen(head)) == 0;
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && strcmp(s + a - b, tail) == 0;
}

static void test_classes(void)
{
	ok(!de_rdv_ends_at_once(0, DE_D_PEER_REFUSED), "the probe waits for every report");
	ok(de_rdv_ends_at_once(1, DE_D_PEER_LOST), "a failed collective ends the job at once");
	ok(!de_rdv_ends_at_once(2, DE_OK), "a passed collective does not");

	ok(de_rdv_probe_together(DE_D_PEER_REFUSED) && de_rdv_probe_together(DE_D_PEER_TIMEOUT) &&
	   de_rdv_probe_together(DE_D_BULK_STALL), "refused, timeout, bulk stall: judged together");
	ok(!de_rdv_probe_together(DE_D_PEER_LOST) && !de_rdv_probe_together(DE_D_HOST_LOOPBACK) &&
	   !de_rdv_probe_together(DE_D_WRONG_RESULT) && !de_rdv_probe_together(DE_OK),
	   "peer lost, host loopback, wrong result: a rank's own verdict");

	ok(de_rdv_probe_goes_on(DE_D_PEER_REFUSED) && de_rdv_probe_goes_on(DE_D_PEER_TIMEOUT) &&
	   de_rdv_probe_goes_on(DE_D_BULK_STALL) && de_rdv_probe_goes_on(DE_D_PEER_LOST) &&
	   de_rdv_probe_goes_on(DE_D_WRONG_RESULT), "--pairs: the probe's network failures go on into the sweep");
	ok(!de_rdv_probe_goes_on(DE_D_HOST_LOOPBACK) && !de_rdv_probe_goes_on(DE_D_INTERNAL) &&
	   !de_rdv_probe_goes_on(DE_D_TIMEOUT), "--pairs: loopback, internal, timeout end the job");
}

static void test_probe_names(void)
{
	all_ok(12, 1);
	probe(0, DE_D_PEER_REFUSED, "n10 (10.0.0.10:4000) refused", 10, 12);
	probe(0, DE_D_PEER_TIMEOUT, "n1 (10.0.0.1:4000) timed out", 1, 12);
	ok(de_rdv_probe_names(R, 12, 0, "n10") && de_rdv_probe_names(R, 12, 0, "n1"),
	   "every host the record lists is named");
	ok(!de_rdv_probe_names(R, 12, 0, "n") && !de_rdv_probe_names(R, 12, 0, "n2"),
	   "a prefix of a host, a host not listed: not named");
	ok(!de_rdv_probe_names(R, 12, 1, "n1"), "a rank without a record names nobody");
	U[0].rank[2] = 99;
	U[0].n = 3;
	ok(!de_rdv_probe_names(R, 12, 0, "n99"), "a listed rank outside the world names nobody");
	U[0].n = 0;
	ok(!de_rdv_probe_names(R, 12, 0, "n10"), "an empty record names nobody");
}

static void test_phase(void)
{
	struct de_rdv_verdict v;

	all_ok(4, 1);
	ok(de_rdv_judge_phase(R, 4, 0, 4, &v) == 0, "probe, all passed: GO");
	ok(de_rdv_judge_phase(R, 4, 1, 4, &v) == 0, "collective, all passed: GO");

	report(2, DE_D_WRONG_RESULT, "3 wrong elements");
	report(3, DE_D_PEER_LOST, "lost");
	ok(de_rdv_judge_phase(R, 4, 1, 4, &v) == 1, "collective, two failed: a verdict");
	ok(v.diag == DE_D_WRONG_RESULT && v.rank == 2, "... the first failing rank by number");
	is_str(v.text, "rank 2 on n2: 3 wrong elements", "... in its words");

	all_ok(4, 1);
	probe(1, DE_D_PEER_REFUSED, "n3 (10.0.0.3:4000) refused", 3, 4);
	report(3, DE_D_HOST_LOOPBACK, "n3 resolves to 127.0.1.1");
	ok(de_rdv_judge_phase(R, 4, 0, 4, &v) == 1 && v.diag == DE_D_HOST_LOOPBACK && v.rank == 3,
	   "probe: a rank's own failure wins over an earlier probe failure");
	is_str(v.text, "rank 3 on n3: n3 resolves to 127.0.1.1", "... in its words");

	all_ok(4, 1);
	probe(1, DE_D_PEER_REFUSED, "n3 (10.0.0.3:4000) refused", 3, 4);
	ok(de_rdv_judge_phase(R, 4, 0, 4, &v) == 1 && v.diag == DE_D_PEER_REFUSED && v.rank == 0,
	   "probe: probe failures only are judged together, about rank 0");
	is_str(v.text, "data connections between nodes fail: n1 -> n3 (10.0.0.3:4000) refused",
	       "... one prober failing one node: the failing connections");

	de_rdv_rank_failed(&v, 7, "gpu7", DE_D_NCCL, "ncclCommInitRank: unhandled system error");
	ok(v.diag == DE_D_NCCL && v.rank == 7, "a rank's failure: its diagnosis, about it");
	is_str(v.text, "rank 7 on gpu7: ncclCommInitRank: unhandled system error", "... in its words");
}

static void test_probe(void)
{
	struct de_rdv_verdict v;
	const char *to3 = "n3 (10.0.0.3:4000) timed out";

	/* A host firewall on n3: every other node times out on it. */
	all_ok(4, 1);
	probe(0, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(1, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(2, DE_D_PEER_TIMEOUT, to3, 3, 4);
	de_rdv_judge_probe(R, 4, 4, &v);
	ok(v.diag == DE_D_PEER_TIMEOUT && v.rank == 0, "firewalled node: peer-timeout, about rank 0");
	is_str(v.text, "n3 accepts no new TCP connections on its data port from any other node (n0, n1, n2): "
	       "n0 -> n3 (10.0.0.3:4000) timed out; n1 -> n3 (10.0.0.3:4000) timed out; "
	       "n2 -> n3 (10.0.0.3:4000) timed out", "... names the node and who fails to reach it");

	/* The same with refusals: the diagnosis is refused. */
	all_ok(4, 1);
	probe(0, DE_D_PEER_REFUSED, "n3 (10.0.0.3:4000) refused", 3, 4);
	probe(1, DE_D_PEER_REFUSED, "n3 (10.0.0.3:4000) refused", 3, 4);
	probe(2, DE_D_PEER_REFUSED, "n3 (10.0.0.3:4000) refused", 3, 4);
	de_rdv_judge_probe(R, 4, 4, &v);
	ok(v.diag == DE_D_PEER_REFUSED && starts_with(v.text, "n3 accepts no new"),
	   "node everyone is refused by: peer-refused, named");

	/* One node less than all but one fails: not named. */
	all_ok(4, 1);
	probe(0, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(1, DE_D_PEER_REFUSED, "n2 (10.0.0.2:4000) refused", 2, 4);
	de_rdv_judge_probe(R, 4, 4, &v);
	ok(v.diag == DE_D_PEER_TIMEOUT, "a timeout among the failures: peer-timeout");
	is_str(v.text, "data connections between nodes fail: n0 -> n3 (10.0.0.3:4000) timed out; "
	       "n1 -> n2 (10.0.0.2:4000) refused", "no node that all others fail: the failing connections");

	/* Two nodes: the one failing the other cannot tell whose fault. */
	all_ok(2, 1);
	probe(0, DE_D_PEER_REFUSED, "n1 (10.0.0.1:4000) refused", 1, 2);
	probe(1, DE_D_PEER_REFUSED, "n0 (10.0.0.0:4000) refused", 0, 2);
	de_rdv_judge_probe(R, 2, 2, &v);
	ok(v.diag == DE_D_PEER_REFUSED &&
	   starts_with(v.text, "data connections between nodes fail: "),
	   "two nodes: never a node named (probers > 2)");

	/* Several ranks per node: only each node's first rank probes. */
	all_ok(8, 2);
	probe(0, DE_D_PEER_TIMEOUT, "n3 (10.0.0.3:4000) timed out", 3, 8);
	probe(2, DE_D_PEER_TIMEOUT, "n3 (10.0.0.3:4000) timed out", 3, 8);
	probe(4, DE_D_PEER_TIMEOUT, "n3 (10.0.0.3:4000) timed out", 3, 8);
	de_rdv_judge_probe(R, 8, 4, &v);
	ok(starts_with(v.text, "n3 accepts no new TCP connections on its data port from any other node "
		       "(n0, n1, n2): "), "two ranks a node: the node's probers count once");

	/* Small packets pass, large ones vanish. */
	all_ok(3, 1);
	probe(0, DE_D_BULK_STALL, "n1 (10.0.0.1:4000) stalled", 1, 3);
	probe(2, DE_D_BULK_STALL, "n1 (10.0.0.1:4000) stalled", 1, 3);
	de_rdv_judge_probe(R, 3, 3, &v);
	ok(v.diag == DE_D_BULK_STALL && v.rank == 0, "every failure a bulk stall: bulk-stall");
	is_str(v.text, "large transfers between nodes stall while the small probe passed: "
	       "n0 -> n1 (10.0.0.1:4000) stalled; n2 -> n1 (10.0.0.1:4000) stalled", "... with what each saw");
	probe(1, DE_D_PEER_REFUSED, "n0 (10.0.0.0:4000) refused", 0, 3);
	de_rdv_judge_probe(R, 3, 3, &v);
	ok(v.diag == DE_D_PEER_REFUSED, "a bulk stall and a refusal: not a bulk stall");
}

/* The ranks v blames, as "r1 r2 ... sure|unsure". */
static const char *blamed(const struct de_rdv_verdict *v)
{
	static char out[256];
	size_t off = 0;
	uint32_t i;

	out[0] = '\0';
	for (i = 0; i < v->nblame; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%u ", v->blame[i]);
	snprintf(out + off, sizeof(out) - off, "%s", v->nblame ? (v->blame_sure ? "sure" : "unsure") : "none");
	return out;
}

static void test_blame(void)
{
	struct de_rdv_verdict v;
	const char *to3 = "n3 (10.0.0.3:4000) timed out";
	struct de_rdv_job j = { 4, "a0", 29500, NULL, NULL };
	char *const expect[] = { "a0", "a1", "a2", "a3" };

	all_ok(4, 1);
	probe(0, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(1, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(2, DE_D_PEER_TIMEOUT, to3, 3, 4);
	de_rdv_judge_probe(R, 4, 4, &v);
	is_str(blamed(&v), "3 sure", "the node every other node fails to reach: blamed, sure");

	all_ok(4, 1);
	probe(0, DE_D_PEER_TIMEOUT, to3, 3, 4);
	probe(1, DE_D_PEER_REFUSED, "n2 (10.0.0.2:4000) refused", 2, 4);
	de_rdv_judge_probe(R, 4, 4, &v);
	is_str(blamed(&v), "0 3 1 2 unsure", "failing connections: both ends of each, not sure which");

	all_ok(3, 1);
	probe(0, DE_D_BULK_STALL, "n1 (10.0.0.1:4000) stalled", 1, 3);
	de_rdv_judge_probe(R, 3, 3, &v);
	is_str(blamed(&v), "0 1 unsure", "a bulk stall: both ends, not sure");

	de_rdv_rank_failed(&v, 2, "n2", DE_D_HOST_LOOPBACK, "n2 resolves to 127.0.1.1");
	is_str(blamed(&v), "2 sure", "a rank whose name is loopback: its node, sure");
	de_rdv_rank_failed(&v, 2, "n2", DE_D_NCCL_MISSING, "libnccl.so.2 not found");
	is_str(blamed(&v), "2 sure", "a rank without NCCL: its node, sure");
	de_rdv_rank_failed(&v, 2, "n2", DE_D_LOCAL_RANK, "LOCAL_RANK=RANK");
	is_str(blamed(&v), "none", "a wrong LOCAL_RANK: no node to blame");
	de_rdv_rank_failed(&v, 2, "n2", DE_D_WRONG_RESULT, "3 wrong");
	is_str(blamed(&v), "none", "a wrong sum: no node proven at fault");

	all_ok(4, 1);
	R[1].joined = R[3].joined = 0;
	de_rdv_blame_missing(&j, R, &v);
	is_str(blamed(&v), "none", "missing ranks, Slurm's placement unknown: nobody blamed");
	j.expect_host = expect;
	de_rdv_blame_missing(&j, R, &v);
	is_str(blamed(&v), "1 3 sure", "missing ranks where Slurm placed them: those, sure");
}

static void test_pairs_phase(void)
{
	struct de_rdv_verdict v;

	all_ok(4, 1);
	ok(de_rdv_judge_pairs_phase(R, 4, 0, &v) == 0, "--pairs, all passed: the sweep goes on");
	report(1, DE_D_PEER_TIMEOUT, "n3 (10.0.0.3:4000) timed out");
	report(2, DE_D_PEER_LOST, "n3 closed the bulk probe after 0 bytes");
	ok(de_rdv_judge_pairs_phase(R, 4, 0, &v) == 0, "--pairs, probe failures: the sweep goes on");
	report(3, DE_D_HOST_LOOPBACK, "n3 resolves to 127.0.1.1");
	ok(de_rdv_judge_pairs_phase(R, 4, 0, &v) == 1 && v.diag == DE_D_HOST_LOOPBACK && v.rank == 3,
	   "--pairs, a rank's own failure in the probe ends the job");
	is_str(v.text, "rank 3 on n3: n3 resolves to 127.0.1.1", "... in its words");
	all_ok(4, 1);
	report(2, DE_D_PEER_REFUSED, "refused");
	ok(de_rdv_judge_pairs_phase(R, 4, 1, &v) == 1 && v.rank == 2 && v.diag == DE_D_PEER_REFUSED,
	   "--pairs, any failure after the probe ends the job");
}

static void test_waiting(void)
{
	char *const expect[] = { "a0", "a1", NULL, "a3" };
	struct de_rdv_job j = { 4, "a0", 29500, expect, "a[0-3]" };
	char buf[1200], small[400];
	uint32_t i;

	is_str(de_rdv_expected_where(&j, 1, buf, sizeof(buf)), " (expected on a1)", "expected where Slurm placed it");
	is_str(de_rdv_expected_where(&j, 2, buf, sizeof(buf)), " (expected on one of a[0-3])",
	       "no host for that rank: the step's nodes");
	j.expect_host = NULL;
	j.nodelist = NULL;
	is_str(de_rdv_expected_where(&j, 2, buf, sizeof(buf)), "", "nothing known: nothing said");

	/* Gathering: 20 ranks, 0..3 joined. */
	j.world = 20;
	j.nodelist = "a[0-19]";
	all_ok(20, 1);
	for (i = 4; i < 20; i++)
		R[i].joined = R[i].reported = 0;
	ok(de_rdv_waiting_for(&j, R, 1, buf, sizeof(buf)) == 16, "gathering: 16 not joined");
	ok(starts_with(buf, "4 (expected on one of a[0-19]), 5 (expected on one of a[0-19]), "),
	   "... listed by number with where they are expected");
	ok(ends_with(buf, "15 (expected on one of a[0-19]), ... (4 more)"), "... the first 12, then how many more");
	/* A phase: who has not reported, with its host. */
	all_ok(20, 1);
	R[1].reported = R[5].reported = 0;
	ok(de_rdv_waiting_for(&j, R, 0, buf, sizeof(buf)) == 2, "phase: 2 not reported");
	is_str(buf, "1 (n1), 5 (n5)", "... with their hosts");
	all_ok(20, 1);
	ok(de_rdv_waiting_for(&j, R, 0, buf, sizeof(buf)) == 0 && buf[0] == '\0', "nobody awaited: empty");
	for (i = 0; i < 20; i++)
		R[i].reported = 0;
	ok(de_rdv_waiting_for(&j, R, 0, small, sizeof(small)) == 20 && strlen(small) < sizeof(small),
	   "a short buffer: all counted, what fits listed");
}

static void test_missing(void)
{
	struct de_rdv_job j = { 4, "a0", 29500, NULL, NULL };
	char *const expect[] = { "a0", "a1", "a2", "a3" };
	char out[768], tiny[80];
	const char *p;
	uint32_t i, shown = 0, more = 0;

	all_ok(4, 1);
	R[2].joined = 0;
	j.expect_host = expect;
	de_rdv_missing(&j, R, 12.34, 0, out, sizeof(out));
	is_str(out, "1 of 4 ranks never reached a0:29500 in 12.3 s: rank 2 (expected on a2)",
	       "one rank missing: named with where it was expected");
	R[3].joined = 0;
	de_rdv_missing(&j, R, 5, 1, out, sizeof(out));
	is_str(out, "2 of 4 ranks never reached a0:29500 in 5.0 s: ranks 2 (expected on a2), 3 (expected on a3)"
	       " (and connections were refused for authentication: see rank 0's log)",
	       "two missing, connections refused: ranks, and the note");

	/* 1000 missing: cut at a rank, the rest counted, within the message. */
	j.world = MAXW;
	j.expect_host = NULL;
	j.nodelist = "big[000-999]";
	memset(R, 0, sizeof(R));
	de_rdv_missing(&j, R, 60, 1, out, sizeof(out));
	ok(strlen(out) < sizeof(out), "1000 missing: the text fits (%zu bytes)", strlen(out));
	ok(starts_with(out, "1000 of 1000 ranks never reached a0:29500 in 60.0 s: "
		       "ranks 0 (expected on one of big[000-999]), "),
	   "... from rank 0");
	ok(ends_with(out, " more) (and connections were refused for authentication: see rank 0's log)"),
	   "... the note kept after the cut");
	p = strstr(out, ": ranks ") + 8;
	for (i = 0; p != NULL && *p; i++) {
		unsigned r;

		if (sscanf(p, "... (%u more)", &more) == 1)
			break;
		if (sscanf(p, "%u (expected on one of big[000-999])", &r) != 1 || r != i)
			break;
		shown++;
		p = strstr(p, "]), ");
		p = p != NULL ? p + 4 : NULL;
	}
	ok(shown > 0 && shown + more == MAXW, "... every item whole, in order: %u shown + %u more", shown, more);

	/* Too small for the header: the list alone. */
	j.nodelist = NULL;
	de_rdv_missing(&j, R, 1, 0, tiny, sizeof(tiny));
	ok(starts_with(tiny, "0, 1, 2") && ends_with(tiny, " more)") && strlen(tiny) < sizeof(tiny),
	   "a buffer too small for the header: the cut list alone");
}

int main(void)
{
	test_classes();
	test_probe_names();
	test_phase();
	test_probe();
	test_blame();
	test_pairs_phase();
	test_waiting();
	test_missing();
	return tap_done();
}
