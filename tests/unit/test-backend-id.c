/* SPDX-License-Identifier: GPL-2.0-or-later */
/* backend_id.c: every name parses to its backend and back, the HELLO
 * numbers stay what older ranks send, and nothing else parses. */
#include "config.h"

#include "backend_id.h"
#include "tap.h"

int main(void)
{
	static const char *const bad[] = { "", "Socket", "NCCL", "sockets", "nccl ", " auto",
					   "none", "unknown", "0", "1" };
	enum de_backend b;
	unsigned i;

	/* On the wire (proto.h's de_hello.backend): never renumbered. */
	is_int(DE_BACKEND_AUTO, 0, "auto is 0 (a HELLO before a backend was chosen)");
	is_int(DE_BACKEND_SOCKET, 1, "socket is 1 in a HELLO");
	is_int(DE_BACKEND_NCCL, 2, "nccl is 2 in a HELLO");

	for (i = 0; i < DE_BACKEND_COUNT; i++) {
		const char *n = de_backend_name((enum de_backend)i);

		b = DE_BACKEND_COUNT;
		ok(de_backend_parse(n, &b) == 0 && b == (enum de_backend)i,
		   "%s parses back to %u", n, i);
	}
	is_str(de_backend_name(DE_BACKEND_AUTO), "auto", "name of auto");
	is_str(de_backend_name(DE_BACKEND_SOCKET), "socket", "name of socket");
	is_str(de_backend_name(DE_BACKEND_NCCL), "nccl", "name of nccl");
	is_str(de_backend_name(DE_BACKEND_OFF), "off", "name of off");
	is_str(de_backend_name(DE_BACKEND_COUNT), "unknown", "a value past the list has no name");
	is_str(de_backend_name((enum de_backend)200), "unknown", "nor does a stray HELLO byte");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = DE_BACKEND_NCCL;
		ok(de_backend_parse(bad[i], &b) == -1 && b == DE_BACKEND_NCCL,
		   "\"%s\" is no backend, and *b is untouched", bad[i]);
	}
	b = DE_BACKEND_NCCL;
	ok(de_backend_parse(NULL, &b) == -1 && b == DE_BACKEND_NCCL, "NULL is no backend");
	return tap_done();
}
