/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus' text exposition format 0.0.4, as node_exporter's textfile
 * collector reads it (pairs.prom): a metric's `# HELP` and `# TYPE` lines
 * once, then its samples `name{label="value",...} value`, one a line.
 * Label values escape '\\', '"' and newline; HELP text '\\' and newline;
 * every other byte passes unchanged (UTF-8 as it came). Pure: writes only
 * to the stream it is given. */
#ifndef DISTENV_PROM_H
#define DISTENV_PROM_H

#include <stddef.h>
#include <stdio.h>

/* A sample's value: integers up to 1e15 exactly, others to 15 significant
 * digits, NaN as "NaN", infinities as "+Inf"/"-Inf". out: 32 bytes do. */
void de_prom_value(double v, char *out, size_t len);

/* `# HELP name help` and `# TYPE name type` (type: "gauge", "counter",
 * ...) on fp. */
void de_prom_family(FILE *fp, const char *name, const char *type, const char *help);

/* One sample line on fp: name, nlabels label pairs from labels (name,
 * value, name, value, ...; the values escaped here), the value. */
void de_prom_sample(FILE *fp, const char *name, const char *const *labels, size_t nlabels,
		    double v);

#endif
