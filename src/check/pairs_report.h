/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What rank 0 prints and writes after the pair sweep: the verdict lines,
 * the matrices (N <= 32), the worst pairs (pairs_report.c); with
 * --pairs-out, pairs.json, pairs.csv and pairs.nodes (pairs_files.c),
 * pairs.prom for node_exporter's textfile collector (pairs_prom.c) and
 * pairs.png, a gnuplot heatmap (pairs_png.c). Talks to no one. */
#ifndef DISTENV_CHECK_PAIRS_REPORT_H
#define DISTENV_CHECK_PAIRS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "err.h"
#include "pairs_verdict.h"

/* Matrices are printed up to this many nodes; the worst list always. */
#define DE_PAIRS_MATRIX_MAX 32
#define DE_PAIRS_WORST 10

void de_pairs_report(const struct de_check *c);
/* Before the sweep: DIR exists or can be made, gnuplot can be run. */
int de_pairs_out_ready(const struct de_check *c, struct de_err *err);
/* The files, each written whole (a temporary renamed into place). */
int de_pairs_write(const struct de_check *c, struct de_err *err);
/* pairs.png's width and height in pixels for n nodes. */
unsigned de_pairs_png_size(unsigned n);

/* Shared by the report and the files (pairs_report.c). */
const char *de_pr_name(const struct de_check *c, uint32_t x); /* node x's host */
const struct de_pair_result *de_pr_res(const struct de_check *c, uint32_t a, uint32_t b);
int de_pr_failed(const struct de_pair_result *p);
enum de_diag de_pr_diag(const struct de_pair_result *p); /* never measured: timeout */
double de_pr_directed_bw(const struct de_check *c, uint32_t from, uint32_t to); /* row -> column */
/* The resubmit hint's hosts (exclude.h): 1 when the sweep blames any. */
int de_pr_exclude(const struct de_check *c, char *hosts, size_t len, int *sure);
/* fill writes dir/file's temporary, renamed into place (every file). */
typedef int (*de_pr_fill_fn)(const struct de_check *c, FILE *fp);
int de_pr_write_whole(const char *dir, const char *file, de_pr_fill_fn fill,
		      const struct de_check *c, struct de_err *err);
/* pairs_prom.c */
int de_pr_fill_prom(const struct de_check *c, FILE *fp);
/* pairs_png.c: gnuplot's path (into out), and the heatmap. */
int de_pr_find_gnuplot(char *out, size_t len, struct de_err *err);
int de_pr_draw_png(const struct de_check *c, struct de_err *err);

#endif
