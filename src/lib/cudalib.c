/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cudalib.h"

int de_cudart_soname(int v, char *out, size_t len, struct de_err *e)
{
	int major = v / 1000, minor = (v % 1000) / 10;

	if (v < 1000 || v > 999999)
		return de_errf(e, "CUDART_VERSION %d: expected a CUDA runtime version like 12040 (12.4)", v);
	/* CUDA 11 froze the soname at 11.0 for every minor; 12 dropped the minor. */
	if (major >= 12)
		snprintf(out, len, "libcudart.so.%d", major);
	else if (major == 11)
		snprintf(out, len, "libcudart.so.11.0");
	else
		snprintf(out, len, "libcudart.so.%d.%d", major, minor);
	return 0;
}

int de_nccl_version_split(int code, int *major, int *minor, int *patch, struct de_err *e)
{
	if (code <= 0 || code > 999999)
		return de_errf(e, "NCCL version code %d: expected one like 22809 (2.28.9)", code);
	/* NCCL_VERSION(): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9. */
	if (code < 10000) {
		*major = code / 1000;
		*minor = (code % 1000) / 100;
	} else {
		*major = code / 10000;
		*minor = (code % 10000) / 100;
	}
	*patch = code % 100;
	return 0;
}

int de_nccl_version_ok(int code, struct de_err *e)
{
	int major, minor, patch;

	if (de_nccl_version_split(code, &major, &minor, &patch, e))
		return -1;
	if (major > DE_NCCL_MIN_MAJOR || (major == DE_NCCL_MIN_MAJOR && minor >= DE_NCCL_MIN_MINOR))
		return 1;
	de_errf(e, "NCCL %d.%d.%d is loaded: the NCCL backend needs %d.%d or later "
		"(nonblocking communicators, ncclCommFinalize)",
		major, minor, patch, DE_NCCL_MIN_MAJOR, DE_NCCL_MIN_MINOR);
	return 0;
}

int de_nccl_dup_gpu(const char *last_error, int *rank_a, int *rank_b,
		    char *busid, size_t busid_len)
{
	const char *p;
	char id[32];
	int n = 0;

	/* NCCL's init.cc: "Duplicate GPU detected : rank %d and rank %d both
	 * on CUDA device %lx" (2.x, unchanged through 2.28). */
	*rank_a = *rank_b = -1;
	if (busid_len > 0)
		*busid = '\0';
	if (last_error == NULL || (p = strstr(last_error, "Duplicate GPU detected")) == NULL)
		return 0;
	/* Reworded details still mean the same refusal: only they go unnamed. */
	if (sscanf(p, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %31[0-9a-fA-F]%n",
		   rank_a, rank_b, id, &n) == 3 && n > 0)
		snprintf(busid, busid_len, "%s", id);
	else
		*rank_a = *rank_b = -1;
	return 1;
}
