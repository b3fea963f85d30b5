/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv NCCL stand-in, not NCCL: a libnccl.so.2 and a libcudart.so.<major>
 * for CPU-only test machines, so that distenv-check's NCCL backend (its
 * loading, unique-id exchange, nonblocking init, allreduce, verification,
 * error mapping, bench and pair sweep) runs on every CI run. It proves
 * distenv's glue, not NCCL or a GPU: tests/gpu/device-check.sh is the
 * proof on hardware. Built by `make check` only, never installed.
 *
 * "Device" memory is host memory; a stream is a FIFO worked by one thread
 * per stream; a communicator is a star over TCP around rank 0. The
 * libraries are compiled against the real cuda_runtime_api.h and nccl.h,
 * so types, result codes and error strings are NVIDIA's own.
 *
 * Fault switches (environment, read by every rank, or by the one named in
 * DE_STANDIN_FAULT_RANK when it is set):
 *   DE_STANDIN_FAULT=init-hang    init never completes (until aborted)
 *   DE_STANDIN_FAULT=async-error  ncclAllReduce fails asynchronously
 *                                 midway (ncclSystemError), never completes
 *   DE_STANDIN_FAULT=old-version  ncclGetVersion says 2.13.3
 *   DE_STANDIN_FAULT=no-devices   cudaGetDeviceCount: cudaErrorNoDevice
 *   DE_STANDIN_FAULT=wrong-sum    the allreduce's first element is off by one
 * DE_STANDIN_DEVICES (default 2) is the device count; CUDA_VISIBLE_DEVICES
 * narrows it as CUDA does. A missing symbol is the variant library in
 * missing-symbol/ (no ncclCommGetAsyncError). */
#ifndef DISTENV_NCCL_STANDIN_H
#define DISTENV_NCCL_STANDIN_H

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define STANDIN_BANNER "distenv NCCL stand-in, not NCCL"

/* Runs fn(arg) on the stream's thread after everything queued before it
 * (libcudart stand-in -> libnccl stand-in; nothing else calls it). */
cudaError_t distenv_standin_enqueue(cudaStream_t s, void (*fn)(void *), void *arg);

/* 1 when DE_STANDIN_FAULT is name and applies to this rank (rank < 0:
 * not known here, RANK from the environment is used). */
static inline int distenv_standin_fault(const char *name, int rank)
{
	const char *f = getenv("DE_STANDIN_FAULT"), *r = getenv("DE_STANDIN_FAULT_RANK");

	if (f == NULL || strcmp(f, name) != 0)
		return 0;
	if (r == NULL || *r == '\0')
		return 1;
	if (rank < 0) {
		const char *mine = getenv("RANK");

		return mine != NULL && strcmp(mine, r) == 0;
	}
	return atoi(r) == rank;
}

#endif
