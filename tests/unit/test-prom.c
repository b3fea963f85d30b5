/* SPDX-License-Identifier: GPL-2.0-or-later */
/* prom.c: sample lines (labels, escapes, values) and the HELP/TYPE pair,
 * byte for byte as Prometheus' text format 0.0.4 wants them. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "prom.h"
#include "tap.h"

static char buf[512];

/* What one sample line is, in buf. */
static const char *sample(const char *name, const char *const *labels, size_t n, double v)
{
	FILE *fp = fmemopen(buf, sizeof(buf), "w");

	if (fp == NULL)
		return "(fmemopen failed)";
	de_prom_sample(fp, name, labels, n, v);
	fclose(fp);
	return buf;
}

static const char *family(const char *name, const char *type, const char *help)
{
	FILE *fp = fmemopen(buf, sizeof(buf), "w");

	if (fp == NULL)
		return "(fmemopen failed)";
	de_prom_family(fp, name, type, help);
	fclose(fp);
	return buf;
}

static const char *value(double v)
{
	static char out[32];

	de_prom_value(v, out, sizeof(out));
	return out;
}

int main(void)
{
	const char *pair[] = { "src", "node1", "dst", "node2" };
	const char *odd[] = { "node", "a\"b\\c\nd" };
	const char *utf[] = { "node", "n\xc5\x93ud" };

	is_str(sample("distenv_sweep_ok", NULL, 0, 1), "distenv_sweep_ok 1\n",
	       "no labels: name, space, value");
	is_str(sample("distenv_pair_failed", pair, 2, 0), "distenv_pair_failed{src=\"node1\",dst=\"node2\"} 0\n",
	       "labels in braces, in the order given, comma-separated");
	is_str(sample("distenv_node_slow", odd, 1, 1), "distenv_node_slow{node=\"a\\\"b\\\\c\\nd\"} 1\n",
	       "label values: quote, backslash and newline escaped");
	is_str(sample("distenv_node_slow", utf, 1, 0), "distenv_node_slow{node=\"n\xc5\x93ud\"} 0\n",
	       "label values: UTF-8 passes byte for byte");
	is_str(sample("x", pair, 1, 2.5), "x{src=\"node1\"} 2.5\n", "nlabels counts pairs, not strings");

	is_str(value(0), "0", "0");
	is_str(value(1718000123), "1718000123", "a Unix time: every digit, no exponent");
	is_str(value(1e15), "1e+15", "1e15: the exponent form Go's ParseFloat reads");
	is_str(value(9876543210.5), "9876543210.5", "a bandwidth in bytes/s keeps its fraction");
	is_str(value(0.1), "0.1", "0.1 without a binary tail");
	is_str(value(0.000123), "0.000123", "a latency in seconds");
	is_str(value(1.0 / 3), "0.333333333333333", "15 significant digits");
	is_str(value(NAN), "NaN", "NaN as the format spells it");
	is_str(value(INFINITY), "+Inf", "+Inf");
	is_str(value(-INFINITY), "-Inf", "-Inf");

	is_str(family("distenv_sweep_ok", "gauge", "1 when the sweep named nothing"),
	       "# HELP distenv_sweep_ok 1 when the sweep named nothing\n# TYPE distenv_sweep_ok gauge\n",
	       "HELP then TYPE");
	is_str(family("m", "gauge", "a \"b\" c\\d\ne"), "# HELP m a \"b\" c\\\\d\\ne\n# TYPE m gauge\n",
	       "HELP text: backslash and newline escaped, quotes pass");
	return tap_done();
}
