/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's output, in one place: the checklist line per rank, the
 * failure line, rank 0's PASS line and the nccl-tests style bench table. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "backend.h"
#include "hostlist.h"
#include "exclude.h"
#include "json.h"
#include "port.h"
#include "rdv_verdict.h"
#include "report.h"
#include "world.h"

static const char *backend_name(const struct de_check *c)
{
	return c->be != NULL ? c->be->name : "none";
}

/* The nodes the failure blames: rank 0's word, or this rank's own node
 * when the fault is its own and rank 0 never heard it (Slurm's name for
 * it where the task has it). 0 when none. */
static int fail_exclude(const struct de_check *c, const struct de_fail *f, char *hosts,
			size_t len, int *sure)
{
	const char *me = getenv("SLURMD_NODENAME");

	hosts[0] = '\0';
	*sure = 0;
	if (f->exclude[0] != '\0') {
		snprintf(hosts, len, "%s", f->exclude);
		*sure = f->exclude_sure;
	} else if (!f->from_rank0 && de_rdv_node_fault(f->diag) && !c->id.simulated) {
		if (me == NULL || *me == '\0')
			me = c->id.host;
		if (de_exclude_hosts(&me, 1, hosts, len))
			return 0;
		*sure = 1;
	}
	return hosts[0] != '\0';
}

void de_report_fail(const struct de_check *c, const struct de_fail *f)
{
	char hosts[sizeof(f->exclude)], hint[sizeof(f->exclude) * 2 + 96] = "", sep[8] = "";
	int sure, ex = fail_exclude(c, f, hosts, sizeof(hosts), &sure);

	if (ex) {
		de_exclude_hint(hosts, sure, hint, sizeof(hint));
		snprintf(sep, sizeof(sep), " -- ");
	}
	if (c->o.json) {
		char msg[sizeof(f->msg) * 2], xj[sizeof(hosts) * 2 + 64] = "null";

		char rank[16] = "null", world[16] = "null";

		/* A rank that could not read its RANK is no rank: null, not 0. */
		if (c->id.have_rank)
			snprintf(rank, sizeof(rank), "%u", c->id.rank);
		if (c->id.world != 0)
			snprintf(world, sizeof(world), "%u", c->id.world);
		if (ex) {
			char esc[sizeof(hosts) * 2];

			de_json_escape(hosts, esc, sizeof(esc));
			snprintf(xj, sizeof(xj), "\"%s\",\"exclude_sure\":%s", esc, sure ? "true" : "false");
		}
		de_json_escape(f->msg, msg, sizeof(msg));
		printf("{\"rank\":%s,\"world\":%s,\"node\":\"%s\",\"ok\":false,"
		       "\"diagnosis\":\"%s\",\"message\":\"%s\",\"hint\":\"%s\",\"exclude\":%s}\n",
		       rank, world, c->id.host, de_diag_name(f->diag), msg,
		       de_diag_hint(f->diag), xj);
	} else if (!c->id.have_rank) {
		/* No rank yet: the environment itself is the problem. */
		printf("distenv-check: node=%s FAIL %s: %s -- %s%s%s\n", c->id.host,
		       de_diag_name(f->diag), f->msg, de_diag_hint(f->diag), sep, hint);
	} else {
		printf("[rank %u/%u] node=%s FAIL %s: %s -- %s%s%s\n", c->id.rank, c->id.world,
		       c->id.host, de_diag_name(f->diag), f->msg, de_diag_hint(f->diag), sep, hint);
	}
	fflush(stdout);
}

/* Each node's name (its first rank's host), by node index (allocated;
 * NULL out of memory). */
static const char **node_names(const struct de_check *c, uint32_t nodes)
{
	const char **name = calloc(nodes ? nodes : 1, sizeof(*name));
	uint32_t i;

	for (i = 0; name != NULL && i < c->peers.world; i++) {
		const struct de_peer *p = &c->peers.peer[i];

		if (p->node < nodes && name[p->node] == NULL)
			name[p->node] = p->host;
	}
	return name;
}

/* What a passing check notes beside its verdict (never a failure): ranks
 * that are not one block per node, and a MASTER_PORT that rank 0's node
 * may hand to an outgoing connection. */
#define NOTES_MAX 2
struct check_notes {
	int blocks; /* 1: one block of ranks per node; -1: no peer table */
	size_t n;
	char text[NOTES_MAX][600];
};

static void check_notes(const struct de_check *c, struct check_notes *nt)
{
	uint32_t nodes = de_peers_nodes(&c->peers), i;
	uint32_t *node = calloc(c->peers.world ? c->peers.world : 1, sizeof(*node));
	const char **name = node_names(c, nodes);
	uint16_t lo, hi;
	char where[200];

	memset(nt, 0, sizeof(*nt));
	nt->blocks = -1;
	if (c->peers.world > 0 && node != NULL && name != NULL) {
		for (i = 0; i < c->peers.world; i++)
			node[i] = c->peers.peer[i].node;
		nt->blocks = de_world_blocks(node, c->peers.world, name, nodes, where, sizeof(where));
		if (!nt->blocks)
			snprintf(nt->text[nt->n++], sizeof(nt->text[0]),
				 "ranks are not one contiguous block per node as under torchrun (%s): groups of consecutive ranks (tensor or pipeline parallel) span nodes; srun -m block keeps each node's ranks together",
				 where);
	}
	free(node);
	free(name);
	if (c->id.rank == 0 && c->id.master_port != 0 &&
	    de_ephemeral_read(DE_EPHEMERAL_PATH, &lo, &hi, NULL) == 0 &&
	    c->id.master_port >= lo && c->id.master_port <= hi)
		snprintf(nt->text[nt->n++], sizeof(nt->text[0]),
			 "MASTER_PORT %u is inside %s's ephemeral ports %u-%u (net.ipv4.ip_local_port_range): an outgoing connection there may hold it the next time",
			 c->id.master_port, c->id.host, lo, hi);
}

void de_report_rank(const struct de_check *c, size_t count, int64_t got,
		    int64_t want, long wrong, char *line, size_t len)
{
	snprintf(line, len,
		 "[rank %u/%u] node=%s local_rank=%u/%u device=%s backend=%s allreduce=%" PRId64 " (expected %" PRId64 ") %s",
		 c->id.rank, c->id.world, c->id.host, c->id.local_rank, c->id.local_world, c->device,
		 backend_name(c), got, want, wrong == 0 ? "OK" : "WRONG");
	if (c->o.json) {
		struct check_notes nt;

		check_notes(c, &nt);
		printf("{\"rank\":%u,\"world\":%u,\"node\":\"%s\",\"local_rank\":%u,"
		       "\"local_world_size\":%u,\"device\":\"%s\",\"backend\":\"%s\","
		       "\"dtype\":\"%s\",\"count\":%zu,\"allreduce\":%" PRId64 ",\"expected\":%" PRId64 ","
		       "\"wrong\":%ld,\"interface\":\"%s\",\"rendezvous_ms\":%.0f,\"ranks_contiguous\":%s,\"ok\":%s}\n",
		       c->id.rank, c->id.world, c->id.host, c->id.local_rank, c->id.local_world,
		       c->device, backend_name(c), de_dtype_name(c->o.dtype), count, got, want,
		       wrong, c->net.iface, c->net.rdv_ms,
		       nt.blocks < 0 ? "null" : nt.blocks ? "true" : "false", wrong == 0 ? "true" : "false");
	} else if (!c->o.quiet || wrong)
		printf("%s\n", line);
	fflush(stdout);
}

/* The nodes of the peer table as one hostlist expression however many
 * there are, and the fewest and most ranks on one node. */
static void node_hostlist(const struct de_check *c, char *hl, size_t len, uint32_t *lo,
			  uint32_t *hi)
{
	uint32_t nodes = de_peers_nodes(&c->peers), i;
	uint32_t *per = calloc(nodes ? nodes : 1, sizeof(*per));
	const char **name = node_names(c, nodes);

	*lo = *hi = 0;
	if (per == NULL || name == NULL) {
		snprintf(hl, len, "(out of memory)");
		goto out;
	}
	for (i = 0; i < c->peers.world; i++)
		per[c->peers.peer[i].node]++;
	for (i = 0; i < nodes; i++) {
		*lo = i == 0 || per[i] < *lo ? per[i] : *lo;
		*hi = per[i] > *hi ? per[i] : *hi;
	}
	if (de_hostlist_compress(name, nodes, hl, len) < 0)
		snprintf(hl, len, "(out of memory)");
out:
	free(per);
	free(name);
}

/* "node[1-2], 2 per node" (or "1-3 per node"). */
static void node_summary(const struct de_check *c, char *out, size_t len)
{
	char hl[400];
	uint32_t lo, hi;

	node_hostlist(c, hl, sizeof(hl), &lo, &hi);
	if (lo == hi)
		snprintf(out, len, "%s, %u per node", hl, lo);
	else
		snprintf(out, len, "%s, %u-%u per node", hl, lo, hi);
}

void de_report_pass(const struct de_check *c, size_t count)
{
	char nodes_text[512];
	struct check_notes nt;
	struct rusage ru;
	unsigned nodes = de_peers_nodes(&c->peers);
	size_t i;

	if (c->o.json)
		return;
	getrusage(RUSAGE_SELF, &ru);
	node_summary(c, nodes_text, sizeof(nodes_text));
	check_notes(c, &nt);
	printf("distenv-check: PASS: %u rank%s on %u node%s %s; data interface %s (%s); "
	       "rendezvous %.0f ms (authentication: %s), node probe %.0f ms; allreduce of %zu %s "
	       "verified on every rank; rank 0 peak RSS %ld KiB",
	       c->id.world, c->id.world == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", nodes_text,
	       c->net.iface, c->net.iface_how, c->net.rdv_ms, de_auth_name(&c->auth),
	       c->net.probe_ms, count, de_dtype_name(c->o.dtype), ru.ru_maxrss);
	for (i = 0; i < nt.n; i++)
		printf("; note: %s", nt.text[i]);
	printf("\n");
}

/* nccl-tests' names for the table's type column. */
static const char *nccl_type_name(enum de_dtype t)
{
	switch (t) {
	case DE_F32: return "float";
	case DE_F64: return "double";
	case DE_I32: return "int32";
	case DE_I64: return "int64";
	}
	return "?";
}

void de_bench_row(const struct de_check *c, struct de_bench *b, size_t count,
		  double usec, long wrong)
{
	size_t esz = de_dtype_size(c->o.dtype);
	struct de_bench_row row, *r = &row;

	row.bytes = count * esz;
	row.count = count;
	row.usec = usec;
	row.algbw = usec > 0 ? (double)(count * esz) / usec / 1e3 : 0;
	/* nccl-tests' allreduce bus bandwidth: what each link carries. */
	row.busbw = row.algbw * 2.0 * (c->id.world - 1) / c->id.world;
	row.wrong = wrong;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		struct de_bench_row *g = realloc(b->row, cap * sizeof(*g));

		/* Out of memory: the row is printed, not kept for the average. */
		if (g != NULL) {
			b->row = g;
			b->cap = cap;
		}
	}
	if (b->n < b->cap)
		b->row[b->n++] = row;
	b->printed++;
	if (c->o.json)
		return;
	if (b->printed == 1) {
		char nodes_text[512];
		unsigned nodes = de_peers_nodes(&c->peers);

		node_summary(c, nodes_text, sizeof(nodes_text));
		printf("# distenv-check --bench: %u rank%s on %u node%s %s; backend %s; %s; "
		       "%d iters (+%d warm-up) per size; in-place\n",
		       c->id.world, c->id.world == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s",
		       nodes_text, backend_name(c), nccl_type_name(c->o.dtype), c->o.iters, c->o.warmup);
		printf("#\n");
		printf("# %10s %12s %8s %6s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop",
		       "root", "time", "algbw", "busbw", "#wrong");
		printf("# %10s %12s %8s %6s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "",
		       "", "(us)", "(GB/s)", "(GB/s)", "");
	}
	printf("  %10zu %12zu %8s %6s %6d %10.1f %8.3f %8.3f %7ld\n", r->bytes, r->count,
	       nccl_type_name(c->o.dtype), "sum", -1, r->usec, r->algbw, r->busbw, r->wrong);
	fflush(stdout);
}

void de_bench_end(const struct de_check *c, struct de_bench *b)
{
	double sum = 0;
	long wrong = 0;
	size_t i;

	for (i = 0; i < b->n; i++) {
		sum += b->row[i].busbw;
		wrong += b->row[i].wrong;
	}
	if (!c->o.json) {
		printf("# Wrong values: %ld %s\n", wrong, wrong ? "FAIL" : "OK");
		printf("# Avg bus bandwidth    : %.3f \n", b->n ? sum / (double)b->n : 0.0);
		printf("#\n");
	} else {
		printf("{\"bench\":{\"ranks\":%u,\"nodes\":%u,\"backend\":\"%s\",\"dtype\":\"%s\","
		       "\"redop\":\"sum\",\"in_place\":true,\"iters\":%d,\"warmup\":%d,\"results\":[",
		       c->id.world, de_peers_nodes(&c->peers), backend_name(c),
		       de_dtype_name(c->o.dtype), c->o.iters, c->o.warmup);
		for (i = 0; i < b->n; i++)
			printf("%s{\"size\":%zu,\"count\":%zu,\"time_us\":%.3f,\"algbw\":%.6f,"
			       "\"busbw\":%.6f,\"wrong\":%ld}", i ? "," : "", b->row[i].bytes,
			       b->row[i].count, b->row[i].usec, b->row[i].algbw, b->row[i].busbw,
			       b->row[i].wrong);
		printf("],\"avg_busbw\":%.6f,\"wrong\":%ld}}\n", b->n ? sum / (double)b->n : 0.0, wrong);
	}
	fflush(stdout);
}

int de_report_summary_ready(const char *path, struct de_err *err)
{
	char tmp[4096];
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return de_errf(err, "--json-summary %s: is a folder: expected a file name", path);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return de_errf(err, "--json-summary %s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return de_errf(err, "--json-summary %s: cannot write a file there: %s", path, strerror(errno));
	close(fd);
	unlink(tmp);
	return 0;
}

int de_report_summary(const struct de_check *c, const char *path, const struct de_fail *f,
		      size_t count, double elapsed_ms, struct de_err *err)
{
	char tmp[4096], msg[sizeof(f->msg) * 2], hl[512] = "", note[sizeof(((struct check_notes *)0)->text[0]) * 2];
	char hosts[sizeof(f->exclude)] = "", esc[sizeof(f->exclude) * 2] = "";
	int sure = 0, ex = f != NULL && fail_exclude(c, f, hosts, sizeof(hosts), &sure);
	uint32_t lo = 0, hi = 0;
	int ok = f == NULL || f->diag == DE_OK;
	struct check_notes nt;
	size_t i;
	FILE *fp;
	int rc;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return de_errf(err, "--json-summary %s: path too long", path);
	fp = fopen(tmp, "w");
	if (fp == NULL)
		return de_errf(err, "--json-summary %s: cannot write %s: %s", path, tmp, strerror(errno));
	if (c->peers.world > 0)
		node_hostlist(c, hl, sizeof(hl), &lo, &hi);
	check_notes(c, &nt);
	if (ex)
		de_json_escape(hosts, esc, sizeof(esc));
	de_json_escape(ok ? "" : f->msg, msg, sizeof(msg));
	fprintf(fp, "{\"ok\":%s,\"diagnosis\":%s%s%s,\"message\":\"%s\",\"hint\":\"%s\","
		"\"ranks\":%u,\"nodes\":%u,\"node_list\":\"%s\",\"ranks_per_node\":[%u,%u],\"mode\":\"%s\",\"backend\":\"%s\","
		"\"dtype\":\"%s\",\"count\":%zu,\"rendezvous_ms\":%.0f,\"probe_ms\":%.0f,"
		"\"connect_ms\":%.0f,\"check_ms\":%.0f,\"elapsed_ms\":%.0f,\"ranks_contiguous\":%s,"
		"\"exclude\":%s%s%s,\"exclude_sure\":%s,\"notes\":[",
		ok ? "true" : "false", ok ? "" : "\"", ok ? "null" : de_diag_name(f->diag),
		ok ? "" : "\"", msg, ok ? "" : de_diag_hint(f->diag), c->id.world,
		de_peers_nodes(&c->peers), hl, lo, hi, c->o.bench ? "bench" : "check", backend_name(c),
		de_dtype_name(c->o.dtype), c->o.bench ? 0 : count, c->net.rdv_ms, c->net.probe_ms,
		c->net.connect_ms, c->net.check_ms, elapsed_ms,
		nt.blocks < 0 ? "null" : nt.blocks ? "true" : "false",
		ex ? "\"" : "", ex ? esc : "null", ex ? "\"" : "", ex && sure ? "true" : "false");
	for (i = 0; i < nt.n; i++) {
		de_json_escape(nt.text[i], note, sizeof(note));
		fprintf(fp, "%s\"%s\"", i ? "," : "", note);
	}
	fprintf(fp, "]}\n");
	rc = ferror(fp) ? (errno ? errno : EIO) : 0;
	/* Whole or not at all: CI reads this file. */
	if (fclose(fp) != 0 || rc) {
		rc = rc ? rc : errno;
		unlink(tmp);
		return de_errf(err, "--json-summary %s: writing %s failed: %s", path, tmp, strerror(rc));
	}
	if (rename(tmp, path) != 0) {
		rc = errno;
		unlink(tmp);
		return de_errf(err, "--json-summary %s: %s", path, strerror(rc));
	}
	return 0;
}
