/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's backends by name: the one list behind distenv-check
 * --backend=, the plugin's check= and --dist-check=, distenv-exec
 * --check= and the backend byte of a rank's HELLO. */
#ifndef DISTENV_BACKEND_ID_H
#define DISTENV_BACKEND_ID_H

enum de_backend {
	DE_BACKEND_AUTO = 0,   /* the first usable one; 0 in a HELLO: none chosen */
	DE_BACKEND_SOCKET = 1, /* HELLO sends these numbers: never renumber */
	DE_BACKEND_NCCL = 2,
	DE_BACKEND_OFF = 3,    /* the launchers' "run no check" */
	DE_BACKEND_COUNT
};

/* "auto", "socket", "nccl", "off"; "unknown" for any other value (a
 * HELLO's byte is whatever the peer sent). */
const char *de_backend_name(enum de_backend b);

/* The backend named s exactly: 0 with *b, or -1 (*b untouched). Callers
 * word their own error: each accepts its own subset (distenv-check has no
 * "off"). */
int de_backend_parse(const char *s, enum de_backend *b);

#endif
