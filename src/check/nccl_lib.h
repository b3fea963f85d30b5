/* NCCL and the CUDA runtime, loaded at run time (dlopen) when the NCCL
 * backend is asked for: one distenv-check for CPU and GPU nodes. The
 * backend calls them through de_nl; nothing else does. */
#ifndef DE_NCCL_LIB_H
#define DE_NCCL_LIB_H

#include <cuda_runtime_api.h>
/* nccl.h declares ncclGroupStart() and friends without a prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "fail.h"

/* Every function the backend calls, by its own name and type. */
#define DE_NL_FUNCS(X) \
	X(cudaEventCreate) X(cudaEventDestroy) X(cudaEventElapsedTime) \
	X(cudaEventQuery) X(cudaEventRecord) X(cudaFree) X(cudaGetDeviceCount) \
	X(cudaGetErrorName) X(cudaGetErrorString) X(cudaGetLastError) \
	X(cudaMalloc) X(cudaMemcpyAsync) X(cudaSetDevice) \
	X(cudaStreamCreateWithFlags) X(cudaStreamDestroy) X(cudaStreamQuery) \
	X(ncclAllReduce) X(ncclCommAbort) X(ncclCommDestroy) X(ncclCommFinalize) \
	X(ncclCommGetAsyncError) X(ncclCommInitRankConfig) X(ncclGetErrorString) \
	X(ncclGetLastError) X(ncclGetUniqueId) X(ncclGroupStart) \
	X(ncclGetVersion)

struct de_nccl_lib {
#define DE_NL_FIELD(fn) __typeof__(&fn) fn;
	DE_NL_FUNCS(DE_NL_FIELD)
#undef DE_NL_FIELD
};

extern struct de_nccl_lib de_nl;

/* Load both libraries once (later calls return the first outcome). 0, or
 * -1 with f set to nccl-missing naming the library, the places tried and
 * the loader's reason, or an NCCL too old for the backend. */
int de_nccl_lib_load(struct de_fail *f);

#endif
