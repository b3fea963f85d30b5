/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv NCCL stand-in, not NCCL: the NCCL calls distenv-check makes
 * (DE_NL_NCCL_FUNCS in src/check/nccl_lib.h) with NCCL's semantics on host
 * memory: ncclGetUniqueId describes a listener in rank 0's process;
 * ncclCommInitRankConfig joins every rank there (nonblocking when the
 * config asks: ncclInProgress, then ncclCommGetAsyncError), and completes
 * only once all nranks came with the same id; ncclAllReduce is queued on
 * the stream and computes the real sum, star-shaped through rank 0 over
 * TCP; ncclCommAbort unblocks whatever is pending. Result codes and
 * ncclGetErrorString's strings are NCCL 2.28's. See standin.h for the
 * fault switches. */
#define _GNU_SOURCE /* accept4, getentropy */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"
/* nccl.h declares ncclGroupStart() and friends without a prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

const char distenv_standin_nccl[] = STANDIN_BANNER " (libnccl stand-in)";

#define ID_MAGIC "de-nccl-standin"  /* 16 bytes with its NUL */
#define OLD_VERSION 21303           /* 2.13.3: below distenv's minimum */

/* The unique id's bytes: who to connect to, and which communicator. */
struct uid {
	char magic[16];
	uint64_t nonce;
	struct sockaddr_in addr;
};
_Static_assert(sizeof(struct uid) <= NCCL_UNIQUE_ID_BYTES, "unique id too small");

struct hello {
	char magic[16];
	uint64_t nonce;
	int32_t rank, nranks;
};

struct ncclComm {
	int rank, nranks, blocking;
	struct uid id;
	int lfd;                 /* rank 0: the listener ncclGetUniqueId made */
	int *fd;                 /* rank 0: fd[r] for r > 0; others: fd[0] to rank 0 */
	pthread_t init_thr;
	int have_thr;
	ncclResult_t state;      /* ncclInProgress, ncclSuccess or the async error */
	int aborted, inflight, calls;
	int finalizing;          /* ncclCommFinalize waits for inflight to reach 0 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static char s_last[512];

/* Unused listeners made by ncclGetUniqueId in this process, by nonce. */
struct listener {
	uint64_t nonce;
	int fd;
	struct listener *next;
};
static struct listener *s_listeners;

__attribute__((format(printf, 1, 2)))
static void set_last(const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&s_mu);
	snprintf(s_last, sizeof(s_last), "%s: %s", STANDIN_BANNER, msg);
	pthread_mutex_unlock(&s_mu);
	if (getenv("NCCL_DEBUG") != NULL)
		fprintf(stderr, "%s\n", s_last);
}

__attribute__((format(printf, 2, 3)))
static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_last("%s", msg);
	return r;
}

static ncclResult_t get_state(ncclComm_t c)
{
	return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
}

/* The first error wins, as NCCL's async error. */
static void set_state(ncclComm_t c, ncclResult_t r)
{
	ncclResult_t cur = ncclInProgress;

	if (r == ncclSuccess)
		__atomic_compare_exchange_n(&c->state, &cur, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	else if (!__atomic_compare_exchange_n(&c->state, &cur, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
		 cur == ncclSuccess)
		__atomic_compare_exchange_n(&c->state, &cur, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static int aborted(ncclComm_t c)
{
	return __atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE);
}

static void nap(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

ncclResult_t ncclGetVersion(int *version)
{
	if (version == NULL)
		return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
	*version = distenv_standin_fault("old-version", -1) ? OLD_VERSION : NCCL_VERSION_CODE;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t code)
{
	switch (code) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return s_last; /* one per process, as NCCL's */
}

/* This host's address for the bootstrap: NCCL_SOCKET_IFNAME's interface
 * (a prefix, as NCCL reads it), else the first IPv4 one up that is not
 * loopback, else loopback. */
static int bootstrap_addr(struct in_addr *out)
{
	const char *want = getenv("NCCL_SOCKET_IFNAME");
	struct ifaddrs *ifs, *i;
	int found = 0;

	out->s_addr = htonl(INADDR_LOOPBACK);
	if (getifaddrs(&ifs) != 0)
		return -1;
	for (i = ifs; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		if (want != NULL && *want ? strncmp(i->ifa_name, want, strlen(want)) != 0 :
		    (i->ifa_flags & IFF_LOOPBACK) != 0)
			continue;
		*out = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
		found = 1;
	}
	freeifaddrs(ifs);
	return 0;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	struct listener *l;
	struct uid id;
	int fd;

	if (uniqueId == NULL)
		return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	bootstrap_addr(&a.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return fail(ncclSystemError, "ncclGetUniqueId: bootstrap listener on %s: %s",
			    inet_ntoa(a.sin_addr), strerror(err));
	}
	memset(&id, 0, sizeof(id));
	memcpy(id.magic, ID_MAGIC, sizeof(id.magic));
	if (getentropy(&id.nonce, sizeof(id.nonce)) != 0)
		id.nonce = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	id.addr = a;
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		close(fd);
		return fail(ncclSystemError, "ncclGetUniqueId: out of memory");
	}
	l->nonce = id.nonce;
	l->fd = fd;
	pthread_mutex_lock(&s_mu);
	l->next = s_listeners;
	s_listeners = l;
	pthread_mutex_unlock(&s_mu);
	memset(uniqueId, 0, sizeof(*uniqueId));
	memcpy(uniqueId->internal, &id, sizeof(id));
	return ncclSuccess;
}

/* Rank 0: the listener of this id, taken out of the list. */
static int take_listener(uint64_t nonce)
{
	struct listener **p, *l;
	int fd = -1;

	pthread_mutex_lock(&s_mu);
	for (p = &s_listeners; *p != NULL; p = &(*p)->next)
		if ((*p)->nonce == nonce) {
			l = *p;
			*p = l->next;
			fd = l->fd;
			free(l);
			break;
		}
	pthread_mutex_unlock(&s_mu);
	return fd;
}

/* All of len bytes, or -1 (errno) on error, EOF (errno 0) or abort
 * (errno ECANCELED): waits in short polls so that an abort is seen
 * whatever the peer does. */
static int xfer(ncclComm_t c, int fd, void *buf, size_t len, int out)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pf = { fd, (short)(out ? POLLOUT : POLLIN), 0 };
		ssize_t n;

		if (aborted(c)) {
			errno = ECANCELED;
			return -1;
		}
		if (poll(&pf, 1, 50) == 0)
			continue;
		n = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *why(void)
{
	return errno == 0 ? "connection closed" : strerror(errno);
}

/* Rank 0: accept until every other rank said hello with this id. */
static ncclResult_t init_root(ncclComm_t c)
{
	int joined = 1;

	while (joined < c->nranks) {
		struct pollfd p = { c->lfd, POLLIN, 0 };
		struct hello h;
		int fd;

		if (aborted(c))
			return ncclInvalidUsage;
		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (xfer(c, fd, &h, sizeof(h), 0) != 0 || memcmp(h.magic, ID_MAGIC, sizeof(h.magic)) != 0 ||
		    h.nonce != c->id.nonce) {
			close(fd); /* another communicator's rank, or not ours at all */
			continue;
		}
		if (h.nranks != c->nranks || h.rank <= 0 || h.rank >= c->nranks || c->fd[h.rank] >= 0) {
			close(fd);
			return fail(ncclInvalidUsage,
				    "rank 0: a rank joined as rank %d of %d; this communicator has %d ranks%s",
				    h.rank, h.nranks, c->nranks,
				    h.rank > 0 && h.rank < c->nranks && c->fd[h.rank] >= 0 ? " and that rank already joined" : "");
		}
		c->fd[h.rank] = fd;
		joined++;
	}
	for (int r = 1; r < c->nranks; r++) {
		char go = 1;

		if (xfer(c, c->fd[r], &go, 1, 1) != 0)
			return fail(ncclRemoteError, "rank 0: rank %d left during init (%s)", r, why());
	}
	return ncclSuccess;
}

static ncclResult_t init_peer(ncclComm_t c)
{
	struct hello h;
	char go;
	int fd = -1;

	/* Rank 0's listener exists from ncclGetUniqueId on; retried anyway
	 * (a network that comes up late), until aborted. */
	while (!aborted(c)) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(ncclSystemError, "rank %d: socket: %s", c->rank, strerror(errno));
		if (connect(fd, (struct sockaddr *)&c->id.addr, sizeof(c->id.addr)) == 0)
			break;
		close(fd);
		fd = -1;
		nap(100);
	}
	if (fd < 0)
		return ncclInvalidUsage;
	c->fd[0] = fd;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ID_MAGIC, sizeof(h.magic));
	h.nonce = c->id.nonce;
	h.rank = c->rank;
	h.nranks = c->nranks;
	if (xfer(c, fd, &h, sizeof(h), 1) != 0 || xfer(c, fd, &go, 1, 0) != 0)
		return aborted(c) ? ncclInvalidUsage :
		       fail(ncclRemoteError, "rank %d: rank 0 at %s:%d went away during init (%s)",
			    c->rank, inet_ntoa(c->id.addr.sin_addr), ntohs(c->id.addr.sin_port), why());
	return ncclSuccess;
}

static void *init_main(void *arg)
{
	ncclComm_t c = arg;
	ncclResult_t r;

	if (distenv_standin_fault("init-hang", c->rank)) {
		/* DE_STANDIN_FAULT=init-hang: never completes; only an abort ends it. */
		set_last("rank %d: init held by DE_STANDIN_FAULT=init-hang", c->rank);
		while (!aborted(c))
			nap(20);
		return NULL;
	}
	r = c->nranks == 1 ? ncclSuccess : c->rank == 0 ? init_root(c) : init_peer(c);
	if (!aborted(c))
		set_state(c, r);
	if (r == ncclSuccess && getenv("NCCL_DEBUG") != NULL)
		fprintf(stderr, "%s: rank %d of %d joined through %s:%d\n", STANDIN_BANNER, c->rank,
			c->nranks, inet_ntoa(c->id.addr.sin_addr), ntohs(c->id.addr.sin_port));
	return NULL;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	ncclComm_t c;
	struct uid id;

	if (comm == NULL)
		return fail(ncclInvalidArgument, "ncclCommInitRankConfig: comm is NULL");
	*comm = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return fail(ncclInvalidArgument, "ncclCommInitRankConfig: rank %d, nranks %d", rank, nranks);
	if (config != NULL && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize)))
		return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config not made with NCCL_CONFIG_INITIALIZER");
	memcpy(&id, commId.internal, sizeof(id));
	if (memcmp(id.magic, ID_MAGIC, sizeof(id.magic)) != 0)
		return fail(ncclInvalidUsage, "ncclCommInitRankConfig: the unique id was not made by this stand-in's ncclGetUniqueId");
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->fd = malloc(sizeof(int) * (size_t)nranks)) == NULL) {
		free(c);
		return fail(ncclSystemError, "ncclCommInitRankConfig: out of memory");
	}
	for (int r = 0; r < nranks; r++)
		c->fd[r] = -1;
	c->rank = rank;
	c->nranks = nranks;
	c->id = id;
	c->state = ncclInProgress;
	c->lfd = -1;
	/* NCCL_CONFIG_UNDEF_INT (the initializer's) means blocking. */
	c->blocking = config == NULL || config->blocking != 0;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (rank == 0 && nranks > 1) {
		c->lfd = take_listener(id.nonce);
		if (c->lfd < 0) {
			free(c->fd);
			free(c);
			return fail(ncclInvalidUsage,
				    "ncclCommInitRankConfig: rank 0 must use an id from ncclGetUniqueId in its own process");
		}
	}
	if (pthread_create(&c->init_thr, NULL, init_main, c) != 0) {
		if (c->lfd >= 0)
			close(c->lfd);
		free(c->fd);
		free(c);
		return fail(ncclSystemError, "ncclCommInitRankConfig: pthread_create failed");
	}
	c->have_thr = 1;
	*comm = c;
	if (!c->blocking)
		return ncclInProgress;
	pthread_join(c->init_thr, NULL);
	c->have_thr = 0;
	return get_state(c);
}

#ifndef STANDIN_MISSING_SYMBOL
/* The missing-symbol variant (missing-symbol/libnccl.so.2) lacks it, as a
 * partial or mismatched installation would. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (comm == NULL || asyncError == NULL)
		return fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
	*asyncError = get_state(comm);
	return ncclSuccess;
}
#endif

/* One allreduce as queued on the stream. */
struct coll {
	ncclComm_t c;
	void *buf;      /* in place: distenv-check passes sendbuff == recvbuff */
	const void *src;
	size_t count, esz;
	ncclDataType_t type;
	int inject;     /* an async error, midway */
	int wrong;      /* off by one in the result */
};

static size_t type_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

static void add(void *acc, const void *in, size_t count, ncclDataType_t t)
{
	for (size_t i = 0; i < count; i++)
		switch (t) {
		case ncclInt32: ((int32_t *)acc)[i] += ((const int32_t *)in)[i]; break;
		case ncclUint32: ((uint32_t *)acc)[i] += ((const uint32_t *)in)[i]; break;
		case ncclInt64: ((int64_t *)acc)[i] += ((const int64_t *)in)[i]; break;
		case ncclUint64: ((uint64_t *)acc)[i] += ((const uint64_t *)in)[i]; break;
		case ncclFloat32: ((float *)acc)[i] += ((const float *)in)[i]; break;
		case ncclFloat64: ((double *)acc)[i] += ((const double *)in)[i]; break;
		default: break;
		}
}

static void off_by_one(void *buf, ncclDataType_t t)
{
	switch (t) {
	case ncclInt32: case ncclUint32: ((int32_t *)buf)[0] += 1; break;
	case ncclInt64: case ncclUint64: ((int64_t *)buf)[0] += 1; break;
	case ncclFloat32: ((float *)buf)[0] += 1; break;
	case ncclFloat64: ((double *)buf)[0] += 1; break;
	default: break;
	}
}

static ncclResult_t run_coll(struct coll *k)
{
	ncclComm_t c = k->c;
	size_t bytes = k->count * k->esz;

	if (k->buf != k->src && bytes > 0)
		memmove(k->buf, k->src, bytes);
	if (k->inject) {
		/* DE_STANDIN_FAULT=async-error: the error arrives midway and the
		 * collective never completes, as a stuck kernel; abort ends it. */
		nap(200);
		set_state(c, fail(ncclSystemError,
				  "rank %d: injected by DE_STANDIN_FAULT=async-error in the middle of ncclAllReduce",
				  c->rank));
		while (!aborted(c))
			nap(20);
		return ncclSuccess;
	}
	if (c->nranks > 1 && bytes > 0) {
		if (c->rank == 0) {
			char *tmp = malloc(bytes);

			if (tmp == NULL)
				return fail(ncclSystemError, "rank 0: out of memory (%zu bytes)", bytes);
			for (int r = 1; r < c->nranks; r++) {
				if (xfer(c, c->fd[r], tmp, bytes, 0) != 0) {
					free(tmp);
					return fail(ncclRemoteError, "rank 0: receiving from rank %d: %s", r, why());
				}
				add(k->buf, tmp, k->count, k->type);
			}
			free(tmp);
			for (int r = 1; r < c->nranks; r++)
				if (xfer(c, c->fd[r], k->buf, bytes, 1) != 0)
					return fail(ncclRemoteError, "rank 0: sending to rank %d: %s", r, why());
		} else if (xfer(c, c->fd[0], k->buf, bytes, 1) != 0 || xfer(c, c->fd[0], k->buf, bytes, 0) != 0) {
			return fail(ncclRemoteError, "rank %d: with rank 0: %s", c->rank, why());
		}
	}
	if (k->wrong && bytes > 0)
		off_by_one(k->buf, k->type);
	return ncclSuccess;
}

static void coll_main(void *arg)
{
	struct coll *k = arg;
	ncclComm_t c = k->c;

	/* The first collective "connects": the communicator reads
	 * ncclInProgress until it is under way, as nonblocking NCCL's. */
	pthread_mutex_lock(&c->mu);
	if (!c->finalizing)
		set_state(c, ncclSuccess);
	pthread_mutex_unlock(&c->mu);
	if (!aborted(c)) {
		ncclResult_t r = run_coll(k);

		if (r != ncclSuccess && !aborted(c))
			set_state(c, r);
	}
	pthread_mutex_lock(&c->mu);
	if (--c->inflight == 0 && c->finalizing)
		set_state(c, ncclSuccess);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	free(k);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	struct coll *k;
	ncclResult_t st;
	int first;

	if (comm == NULL)
		return fail(ncclInvalidArgument, "ncclAllReduce: comm is NULL");
	st = get_state(comm);
	if (st != ncclSuccess)
		return st == ncclInProgress ?
		       fail(ncclInvalidUsage, "ncclAllReduce: the communicator's init has not completed") : st;
	if (type_size(datatype) == 0 || op != ncclSum)
		return fail(ncclInvalidArgument, "ncclAllReduce: this stand-in sums 32- and 64-bit types only (type %d, op %d)",
			    (int)datatype, (int)op);
	if (count > 0 && (sendbuff == NULL || recvbuff == NULL))
		return fail(ncclInvalidArgument, "ncclAllReduce: NULL buffer");
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return fail(ncclSystemError, "ncclAllReduce: out of memory");
	k->c = comm;
	k->buf = recvbuff;
	k->src = sendbuff;
	k->count = count;
	k->type = datatype;
	k->esz = type_size(datatype);
	k->inject = distenv_standin_fault("async-error", comm->rank);
	k->wrong = distenv_standin_fault("wrong-sum", comm->rank);
	pthread_mutex_lock(&comm->mu);
	comm->inflight++;
	first = comm->calls++ == 0;
	pthread_mutex_unlock(&comm->mu);
	if (first && !comm->blocking)
		__atomic_store_n(&comm->state, ncclInProgress, __ATOMIC_RELEASE);
	if (distenv_standin_enqueue(stream, coll_main, k) != cudaSuccess) {
		pthread_mutex_lock(&comm->mu);
		comm->inflight--;
		pthread_mutex_unlock(&comm->mu);
		free(k);
		set_state(comm, ncclSuccess);
		return fail(ncclUnhandledCudaError, "ncclAllReduce: could not enqueue on the stream");
	}
	return first && !comm->blocking ? ncclInProgress : ncclSuccess;
}

/* Every collective of the communicator has run (the stream threads). */
static void drain(ncclComm_t c)
{
	pthread_mutex_lock(&c->mu);
	while (c->inflight > 0)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t st;

	if (comm == NULL)
		return fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
	st = get_state(comm);
	if (st != ncclSuccess)
		return st;
	if (comm->blocking) {
		drain(comm);
		return ncclSuccess;
	}
	/* Nonblocking, as NCCL: ncclInProgress until the queued collectives
	 * are done (coll_main), then ncclSuccess. */
	pthread_mutex_lock(&comm->mu);
	if (comm->inflight > 0) {
		comm->finalizing = 1;
		__atomic_store_n(&comm->state, ncclInProgress, __ATOMIC_RELEASE);
		st = ncclInProgress;
	}
	pthread_mutex_unlock(&comm->mu);
	return st;
}

static void teardown(ncclComm_t c)
{
	__atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
	/* Wakes a rank blocked in recv or send. */
	for (int r = 0; r < c->nranks; r++)
		if (c->fd[r] >= 0)
			shutdown(c->fd[r], SHUT_RDWR);
	if (c->have_thr)
		pthread_join(c->init_thr, NULL);
	drain(c);
	for (int r = 0; r < c->nranks; r++)
		if (c->fd[r] >= 0)
			close(c->fd[r]);
	if (c->lfd >= 0)
		close(c->lfd);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->fd);
	free(c);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (comm != NULL)
		teardown(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (comm != NULL)
		teardown(comm);
	return ncclSuccess;
}
