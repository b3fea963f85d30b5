/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm hostlist expansion without Slurm. See hostlist.h for the contract.
 *
 * How Slurm reads an expression (src/common/hostlist.c, 22.05 and 23.11),
 * restated as the rules this file follows:
 *
 * 1. Tokens. Separators are ',', ' ', '\t' (and '\n' from 23.02). A token
 *    runs to the next separator, except that a separator between a '[' and
 *    the first ']' after it does not end the token.
 * 2. A token with no '[' is one host. Slurm splits off its trailing digits
 *    as a number and prints it back with the same width, so the name comes
 *    out unchanged.
 * 3. Otherwise take the LAST '[' of the token and the first ']' after it:
 *    that is the last bracket. Text after it is an error in 22.05 and a
 *    suffix from 23.11.0 (unless it starts with ','; then it is ignored).
 *    No ']' at all: an error from 23.02; 22.05 makes the host "<prefix>]"
 *    (or the text after the '[' when there is no prefix).
 * 4. The text before the last bracket is searched from the right: its last
 *    '[' and the last ']' after that one form a bracket, then the same again
 *    to the left of that '['. The search stops at a '[' with no ']' after
 *    it; everything left of the stop is literal text.
 * 5. A bracket holds a comma list of entries "N" or "N-M". N is read like
 *    strtoul() (leading blanks and a sign allowed); the padding width is the
 *    length of N's text. An 'x', an empty entry, "N--M", trailing junk,
 *    N > M, or more than 65536 hosts in one entry makes the entry invalid.
 *    An invalid entry in the last bracket or in the one just before it is
 *    an error, and so is more than 65536 hosts in that one before the last.
 *    Further left Slurm drops the errors (its recursion keeps the larger of
 *    two error codes, 0 and -1): an invalid entry there makes the token
 *    expand to nothing, and the entry that crosses 65536 hosts is dropped
 *    with all after it.
 * 6. Brackets multiply. Slurm recurses from the right, so the loop order is:
 *    the bracket just before the last one outermost, then the ones to its
 *    left, the first bracket innermost of those, and the last bracket
 *    innermost of all: a[1-2]b[3-4]c[5-6] gives a1b3c5 a1b3c6 a2b3c5 a2b3c6
 *    a1b4c5 ...
 * 7. Slurm stores hosts as ranges (prefix, lo, hi, width) and appends a
 *    range to the previous one when it continues it and the prefixes compare
 *    equal under strnatcmp(), which skips white space. The appended hosts
 *    are then printed with the earlier prefix. This only shows when names
 *    contain white space; it is emulated here (the "tail").
 *
 * Everything is linear: the tokenizer caches its bracket searches, nothing
 * recurses, and limits are computed from the parsed expression before any
 * host is built. Only when a token holds white space (rule 7) do count and
 * nth walk the list range by range. */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

/* Slurm's own limits. */
#define SLURM_MAX_RANGE      65536u   /* hosts in one N-M entry */
#define SLURM_MAX_PREFIX_CNT 65536u   /* hosts in a bracket before the last */
#define SLURM_MAX_RANGES     262144u  /* entries in one bracket (fatal() in Slurm) */

/* Slurm treats ULONG_MAX as "empty" and wraps around past it. */
#define NUM_MAX (ULONG_MAX - 1)

#define SHOW_MAX 60   /* characters of the expression quoted in messages */

struct hl_elem {
	unsigned long lo, hi;
	size_t width;   /* printf width: length of the low bound's text */
};

struct hl_group {
	size_t open, close;   /* positions of '[' and ']' */
	size_t text_end;      /* literal text after it: [close + 1, text_end) */
	size_t e0, ne;        /* entries: ctx->elem[e0 .. e0 + ne) */
	uint64_t count;       /* values in the group */
	uint64_t maxlen;      /* longest formatted value */
	uint64_t sumlen;      /* length of all formatted values */
};

enum tok_kind { TK_NAME, TK_BRACKET };

/* Where a bracket is, which decides how its errors count (rule 5). */
enum group_role { GROUP_LAST, GROUP_NEXT, GROUP_DEEP };

struct hl_tok {
	size_t start, end;
	enum tok_kind kind;
	/* TK_NAME: the name is [na, nb), plus ']' when close_it (22.05 fix) */
	size_t na, nb;
	bool close_it;
	/* TK_BRACKET: literal head [start, head_end), groups ctx->grp[0..ngrp)
	 * left to right, suffix [sa, sb) (empty when none) */
	size_t head_end, sa, sb;
	uint64_t count;       /* hosts, saturated */
	bool has_space;       /* white space inside the token */
};

/* The last range Slurm stored; see rule 7 above. */
struct hl_tail {
	bool valid, single;
	unsigned long lo, hi;
	size_t width;
	size_t plen;
	char pfx[DE_HOSTLIST_MAX_NAME + 1];
};

/* What the walker hands to a visitor: hosts pfx + value + sfx for each
 * value in lo..hi (just pfx + sfx when !num). */
struct hl_item {
	const char *pfx, *sfx;
	size_t plen, slen;
	bool num;
	unsigned long lo, hi;
	size_t width;
	size_t pos;           /* where its token starts, for messages */
};

struct hl_ctx {
	const char *s;
	size_t len;
	unsigned flags;
	struct de_err *err;
	size_t pos;                     /* tokenizer */
	size_t open_from, open_at;      /* cache: no '[' in [open_from, open_at) */
	size_t close_from, close_at;    /* same for ']' */
	struct hl_group *grp;
	size_t ngrp, grp_cap;
	struct hl_elem *elem;
	size_t nelem, elem_cap;
	/* totals from scan() */
	uint64_t count, bytes, maxlen;
	size_t maxlen_pos;
	bool slow;                      /* some token has white space (rule 7) */
	bool quiet;                     /* parse without messages */
};

typedef int (*hl_visit)(struct hl_ctx *c, const struct hl_item *it,
			void *arg);

/* ---- small helpers ------------------------------------------------------ */

static bool is_space(unsigned char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

static bool is_digit(unsigned char ch)
{
	return ch >= '0' && ch <= '9';
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	if (a != 0 && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

static size_t ndigits(unsigned long v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static size_t fmt_len(unsigned long v, size_t width)
{
	size_t n = ndigits(v);

	return width > n ? width : n;
}

/* Writes v zero-padded to width (Slurm's "%0*lu"); the caller has checked
 * the room. Returns the length written. */
static size_t fmt_num(char *out, unsigned long v, size_t width)
{
	char tmp[24];
	size_t n = 0, pad, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	pad = width > n ? width - n : 0;
	memset(out, '0', pad);
	for (i = 0; i < n; i++)
		out[pad + i] = tmp[n - 1 - i];
	return pad + n;
}

/* Total length of lo..hi formatted with width. */
static uint64_t sum_fmt_len(unsigned long lo, unsigned long hi, size_t width)
{
	uint64_t sum = 0;
	unsigned long a = lo, top;
	size_t d = ndigits(lo), i;

	for (;;) {
		/* top: the largest number with d digits */
		top = 9;
		for (i = 1; i < d; i++) {
			if (top > (ULONG_MAX - 9) / 10) {
				top = ULONG_MAX;
				break;
			}
			top = top * 10 + 9;
		}
		if (hi <= top) {
			sum = sat_add(sum, sat_mul(hi - a + 1, width > d ? width : d));
			return sum;
		}
		sum = sat_add(sum, sat_mul(top - a + 1, width > d ? width : d));
		a = top + 1;
		d++;
	}
}

/* Slurm's _width_equiv(): may two widths print both numbers the same? */
static size_t zero_pad(unsigned long v, size_t width)
{
	size_t n = ndigits(v);

	return width > n ? width - n : 0;
}

static bool width_equiv(unsigned long n, size_t *wn, unsigned long m,
			size_t *wm)
{
	size_t npad, nmpad, mpad, mnpad;

	if (*wn == *wm)
		return true;
	npad = zero_pad(n, *wn);
	nmpad = zero_pad(n, *wm);
	mpad = zero_pad(m, *wm);
	mnpad = zero_pad(m, *wn);
	if (npad != nmpad && mpad != mnpad)
		return false;
	if (npad != nmpad)
		*wm = *wn;
	else
		*wn = *wm;
	return true;
}

/* Slurm's strnatcmp(a, b) == 0: equal skipping white space, where runs of
 * digits that start at the same point must match exactly. */
static bool nat_equal(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, j = 0, k;
	unsigned char ca, cb;

	for (;;) {
		while (i < an && is_space((unsigned char)a[i]))
			i++;
		while (j < bn && is_space((unsigned char)b[j]))
			j++;
		ca = i < an ? (unsigned char)a[i] : 0;
		cb = j < bn ? (unsigned char)b[j] : 0;
		if (is_digit(ca) && is_digit(cb)) {
			for (k = 0;; k++) {
				bool da = i + k < an && is_digit((unsigned char)a[i + k]);
				bool db = j + k < bn && is_digit((unsigned char)b[j + k]);

				if (!da && !db)
					break;
				if (da != db || a[i + k] != b[j + k])
					return false;
			}
		}
		if (!ca && !cb)
			return true;
		if (ca != cb)
			return false;
		i++;
		j++;
	}
}

/* Reads a number as strtoul(s, &end, 10) does: blanks, a sign, digits.
 * Returns the characters used (0: no digits). *big when the value is
 * ULONG_MAX or overflowed, which Slurm cannot handle. */
static size_t scan_ul(const char *s, size_t n, unsigned long *val, bool *big)
{
	size_t i = 0, d0;
	bool neg = false, ovf = false;
	unsigned long v = 0;

	while (i < n && is_space((unsigned char)s[i]))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-')) {
		neg = s[i] == '-';
		i++;
	}
	d0 = i;
	for (; i < n && is_digit((unsigned char)s[i]); i++) {
		unsigned dg = (unsigned)(s[i] - '0');

		if (v > (ULONG_MAX - dg) / 10)
			ovf = true;
		else
			v = v * 10 + dg;
	}
	if (i == d0)
		return 0;
	if (ovf)
		v = ULONG_MAX;
	else if (neg)
		v = -v;
	*val = v;
	*big = v > NUM_MAX;
	return i;
}

/* ---- errors ----------------------------------------------------------------- */

/* The expression quoted for a message: escaped, cut after SHOW_MAX. */
static void show_expr(const struct hl_ctx *c, char *out, size_t outsz)
{
	size_t i, o = 0;

	for (i = 0; i < c->len && i < SHOW_MAX && o + 8 < outsz; i++) {
		unsigned char ch = (unsigned char)c->s[i];

		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (ch == '\t') {
			out[o++] = '\\';
			out[o++] = 't';
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	if (i < c->len && o + 4 < outsz) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

__attribute__((format(printf, 2, 3)))
static int fail(const struct hl_ctx *c, const char *fmt, ...)
{
	char shown[SHOW_MAX * 4 + 8], what[DE_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	show_expr(c, shown, sizeof(shown));
	return de_errf(c->err, "hostlist \"%s\": %s", shown, what);
}

/* A piece of the expression for a message, cut and made printable. */
static const char *piece(const struct hl_ctx *c, size_t a, size_t b,
			 char *out, size_t outsz)
{
	size_t o = 0;

	for (; a < b && o + 4 < outsz; a++) {
		unsigned char ch = (unsigned char)c->s[a];

		out[o++] = ch < 0x20 || ch == 0x7f || ch == '"' ? '?' : (char)ch;
	}
	if (a < b) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

/* ---- tokens ------------------------------------------------------------- */

static bool is_sep(const struct hl_ctx *c, unsigned char ch)
{
	return ch == ',' || ch == ' ' || ch == '\t' ||
	       (ch == '\n' && (c->flags & DE_HL_SUFFIX));
}

/* First ch at or after from (c->len if none). Queries come with from never
 * decreasing, so the cache makes all searches together linear. */
static size_t find_fwd(const struct hl_ctx *c, char ch, size_t from,
		       size_t *cache_from, size_t *cache_at)
{
	const char *hit;

	if (from >= *cache_from && from <= *cache_at)
		return *cache_at;
	hit = from < c->len ? memchr(c->s + from, ch, c->len - from) : NULL;
	*cache_from = from;
	*cache_at = hit ? (size_t)(hit - c->s) : c->len;
	return *cache_at;
}

/* Slurm's _next_tok(): the next token as [*start, *end). */
static bool next_tok(struct hl_ctx *c, size_t *start, size_t *end)
{
	const char *s = c->s;
	size_t p = c->pos, parse, o, cl;

	while (p < c->len && is_sep(c, (unsigned char)s[p]))
		p++;
	if (p == c->len) {
		c->pos = p;
		return false;
	}
	*start = parse = p;
	for (;;) {
		while (p < c->len && !is_sep(c, (unsigned char)s[p]))
			p++;
		for (;;) {
			o = find_fwd(c, '[', parse, &c->open_from, &c->open_at);
			if (o == c->len || o > p)
				goto done;
			cl = find_fwd(c, ']', parse, &c->close_from,
				      &c->close_at);
			if (cl == c->len || cl < o)
				goto done;
			if (cl >= p)
				break;
			parse = cl + 1;
		}
		p = cl;
	}
done:
	*end = p;
	c->pos = p;
	return true;
}

static size_t rfind(const struct hl_ctx *c, char ch, size_t a, size_t b)
{
	while (b > a) {
		if (c->s[--b] == ch)
			return b;
	}
	return SIZE_MAX;
}

static int grow(const struct hl_ctx *c, void **arr, size_t *cap, size_t need,
		size_t elsz)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elsz);
	if (!p)
		return fail(c, "out of memory");
	*arr = p;
	*cap = ncap;
	return 0;
}

/* One entry "N" or "N-M" at [a, b), as Slurm's _parse_single_range().
 * Returns 0, -1 on an error of ours (a number Slurm cannot hold), or 1 when
 * Slurm calls the entry invalid (message set unless c->quiet). */
static int parse_entry(struct hl_ctx *c, size_t a, size_t b,
		       struct hl_elem *e)
{
	const char *s = c->s;
	const char *dash = memchr(s + a, '-', b - a);
	size_t lo_end = dash ? (size_t)(dash - s) : b, nlo, nhi;
	bool big_lo = false, big_hi = false;
	const char *why = "expected N or N-M";
	char txt[48], detail[64];

	if (memchr(s + a, 'x', b - a))
		goto invalid;
	if (dash && lo_end + 1 < b && s[lo_end + 1] == '-') {
		why = "negative number";
		goto invalid;
	}
	e->width = lo_end - a;
	nlo = scan_ul(s + a, lo_end - a, &e->lo, &big_lo);
	if (nlo == 0)
		goto invalid;
	if (dash && lo_end + 1 < b) {
		/* Slurm checks only the high end for trailing junk. */
		nhi = scan_ul(s + lo_end + 1, b - lo_end - 1, &e->hi, &big_hi);
		if (nhi == 0 || nhi != b - lo_end - 1)
			goto invalid;
	} else {
		e->hi = e->lo;
		if (nlo != lo_end - a)
			goto invalid;
	}
	if (big_lo || big_hi)
		return fail(c, "number in \"%s\" at position %zu is too large (at most %lu)",
			    piece(c, a, b, txt, sizeof(txt)), a,
			    (unsigned long)NUM_MAX);
	if (e->lo > e->hi) {
		snprintf(detail, sizeof(detail), "%lu is above %lu", e->lo,
			 e->hi);
		why = detail;
		goto invalid;
	}
	if (e->hi - e->lo >= SLURM_MAX_RANGE) {
		if (!c->quiet)
			fail(c, "range \"%s\" at position %zu has more than %u hosts (Slurm's limit)",
			     piece(c, a, b, txt, sizeof(txt)), a,
			     SLURM_MAX_RANGE);
		return 1;
	}
	return 0;
invalid:
	if (!c->quiet)
		fail(c, "invalid range \"%s\" at position %zu (%s)",
		     piece(c, a, b, txt, sizeof(txt)), a, why);
	return 1;
}

/* The entries of group g. Returns 0, -1 on error, or 1 when Slurm ignores
 * the whole token (see GROUP_DEEP). */
static int parse_group(struct hl_ctx *c, struct hl_group *g,
		       enum group_role role)
{
	size_t a = g->open + 1, b, n = 0;
	uint64_t cnt;
	struct hl_elem *e;
	int rc;

	g->e0 = c->nelem;
	g->count = g->maxlen = g->sumlen = 0;
	c->quiet = role == GROUP_DEEP;
	for (;;) {
		const char *comma = memchr(c->s + a, ',', g->close - a);

		b = comma ? (size_t)(comma - c->s) : g->close;
		if (++n > SLURM_MAX_RANGES)
			return fail(c, "bracket at position %zu has more than %u entries",
				    g->open, SLURM_MAX_RANGES);
		if (grow(c, (void **)&c->elem, &c->elem_cap, c->nelem + 1,
			 sizeof(*c->elem)))
			return -1;
		e = &c->elem[c->nelem];
		rc = parse_entry(c, a, b, e);
		if (rc < 0 || (rc > 0 && role != GROUP_DEEP))
			return -1;
		if (rc > 0)
			return 1;
		c->nelem++;
		if (!comma)
			break;
		a = b + 1;
	}
	c->quiet = false;
	g->ne = c->nelem - g->e0;
	for (n = 0; n < g->ne; n++) {
		e = &c->elem[g->e0 + n];
		cnt = e->hi - e->lo + 1;
		if (role != GROUP_LAST && g->count + cnt > SLURM_MAX_PREFIX_CNT) {
			if (role == GROUP_NEXT)
				return fail(c, "bracket at position %zu has more than %u hosts (Slurm's limit for a bracket before the last one)",
					    g->open, SLURM_MAX_PREFIX_CNT);
			/* Slurm quietly drops this entry and the rest. */
			g->ne = n;
			break;
		}
		g->count += cnt;
		if (fmt_len(e->hi, e->width) > g->maxlen)
			g->maxlen = fmt_len(e->hi, e->width);
		g->sumlen = sat_add(g->sumlen,
				    sum_fmt_len(e->lo, e->hi, e->width));
	}
	return 0;
}

/* The number at the end of a plain name must be one Slurm can print back. */
static int check_name(struct hl_ctx *c, const struct hl_tok *t)
{
	size_t d = t->nb;
	unsigned long v;
	bool big = false;

	if (t->close_it)
		return 0;
	while (d > t->na && is_digit((unsigned char)c->s[d - 1]))
		d--;
	if (d < t->nb && scan_ul(c->s + d, t->nb - d, &v, &big) && big)
		return fail(c, "number at position %zu is too large (at most %lu)",
			    d, (unsigned long)NUM_MAX);
	return 0;
}

/* Parses the token [start, end) into t, c->grp and c->elem. */
static int parse_tok(struct hl_ctx *c, size_t start, size_t end,
		     struct hl_tok *t)
{
	const char *s = c->s;
	size_t p, q, cur, o, cl, i, k;
	struct hl_group *g;

	memset(t, 0, sizeof(*t));
	t->start = start;
	t->end = end;
	t->count = 1;
	c->ngrp = c->nelem = 0;
	for (i = start; i < end; i++) {
		if (is_space((unsigned char)s[i]))
			t->has_space = true;
	}

	p = rfind(c, '[', start, end);
	if (p == SIZE_MAX) {
		t->kind = TK_NAME;
		t->na = start;
		t->nb = end;
		return check_name(c, t);
	}
	q = p + 1;
	while (q < end && s[q] != ']')
		q++;
	if (q == end) {
		if (c->flags & DE_HL_SUFFIX)
			return fail(c, "unterminated '[' at position %zu (expected ']')",
				    p);
		/* 22.05 closes it: "node[1-" is the host "node]". */
		t->kind = TK_NAME;
		if (p > start) {
			t->na = start;
			t->nb = p;
			t->close_it = true;
		} else {
			t->na = p + 1;
			t->nb = end;
		}
		return check_name(c, t);
	}

	t->kind = TK_BRACKET;
	t->sa = t->sb = end;
	if (q + 1 < end && s[q + 1] != ',') {
		if (!(c->flags & DE_HL_SUFFIX))
			return fail(c, "text after ']' at position %zu (Slurm 22.05 refuses it; a suffix is accepted from 23.11.0)",
				    q + 1);
		t->sa = q + 1;
	}

	/* Brackets before the last one, found from the right (rule 4). */
	cur = p;
	for (;;) {
		o = rfind(c, '[', start, cur);
		if (o == SIZE_MAX)
			break;
		cl = rfind(c, ']', o + 1, cur);
		if (cl == SIZE_MAX)
			break;
		if (grow(c, (void **)&c->grp, &c->grp_cap, c->ngrp + 1,
			 sizeof(*c->grp)))
			return -1;
		g = &c->grp[c->ngrp++];
		g->open = o;
		g->close = cl;
		g->text_end = cur;
		cur = o;
	}
	t->head_end = cur;
	for (i = 0, k = c->ngrp; i < k / 2; i++) {
		struct hl_group tmp = c->grp[i];

		c->grp[i] = c->grp[k - 1 - i];
		c->grp[k - 1 - i] = tmp;
	}
	if (grow(c, (void **)&c->grp, &c->grp_cap, c->ngrp + 1,
		 sizeof(*c->grp)))
		return -1;
	g = &c->grp[c->ngrp++];
	g->open = p;
	g->close = q;
	g->text_end = q + 1;

	/* Slurm reads the last bracket first, then the others from the right. */
	if (parse_group(c, g, GROUP_LAST))
		return -1;
	for (i = c->ngrp - 1; i-- > 0;) {
		int rc = parse_group(c, &c->grp[i],
				     i + 2 == c->ngrp ? GROUP_NEXT : GROUP_DEEP);

		if (rc < 0)
			return -1;
		if (rc > 0) {
			t->count = 0;   /* Slurm ignores the token */
			return 0;
		}
	}
	for (i = 0; i < c->ngrp; i++)
		t->count = sat_mul(t->count, c->grp[i].count);
	return 0;
}

/* Length of the longest name of t and of all its names (no merging). */
static void tok_sizes(const struct hl_ctx *c, const struct hl_tok *t,
		      uint64_t *maxlen, uint64_t *bytes)
{
	uint64_t fixed, sum;
	size_t i;

	if (t->count == 0) {
		*maxlen = *bytes = 0;
		return;
	}
	if (t->kind == TK_NAME) {
		*maxlen = t->nb - t->na + (t->close_it ? 1 : 0);
		*bytes = *maxlen + 1;
		return;
	}
	fixed = (t->head_end - t->start) + (t->sb - t->sa);
	for (i = 0; i + 1 < c->ngrp; i++)
		fixed += c->grp[i].text_end - c->grp[i].close - 1;
	*maxlen = fixed;
	sum = sat_mul(t->count, fixed + 1);
	for (i = 0; i < c->ngrp; i++) {
		const struct hl_group *g = &c->grp[i];

		*maxlen = sat_add(*maxlen, g->maxlen);
		sum = sat_add(sum, sat_mul(g->sumlen, t->count / g->count));
	}
	*bytes = sum;
}

/* ---- the walker: every host in Slurm's order, as ranges ----------------- */

static int push_item(struct hl_ctx *c, struct hl_tail *tail,
		     struct hl_item *it, hl_visit visit, void *arg)
{
	size_t w = it->width;

	if (it->num && it->slen == 0) {
		if (tail->valid && !tail->single && tail->hi + 1 == it->lo &&
		    nat_equal(tail->pfx, tail->plen, it->pfx, it->plen) &&
		    width_equiv(tail->lo, &tail->width, it->lo, &w)) {
			/* Slurm appends it to the previous range. */
			tail->hi = it->hi;
			it->pfx = tail->pfx;
			it->plen = tail->plen;
		} else {
			if (it->plen > DE_HOSTLIST_MAX_NAME)
				return fail(c, "host name at position %zu is longer than %d characters",
					    it->pos, DE_HOSTLIST_MAX_NAME);
			tail->valid = true;
			tail->single = false;
			tail->lo = it->lo;
			tail->hi = it->hi;
			tail->width = w;
			tail->plen = it->plen;
			memcpy(tail->pfx, it->pfx, it->plen);
		}
	} else {
		tail->valid = true;
		tail->single = true;
	}
	return visit(c, it, arg);
}

static int walk_name(struct hl_ctx *c, const struct hl_tok *t,
		     struct hl_tail *tail, char *buf, hl_visit visit,
		     void *arg)
{
	struct hl_item it;
	size_t len = t->nb - t->na, d;
	bool big;

	memset(&it, 0, sizeof(it));
	it.sfx = "";
	it.pos = t->start;
	if (t->close_it) {
		if (len + 1 > DE_HOSTLIST_MAX_NAME)
			return fail(c, "host name at position %zu is longer than %d characters",
				    t->start, DE_HOSTLIST_MAX_NAME);
		memcpy(buf, c->s + t->na, len);
		buf[len++] = ']';
		it.pfx = buf;
		it.plen = len;
		return push_item(c, tail, &it, visit, arg);
	}
	it.pfx = c->s + t->na;
	d = len;
	while (d > 0 && is_digit((unsigned char)it.pfx[d - 1]))
		d--;
	if (d < len) {
		it.num = true;
		it.width = len - d;
		scan_ul(it.pfx + d, len - d, &it.lo, &big);
		it.hi = it.lo;
		it.plen = d;
	} else {
		it.plen = len;
	}
	return push_item(c, tail, &it, visit, arg);
}

/* Appends s[a, b) to buf at *n; false when the name gets too long. */
static bool put(const struct hl_ctx *c, char *buf, size_t *n, size_t a,
		size_t b)
{
	if (b - a > DE_HOSTLIST_MAX_NAME - *n)
		return false;
	memcpy(buf + *n, c->s + a, b - a);
	*n += b - a;
	return true;
}

static int walk_brackets(struct hl_ctx *c, const struct hl_tok *t,
			 struct hl_tail *tail, char *buf, hl_visit visit,
			 void *arg)
{
	size_t np = c->ngrp - 1, i, j, n;
	const struct hl_group *last = &c->grp[np];
	size_t *ei = NULL;              /* odometer: entry per prefix group */
	unsigned long *val = NULL;      /* and value */
	struct hl_item it;
	int rc = 0;

	if (np) {
		ei = calloc(np, sizeof(*ei));
		val = calloc(np, sizeof(*val));
		if (!ei || !val) {
			rc = fail(c, "out of memory");
			goto out;
		}
		for (i = 0; i < np; i++) {
			ei[i] = c->grp[i].e0;
			val[i] = c->elem[ei[i]].lo;
		}
	}
	memset(&it, 0, sizeof(it));
	it.sfx = "";
	it.pos = t->start;
	it.num = true;
	it.sfx = c->s + t->sa;
	it.slen = t->sb - t->sa;
	for (;;) {
		n = 0;
		if (!put(c, buf, &n, t->start, t->head_end))
			goto too_long;
		for (i = 0; i < np; i++) {
			const struct hl_group *g = &c->grp[i];
			size_t w = c->elem[ei[i]].width;

			if (fmt_len(val[i], w) > DE_HOSTLIST_MAX_NAME - n)
				goto too_long;
			n += fmt_num(buf + n, val[i], w);
			if (!put(c, buf, &n, g->close + 1, g->text_end))
				goto too_long;
		}
		it.pfx = buf;
		it.plen = n;
		for (j = last->e0; j < last->e0 + last->ne; j++) {
			it.lo = c->elem[j].lo;
			it.hi = c->elem[j].hi;
			it.width = c->elem[j].width;
			rc = push_item(c, tail, &it, visit, arg);
			if (rc)
				goto out;
		}
		/* Next combination: the first bracket turns fastest. */
		for (i = 0; i < np; i++) {
			const struct hl_group *g = &c->grp[i];

			if (val[i] < c->elem[ei[i]].hi) {
				val[i]++;
				break;
			}
			if (++ei[i] == g->e0 + g->ne)
				ei[i] = g->e0;
			val[i] = c->elem[ei[i]].lo;
			if (ei[i] != g->e0)
				break;
		}
		if (i == np)
			break;
	}
	goto out;
too_long:
	rc = fail(c, "host name at position %zu is longer than %d characters",
		  t->start, DE_HOSTLIST_MAX_NAME);
out:
	free(ei);
	free(val);
	return rc;
}

/* Calls visit for every range of hosts, in order. 0 when all were visited,
 * 1 when a visitor stopped early, -1 on error. */
static int walk(struct hl_ctx *c, hl_visit visit, void *arg)
{
	struct hl_tail tail;
	struct hl_tok t;
	char buf[DE_HOSTLIST_MAX_NAME + 1];
	size_t a, b;
	int rc = 0;

	memset(&tail, 0, sizeof(tail));
	c->pos = 0;
	c->open_from = c->close_from = SIZE_MAX;
	while (rc == 0 && next_tok(c, &a, &b)) {
		if (parse_tok(c, a, b, &t))
			return -1;
		if (t.count == 0)
			continue;
		if (t.kind == TK_NAME)
			rc = walk_name(c, &t, &tail, buf, visit, arg);
		else
			rc = walk_brackets(c, &t, &tail, buf, visit, arg);
	}
	return rc;
}

/* Exact sizes including Slurm's merging (rule 7). */
static int size_visit(struct hl_ctx *c, const struct hl_item *it, void *arg)
{
	uint64_t n = it->num ? it->hi - it->lo + 1 : 1;
	uint64_t fixed = it->plen + it->slen, len;

	(void)arg;
	len = fixed + (it->num ? fmt_len(it->hi, it->width) : 0);
	if (len > c->maxlen) {
		c->maxlen = len;
		c->maxlen_pos = it->pos;
	}
	c->bytes = sat_add(c->bytes, sat_mul(n, fixed + 1));
	if (it->num)
		c->bytes = sat_add(c->bytes, sum_fmt_len(it->lo, it->hi, it->width));
	return 0;
}

/* Parses the whole expression and checks every limit: fills c->count,
 * c->bytes, c->maxlen. */
static int scan(struct hl_ctx *c)
{
	struct hl_tok t;
	uint64_t maxlen, bytes;
	size_t a, b;

	c->count = c->bytes = c->maxlen = 0;
	c->slow = false;
	c->pos = 0;
	c->open_from = c->close_from = SIZE_MAX;
	while (next_tok(c, &a, &b)) {
		if (parse_tok(c, a, b, &t))
			return -1;
		c->count = sat_add(c->count, t.count);
		if (c->count > DE_HOSTLIST_MAX_HOSTS)
			return fail(c, "expands to more than %u hosts",
				    DE_HOSTLIST_MAX_HOSTS);
		if (t.has_space)
			c->slow = true;
		tok_sizes(c, &t, &maxlen, &bytes);
		if (maxlen > c->maxlen) {
			c->maxlen = maxlen;
			c->maxlen_pos = a;
		}
		c->bytes = sat_add(c->bytes, bytes);
	}
	if (c->slow) {
		c->bytes = c->maxlen = 0;
		if (walk(c, size_visit, NULL) < 0)
			return -1;
	}
	if (c->maxlen > DE_HOSTLIST_MAX_NAME)
		return fail(c, "host name at position %zu is longer than %d characters",
			    c->maxlen_pos, DE_HOSTLIST_MAX_NAME);
	if (c->bytes > DE_HOSTLIST_MAX_BYTES)
		return fail(c, "host names need more than %u bytes",
			    DE_HOSTLIST_MAX_BYTES);
	return 0;
}

static int ctx_init(struct hl_ctx *c, const char *expr, unsigned flags,
		    struct de_err *err)
{
	memset(c, 0, sizeof(*c));
	c->s = expr ? expr : "";
	c->len = strlen(c->s);
	c->flags = flags;
	c->err = err;
	if (!expr)
		return de_errf(err, "hostlist: no expression given");
	if (flags & ~(unsigned)DE_HL_SUFFIX)
		return fail(c, "unknown flags 0x%x", flags);
	return 0;
}

static void ctx_fini(struct hl_ctx *c)
{
	free(c->grp);
	free(c->elem);
	c->grp = NULL;
	c->elem = NULL;
}

/* ---- API -------------------------------------------------------------------- */

int de_hostlist_count(const char *expr, unsigned flags, size_t *count,
		      struct de_err *err)
{
	struct hl_ctx c;
	int rc;

	if (count)
		*count = 0;
	rc = ctx_init(&c, expr, flags, err);
	if (rc == 0 && !count)
		rc = fail(&c, "no place for the count");
	if (rc == 0)
		rc = scan(&c);
	if (rc == 0)
		*count = (size_t)c.count;
	ctx_fini(&c);
	return rc;
}

struct fill {
	struct de_hostlist *hl;
	size_t used, cap;
};

static int fill_visit(struct hl_ctx *c, const struct hl_item *it, void *arg)
{
	struct fill *f = arg;
	unsigned long v = it->lo;

	for (;;) {
		size_t len = it->plen + it->slen +
			     (it->num ? fmt_len(v, it->width) : 0);
		char *p = f->hl->store + f->used;

		if (f->hl->count >= c->count || len + 1 > f->cap - f->used)
			return fail(c, "internal error: sizes do not add up");
		memcpy(p, it->pfx, it->plen);
		if (it->num)
			fmt_num(p + it->plen, v, it->width);
		memcpy(p + len - it->slen, it->sfx, it->slen);
		p[len] = '\0';
		f->hl->host[f->hl->count++] = p;
		f->used += len + 1;
		if (!it->num || v == it->hi)
			return 0;
		v++;
	}
}

int de_hostlist_expand(const char *expr, unsigned flags,
		       struct de_hostlist *out, struct de_err *err)
{
	struct hl_ctx c;
	struct fill f;
	struct de_hostlist hl = { 0, NULL, NULL };
	int rc;

	if (out)
		*out = hl;
	rc = ctx_init(&c, expr, flags, err);
	if (rc == 0 && !out)
		rc = fail(&c, "no place for the result");
	if (rc == 0)
		rc = scan(&c);
	if (rc == 0) {
		hl.host = malloc(((size_t)c.count ? (size_t)c.count : 1) *
				 sizeof(*hl.host));
		hl.store = malloc((size_t)c.bytes ? (size_t)c.bytes : 1);
		if (!hl.host || !hl.store)
			rc = fail(&c, "out of memory for %zu hosts",
				  (size_t)c.count);
	}
	if (rc == 0) {
		f.hl = &hl;
		f.used = 0;
		f.cap = (size_t)c.bytes;
		rc = walk(&c, fill_visit, &f) < 0 ? -1 : 0;
		if (rc == 0 && (hl.count != c.count || f.used != c.bytes))
			rc = fail(&c, "internal error: sizes do not add up");
	}
	ctx_fini(&c);
	if (rc) {
		de_hostlist_free(&hl);
		return -1;
	}
	*out = hl;
	return 0;
}

void de_hostlist_free(struct de_hostlist *hl)
{
	if (!hl)
		return;
	free(hl->host);
	free(hl->store);
	hl->host = NULL;
	hl->store = NULL;
	hl->count = 0;
}

/* Writes the host pfx + v + sfx of it into buf. */
static int put_host(struct hl_ctx *c, const struct hl_item *it,
		    unsigned long v, char *buf, size_t bufsz)
{
	size_t len = it->plen + it->slen + (it->num ? fmt_len(v, it->width) : 0);

	if (len + 1 > bufsz)
		return fail(c, "host name needs %zu bytes, the buffer has %zu",
			    len + 1, bufsz);
	memcpy(buf, it->pfx, it->plen);
	if (it->num)
		fmt_num(buf + it->plen, v, it->width);
	memcpy(buf + len - it->slen, it->sfx, it->slen);
	buf[len] = '\0';
	return 0;
}

struct nth {
	uint64_t n;
	char *buf;
	size_t bufsz;
};

static int nth_visit(struct hl_ctx *c, const struct hl_item *it, void *arg)
{
	struct nth *q = arg;
	uint64_t cnt = it->num ? it->hi - it->lo + 1 : 1;

	if (q->n >= cnt) {
		q->n -= cnt;
		return 0;
	}
	if (put_host(c, it, it->lo + (unsigned long)q->n, q->buf, q->bufsz))
		return -1;
	return 1;
}

/* Host m of token t when nothing merges (no white space): the brackets'
 * values are digits of m in a mixed radix, in the loop order of rule 6. */
static int tok_nth(struct hl_ctx *c, const struct hl_tok *t, uint64_t m,
		   char *buf, size_t bufsz)
{
	char name[DE_HOSTLIST_MAX_NAME + 1];
	struct hl_item it;
	size_t np, i, j, n = 0;
	uint64_t idx;

	memset(&it, 0, sizeof(it));
	it.sfx = "";
	if (t->kind == TK_NAME) {
		memcpy(name, c->s + t->na, t->nb - t->na);
		n = t->nb - t->na;
		if (t->close_it)
			name[n++] = ']';
		it.pfx = name;
		it.plen = n;
		return put_host(c, &it, 0, buf, bufsz);
	}
	np = c->ngrp - 1;
	idx = m / c->grp[np].count;
	put(c, name, &n, t->start, t->head_end);
	for (i = 0; i < np; i++) {
		const struct hl_group *g = &c->grp[i];
		uint64_t k = idx % g->count;

		idx /= g->count;
		for (j = g->e0; k > c->elem[j].hi - c->elem[j].lo; j++)
			k -= c->elem[j].hi - c->elem[j].lo + 1;
		n += fmt_num(name + n, c->elem[j].lo + (unsigned long)k,
			     c->elem[j].width);
		put(c, name, &n, g->close + 1, g->text_end);
	}
	idx = m % c->grp[np].count;
	for (j = c->grp[np].e0; idx > c->elem[j].hi - c->elem[j].lo; j++)
		idx -= c->elem[j].hi - c->elem[j].lo + 1;
	it.pfx = name;
	it.plen = n;
	it.num = true;
	it.width = c->elem[j].width;
	it.sfx = c->s + t->sa;
	it.slen = t->sb - t->sa;
	return put_host(c, &it, c->elem[j].lo + (unsigned long)idx, buf, bufsz);
}

int de_hostlist_nth(const char *expr, unsigned flags, size_t n, char *buf,
		    size_t bufsz, struct de_err *err)
{
	struct hl_ctx c;
	struct hl_tok t;
	struct nth q;
	uint64_t m = n;
	size_t a, b;
	int rc;

	if (buf && bufsz)
		buf[0] = '\0';
	rc = ctx_init(&c, expr, flags, err);
	if (rc == 0 && !buf)
		rc = fail(&c, "no buffer for host %zu", n);
	if (rc == 0)
		rc = scan(&c);
	if (rc == 0 && m >= c.count)
		rc = fail(&c, "no host %zu: it has %zu hosts", n,
			  (size_t)c.count);
	if (rc == 0 && c.slow) {
		q.n = m;
		q.buf = buf;
		q.bufsz = bufsz;
		rc = walk(&c, nth_visit, &q) == 1 ? 0 : -1;
	} else if (rc == 0) {
		c.pos = 0;
		c.open_from = c.close_from = SIZE_MAX;
		rc = -1;
		while (next_tok(&c, &a, &b)) {
			if (parse_tok(&c, a, b, &t))
				break;
			if (m < t.count) {
				rc = tok_nth(&c, &t, m, buf, bufsz);
				break;
			}
			m -= t.count;
		}
	}
	ctx_fini(&c);
	if (rc && buf && bufsz)
		buf[0] = '\0';
	return rc ? -1 : 0;
}

struct find {
	const char *name;
	size_t len;
	uint64_t index;
};

/* Is q->name one of the hosts of it? */
static int find_visit(struct hl_ctx *c, const struct hl_item *it, void *arg)
{
	struct find *q = arg;
	uint64_t cnt = it->num ? it->hi - it->lo + 1 : 1;
	const char *d;
	size_t dlen, i;
	unsigned long v;
	bool big = false;

	(void)c;
	if (q->len < it->plen + it->slen ||
	    memcmp(q->name, it->pfx, it->plen) != 0 ||
	    memcmp(q->name + q->len - it->slen, it->sfx, it->slen) != 0)
		goto miss;
	d = q->name + it->plen;
	dlen = q->len - it->plen - it->slen;
	if (!it->num) {
		if (dlen == 0)
			return 1;
		goto miss;
	}
	/* d must be exactly what "%0*lu" prints for some value in lo..hi */
	for (i = 0; i < dlen; i++) {
		if (!is_digit((unsigned char)d[i]))
			goto miss;
	}
	if (dlen == 0)
		goto miss;
	scan_ul(d, dlen, &v, &big);
	if (big || v < it->lo || v > it->hi || fmt_len(v, it->width) != dlen)
		goto miss;
	q->index += v - it->lo;
	return 1;
miss:
	q->index += cnt;
	return 0;
}

long de_hostlist_find(const char *expr, unsigned flags, const char *name,
		      struct de_err *err)
{
	struct hl_ctx c;
	struct find q;
	int rc;

	rc = ctx_init(&c, expr, flags, err);
	if (rc == 0 && !name)
		rc = fail(&c, "no host name to look for");
	if (rc == 0)
		rc = scan(&c);
	if (rc == 0) {
		q.name = name;
		q.len = strlen(name);
		q.index = 0;
		rc = walk(&c, find_visit, &q);
		if (rc == 0) {
			char txt[48];
			size_t i;

			for (i = 0; i < sizeof(txt) - 4 && name[i]; i++) {
				unsigned char ch = (unsigned char)name[i];

				txt[i] = ch < 0x20 || ch == '"' ? '?' : (char)ch;
			}
			strcpy(txt + i, name[i] ? "..." : "");
			rc = fail(&c, "host \"%s\" is not in the list", txt);
		} else if (rc == 1) {
			rc = 0;
		}
	}
	ctx_fini(&c);
	return rc ? -1 : (long)q.index;
}
