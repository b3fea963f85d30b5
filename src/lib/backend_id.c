/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <string.h>

#include "backend_id.h"

static const char *const names[DE_BACKEND_COUNT] = {
	[DE_BACKEND_AUTO] = "auto",
	[DE_BACKEND_SOCKET] = "socket",
	[DE_BACKEND_NCCL] = "nccl",
	[DE_BACKEND_OFF] = "off",
};

const char *de_backend_name(enum de_backend b)
{
	return (unsigned)b < DE_BACKEND_COUNT ? names[b] : "unknown";
}

int de_backend_parse(const char *s, enum de_backend *b)
{
	unsigned i;

	for (i = 0; s != NULL && i < DE_BACKEND_COUNT; i++)
		if (strcmp(s, names[i]) == 0) {
			*b = (enum de_backend)i;
			return 0;
		}
	return -1;
}
