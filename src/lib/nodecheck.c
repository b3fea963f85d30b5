/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodecheck.h"

/* Where KEY=value starts in line (KEY at the start or after a blank),
 * or NULL. */
static const char *field(const char *line, size_t len, const char *key)
{
	size_t k = strlen(key);
	const char *p;

	for (p = line; p + k < line + len; p++) {
		if ((p == line || p[-1] == ' ') && strncmp(p, key, k) == 0 && p[k] == '=')
			return p + k + 1;
	}
	return NULL;
}

/* The value at v up to a blank or the end of the line, into out. */
static void word(const char *v, const char *end, char *out, size_t len)
{
	size_t n = 0;

	while (v + n < end && v[n] != ' ')
		n++;
	snprintf(out, len, "%.*s", (int)n, v);
}

/* Reason=TEXT [user@time]: TEXT has blanks; the bracket ends it. */
static void reason_value(const char *v, const char *end, char *out, size_t len)
{
	const char *p, *q = end;

	for (p = v; p + 1 < end; p++) {
		const char *close, *at;

		if (p[0] != ' ' || p[1] != '[')
			continue;
		close = memchr(p, ']', (size_t)(end - p));
		at = memchr(p, '@', (size_t)(end - p));
		if (close != NULL && at != NULL && at < close && memchr(p + 2, ' ', (size_t)(close - p - 2)) == NULL) {
			q = p;
			break;
		}
	}
	snprintf(out, len, "%.*s", (int)(q - v), v);
}

/* Does a State value carry the DRAIN flag? "IDLE+DRAIN", "MIXED+DRAIN",
 * "DRAINED", "DRAINING". */
static int state_drain(const char *state)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", state);
	for (tok = strtok_r(buf, "+", &save); tok != NULL; tok = strtok_r(NULL, "+", &save))
		if (strcmp(tok, "DRAIN") == 0 || strcmp(tok, "DRAINED") == 0 ||
		    strcmp(tok, "DRAINING") == 0)
			return 1;
	return 0;
}

int de_node_rec_parse(const char *text, struct de_node_rec *r, struct de_err *e)
{
	const char *nl, *end, *v;
	size_t len;

	memset(r, 0, sizeof(*r));
	if (text == NULL)
		return de_errf(e, "no node record");
	nl = strchr(text, '\n');
	len = nl != NULL ? (size_t)(nl - text) : strlen(text);
	end = text + len;
	if (strncmp(text, "NodeName=", 9) != 0 || (v = field(text, len, "State")) == NULL)
		return de_errf(e, "not a node record (expected NodeName=... State=...): \"%.*s\"",
			       (int)(len > 80 ? 80 : len), text);
	word(text + 9, end, r->name, sizeof(r->name));
	word(v, end, r->state, sizeof(r->state));
	if (r->name[0] == '\0' || r->state[0] == '\0')
		return de_errf(e, "node record without a name or a state: \"%.*s\"",
			       (int)(len > 80 ? 80 : len), text);
	r->drain = state_drain(r->state);
	if ((v = field(text, len, "Gres")) != NULL)
		word(v, end, r->gres, sizeof(r->gres));
	if ((v = field(text, len, "Reason")) != NULL)
		reason_value(v, end, r->reason, sizeof(r->reason));
	return 0;
}

/* One Gres entry, "NAME[:TYPE][:COUNT]" with its "(S:...)" cut off: its
 * GPUs in *n (0 for other resources). */
static int gres_entry(const char *s, size_t len, unsigned *n, struct de_err *e)
{
	char buf[128], *last, *end;
	unsigned long v;

	*n = 0;
	if (len == 0 || len >= sizeof(buf))
		return de_errf(e, "Gres entry \"%.*s\": expected NAME[:TYPE][:COUNT]",
			       (int)(len > 60 ? 60 : len), s);
	memcpy(buf, s, len);
	buf[len] = '\0';
	if ((end = strchr(buf, '(')) != NULL)
		*end = '\0';
	if (strcmp(buf, "gpu") != 0 && strncmp(buf, "gpu:", 4) != 0)
		return 0;
	last = strrchr(buf, ':');
	if (last == NULL || last[1] < '0' || last[1] > '9') {
		*n = 1; /* "gpu" or "gpu:TYPE": Slurm's count of one */
		return 0;
	}
	v = strtoul(last + 1, &end, 10);
	if (*end != '\0' || v > 1024)
		return de_errf(e, "Gres entry \"%s\": expected a GPU count after the last ':'", buf);
	*n = (unsigned)v;
	return 0;
}

int de_gres_gpus(const char *gres, unsigned *n, struct de_err *e)
{
	const char *p = gres, *start;
	int depth = 0;

	*n = 0;
	if (gres == NULL || *gres == '\0' || strcmp(gres, "(null)") == 0)
		return 0;
	/* Entries split at commas outside parentheses: "(S:0,2)" is one. */
	for (start = p;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		if (*p == '\0' || (*p == ',' && depth == 0)) {
			unsigned k;

			if (gres_entry(start, (size_t)(p - start), &k, e))
				return -1;
			*n += k;
			if (*p == '\0')
				return 0;
			start = p + 1;
		}
	}
}

int de_device_list_count(const char *what, const char *s, unsigned *n, struct de_err *e)
{
	const char *p;

	*n = 0;
	if (*s == '\0' || strcmp(s, "NoDevFiles") == 0)
		return 0;
	for (p = s;; p++) {
		if (*p == ',' || *p == '\0') {
			if (p == s || p[-1] == ',')
				return de_errf(e, "%s=\"%s\": an empty entry (expected devices, comma-separated, e.g. 0,1)",
					       what, s);
			(*n)++;
			if (*p == '\0')
				return 0;
		}
	}
}

enum de_drain_act de_drain_decide(int failed, const struct de_node_rec *r, const char *reason)
{
	int ours = strncmp(r->reason, DE_DRAIN_PREFIX, strlen(DE_DRAIN_PREFIX)) == 0;

	if (r->drain && !ours)
		return DE_DRAIN_OTHER;
	if (failed)
		return r->drain && strcmp(r->reason, reason) == 0 ? DE_DRAIN_SAME : DE_DRAIN_SET;
	return r->drain ? DE_DRAIN_RESUME : DE_DRAIN_NOTHING;
}

void de_drain_reason(const char *diag, const char *msg, char *out, size_t len)
{
	char *p;

	snprintf(out, len, "%s %s: %s", DE_DRAIN_PREFIX, diag, msg);
	for (p = out; *p; p++) {
		if (*p == '"')
			*p = '\'';
		else if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = ' ';
	}
}
