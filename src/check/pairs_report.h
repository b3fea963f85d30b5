/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What rank 0 prints and writes after the pair sweep: the verdict lines,
 * the matrices (N <= 32), the worst pairs; with --pairs-out, pairs.json,
 * pairs.prom (for node_exporter's textfile collector), pairs.csv and
 * pairs.png (a gnuplot heatmap). Talks to no one. */
#ifndef DISTENV_CHECK_PAIRS_REPORT_H
#define DISTENV_CHECK_PAIRS_REPORT_H

#include "check.h"
#include "err.h"

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

#endif
