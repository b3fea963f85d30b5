/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What distenv-check needs to know about the CUDA runtime and NCCL it
 * loads at run time, as pure functions: the runtime's soname for the
 * headers it was built against, NCCL version codes, and NCCL's refusal of
 * two ranks on one GPU. No CUDA headers here: the numbers come in. */
#ifndef DISTENV_CUDALIB_H
#define DISTENV_CUDALIB_H

#include <stddef.h>

#include "err.h"

/* The oldest NCCL the backend runs on (nonblocking communicators,
 * ncclCommFinalize): 2.14.0. */
#define DE_NCCL_MIN_MAJOR 2
#define DE_NCCL_MIN_MINOR 14

/* The soname of the CUDA runtime for CUDART_VERSION v (12040 = 12.4):
 * "libcudart.so.12" from CUDA 12 on, "libcudart.so.11.0" for every 11.x,
 * "libcudart.so.10.2" before. 0, or -1 with e set (v not a version). */
int de_cudart_soname(int v, char *out, size_t len, struct de_err *e);

/* An ncclGetVersion code (22809, or 2408 before 2.9) as major, minor,
 * patch. 0, or -1 with e set. */
int de_nccl_version_split(int code, int *major, int *minor, int *patch, struct de_err *e);

/* Is code at least DE_NCCL_MIN_MAJOR.DE_NCCL_MIN_MINOR? 1 yes, 0 no (e
 * says which version was found and what is needed), -1 not a code. */
int de_nccl_version_ok(int code, struct de_err *e);

/* NCCL's last error when init found two ranks on one GPU ("Duplicate GPU
 * detected : rank 0 and rank 1 both on CUDA device 1000"): 1, with the two
 * ranks and the device's bus id (hex, as NCCL prints it) where the text
 * has them (else -1, -1, ""); 0 for any other error. */
int de_nccl_dup_gpu(const char *last_error, int *rank_a, int *rank_b,
		    char *busid, size_t busid_len);

#endif
