/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NCCL and the CUDA runtime, loaded at run time (dlopen) when the NCCL
 * backend is asked for: one distenv-check for CPU and GPU nodes. The
 * backend calls them through de_nl; nothing else does. Compiled against
 * the headers configure found; nothing links the libraries. */
#ifndef DISTENV_NCCL_LIB_H
#define DISTENV_NCCL_LIB_H

#include <stddef.h>

#include <cuda_runtime_api.h>
/* nccl.h declares ncclGroupStart() and friends without a prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "fail.h"

/* Every function the backend calls, by its own name and type. */
#define DE_NL_CUDART_FUNCS(X) \
	X(cudaDeviceGetPCIBusId) X(cudaEventCreate) X(cudaEventDestroy) \
	X(cudaEventElapsedTime) X(cudaEventQuery) X(cudaEventRecord) X(cudaFree) \
	X(cudaGetDeviceCount) X(cudaGetErrorName) X(cudaGetErrorString) \
	X(cudaGetLastError) X(cudaMalloc) X(cudaMemcpyAsync) X(cudaSetDevice) \
	X(cudaStreamCreateWithFlags) X(cudaStreamDestroy) X(cudaStreamQuery)
#define DE_NL_NCCL_FUNCS(X) \
	X(ncclAllReduce) X(ncclCommAbort) X(ncclCommDestroy) X(ncclCommFinalize) \
	X(ncclCommGetAsyncError) X(ncclCommInitRankConfig) X(ncclGetErrorString) \
	X(ncclGetLastError) X(ncclGetUniqueId) X(ncclGetVersion)

struct de_nccl_lib {
#define DE_NL_FIELD(fn) __typeof__(&fn) fn;
	DE_NL_CUDART_FUNCS(DE_NL_FIELD)
	DE_NL_NCCL_FUNCS(DE_NL_FIELD)
#undef DE_NL_FIELD
	int nccl_version; /* ncclGetVersion's code */
	char cudart_path[512], nccl_path[512]; /* the files loaded */
};

extern struct de_nccl_lib de_nl;

/* Loads both libraries once; later calls return the first outcome. 0, or
 * -1 with f set to nccl-missing naming the library, every place tried
 * with the loader's reason, or the NCCL found being too old. */
int de_nccl_lib_load(struct de_fail *f);

/* After a load, the GPUs CUDA sees here; 0 when none or no driver, then
 * why says so (nccl.c). */
int de_nccl_device_count(struct de_err *why);

/* After a load: "NCCL 2.28.9 (/path/libnccl.so.2), CUDA runtime
 * /path/libcudart.so.13", for the verbose line. */
void de_nccl_lib_describe(char *out, size_t len);

#endif
