/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exclude.h"
#include "json.h"
#include "pairs.h"
#include "pairs_report.h"
#include "parse.h"
#include "prom.h"

static const char *name(const struct de_check *c, uint32_t x)
{
	return c->peers.peer[c->pairs->leader[x]].host;
}

static const struct de_pair_result *res(const struct de_check *c, uint32_t a, uint32_t b)
{
	return &c->pairs->res[de_pair_index(c->pairs->n, a, b)];
}

static int failed(const struct de_pair_result *p)
{
	return !p->measured || p->diag != DE_OK;
}

static enum de_diag diag_of(const struct de_pair_result *p)
{
	return p->measured ? p->diag : DE_D_TIMEOUT;
}

/* Row -> column: the directed figure. */
static double directed_bw(const struct de_check *c, uint32_t from, uint32_t to)
{
	const struct de_pair_result *p = res(c, from, to);

	return from < to ? p->bw_ab : p->bw_ba;
}

static void finding_line(const struct de_check *c, const struct de_finding *f)
{
	const struct de_pairs_state *s = c->pairs;
	char with[300] = "";

	switch (f->kind) {
	case DE_FIND_NODE_FAIL:
		if (f->with != DE_PAIR_NONE)
			snprintf(with, sizeof(with), "; its retest against %s failed too", name(c, f->with));
		printf("FAIL node %s: %u of %u pairs fail: %s%s: %s\n", name(c, f->a), f->count, s->n - 1,
		       de_diag_name(f->diag), with, de_diag_hint(f->diag));
		break;
	case DE_FIND_LINK_FAIL: {
		const struct de_pair_result *p = res(c, f->a, f->b);

		if (f->with != DE_PAIR_NONE)
			snprintf(with, sizeof(with), "; retested against %s", name(c, f->with));
		printf("FAIL pair %s-%s: %s: %s (both nodes pass with the others%s): %s\n", name(c, f->a),
		       name(c, f->b), de_diag_name(f->diag), p->measured ? p->why : "no report",
		       with, de_diag_hint(f->diag));
		break;
	}
	case DE_FIND_SLOW_NODE:
		printf("SLOW node %s: all %u of its pairs below %.2g x the median pair (its best %.2f GB/s, %.2f x)\n",
		       name(c, f->a), f->count, c->o.pair_threshold, f->bw / 1e9, f->ratio);
		break;
	case DE_FIND_SLOW_LINK:
		printf("SLOW link %s-%s: %.2f GB/s, %.2f x the median pair (%.2f GB/s); both nodes fine with the others\n",
		       name(c, f->a), name(c, f->b), f->bw / 1e9, f->ratio, s->v.median_bw / 1e9);
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
		printf(" %7.7s", name(c, j));
	printf("\n");
}

static void row_head(const struct de_check *c, uint32_t i)
{
	printf("%-12.12s %c", name(c, i), de_pairs_node_named(&c->pairs->v, i) ? '*' : ' ');
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
			else if (failed(res(c, i, j)))
				printf(" %7s", "FAIL");
			else
				printf(" %7.2f", directed_bw(c, i, j) / 1e9);
		}
		printf("\n");
	}
	col_heads(c, "latency us, round trip of 16 bytes");
	for (i = 0; i < s->n; i++) {
		row_head(c, i);
		for (j = 0; j < s->n; j++) {
			const struct de_pair_result *p = i == j ? NULL : res(c, i, j);

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
	if (failed(x) != failed(y))
		return failed(x);
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

		if (failed(p))
			printf("%3zu. %s-%s FAIL %s: %s\n", i + 1, name(c, p->a), name(c, p->b),
			       de_diag_name(diag_of(p)), p->measured ? p->why : "no report");
		else
			printf("%3zu. %s-%s %.2f GB/s (%.2f -> / %.2f <-), %.0f us\n", i + 1, name(c, p->a),
			       name(c, p->b), de_pair_bw(p) / 1e9, p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
	}
	free(top);
}

/* The resubmit hint's hosts (exclude.h), "" when the sweep blames none. */
static int pairs_exclude(const struct de_check *c, char *hosts, size_t len, int *sure)
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
		for (i = 0; i < n; i++)
			nm[i] = name(c, idx[i]);
		rc = n > 0 ? de_exclude_hosts(nm, n, hosts, len) : -1;
	}
	free(idx);
	free(nm);
	return rc == 0;
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
	printf("NCCL pairs: skipped: %s\n", s->nccl_skip);
	if (s->probe[0] != '\0')
		printf("FAIL probe: %s\n", s->probe);
	for (i = 0; i < s->v.nfind; i++)
		finding_line(c, &s->v.find[i]);
	if (s->v.ok && s->probe[0] == '\0')
		printf("PASS pairs: %zu pair%s of %u nodes, none failed, no outlier (median %.2f GB/s, %.0f us; threshold %.2g x the median)\n",
		       de_pairs_count(s->n), de_pairs_count(s->n) == 1 ? "" : "s", s->n, s->v.median_bw / 1e9,
		       s->v.median_rtt_us, c->o.pair_threshold);
	else {
		hint[0] = '\0';
		if (pairs_exclude(c, hosts, sizeof(hosts), &sure)) {
			snprintf(hint, sizeof(hint), " -- ");
			de_exclude_hint(hosts, sure, hint + 4, sizeof(hint) - 4);
		}
		printf("FAIL pairs: %u of %zu pairs failed, %zu finding%s (median %.2f GB/s, %.0f us)%s\n",
		       s->v.failed_pairs, de_pairs_count(s->n), s->v.nfind, s->v.nfind == 1 ? "" : "s",
		       s->v.median_bw / 1e9, s->v.median_rtt_us, hint);
	}
	if (s->n <= DE_PAIRS_MATRIX_MAX && s->n >= 2)
		matrices(c);
	worst(c);
}

/* ------------------------------------------------------------ files */

static const char *kind_name(enum de_finding_kind k)
{
	static const char *const n[] = { "failing-node", "failing-link", "slow-node", "slow-link" };

	return n[k];
}

/* gnuplot: $DISTENV_GNUPLOT, else the first gnuplot in PATH. A
 * DISTENV_GNUPLOT that is empty or not an executable is named as such
 * (it is the user's choice, not a missing gnuplot). */
static int find_gnuplot(char *out, size_t len, struct de_err *err)
{
	const char *env = getenv("DISTENV_GNUPLOT"), *path = getenv("PATH");
	char dirs[4096], *d, *save = NULL;

	if (de_env_str("DISTENV_GNUPLOT", env, "the path of gnuplot", err))
		return -1;
	if (env != NULL) {
		snprintf(out, len, "%s", env);
		if (access(out, X_OK) != 0)
			return de_errf(err, "DISTENV_GNUPLOT=\"%s\": not an executable file (%s): pairs.png is drawn by gnuplot; "
				       "point DISTENV_GNUPLOT at it, or unset it to use the gnuplot in PATH",
				       env, strerror(errno));
		return 0;
	}
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/gnuplot", *d ? d : ".");
		if (access(out, X_OK) == 0)
			return 0;
	}
	return de_errf(err, "--pairs-out: pairs.png is drawn by gnuplot, and no gnuplot is on this node "
		       "(not in PATH): install it (Debian/Ubuntu: apt-get install gnuplot-nox) or set DISTENV_GNUPLOT");
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
	return find_gnuplot(gp, sizeof(gp), err);
}

unsigned de_pairs_png_size(unsigned n)
{
	unsigned s = 200 + 40 * n;

	return s < 640 ? 640 : s > 4000 ? 4000 : s;
}

/* path.tmp written by fill, then renamed onto path: readers never see
 * half a file. */
static int write_whole(const char *dir, const char *file,
		       int (*fill)(const struct de_check *, FILE *), const struct de_check *c,
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
		de_json_put(fp, name(c, x));
	}
	fprintf(fp, "],\n  \"rounds\": %u,\n  \"retest_rounds\": %u,\n  \"pair_bytes\": %zu,\n"
		    "  \"threshold\": %g,\n  \"median_gbps\": %.6g,\n  \"median_rtt_us\": %.6g,\n"
		    "  \"seconds\": %.3f,\n  \"nccl\": {\"skipped\": ",
		s->rounds, s->rt_rounds, c->o.pair_bytes, c->o.pair_threshold, s->v.median_bw / 1e9,
		s->v.median_rtt_us, s->sweep_ms / 1000.0);
	de_json_put(fp, s->nccl_skip);
	fprintf(fp, "},\n  \"probe\": ");
	de_json_put(fp, s->probe);
	fprintf(fp, ",\n  \"pairs\": [\n");
	for (i = 0; i < np; i++) {
		const struct de_pair_result *p = &s->res[i];

		fprintf(fp, "    {\"a\": ");
		de_json_put(fp, name(c, p->a));
		fprintf(fp, ", \"b\": ");
		de_json_put(fp, name(c, p->b));
		fprintf(fp, ", \"status\": \"%s\", \"diagnosis\": \"%s\", \"gbps_ab\": %.6g, \"gbps_ba\": %.6g, "
			    "\"rtt_us\": %.6g, \"why\": ",
			failed(p) ? "fail" : "ok", failed(p) ? de_diag_name(diag_of(p)) : "ok",
			p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
		de_json_put(fp, p->measured ? p->why : "no report");
		fprintf(fp, "}%s\n", i + 1 < np ? "," : "");
	}
	fprintf(fp, "  ],\n  \"retests\": [");
	for (i = 0; i < s->njobs; i++) {
		fprintf(fp, "%s{\"node\": ", i ? ", " : "");
		de_json_put(fp, name(c, s->rt[i].node));
		fprintf(fp, ", \"with\": ");
		de_json_put(fp, name(c, s->rt[i].with));
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
			de_json_put(fp, name(c, f->a));
			fputs(", ", fp);
			de_json_put(fp, name(c, f->b));
			fputc(']', fp);
		} else {
			de_json_put(fp, name(c, f->a));
		}
		if (f->kind == DE_FIND_NODE_FAIL || f->kind == DE_FIND_LINK_FAIL)
			fprintf(fp, ", \"diagnosis\": \"%s\"", de_diag_name(f->diag));
		else
			fprintf(fp, ", \"gbps\": %.6g, \"ratio\": %.4g", f->bw / 1e9, f->ratio);
		fprintf(fp, ", \"pairs\": %u}", f->count);
	}
	fprintf(fp, "%s],\n  \"exclude\": ", s->v.nfind ? "\n  " : "");
	if (pairs_exclude(c, hosts, sizeof(hosts), &sure)) {
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

		fprintf(fp, "%s,%s,%s,%s,%.6g,%.6g,%.6g\n", name(c, p->a), name(c, p->b),
			failed(p) ? "fail" : "ok", failed(p) ? de_diag_name(diag_of(p)) : "ok",
			p->bw_ab / 1e9, p->bw_ba / 1e9, p->rtt_us);
	}
	return 0;
}

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
	const char *l[] = { "src", name(c, src), "dst", name(c, dst) };

	de_prom_sample(fp, metric, l, 2, v);
}

static void put_node(FILE *fp, const struct de_check *c, const char *metric, uint32_t x, double v)
{
	const char *l[] = { "node", name(c, x) };

	de_prom_sample(fp, metric, l, 1, v);
}

/* For node_exporter's textfile collector; the admin guide's "Pair matrix"
 * lists the metrics. Undirected figures once per pair, src/dst being
 * pairs.csv's a/b; bandwidth per direction; a failed pair has no
 * bandwidth sample, only distenv_pair_failed 1. */
static int fill_prom(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	size_t i, np = de_pairs_count(s->n);
	const struct de_pair_result *p;
	uint32_t x;

	de_prom_family(fp, "distenv_pair_bandwidth_bytes_per_second", "gauge",
		       "distenv-check --pairs: bytes per second from src to dst, the best of up to 3 transfers");
	for (i = 0, p = s->res; i < np; i++, p++)
		if (!failed(p)) {
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
		put_pair(fp, c, "distenv_pair_failed", p->a, p->b, failed(p));
	de_prom_family(fp, "distenv_pair_slow", "gauge",
		       "distenv-check --pairs: 1 when src-dst was named a slow link");
	for (i = 0, p = s->res; i < np; i++, p++)
		put_pair(fp, c, "distenv_pair_slow", p->a, p->b, found(&s->v, DE_FIND_SLOW_LINK, p->a, p->b));
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
		       "distenv-check --pairs: 1 when no pair or probe failed and nothing was named");
	de_prom_sample(fp, "distenv_sweep_ok", NULL, 0, s->v.ok && s->probe[0] == '\0');
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

/* The matrix for gnuplot: row -> column GB/s, NaN on the diagonal and
 * for failed pairs (left blank, labelled FAIL). */
static int fill_dat(const struct de_check *c, FILE *fp)
{
	uint32_t i, j, n = c->pairs->n;

	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			if (i == j || failed(res(c, i, j)))
				fprintf(fp, "%sNaN", j ? " " : "");
			else
				fprintf(fp, "%s%.6g", j ? " " : "", directed_bw(c, i, j) / 1e9);
		}
		fputc('\n', fp);
	}
	return 0;
}

static const char *png_dir;

static void gp_label(FILE *fp, const struct de_check *c, uint32_t x)
{
	const char *mark = "";
	size_t i;

	for (i = 0; i < c->pairs->v.nfind; i++) {
		const struct de_finding *f = &c->pairs->v.find[i];

		if (f->a == x && f->kind == DE_FIND_NODE_FAIL)
			mark = " (FAIL)";
		else if (f->a == x && f->kind == DE_FIND_SLOW_NODE && !*mark)
			mark = " (SLOW)";
	}
	fprintf(fp, "\"%s%s\" %u", name(c, x), mark, x);
}

static int fill_gp(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	unsigned size = de_pairs_png_size(s->n);
	uint32_t i, j;

	fprintf(fp, "set terminal pngcairo size %u,%u font 'sans,10'\n", size, size);
	fprintf(fp, "set output '%s/.pairs.png.tmp'\n", png_dir);
	fprintf(fp, "set title 'distenv pair bandwidth, GB/s, row -> column (median %.2f)'\n",
		s->v.median_bw / 1e9);
	fprintf(fp, "unset key\nset size square\nset xrange [-0.5:%u.5]\nset yrange [%u.5:-0.5]\n",
		s->n - 1, s->n - 1);
	fprintf(fp, "set cbrange [0:*]\nset cblabel 'GB/s'\nset palette defined (0 '#b2182b', 0.5 '#fee08b', 1 '#1a9850')\n");
	fprintf(fp, "set xtics rotate by 45 right (");
	for (i = 0; i < s->n; i++) {
		fputs(i ? ", " : "", fp);
		gp_label(fp, c, i);
	}
	fprintf(fp, ")\nset ytics (");
	for (i = 0; i < s->n; i++) {
		fputs(i ? ", " : "", fp);
		gp_label(fp, c, i);
	}
	fprintf(fp, ")\n");
	for (i = 0; i < s->n; i++)
		for (j = 0; j < s->n; j++) {
			const struct de_pair_result *p = i == j ? NULL : res(c, i, j);

			if (p != NULL && failed(p))
				fprintf(fp, "set label 'FAIL' at %u,%u center front tc rgb 'black'\n", j, i);
			else if (p != NULL && de_pairs_pair_named(&s->v, p))
				fprintf(fp, "set label '!' at %u,%u center front tc rgb 'black'\n", j, i);
		}
	fprintf(fp, "set object 1 rect from graph 0,0 to graph 1,1 back fc rgb '#dddddd' fs solid\n");
	fprintf(fp, "plot '%s/.pairs.dat' matrix with image\n", png_dir);
	return 0;
}

static int draw_png(const struct de_check *c, struct de_err *err)
{
	const char *dir = c->o.pairs_out;
	char gp[4200], dat[4300], script[4300], out[4300], png[4300], logp[4300], why[300] = "";
	FILE *lf;
	pid_t pid;
	int st = 0;

	if (find_gnuplot(gp, sizeof(gp), err))
		return -1;
	png_dir = dir;
	snprintf(dat, sizeof(dat), "%s/.pairs.dat", dir);
	snprintf(script, sizeof(script), "%s/.pairs.gp", dir);
	snprintf(out, sizeof(out), "%s/.pairs.png.tmp", dir);
	snprintf(png, sizeof(png), "%s/pairs.png", dir);
	snprintf(logp, sizeof(logp), "%s/.pairs.gp.log", dir);
	/* gnuplot's input, hidden and removed after it ran. */
	if (write_whole(dir, ".pairs.dat", fill_dat, c, err))
		return -1;
	if (write_whole(dir, ".pairs.gp", fill_gp, c, err)) {
		unlink(dat);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Its remarks (e.g. on the blank diagonal) are not ours to print;
		 * its errors are kept in .pairs.gp.log for the failure below. */
		int devnull = open("/dev/null", O_WRONLY);
		int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (devnull >= 0)
			dup2(devnull, 1);
		if (log >= 0)
			dup2(log, 2);
		execl(gp, gp, script, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if ((lf = fopen(logp, "r")) != NULL) {
			while (fgets(why, sizeof(why), lf) != NULL && strstr(why, "warning") != NULL)
				;
			fclose(lf);
			why[strcspn(why, "\n")] = '\0';
		}
		unlink(out);
		unlink(dat);
		unlink(script);
		unlink(logp);
		return de_errf(err, "--pairs-out: %s failed (exit status %d%s%s): pairs.png not written", gp,
			       WIFEXITED(st) ? WEXITSTATUS(st) : -1, why[0] ? ": " : "", why);
	}
	unlink(dat);
	unlink(script);
	unlink(logp);
	if (rename(out, png) != 0)
		return de_errf(err, "--pairs-out: cannot rename %s to %s: %s", out, png, strerror(errno));
	return 0;
}

/* pairs.nodes: what the sweep proves of each node, for the sweep
 * template's DRAIN and RESUME (compute nodes may have no JSON reader):
 * NODE<TAB>fault|look|pass<TAB>why, one line a node, in rank order.
 * fault: the sweep isolated the node (failing or slow node); look: it is
 * in a failing or slow link whose culprit was not isolated, or in a
 * failure of the node probe that no faulty node explains; pass: neither. */
static void node_why(const struct de_check *c, const struct de_finding *f, char *out, size_t len)
{
	const struct de_pairs_state *s = c->pairs;

	switch (f->kind) {
	case DE_FIND_NODE_FAIL:
		if (f->with != DE_PAIR_NONE)
			snprintf(out, len, "failing-node: %u of %u pairs fail: %s; its retest against %s failed too",
				 f->count, s->n - 1, de_diag_name(f->diag), name(c, f->with));
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
			 name(c, f->a), name(c, f->b), de_diag_name(f->diag));
		break;
	case DE_FIND_SLOW_LINK:
		snprintf(out, len, "slow-link %s-%s: %.2f x the median pair; both nodes fine with the others, culprit not isolated",
			 name(c, f->a), name(c, f->b), f->ratio);
		break;
	}
}

static int fill_nodes(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	static const char *const word[] = { "pass", "fault", "look" };
	const char **fault = malloc((s->v.nfind + 1) * sizeof(*fault));
	size_t nfault = 0, i;
	char why[1024];
	uint32_t x;

	if (fault == NULL)
		return -1;
	for (i = 0; i < s->v.nfind; i++)
		if (s->v.find[i].kind == DE_FIND_NODE_FAIL || s->v.find[i].kind == DE_FIND_SLOW_NODE)
			fault[nfault++] = name(c, s->v.find[i].a);
	for (x = 0; x < s->n; x++) {
		size_t idx;
		enum de_node_verdict nv = de_pairs_node_verdict(&s->v, x, &idx);

		if (nv != DE_NODE_PASS)
			node_why(c, &s->v.find[idx], why, sizeof(why));
		else
			snprintf(why, sizeof(why), "named in no finding");
		if (nv == DE_NODE_PASS && de_pairs_probe_suspect(s->probe, name(c, x), fault, nfault)) {
			nv = DE_NODE_LOOK;
			snprintf(why, sizeof(why), "in a failure of the node probe (FAIL probe) that no finding explains");
		}
		fprintf(fp, "%s\t%s\t%s\n", name(c, x), word[nv], why);
	}
	free(fault);
	return 0;
}

int de_pairs_write(const struct de_check *c, struct de_err *err)
{
	const char *dir = c->o.pairs_out;

	if (write_whole(dir, "pairs.json", fill_json, c, err) ||
	    write_whole(dir, "pairs.prom", fill_prom, c, err) ||
	    write_whole(dir, "pairs.csv", fill_csv, c, err) ||
	    write_whole(dir, "pairs.nodes", fill_nodes, c, err))
		return -1;
	return draw_png(c, err);
}
