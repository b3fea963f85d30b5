/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: the plugin's settings (src/lib/settings.c, parse.c,
 * port.c) and SLURM_STEP_TASKS_PER_NODE (de_tasks_per_node_at and
 * _totals in src/lib/layout.c), all read from strings an admin or Slurm
 * wrote.
 *
 * The input's first line is a plugstack.conf argument list, split at
 * blanks into argv as slurmd does; each word is also given to the --dist-*
 * option parsers. The rest (after the first '\n', or the whole input when
 * there is none) is a tasks-per-node value, compared with a model written
 * from its grammar: N or N(xM), comma-separated, N and M of at most 10
 * digits, M > 0. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layout.h"
#include "port.h"
#include "settings.h"

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz-settings: %s:%d: %s: ",       \
				__FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			abort();                                            \
		}                                                           \
	} while (0)

static void check_err(const struct de_err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));

	CHECK(n > 0 && n < sizeof(e->msg), "error message empty or unterminated");
}

static void check_config(const struct de_config *c)
{
	CHECK(c->enabled == 0 || c->enabled == 1, "enabled=%d", c->enabled);
	CHECK(c->force == 0 || c->force == 1, "force=%d", c->force);
	CHECK((unsigned)c->check < DE_BACKEND_COUNT, "check=%d", (int)c->check);
	CHECK(strnlen(c->check_path, sizeof(c->check_path)) < sizeof(c->check_path),
	      "check_path unterminated");
	CHECK(c->check_path[0] == '/', "check_path \"%s\" is not absolute",
	      c->check_path);
	CHECK(c->port_min >= 1024 && c->port_min <= c->port_max,
	      "port range %u-%u", c->port_min, c->port_max);
}

/* The value of the last argument "key=...", or NULL. */
static const char *value_of(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);
	const char *v = NULL;
	int i;

	for (i = 0; i < argc; i++)
		if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
			v = argv[i] + n + 1;
	return v;
}

static int count_key(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);
	int i, c = 0;

	for (i = 0; i < argc; i++)
		c += strncmp(argv[i], key, n) == 0 && argv[i][n] == '=';
	return c;
}

static void plugstack(int argc, char **argv, uint32_t job, uint32_t step)
{
	static const char *const keys[] = { "default", "port_min", "port_max",
					    "force", "check", "check_path" };
	struct de_config c, c2;
	struct de_err err;
	const char *v;
	uint16_t port;
	size_t k;
	int rc;

	/* Zeroed first: the config is compared byte for byte below. */
	memset(&c, 0, sizeof(c));
	memset(&c2, 0, sizeof(c2));
	de_config_init(&c);
	check_config(&c);
	rc = de_config_parse_args(&c, argc, argv, &err);
	CHECK(rc == 0 || rc == -1, "de_config_parse_args returned %d", rc);
	de_config_init(&c2);
	CHECK(de_config_parse_args(&c2, argc, argv, &err) == rc,
	      "a second parse of the same arguments differs");
	if (rc != 0) {
		check_err(&err);
		return;
	}
	check_config(&c);
	CHECK(memcmp(&c, &c2, sizeof(c)) == 0, "a second parse gives another config");
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		CHECK(count_key(argc, argv, keys[k]) <= 1, "%s= given twice, accepted",
		      keys[k]);
	if ((v = value_of(argc, argv, "port_min")) != NULL)
		CHECK(c.port_min == strtoul(v, NULL, 10), "port_min=%s gave %u", v,
		      c.port_min);
	if ((v = value_of(argc, argv, "port_max")) != NULL)
		CHECK(c.port_max == strtoul(v, NULL, 10), "port_max=%s gave %u", v,
		      c.port_max);
	if ((v = value_of(argc, argv, "check_path")) != NULL)
		CHECK(strcmp(c.check_path, v) == 0, "check_path=%s gave %s", v,
		      c.check_path);
	if ((v = value_of(argc, argv, "default")) != NULL)
		CHECK(c.enabled == (strcasecmp(v, "on") == 0), "default=%s gave %d",
		      v, c.enabled);
	if ((v = value_of(argc, argv, "check")) != NULL)
		CHECK(strcmp(de_backend_name(c.check), *v ? v : "auto") == 0,
		      "check=%s gave %s", v, de_backend_name(c.check));
	port = de_port_for(job, step, c.port_min, c.port_max);
	CHECK(port >= c.port_min && port <= c.port_max,
	      "de_port_for(%u, %u) = %u outside %u-%u", job, step, port,
	      c.port_min, c.port_max);
}

/* What srun and sbatch hand the option callbacks. */
static void options(const char *word)
{
	struct de_config c;
	struct de_err err;
	unsigned long v;

	de_config_init(&c);
	if (de_config_parse_dist_env(&c, word, &err) == 0)
		check_config(&c);
	else
		check_err(&err);
	if (de_config_parse_check(&c, "--dist-check", word, &err) == 0) {
		check_config(&c);
		CHECK(strcmp(de_backend_name(c.check), *word ? word : "auto") == 0,
		      "--dist-check=%s gave %s", word, de_backend_name(c.check));
	} else {
		check_err(&err);
	}
	if (de_config_parse_dist_port(&c, word, &err) == 0) {
		v = strtoul(word, NULL, 10);
		CHECK(word[0] >= '0' && word[0] <= '9' && v >= 1024 && v <= 65535 &&
			      c.port == v,
		      "--dist-port=%s gave %u", word, c.port);
	} else {
		check_err(&err);
	}
}

/* The model: entries of (count, repeat), or -1 when malformed. */
struct ent {
	unsigned long count, rep;
};

static size_t digits(const char *p, unsigned long *v)
{
	size_t n = 0;

	*v = 0;
	while (p[n] >= '0' && p[n] <= '9') {
		if (n < 10)
			*v = *v * 10 + (unsigned long)(p[n] - '0');
		n++;
	}
	return n;
}

static long model(const char *s, struct ent *e)
{
	long n = 0;
	size_t d;

	if (*s == '\0')
		return -1;
	for (;;) {
		d = digits(s, &e[n].count);
		if (d == 0 || d > 10)
			return -1;
		s += d;
		e[n].rep = 1;
		if (s[0] == '(' && s[1] == 'x') {
			d = digits(s + 2, &e[n].rep);
			if (d == 0 || d > 10 || e[n].rep == 0 || s[2 + d] != ')')
				return -1;
			s += 3 + d;
		}
		n++;
		if (*s == '\0')
			return n;
		if (*s != ',' || s[1] == '\0')
			return -1;
		s++;
	}
}

static void tasks_per_node(const char *spec, size_t pick)
{
	struct ent *e = malloc((strlen(spec) / 2 + 1) * sizeof(*e));
	size_t nodes = 0, tnodes = 0, idx[8], i;
	unsigned long long tasks, ttasks = 0, prod;
	unsigned long got, want;
	int wrapped = 0;
	struct de_err err;
	long n, j;
	int rc;

	if (e == NULL)
		return;
	n = model(spec, e);
	for (j = 0; j < n; j++)
		nodes += e[j].rep;
	idx[0] = 0;
	idx[1] = 1;
	idx[2] = pick;
	idx[3] = nodes ? nodes - 1 : 0;
	idx[4] = nodes;
	idx[5] = nodes / 2;
	idx[6] = pick % (nodes ? nodes : 1);
	idx[7] = SIZE_MAX;
	rc = de_tasks_per_node_totals("SLURM_STEP_TASKS_PER_NODE", spec, &tnodes,
				      &ttasks, &err);
	if (n < 0) {
		CHECK(rc == -1, "totals of \"%s\", which the model finds malformed",
		      spec);
		check_err(&err);
	} else {
		/* The sum in 64 bits; past that the model has no say. */
		for (j = 0, tasks = 0; j < n && !wrapped; j++)
			wrapped = __builtin_mul_overflow(e[j].count, e[j].rep, &prod) ||
				  __builtin_add_overflow(tasks, prod, &tasks);
		CHECK(rc == 0 && tnodes == nodes && (wrapped || ttasks == tasks),
		      "totals of \"%s\": %zu nodes, %llu tasks; the model: %zu, %llu",
		      spec, tnodes, ttasks, nodes, tasks);
	}
	for (i = 0; i < 8; i++) {
		got = 12345;
		rc = de_tasks_per_node_at("SLURM_STEP_TASKS_PER_NODE", spec, idx[i],
					  &got, &err);
		CHECK(rc == 0 || rc == -1, "returned %d", rc);
		if (n < 0 || idx[i] >= nodes) {
			CHECK(rc == -1, "\"%s\" node %zu: %lu, the model says %s", spec,
			      idx[i], got, n < 0 ? "malformed" : "no such node");
			check_err(&err);
			continue;
		}
		for (j = 0, want = 0; j < n; j++) {
			if (idx[i] < e[j].rep) {
				want = e[j].count;
				break;
			}
			idx[i] -= e[j].rep;
		}
		CHECK(rc == 0 && got == want, "\"%s\": %s, the model says %lu", spec,
		      rc ? err.msg : "other count", want);
	}
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *line, *spec, *save = NULL, *w;
	char **argv = malloc((size / 2 + 2) * sizeof(*argv));
	uint32_t job = 0, step = 0;
	size_t i, pick = 0;
	int argc = 0;

	if (text == NULL || argv == NULL)
		goto out;
	memcpy(text, data, size);
	text[size] = '\0';
	for (i = 0; i < size && i < 8; i++) {
		pick = pick * 31 + data[i];
		job = job * 257 + data[i];
		step = step * 131 + data[size - 1 - i];
	}

	spec = strchr(text, '\n');
	if (spec != NULL)
		*spec++ = '\0';
	else
		spec = text + size; /* filled in below: the whole input */
	line = text;
	for (w = strtok_r(line, " \t", &save); w != NULL;
	     w = strtok_r(NULL, " \t", &save)) {
		argv[argc++] = w;
		options(w);
	}
	argv[argc] = NULL;
	options("");
	plugstack(argc, argv, job, step);

	if (*spec == '\0' && memchr(data, '\n', size) == NULL) {
		memcpy(text, data, size); /* strtok_r cut it up */
		text[size] = '\0';
		spec = text;
	}
	tasks_per_node(spec, pick);
out:
	free(argv);
	free(text);
	return 0;
}
