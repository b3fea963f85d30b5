/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NCCL backend: device choice, one nonblocking communicator per
 * process, and a timed sum-allreduce of a host buffer copied to the GPU
 * and back. Nothing here waits without a bound: init, the collective and
 * teardown are polled (ncclCommGetAsyncError, cudaEventQuery) against
 * --timeout, and the rendezvous connection is watched meanwhile so an
 * ABORT from rank 0 stops this rank too. No GPU or no driver is "0
 * visible GPUs", not a crash, and neither is a node without NCCL or the
 * CUDA runtime (they are loaded at run time, nccl_lib.c): the auto
 * backend then picks sockets, --backend=nccl names what is missing. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_lib.h" /* <cuda_runtime_api.h>, <nccl.h>, de_nl */
#ifndef NCCL_MAJOR
#error "<nccl.h> is not NCCL's header: check the include path (--with-nccl)"
#endif
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "the NCCL backend needs NCCL 2.14 or later (nonblocking communicators, ncclCommFinalize)"
#endif

#include "backend.h"
#include "check.h"
#include "cudalib.h"
#include "budget.h"
#include "rendezvous.h"

_Static_assert(sizeof(ncclUniqueId) == DE_NCCL_ID_BYTES,
	       "DE_NCCL_ID_BYTES must match NCCL_UNIQUE_ID_BYTES");

/* How often the rendezvous connection is checked while NCCL works. */
#define RDV_POLL_MS 100
/* Teardown after the verdict: not worth the whole --timeout. */
#define FINI_MAX_S 10

/* The backend's state (c->bstate), made by nccl_init: the communicator
 * and what the collective reuses. */
struct nccl {
	ncclComm_t comm;
	cudaStream_t stream;
	cudaEvent_t ev_start, ev_stop;
	int have_stream, have_events;
	void *dbuf;
	size_t dbuf_bytes;
	int dev;
	int clean;           /* no error since init: finalize, else abort */
	unsigned long calls; /* collectives run (the first one connects) */
};

static const char *visible_devices(void)
{
	const char *v = getenv("CUDA_VISIBLE_DEVICES");

	return v == NULL ? "unset" : *v == '\0' ? "\"\"" : v;
}

static int cuda_fail(struct nccl *n, struct de_fail *f, const char *call, cudaError_t e)
{
	n->clean = 0;
	return de_fail_set(f, DE_D_NCCL, "%s: %s (%s)", call,
			   de_nl.cudaGetErrorString(e), de_nl.cudaGetErrorName(e));
}

/* r is the call's result or the communicator's async error. A peer that
 * went away (ncclRemoteError) is a lost peer, not a local NCCL fault. n is
 * NULL before init (rank 0's ncclGetUniqueId). */
static int nccl_fail(struct nccl *n, struct de_fail *f, const char *call, ncclResult_t r)
{
	const char *last = de_nl.ncclGetLastError(n != NULL ? n->comm : NULL);

	if (n != NULL)
		n->clean = 0;
	return de_fail_set(f, r == ncclRemoteError ? DE_D_PEER_LOST : DE_D_NCCL,
			   "%s: %s%s%s", call, de_nl.ncclGetErrorString(r),
			   last != NULL && *last ? ": " : "",
			   last != NULL ? last : "");
}

static void comm_abort(struct nccl *n)
{
	if (n->comm != NULL)
		(void)de_nl.ncclCommAbort(n->comm);
	n->comm = NULL;
	n->clean = 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

enum wait_for {
	WAIT_COMM,   /* the communicator is no longer ncclInProgress */
	WAIT_EVENT,  /* ... and ev_stop has completed */
	WAIT_STREAM, /* ... and the stream is idle */
};

enum wait_rc { WAIT_DONE, WAIT_FAILED, WAIT_DEADLINE };

/* Polls until what is done, an NCCL/CUDA error (f set, named after op),
 * an ABORT or EOF from rank 0 (f set by de_rdv_poll_abort), or deadline.
 * Sleeps start short so small collectives are not slowed much, then
 * settle at 1 ms. */
static enum wait_rc wait_for(struct de_check *c, enum wait_for what,
			     const char *op, int64_t deadline,
			     struct de_fail *f)
{
	struct nccl *n = c->bstate;
	int64_t next_rdv = de_now_ms() + RDV_POLL_MS;
	long nap = 20;

	for (;;) {
		ncclResult_t st = ncclSuccess, r;
		int64_t now;

		if (n->comm != NULL) {
			r = de_nl.ncclCommGetAsyncError(n->comm, &st);
			if (r != ncclSuccess)
				return nccl_fail(n, f, "ncclCommGetAsyncError", r), WAIT_FAILED;
			if (st != ncclSuccess && st != ncclInProgress)
				return nccl_fail(n, f, op, st), WAIT_FAILED;
		}
		if (st == ncclSuccess) {
			cudaError_t e = cudaSuccess;

			if (what == WAIT_EVENT)
				e = de_nl.cudaEventQuery(n->ev_stop);
			else if (what == WAIT_STREAM)
				e = de_nl.cudaStreamQuery(n->stream);
			if (e == cudaSuccess)
				return WAIT_DONE;
			if (e != cudaErrorNotReady)
				return cuda_fail(n, f, what == WAIT_EVENT ? "cudaEventQuery" :
						 "cudaStreamQuery", e), WAIT_FAILED;
		}
		now = de_now_ms();
		if (now >= deadline)
			return WAIT_DEADLINE;
		if (now >= next_rdv) {
			next_rdv = now + RDV_POLL_MS;
			if (c->net.rdv_fd >= 0 && de_rdv_poll_abort(c, f)) {
				n->clean = 0;
				return WAIT_FAILED;
			}
		}
		sleep_us(nap);
		if (nap < 1000)
			nap *= 2;
	}
}

int de_nccl_device_count(struct de_err *why)
{
	cudaError_t e;
	int n = 0;

	e = de_nl.cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		(void)de_nl.cudaGetLastError(); /* not sticky, but leave nothing behind */
		de_errf(why, "cudaGetDeviceCount: %s (%s%s), CUDA_VISIBLE_DEVICES=%s",
			de_nl.cudaGetErrorString(e), de_nl.cudaGetErrorName(e),
			e == cudaErrorInsufficientDriver ?
			": no NVIDIA driver loaded on this node, or one older than this CUDA runtime" :
			"", visible_devices());
		return 0;
	}
	if (n <= 0) {
		de_errf(why, "no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)", visible_devices());
		return 0;
	}
	return n;
}

/* The libraries load, and a GPU is visible. */
static int nccl_usable(struct de_err *why)
{
	struct de_fail f;

	if (de_nccl_lib_load(&f)) {
		de_errf(why, "%s", f.msg);
		return 0;
	}
	return de_nccl_device_count(why) > 0;
}

/* cudaSetDevice(LOCAL_RANK) after checking it against the visible count. */
static int nccl_select(struct de_check *c, struct de_fail *f)
{
	struct de_err why;
	cudaError_t e;
	int n;

	if (de_nccl_lib_load(f))
		return -1;
	n = de_nccl_device_count(&why);
	if (n <= 0)
		return de_fail_set(f, DE_D_GPU, "--backend=nccl but no GPU is visible: %s", why.msg);
	/* The device is chosen before the rendezvous, where rank 0 judges the
	 * layout: a LOCAL_RANK past LOCAL_WORLD_SIZE is named here. */
	if (c->id.local_rank >= c->id.local_world)
		return de_fail_set(f, DE_D_LOCAL_RANK, "LOCAL_RANK=%u is not below LOCAL_WORLD_SIZE=%u",
				   c->id.local_rank, c->id.local_world);
	if (c->id.local_rank >= (uint32_t)n) {
		/* Here more tasks share this node than it shows GPUs. */
		if (n == 1 && c->id.local_world > 1)
			return de_fail_set(f, DE_D_GPU,
					   "LOCAL_RANK=%u but only 1 visible GPU (CUDA_VISIBLE_DEVICES=%s): "
					   "one GPU per task (--gpus-per-task=1 or Slurm's GPU binding)? "
					   "then each of the %u tasks on this node sees its own GPU as device 0: "
					   "use device 0, not cuda:LOCAL_RANK; device chosen by RANK? that fails on every node but the first",
					   c->id.local_rank, visible_devices(), c->id.local_world);
		return de_fail_set(f, DE_D_GPU,
				   "LOCAL_RANK=%u but only %d visible GPU%s (CUDA_VISIBLE_DEVICES=%s): "
				   "%u tasks on this node share %d GPU%s; NCCL needs one GPU per rank: "
				   "ask for --gpus-per-node=%u or fewer tasks per node; device chosen by RANK? use LOCAL_RANK",
				   c->id.local_rank, n, n == 1 ? "" : "s", visible_devices(),
				   c->id.local_world, n, n == 1 ? "" : "s", c->id.local_world);
	}
	e = de_nl.cudaSetDevice((int)c->id.local_rank);
	if (e != cudaSuccess)
		return de_fail_set(f, DE_D_GPU,
				   "cudaSetDevice(%u) (LOCAL_RANK, CUDA_VISIBLE_DEVICES=%s): %s (%s)",
				   c->id.local_rank, visible_devices(), de_nl.cudaGetErrorString(e),
				   de_nl.cudaGetErrorName(e));
	/* nccl_init takes the same device: LOCAL_RANK. */
	snprintf(c->device, sizeof(c->device), "cuda:%u", c->id.local_rank);
	return 0;
}

/* Rank 0: a fresh ncclUniqueId for the peer table. */
static int nccl_root_prepare(struct de_check *c, struct de_fail *f)
{
	ncclUniqueId uid;
	ncclResult_t r = de_nl.ncclGetUniqueId(&uid);

	if (r != ncclSuccess)
		return nccl_fail(NULL, f, "ncclGetUniqueId", r);
	memcpy(c->peers.nccl_id, uid.internal, DE_NCCL_ID_BYTES);
	c->peers.nccl_id_len = DE_NCCL_ID_BYTES;
	return 0;
}

/* Names the likely cause when init does not finish: a rank that never
 * called it, or NCCL's bootstrap on an interface the others cannot reach
 * (the probe phase proved c->net.iface works). */
static int init_timeout(struct de_check *c, struct de_fail *f)
{
	const char *ifn = getenv("NCCL_SOCKET_IFNAME");
	char hint[160];

	if (ifn != NULL && *ifn)
		snprintf(hint, sizeof(hint), "NCCL_SOCKET_IFNAME=%s is set", ifn);
	else
		snprintf(hint, sizeof(hint),
			 "if NCCL picks another interface, try NCCL_SOCKET_IFNAME=%s (the one the probe used)",
			 c->net.iface[0] ? c->net.iface : "<iface>");
	return de_fail_set(f, DE_D_TIMEOUT,
			   "NCCL init (ncclCommInitRankConfig, %u ranks) did not complete by the end of --timeout=%d s: "
			   "a rank never joined or NCCL cannot connect between nodes; %s; "
			   "rerun with NCCL_DEBUG=INFO",
			   c->id.world, c->o.timeout_s, hint);
}

/* Two ranks on one GPU: NCCL's init refuses ("Duplicate GPU detected"),
 * and that is how the job chose devices, not an NCCL fault: f becomes
 * shared-gpu, naming the ranks, this rank's GPU and CUDA_VISIBLE_DEVICES
 * (the same list in every task, each taking device 0, is the usual way). */
static void shared_gpu(const struct de_check *c, struct de_fail *f)
{
	const struct nccl *n = c->bstate;
	char bus[32], pci[48], ranks[64], lr[64];
	int a, b;

	if (!de_nccl_dup_gpu(f->msg, &a, &b, bus, sizeof(bus)))
		return;
	if (de_nl.cudaDeviceGetPCIBusId(pci, (int)sizeof(pci), n->dev) != cudaSuccess) {
		(void)de_nl.cudaGetLastError();
		snprintf(pci, sizeof(pci), "bus id %s", bus[0] ? bus : "?");
	}
	if (a >= 0 && b >= 0)
		snprintf(ranks, sizeof(ranks), "ranks %d and %d", a < b ? a : b, a < b ? b : a);
	else
		snprintf(ranks, sizeof(ranks), "rank %u and another rank", c->id.rank);
	if (c->id.have_local_rank)
		snprintf(lr, sizeof(lr), "LOCAL_RANK=%u", c->id.local_rank);
	else
		snprintf(lr, sizeof(lr), "LOCAL_RANK unset, so device 0");
	de_fail_set(f, DE_D_GPU_SHARED,
		    "%s on %s both use the GPU at %s (this rank: cuda:%d, %s, CUDA_VISIBLE_DEVICES=%s): "
		    "NCCL needs one GPU per rank and refused the communicator",
		    ranks, c->id.host, pci, n->dev, lr, visible_devices());
}

/* ncclCommInitRank with the id from c->peers, bounded by the timeout. */
static int nccl_init(struct de_check *c, struct de_fail *f)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId uid;
	ncclResult_t r;
	cudaError_t e;
	int64_t deadline = c->deadline;
	struct nccl *n = c->bstate;

	if (n != NULL && n->comm != NULL)
		return de_fail_set(f, DE_D_INTERNAL, "NCCL communicator initialized twice");
	if (c->peers.nccl_id_len != DE_NCCL_ID_BYTES)
		return de_fail_set(f, DE_D_INTERNAL,
				   "rank 0's peer table carries no NCCL id (%u bytes)",
				   (unsigned)c->peers.nccl_id_len);
	if (c->id.world > INT32_MAX)
		return de_fail_set(f, DE_D_INTERNAL, "WORLD_SIZE=%u is too large for NCCL", c->id.world);
	if (strncmp(c->device, "cuda:", 5) != 0)
		return de_fail_set(f, DE_D_INTERNAL, "NCCL init before a device was selected");
	if (n == NULL) {
		n = calloc(1, sizeof(*n));
		if (n == NULL)
			return de_fail_set(f, DE_D_INTERNAL, "out of memory");
		n->dev = (int)c->id.local_rank; /* nccl_select's */
		c->bstate = n;
	}
	e = de_nl.cudaSetDevice(n->dev);
	if (e != cudaSuccess)
		return cuda_fail(n, f, "cudaSetDevice", e);
	if (!n->have_stream) {
		e = de_nl.cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking);
		if (e != cudaSuccess)
			return cuda_fail(n, f, "cudaStreamCreateWithFlags", e);
		n->have_stream = 1;
	}
	if (!n->have_events) {
		e = de_nl.cudaEventCreate(&n->ev_start);
		if (e != cudaSuccess)
			return cuda_fail(n, f, "cudaEventCreate", e);
		e = de_nl.cudaEventCreate(&n->ev_stop);
		if (e != cudaSuccess) {
			de_nl.cudaEventDestroy(n->ev_start);
			return cuda_fail(n, f, "cudaEventCreate", e);
		}
		n->have_events = 1;
	}
	memcpy(uid.internal, c->peers.nccl_id, DE_NCCL_ID_BYTES);
	cfg.blocking = 0; /* so a rank that never joins cannot hang us */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
	cfg.commName = "distenv-check"; /* names it in NCCL_DEBUG output */
#endif
	n->clean = 1;
	r = de_nl.ncclCommInitRankConfig(&n->comm, (int)c->id.world, uid, (int)c->id.rank, &cfg);
	if (r != ncclSuccess && r != ncclInProgress) {
		nccl_fail(n, f, "ncclCommInitRankConfig", r);
		comm_abort(n);
		return -1;
	}
	if (n->comm == NULL)
		return de_fail_set(f, DE_D_NCCL, "ncclCommInitRankConfig returned %s but no communicator",
				   de_nl.ncclGetErrorString(r));
	switch (wait_for(c, WAIT_COMM, "ncclCommInitRankConfig", deadline, f)) {
	case WAIT_DONE:
		return 0;
	case WAIT_DEADLINE:
		comm_abort(n);
		return init_timeout(c, f);
	case WAIT_FAILED:
	default:
		if (f->diag == DE_D_NCCL && !f->from_rank0)
			shared_gpu(c, f);
		comm_abort(n);
		return -1;
	}
}

static int nccl_type(enum de_dtype t, ncclDataType_t *out)
{
	switch (t) {
	case DE_F32: *out = ncclFloat32; return 0;
	case DE_F64: *out = ncclFloat64; return 0;
	case DE_I32: *out = ncclInt32; return 0;
	case DE_I64: *out = ncclInt64; return 0;
	}
	return -1;
}

/* The device buffer grows to the largest size asked for and stays. */
static int ensure_buffer(struct nccl *n, size_t bytes, struct de_fail *f)
{
	cudaError_t e;
	size_t want = bytes ? bytes : 1;

	if (n->dbuf != NULL && n->dbuf_bytes >= want)
		return 0;
	if (n->dbuf != NULL) {
		e = de_nl.cudaFree(n->dbuf);
		n->dbuf = NULL;
		n->dbuf_bytes = 0;
		if (e != cudaSuccess)
			return cuda_fail(n, f, "cudaFree", e);
	}
	e = de_nl.cudaMalloc(&n->dbuf, want);
	if (e != cudaSuccess) {
		n->dbuf = NULL;
		n->clean = 0;
		return de_fail_set(f, DE_D_NCCL, "cudaMalloc(%zu bytes) on cuda:%d: %s (%s)",
				   want, n->dev, de_nl.cudaGetErrorString(e), de_nl.cudaGetErrorName(e));
	}
	n->dbuf_bytes = want;
	return 0;
}

static int allreduce_timeout(struct de_check *c, size_t bytes, struct de_fail *f)
{
	struct nccl *n = c->bstate;

	comm_abort(n);
	return de_fail_set(f, DE_D_TIMEOUT,
			   "allreduce of %zu bytes did not complete by the end of --timeout=%d s%s: "
			   "a peer is stuck or lost; rerun with NCCL_DEBUG=INFO",
			   bytes, c->o.timeout_s,
			   n->calls == 0 ? " (the first one, which also sets up NCCL's connections)" : "");
}

/* wait_for inside the allreduce: the deadline is the end of the run's
 * budget, and any failure leaves the communicator aborted. */
static int wait_allreduce(struct de_check *c, enum wait_for what, size_t bytes,
			  int64_t deadline, struct de_fail *f)
{
	switch (wait_for(c, what, "ncclAllReduce", deadline, f)) {
	case WAIT_DONE:
		return 0;
	case WAIT_DEADLINE:
		return allreduce_timeout(c, bytes, f);
	case WAIT_FAILED:
	default:
		comm_abort(c->bstate);
		return -1;
	}
}

/* Sum-allreduce of a host buffer, copied to the GPU and back; *usec is
 * the collective alone (CUDA events around it). */
static int nccl_allreduce(struct de_check *c, void *buf, size_t count,
			  enum de_dtype t, double *usec, struct de_fail *f)
{
	ncclDataType_t nt;
	size_t esz = de_dtype_size(t), bytes;
	cudaError_t e;
	ncclResult_t r;
	float ms = 0;
	int64_t deadline;
	struct nccl *n = c->bstate;

	*usec = 0;
	if (n == NULL || n->comm == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "NCCL allreduce without a communicator");
	if (nccl_type(t, &nt) || esz == 0)
		return de_fail_set(f, DE_D_INTERNAL, "NCCL allreduce: dtype %d outside the enum", (int)t);
	if (count > SIZE_MAX / esz)
		return de_fail_set(f, DE_D_INTERNAL, "NCCL allreduce: %zu elements overflow", count);
	bytes = count * esz;
	if (ensure_buffer(n, bytes, f))
		return -1;
	deadline = c->deadline;
	if (bytes > 0) {
		e = de_nl.cudaMemcpyAsync(n->dbuf, buf, bytes, cudaMemcpyHostToDevice, n->stream);
		if (e != cudaSuccess)
			return cuda_fail(n, f, "cudaMemcpyAsync (host to device)", e);
	}
	e = de_nl.cudaEventRecord(n->ev_start, n->stream);
	if (e != cudaSuccess)
		return cuda_fail(n, f, "cudaEventRecord", e);
	r = de_nl.ncclAllReduce(n->dbuf, n->dbuf, count, nt, ncclSum, n->comm, n->stream);
	if (r != ncclSuccess && r != ncclInProgress) {
		nccl_fail(n, f, "ncclAllReduce", r);
		comm_abort(n);
		return -1;
	}
	/* Nonblocking: nothing more goes on the stream until NCCL has
	 * enqueued the collective. */
	if (r == ncclInProgress && wait_allreduce(c, WAIT_COMM, bytes, deadline, f))
		return -1;
	e = de_nl.cudaEventRecord(n->ev_stop, n->stream);
	if (e != cudaSuccess)
		return cuda_fail(n, f, "cudaEventRecord", e);
	if (wait_allreduce(c, WAIT_EVENT, bytes, deadline, f))
		return -1;
	n->calls++;
	e = de_nl.cudaEventElapsedTime(&ms, n->ev_start, n->ev_stop);
	if (e != cudaSuccess)
		return cuda_fail(n, f, "cudaEventElapsedTime", e);
	if (bytes > 0) {
		deadline = c->deadline;
		e = de_nl.cudaMemcpyAsync(buf, n->dbuf, bytes, cudaMemcpyDeviceToHost, n->stream);
		if (e != cudaSuccess)
			return cuda_fail(n, f, "cudaMemcpyAsync (device to host)", e);
		switch (wait_for(c, WAIT_STREAM, "cudaMemcpyAsync", deadline, f)) {
		case WAIT_DONE:
			break;
		case WAIT_DEADLINE:
			comm_abort(n);
			return de_fail_set(f, DE_D_TIMEOUT,
					   "copying %zu bytes back from cuda:%d did not complete by the end of --timeout=%d s",
					   bytes, n->dev, c->o.timeout_s);
		case WAIT_FAILED:
		default:
			comm_abort(n);
			return -1;
		}
	}
	*usec = (double)ms * 1000.0;
	return 0;
}

static void nccl_fini(struct de_check *c)
{
	struct nccl *n = c->bstate;

	if (n == NULL)
		return;
	if (n->comm != NULL && n->clean) {
		/* Finalize needs every rank; one that is gone must not keep
		 * this one here: bounded by the teardown's share of the
		 * budget, then abort. */
		int64_t deadline = de_budget_by(de_now_ms(), (int64_t)FINI_MAX_S * 1000,
						c->deadline + DE_BUDGET_VERDICT_MS + DE_BUDGET_TEARDOWN_MS);
		struct de_fail ignored;
		ncclResult_t r = de_nl.ncclCommFinalize(n->comm);

		memset(&ignored, 0, sizeof(ignored));
		if ((r == ncclSuccess || r == ncclInProgress) &&
		    wait_for(c, WAIT_COMM, "ncclCommFinalize", deadline, &ignored) == WAIT_DONE) {
			(void)de_nl.ncclCommDestroy(n->comm);
			n->comm = NULL;
		}
	}
	comm_abort(n); /* whatever is left: an error earlier, or finalize failed */
	if (n->dbuf != NULL)
		(void)de_nl.cudaFree(n->dbuf);
	if (n->have_events) {
		(void)de_nl.cudaEventDestroy(n->ev_start);
		(void)de_nl.cudaEventDestroy(n->ev_stop);
	}
	if (n->have_stream)
		(void)de_nl.cudaStreamDestroy(n->stream);
	free(n);
	c->bstate = NULL;
}

const struct de_backend_ops de_nccl_backend = {
	.name = "nccl",
	.id = DE_BACKEND_NCCL,
	.usable = nccl_usable,
	.select = nccl_select,
	.root_prepare = nccl_root_prepare,
	.init = nccl_init,
	.allreduce = nccl_allreduce,
	.fini = nccl_fini,
	.describe = de_nccl_lib_describe,
};
