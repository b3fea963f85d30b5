/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "cudalib.h"
#include "tap.h"

int main(void)
{
	struct de_err e;
	char so[64], bus[32];
	int ma = -1, mi = -1, pa = -1, a = -1, b = -1;

	ok(de_cudart_soname(13000, so, sizeof(so), &e) == 0, "CUDA 13.0 runtime");
	is_str(so, "libcudart.so.13", "CUDA 13: libcudart.so.13");
	de_cudart_soname(12040, so, sizeof(so), &e);
	is_str(so, "libcudart.so.12", "CUDA 12.4: libcudart.so.12 (no minor from 12 on)");
	de_cudart_soname(11080, so, sizeof(so), &e);
	is_str(so, "libcudart.so.11.0", "CUDA 11.8: libcudart.so.11.0 (11's soname froze at 11.0)");
	de_cudart_soname(10020, so, sizeof(so), &e);
	is_str(so, "libcudart.so.10.2", "CUDA 10.2: libcudart.so.10.2");
	ok(de_cudart_soname(13, so, sizeof(so), &e) == -1, "13 is not a CUDART_VERSION");
	is_str(e.msg, "CUDART_VERSION 13: expected a CUDA runtime version like 12040 (12.4)",
	       "the error names the value and the form expected");

	ok(de_nccl_version_split(22809, &ma, &mi, &pa, &e) == 0 && ma == 2 && mi == 28 && pa == 9,
	   "22809 is 2.28.9");
	ok(de_nccl_version_split(2804, &ma, &mi, &pa, &e) == 0 && ma == 2 && mi == 8 && pa == 4,
	   "2804 is 2.8.4 (the old encoding)");
	ok(de_nccl_version_split(21400, &ma, &mi, &pa, &e) == 0 && ma == 2 && mi == 14 && pa == 0,
	   "21400 is 2.14.0");
	ok(de_nccl_version_split(0, &ma, &mi, &pa, &e) == -1, "0 is not a version code");
	is_str(e.msg, "NCCL version code 0: expected one like 22809 (2.28.9)", "... and says so");

	is_int(de_nccl_version_ok(22809, &e), 1, "2.28.9 is new enough");
	is_int(de_nccl_version_ok(21400, &e), 1, "2.14.0 is new enough");
	is_int(de_nccl_version_ok(30000, &e), 1, "3.0.0 is new enough");
	is_int(de_nccl_version_ok(21305, &e), 0, "2.13.5 is too old");
	is_str(e.msg, "NCCL 2.13.5 is loaded: the NCCL backend needs 2.14 or later (nonblocking communicators, ncclCommFinalize)",
	       "too old: names the version found and the one needed");
	is_int(de_nccl_version_ok(2804, &e), 0, "2.8.4 is too old");
	is_int(de_nccl_version_ok(-5, &e), -1, "a negative code is refused");

	ok(de_nccl_dup_gpu("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
			   &a, &b, bus, sizeof(bus)) == 1 && a == 1 && b == 0,
	   "NCCL's duplicate-GPU warning: both ranks");
	is_str(bus, "1000", "... and the device's bus id");
	ok(de_nccl_dup_gpu("init.cc:974 NCCL WARN Duplicate GPU detected : rank 3 and rank 7 both on CUDA device ac000",
			   &a, &b, bus, sizeof(bus)) == 1 && a == 3 && b == 7,
	   "with NCCL's log prefix in front");
	is_str(bus, "ac000", "... bus id ac000");
	is_int(de_nccl_dup_gpu("invalid usage (run with NCCL_DEBUG=WARN for details)", &a, &b, bus,
			       sizeof(bus)), 0, "another invalid usage is not a duplicate GPU");
	ok(de_nccl_dup_gpu("Duplicate GPU detected on rank 2", &a, &b, bus, sizeof(bus)) == 1 &&
	   a == -1 && b == -1 && bus[0] == '\0',
	   "reworded details: still a duplicate GPU, the ranks unknown");
	is_int(de_nccl_dup_gpu(NULL, &a, &b, bus, sizeof(bus)), 0, "no last error");
	return tap_done();
}
