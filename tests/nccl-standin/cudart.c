/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv NCCL stand-in, not NCCL: the CUDA runtime calls distenv-check
 * makes (DE_NL_CUDART_FUNCS in src/check/nccl_lib.h), on host memory.
 * Streams are FIFOs, each worked by its own thread, so NCCL's collectives
 * (libnccl stand-in) and the events around them complete asynchronously,
 * as on a GPU. Error codes and strings are the real runtime's. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "standin.h"

/* In the file for `strings`: this library is not NVIDIA's. */
const char distenv_standin_cudart[] = STANDIN_BANNER " (libcudart stand-in)";

struct op {
	void (*fn)(void *);
	void *arg;
	struct op *next;
};

struct CUstream_st {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	struct op *head, *tail;
	int busy, stop;
};

struct CUevent_st {
	int recorded, done;
	double ms; /* CLOCK_MONOTONIC when it completed */
};

static __thread cudaError_t s_last = cudaSuccess;
static __thread int s_dev;

static cudaError_t ret(cudaError_t e)
{
	if (e != cudaSuccess)
		s_last = e;
	return e;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The devices CUDA would show: DE_STANDIN_DEVICES, narrowed by
 * CUDA_VISIBLE_DEVICES (its entries up to the first invalid one). */
static int visible(void)
{
	const char *d = getenv("DE_STANDIN_DEVICES"), *v = getenv("CUDA_VISIBLE_DEVICES");
	int n = d != NULL && *d ? atoi(d) : 2, k = 0;
	char *end;

	if (n < 0)
		n = 0;
	if (v == NULL)
		return n;
	while (*v) {
		long i = strtol(v, &end, 10);

		if (end == v || i < 0 || i >= n)
			break;
		k++;
		v = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return k;
}

cudaError_t cudaGetDeviceCount(int *count)
{
	if (count == NULL)
		return ret(cudaErrorInvalidValue);
	*count = 0;
	if (distenv_standin_fault("no-devices", -1) || visible() == 0)
		return ret(cudaErrorNoDevice);
	*count = visible();
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess)
		return ret(cudaErrorNoDevice);
	if (device < 0 || device >= n)
		return ret(cudaErrorInvalidDevice);
	s_dev = device;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	int n = 0;

	if (pciBusId == NULL || len <= 0)
		return ret(cudaErrorInvalidValue);
	if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n)
		return ret(cudaErrorInvalidDevice);
	/* A made-up bus id, one per device, as real ones differ. */
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + device);
	return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = s_last;

	s_last = cudaSuccess;
	return e;
}

/* The real runtime's names and strings (CUDA 13), for the codes this
 * stand-in returns; anything else as the runtime words an unknown code. */
const char *cudaGetErrorName(cudaError_t error)
{
	switch (error) {
	case cudaSuccess: return "cudaSuccess";
	case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
	case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
	case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
	case cudaErrorNoDevice: return "cudaErrorNoDevice";
	case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
	case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
	case cudaErrorNotReady: return "cudaErrorNotReady";
	default: return "cudaErrorUnknown";
	}
}

const char *cudaGetErrorString(cudaError_t error)
{
	switch (error) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	case cudaErrorNotReady: return "device not ready";
	default: return "unknown error";
	}
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	if (devPtr == NULL)
		return ret(cudaErrorInvalidValue);
	*devPtr = malloc(size ? size : 1);
	return *devPtr == NULL ? ret(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaFree(void *devPtr)
{
	free(devPtr);
	return cudaSuccess;
}

static void *worker(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct op *o;

		while (s->head == NULL && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->head == NULL)
			break;
		o = s->head;
		s->head = o->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		o->fn(o->arg);
		free(o);
		pthread_mutex_lock(&s->mu);
		s->busy = 0;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	struct CUstream_st *s;

	(void)flags;
	if (pStream == NULL)
		return ret(cudaErrorInvalidValue);
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return ret(cudaErrorMemoryAllocation);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thr, NULL, worker, s) != 0) {
		free(s);
		return ret(cudaErrorMemoryAllocation);
	}
	*pStream = s;
	return cudaSuccess;
}

/* Waits for what is queued (as cudaStreamDestroy's work does), then ends
 * the thread. */
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	if (s == NULL)
		return ret(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thr, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
	int idle;

	if (s == NULL)
		return cudaSuccess; /* the legacy stream: everything ran inline */
	pthread_mutex_lock(&s->mu);
	idle = s->head == NULL && !s->busy;
	pthread_mutex_unlock(&s->mu);
	return idle ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t distenv_standin_enqueue(cudaStream_t s, void (*fn)(void *), void *arg)
{
	struct op *o;

	if (s == NULL) {
		fn(arg);
		return cudaSuccess;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		return ret(cudaErrorMemoryAllocation);
	o->fn = fn;
	o->arg = arg;
	pthread_mutex_lock(&s->mu);
	if (s->tail != NULL)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return cudaSuccess;
}

struct copy {
	void *dst;
	const void *src;
	size_t n;
};

static void do_copy(void *arg)
{
	struct copy *c = arg;

	memcpy(c->dst, c->src, c->n);
	free(c);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
			    enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct copy *c;

	(void)kind;
	if ((dst == NULL || src == NULL) && count > 0)
		return ret(cudaErrorInvalidValue);
	c = malloc(sizeof(*c));
	if (c == NULL)
		return ret(cudaErrorMemoryAllocation);
	c->dst = dst;
	c->src = src;
	c->n = count;
	return distenv_standin_enqueue(stream, do_copy, c);
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	if (event == NULL)
		return ret(cudaErrorInvalidValue);
	*event = calloc(1, sizeof(**event));
	return *event == NULL ? ret(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	free(event);
	return cudaSuccess;
}

static void do_event(void *arg)
{
	struct CUevent_st *e = arg;

	e->ms = now_ms();
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	if (event == NULL)
		return ret(cudaErrorInvalidResourceHandle);
	event->recorded = 1;
	__atomic_store_n(&event->done, 0, __ATOMIC_RELEASE);
	return distenv_standin_enqueue(stream, do_event, event);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	if (event == NULL)
		return ret(cudaErrorInvalidResourceHandle);
	if (!event->recorded)
		return cudaSuccess;
	return __atomic_load_n(&event->done, __ATOMIC_ACQUIRE) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	if (ms == NULL || start == NULL || end == NULL)
		return ret(cudaErrorInvalidValue);
	if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(end) != cudaSuccess)
		return ret(cudaErrorNotReady);
	*ms = (float)(end->ms - start->ms);
	return cudaSuccess;
}
