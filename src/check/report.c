/* distenv-check's output, in one place: the checklist line per rank, the
 * failure line, rank 0's PASS line and the nccl-tests style bench table. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "auth.h"
#include "backend.h"
#include "report.h"

/* s as the inside of a JSON string (quotes, backslashes, controls). */
static void json_str(const char *s, char *out, size_t len)
{
	size_t j = 0;

	for (; *s && j + 2 < len; s++) {
		if (*s == '"' || *s == '\\')
			out[j++] = '\\';
		out[j++] = (char)((unsigned char)*s < 0x20 ? ' ' : *s);
	}
	out[j] = '\0';
}

static const char *backend_name(const struct de_check *c)
{
	return c->be != NULL ? c->be->name : "none";
}

void de_report_fail(const struct de_check *c, const struct de_fail *f)
{
	if (c->o.json) {
		char msg[sizeof(f->msg) * 2];

		json_str(f->msg, msg, sizeof(msg));
		printf("{\"rank\":%u,\"world\":%u,\"node\":\"%s\",\"ok\":false,"
		       "\"diagnosis\":\"%s\",\"message\":\"%s\",\"hint\":\"%s\"}\n",
		       c->id.rank, c->id.world, c->id.host, de_diag_name(f->diag), msg,
		       de_diag_hint(f->diag));
	} else if (c->id.world == 0) {
		/* No rank yet: the environment itself is the problem. */
		printf("distenv-check: FAIL %s: %s -- %s\n", de_diag_name(f->diag), f->msg,
		       de_diag_hint(f->diag));
	} else {
		printf("[rank %u/%u] node=%s FAIL %s: %s -- %s\n", c->id.rank, c->id.world,
		       c->id.host, de_diag_name(f->diag), f->msg, de_diag_hint(f->diag));
	}
	fflush(stdout);
}

void de_report_rank(const struct de_check *c, size_t count, int64_t got,
		    int64_t want, long wrong, char *line, size_t len)
{
	snprintf(line, len,
		 "[rank %u/%u] node=%s local_rank=%u/%u device=%s backend=%s allreduce=%" PRId64 " (expected %" PRId64 ") %s",
		 c->id.rank, c->id.world, c->id.host, c->id.local_rank, c->id.local_world, c->device,
		 backend_name(c), got, want, wrong == 0 ? "OK" : "WRONG");
	if (c->o.json)
		printf("{\"rank\":%u,\"world\":%u,\"node\":\"%s\",\"local_rank\":%u,"
		       "\"local_world_size\":%u,\"device\":\"%s\",\"backend\":\"%s\","
		       "\"dtype\":\"%s\",\"count\":%zu,\"allreduce\":%" PRId64 ",\"expected\":%" PRId64 ","
		       "\"wrong\":%ld,\"interface\":\"%s\",\"rendezvous_ms\":%.0f,\"ok\":%s}\n",
		       c->id.rank, c->id.world, c->id.host, c->id.local_rank, c->id.local_world,
		       c->device, backend_name(c), de_dtype_name(c->o.dtype), count, got, want,
		       wrong, c->net.iface, c->net.rdv_ms, wrong == 0 ? "true" : "false");
	else if (!c->o.quiet || wrong)
		printf("%s\n", line);
	fflush(stdout);
}

static void rank_ranges(const struct de_check *c, char *out, size_t len)
{
	uint32_t nodes = de_peers_nodes(&c->peers), j, n;
	size_t off = 0;

	out[0] = '\0';
	for (n = 0; n < nodes && off < len - 100; n++) {
		uint32_t cnt = 0, first = 0;

		for (j = 0; j < c->id.world; j++)
			if (c->peers.peer[j].node == n) {
				if (cnt++ == 0)
					first = j;
			}
		off += (size_t)snprintf(out + off, len - off, "%s%s: %u rank%s from %u",
					off ? ", " : "", c->peers.peer[first].host, cnt,
					cnt == 1 ? "" : "s", first);
	}
}

void de_report_pass(const struct de_check *c, size_t count)
{
	char ranges[1024];
	struct rusage ru;
	unsigned nodes = de_peers_nodes(&c->peers);

	if (c->o.json)
		return;
	getrusage(RUSAGE_SELF, &ru);
	rank_ranges(c, ranges, sizeof(ranges));
	printf("distenv-check: PASS: %u rank%s on %u node%s (%s); data interface %s (%s); "
	       "rendezvous %.0f ms (authentication: %s); allreduce of %zu %s verified on every rank; "
	       "rank 0 peak RSS %ld KiB\n",
	       c->id.world, c->id.world == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", ranges,
	       c->net.iface, c->net.iface_how, c->net.rdv_ms, de_auth_name(&c->auth), count,
	       de_dtype_name(c->o.dtype), ru.ru_maxrss);
}

void de_report_bench_row(const struct de_check *c, int first, size_t count,
			 double usec, long wrong)
{
	size_t esz = de_dtype_size(c->o.dtype);
	double algbw, busbw;
	unsigned nodes = de_peers_nodes(&c->peers);

	if (first) {
		printf("# distenv-check --bench: %u ranks, %u node%s, backend %s, %s, %d iters (+%d warm-up)\n",
		       c->id.world, nodes, nodes == 1 ? "" : "s", backend_name(c),
		       de_dtype_name(c->o.dtype), c->o.iters, c->o.warmup);
		printf("%12s %12s %8s %6s %12s %12s %12s %8s\n", "size", "count",
		       "type", "redop", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
	}
	algbw = usec > 0 ? (double)(count * esz) / usec / 1e3 : 0;
	busbw = algbw * 2.0 * (c->id.world - 1) / c->id.world;
	printf("%12zu %12zu %8s %6s %12.1f %12.3f %12.3f %8ld\n", count * esz,
	       count, de_dtype_name(c->o.dtype), "sum", usec, algbw, busbw, wrong);
	fflush(stdout);
}
