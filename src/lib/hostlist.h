/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm hostlist expressions ("node[01-04],gpu[1-2]-ib") expanded exactly
 * as Slurm's hostlist_create() followed by hostlist_shift() does it (what
 * `scontrol show hostnames` prints): same order, duplicates kept, same
 * zero padding, same expressions rejected. Pure C: no Slurm, no sockets.
 *
 * Two grammars:
 *   flags 0            Slurm 22.05: separators ", \t"; text after the last
 *                      ']' is an error; a '[' with no ']' is "fixed" the
 *                      way 22.05 does it ("node[1-" is the host "node]").
 *   DE_HL_SUFFIX       Slurm >= 23.11.0 (23.11 to 26.05): '\n' separates too;
 *                      text after ']' is kept ("node[1-2]-ib"); a '[' with
 *                      no ']' is an error.
 *
 * Deliberate differences from Slurm, all errors where Slurm would print
 * wrong names or run out of memory: a number of ULONG_MAX or more (Slurm
 * wraps it around), more than DE_HOSTLIST_MAX_HOSTS hosts, a name longer
 * than DE_HOSTLIST_MAX_NAME, more than DE_HOSTLIST_MAX_BYTES of names.
 *
 * Error messages name the expression and a 0-based position in it. */
#ifndef DISTENV_HOSTLIST_H
#define DISTENV_HOSTLIST_H

#include <stddef.h>

#include "err.h"

#define DE_HOSTLIST_MAX_HOSTS  (1u << 20)   /* hard limit on expanded host count */
#define DE_HOSTLIST_MAX_NAME   255          /* longest host name */
#define DE_HOSTLIST_MAX_BYTES  (64u << 20)  /* all names, one NUL each */

enum { DE_HL_SUFFIX = 1 };  /* accept text after ']' (Slurm >= 23.11.0 grammar); without it, behave like 22.05 */

struct de_hostlist {
	size_t count;
	char **host;
	char *store;    /* private: one block holding every name */
};

/* Expand expr; on success fills out (free with de_hostlist_free) and
 * returns 0; else -1 with err set and out left empty. */
int de_hostlist_expand(const char *expr, unsigned flags,
		       struct de_hostlist *out, struct de_err *err);

/* Frees what de_hostlist_expand filled in and leaves hl empty; safe on an
 * empty or already freed list. */
void de_hostlist_free(struct de_hostlist *hl);

/* Count hosts without materialising them (linear in the expression
 * length); fails exactly when de_hostlist_expand fails. */
int de_hostlist_count(const char *expr, unsigned flags, size_t *count,
		      struct de_err *err);

/* Host number n (0-based) into buf, without materialising the list; an
 * error when n is out of range or buf is too small. */
int de_hostlist_nth(const char *expr, unsigned flags, size_t n, char *buf,
		    size_t bufsz, struct de_err *err);

/* Index of the first host whose name is exactly name, or -1 (err set) if
 * absent or the expression is invalid. */
long de_hostlist_find(const char *expr, unsigned flags, const char *name,
		      struct de_err *err);

/* The reverse, for one readable line at any size: n host names as a
 * sorted, duplicate-free ranged expression ("node[001-128],login1") that
 * de_hostlist_expand turns back into the same set. Only trailing digits
 * form ranges; zero-padded numbers keep their width. When the expression
 * does not fit in len, it ends in ",...(N more)" and the return is 1;
 * 0 when whole, -1 out of memory. */
int de_hostlist_compress(const char *const *hosts, size_t n, char *out, size_t len);

#endif
