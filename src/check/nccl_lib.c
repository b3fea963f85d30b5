/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loads NCCL and the CUDA runtime when the NCCL backend is asked for, so
 * one distenv-check runs on CPU nodes (no CUDA at all) and on GPU nodes.
 * Each library from the loader's default search first (LD_LIBRARY_PATH,
 * ld.so.cache), then from the directory configure found it in, so a CUDA
 * under /usr/local/cuda works without LD_LIBRARY_PATH. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cudalib.h"
#include "nccl_lib.h"

#ifndef DE_CUDA_LIBDIR
#define DE_CUDA_LIBDIR ""
#endif
#ifndef DE_NCCL_LIBDIR
#define DE_NCCL_LIBDIR ""
#endif
#define NCCL_SONAME "libnccl.so.2"

struct de_nccl_lib de_nl;

static int s_state; /* 0 not tried, 1 loaded, -1 failed (s_fail says why) */
static struct de_fail s_fail;

/* dlerror() without the "NAME: " it starts with (the caller names it). */
static const char *reason(const char *name)
{
	const char *e = dlerror();
	size_t n = strlen(name);

	if (e == NULL)
		return "not found";
	if (strncmp(e, name, n) == 0 && e[n] == ':' && e[n + 1] == ' ')
		return e + n + 2;
	return e;
}

/* dlopen NAME from the default search, else from DIR: the handle, or NULL
 * with every file tried and the loader's reason for each in tried. */
static void *open_lib(const char *name, const char *dir, char *tried, size_t len)
{
	char path[1024];
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (h != NULL)
		return h;
	snprintf(tried, len, "%s (%s)", name, reason(name));
	if (*dir && strcmp(dir, "/") != 0) {
		size_t used = strlen(tried);

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h != NULL)
			return h;
		snprintf(tried + used, len - used, ", %s (%s)", path, reason(path));
	}
	return NULL;
}

/* The file a symbol came from, for the verbose line. */
static void origin(void *sym, char *out, size_t len)
{
	Dl_info info;

	if (dladdr(sym, &info) != 0 && info.dli_fname != NULL)
		snprintf(out, len, "%s", info.dli_fname);
	else
		snprintf(out, len, "?");
}

/* Into *slot, the address of NAME in H (dlsym's void * copied, as POSIX
 * has it for function pointers). */
static int sym(void *h, const char *lib, const char *name, void *slot, struct de_fail *f)
{
	const char *why;
	void *p;

	(void)dlerror();
	p = dlsym(h, name);
	if (p == NULL) {
		why = dlerror();
		return de_fail_set(f, DE_D_NCCL_MISSING,
				   "--backend=nccl: %s has no %s (%s): an older or partial installation",
				   lib, name, why != NULL ? why : "its address is NULL");
	}
	memcpy(slot, &p, sizeof(p));
	return 0;
}

static int load(struct de_fail *f)
{
	char tried[1024], tried_nccl[1024], cudart_name[64];
	struct de_err e;
	void *cudart, *nccl;
	int v = 0;

	if (de_cudart_soname(CUDART_VERSION, cudart_name, sizeof(cudart_name), &e))
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	/* Both tried, so that a node missing both hears of both at once. */
	nccl = open_lib(NCCL_SONAME, DE_NCCL_LIBDIR, tried_nccl, sizeof(tried_nccl));
	cudart = open_lib(cudart_name, DE_CUDA_LIBDIR, tried, sizeof(tried));
	if (nccl == NULL && cudart == NULL)
		return de_fail_set(f, DE_D_NCCL_MISSING,
				   "--backend=nccl: neither NCCL " NCCL_SONAME " nor the CUDA runtime %s "
				   "(CUDA %d, as the headers this distenv-check was built with) loads here: tried %s; %s",
				   cudart_name, CUDART_VERSION / 1000, tried_nccl, tried);
	if (nccl == NULL)
		return de_fail_set(f, DE_D_NCCL_MISSING,
				   "--backend=nccl: NCCL " NCCL_SONAME " does not load here: tried %s", tried_nccl);
	if (cudart == NULL)
		return de_fail_set(f, DE_D_NCCL_MISSING,
				   "--backend=nccl: the CUDA runtime %s (CUDA %d, as the headers this distenv-check was built with) does not load here: tried %s",
				   cudart_name, CUDART_VERSION / 1000, tried);
#define DE_NL_CUDART(fn) if (sym(cudart, cudart_name, #fn, &de_nl.fn, f)) return -1;
#define DE_NL_NCCL(fn) if (sym(nccl, NCCL_SONAME, #fn, &de_nl.fn, f)) return -1;
	DE_NL_CUDART_FUNCS(DE_NL_CUDART)
	DE_NL_NCCL_FUNCS(DE_NL_NCCL)
#undef DE_NL_CUDART
#undef DE_NL_NCCL
	origin((void *)de_nl.cudaGetDeviceCount, de_nl.cudart_path, sizeof(de_nl.cudart_path));
	origin((void *)de_nl.ncclGetVersion, de_nl.nccl_path, sizeof(de_nl.nccl_path));
	if (de_nl.ncclGetVersion(&v) != ncclSuccess)
		return de_fail_set(f, DE_D_NCCL_MISSING, "--backend=nccl: ncclGetVersion failed in %s",
				   de_nl.nccl_path);
	if (de_nccl_version_ok(v, &e) != 1)
		return de_fail_set(f, DE_D_NCCL_MISSING, "--backend=nccl: %s (%s)", e.msg, de_nl.nccl_path);
	de_nl.nccl_version = v;
	return 0;
}

int de_nccl_lib_load(struct de_fail *f)
{
	if (s_state == 0)
		s_state = load(&s_fail) == 0 ? 1 : -1;
	if (s_state < 0) {
		*f = s_fail;
		return -1;
	}
	return 0;
}

void de_nccl_lib_describe(char *out, size_t len)
{
	int major = 0, minor = 0, patch = 0;
	struct de_err e;

	if (s_state != 1) {
		snprintf(out, len, "NCCL not loaded");
		return;
	}
	de_nccl_version_split(de_nl.nccl_version, &major, &minor, &patch, &e);
	snprintf(out, len, "NCCL %d.%d.%d (%s), CUDA runtime %s", major, minor, patch,
		 de_nl.nccl_path, de_nl.cudart_path);
}
