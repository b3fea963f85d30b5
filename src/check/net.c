/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

int64_t de_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t de_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int remaining(int64_t deadline)
{
	int64_t r = deadline - de_now_ms();

	if (r < 0)
		return 0;
	return r > 60000 ? 60000 : (int)r;
}

int de_resolve(const char *host, uint16_t port, struct de_addr *out,
	       struct de_err *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0)
		return de_errf(err, "cannot resolve \"%s\": %s", host,
			       gai_strerror(rc));
	/* Prefer IPv4: Slurm clusters are configured with it, and a name
	 * with both would otherwise depend on gai.conf. */
	for (ai = res; ai != NULL; ai = ai->ai_next)
		if (ai->ai_family == AF_INET)
			break;
	if (ai == NULL)
		ai = res;
	memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
	out->len = ai->ai_addrlen;
	de_addr_set_port(out, port);
	freeaddrinfo(res);
	return 0;
}

int de_addr_is_loopback(const struct de_addr *a)
{
	if (a->ss.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)&a->ss;

		return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
	}
	if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->ss;

		return IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
	}
	return 0;
}

void de_addr_str(const struct de_addr *a, char *buf, size_t len)
{
	if (getnameinfo((const struct sockaddr *)&a->ss, a->len, buf,
			(socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0)
		snprintf(buf, len, "?");
}

uint16_t de_addr_port(const struct de_addr *a)
{
	if (a->ss.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
}

void de_addr_set_port(struct de_addr *a, uint16_t port)
{
	if (a->ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
}

int de_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int de_listen(struct de_addr *a, int backlog, struct de_err *err)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, e;
	char host[64];

	if (fd < 0)
		return de_errf(err, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a->ss, a->len) != 0 ||
	    listen(fd, backlog) != 0) {
		e = errno;
		close(fd);
		de_addr_str(a, host, sizeof(host));
		errno = e;
		return de_errf(err, "listening on %s:%u: %s", host,
			       de_addr_port(a), strerror(e));
	}
	a->len = sizeof(a->ss);
	getsockname(fd, (struct sockaddr *)&a->ss, &a->len);
	return fd;
}

int de_listen_probe(const struct de_addr *a, uint16_t *port, struct de_err *err)
{
	/* Seconds a connection may stay unaccepted without data; a probe
	 * resets long before, anything else is accepted and closed then. */
	int defer = 5, fd;
	struct de_addr at = *a;

	de_addr_set_port(&at, 0);
	/* Every other node probes at the same moment. */
	fd = de_listen(&at, 4096, err);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer)) != 0) {
		int e = errno;

		close(fd);
		return de_errf(err, "TCP_DEFER_ACCEPT: %s", strerror(e));
	}
	*port = de_addr_port(&at);
	return fd;
}

int de_accept(int lfd, struct de_addr *from)
{
	struct de_addr any;
	int fd;

	if (from == NULL)
		from = &any;
	/* A signal, or a caller that reset before we took it: the next one
	 * in the queue is as good. */
	do {
		from->len = sizeof(from->ss);
		fd = accept4(lfd, (struct sockaddr *)&from->ss, &from->len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
	} while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
	return fd;
}

enum de_conn de_connect(const struct de_addr *a, int64_t deadline, int *fdp,
			int *err_no)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct pollfd p;
	socklen_t sl = sizeof(int);
	int e = 0, rc;

	*fdp = -1;
	*err_no = 0;
	if (fd < 0) {
		*err_no = errno;
		return DE_CONN_ERROR;
	}
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) != 0) {
		if (errno != EINPROGRESS) {
			e = errno;
			goto failed;
		}
		p.fd = fd;
		p.events = POLLOUT;
		do {
			rc = poll(&p, 1, remaining(deadline));
		} while ((rc < 0 && errno == EINTR) ||
			 (rc == 0 && de_now_ms() < deadline));
		if (rc == 0) {
			close(fd);
			*err_no = ETIMEDOUT;
			return DE_CONN_TIMEOUT;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
			e = errno;
		if (e != 0)
			goto failed;
	}
	de_set_nonblock(fd, 0);
	*fdp = fd;
	return DE_CONN_OK;
failed:
	close(fd);
	*err_no = e;
	if (e == ECONNREFUSED)
		return DE_CONN_REFUSED;
	if (e == ETIMEDOUT)
		return DE_CONN_TIMEOUT;
	if (e == EHOSTUNREACH || e == ENETUNREACH)
		return DE_CONN_UNREACH;
	return DE_CONN_ERROR;
}

const char *de_conn_name(enum de_conn c)
{
	switch (c) {
	case DE_CONN_OK:
		return "connected";
	case DE_CONN_REFUSED:
		return "refused";
	case DE_CONN_TIMEOUT:
		return "timed out";
	case DE_CONN_UNREACH:
		return "unreachable";
	case DE_CONN_ERROR:
		break;
	}
	return "failed";
}

/* Does ifname match one comma-separated NCCL-style spec? */
static int iface_match(const char *spec, const char *ifname)
{
	int exclude = 0, exact = 0, matched = 0;
	char list[256], *tok, *save = NULL;

	if (*spec == '^') {
		exclude = 1;
		spec++;
	}
	if (*spec == '=') {
		exact = 1;
		spec++;
	}
	snprintf(list, sizeof(list), "%s", spec);
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (exact ? strcmp(ifname, tok) == 0
			  : strncmp(ifname, tok, strlen(tok)) == 0)
			matched = 1;
	}
	return exclude ? !matched : matched;
}

int de_iface_pick(const char *spec, int family, struct de_addr *out,
		  char *ifname, size_t ifname_len, struct de_err *err)
{
	struct ifaddrs *ifs, *i;
	char seen[512] = "";
	size_t off = 0;

	if (getifaddrs(&ifs) != 0)
		return de_errf(err, "getifaddrs: %s", strerror(errno));
	for (i = ifs; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || !(i->ifa_flags & IFF_UP))
			continue;
		if (i->ifa_addr->sa_family != AF_INET &&
		    i->ifa_addr->sa_family != AF_INET6)
			continue;
		if (off < sizeof(seen) - 32 && strstr(seen, i->ifa_name) == NULL)
			off += (size_t)snprintf(seen + off, sizeof(seen) - off,
						"%s%s", off ? " " : "", i->ifa_name);
		if (family != AF_UNSPEC && i->ifa_addr->sa_family != family)
			continue;
		if (!iface_match(spec, i->ifa_name))
			continue;
		out->len = i->ifa_addr->sa_family == AF_INET
				   ? sizeof(struct sockaddr_in)
				   : sizeof(struct sockaddr_in6);
		memcpy(&out->ss, i->ifa_addr, out->len);
		de_addr_set_port(out, 0);
		snprintf(ifname, ifname_len, "%s", i->ifa_name);
		freeifaddrs(ifs);
		return 0;
	}
	freeifaddrs(ifs);
	/* "=name" is one exact name: say so in its own words, not NCCL's. */
	if (spec[0] == '=' && strchr(spec, ',') == NULL)
		return de_errf(err, "no up interface named \"%s\" with an %s address (this node has: %s)",
			       spec + 1, family == AF_INET6 ? "IPv6" : "IPv4", seen);
	return de_errf(err, "no up interface with an %s address matches \"%s\" (this node has: %s)",
		       family == AF_INET6 ? "IPv6" : "IPv4", spec, seen);
}

int de_route_source(const struct de_addr *dst, struct de_addr *out,
		    char *ifname, size_t ifname_len, struct de_err *err)
{
	/* A connected UDP socket sends nothing but makes the kernel pick
	 * the route and source address. */
	int fd = socket(dst->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifaddrs *ifs, *i;
	struct de_addr d = *dst;
	char host[64];

	if (fd < 0)
		return de_errf(err, "socket: %s", strerror(errno));
	if (de_addr_port(&d) == 0)
		de_addr_set_port(&d, 9);
	if (connect(fd, (struct sockaddr *)&d.ss, d.len) != 0) {
		int e = errno;

		close(fd);
		de_addr_str(dst, host, sizeof(host));
		return de_errf(err, "no route to %s: %s", host, strerror(e));
	}
	out->len = sizeof(out->ss);
	getsockname(fd, (struct sockaddr *)&out->ss, &out->len);
	close(fd);
	de_addr_set_port(out, 0);
	snprintf(ifname, ifname_len, "?");
	if (getifaddrs(&ifs) == 0) {
		for (i = ifs; i != NULL; i = i->ifa_next) {
			struct de_addr x;

			if (i->ifa_addr == NULL ||
			    i->ifa_addr->sa_family != out->ss.ss_family)
				continue;
			x.len = out->len;
			memcpy(&x.ss, i->ifa_addr, x.len);
			de_addr_set_port(&x, 0);
			if (memcmp(&x.ss, &out->ss, out->len) == 0) {
				snprintf(ifname, ifname_len, "%s", i->ifa_name);
				break;
			}
		}
		freeifaddrs(ifs);
	}
	return 0;
}

int de_iface_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = 0;

	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%.*s", IFNAMSIZ - 1, ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* Same host address (the port and IPv6 scope aside)? */
static int same_host(const struct sockaddr *s, const struct de_addr *a)
{
	if (s->sa_family != a->ss.ss_family)
		return 0;
	if (s->sa_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)s)->sin_addr,
			      &((const struct sockaddr_in *)&a->ss)->sin_addr, sizeof(struct in_addr)) == 0;
	return memcmp(&((const struct sockaddr_in6 *)s)->sin6_addr,
		      &((const struct sockaddr_in6 *)&a->ss)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

int de_addr_iface(const struct de_addr *a, char *ifname, size_t ifname_len, unsigned *flags,
		  char *have, size_t have_len, struct de_err *err)
{
	struct ifaddrs *ifs, *i;
	size_t off = 0;
	int found = 0;

	if (have_len > 0)
		have[0] = '\0';
	if (getifaddrs(&ifs) != 0)
		return de_errf(err, "getifaddrs: %s", strerror(errno));
	for (i = ifs; i != NULL; i = i->ifa_next) {
		struct de_addr x;
		char host[64];

		if (i->ifa_addr == NULL ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		if (!found && same_host(i->ifa_addr, a)) {
			snprintf(ifname, ifname_len, "%s", i->ifa_name);
			*flags = i->ifa_flags;
			found = 1;
		}
		if (i->ifa_addr->sa_family != a->ss.ss_family || off + 1 >= have_len)
			continue;
		x.len = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
							   : sizeof(struct sockaddr_in6);
		memcpy(&x.ss, i->ifa_addr, x.len);
		de_addr_str(&x, host, sizeof(host));
		off += (size_t)snprintf(have + off, have_len - off, "%s%s %s", off ? ", " : "",
					i->ifa_name, host);
	}
	freeifaddrs(ifs);
	if (off >= have_len && have_len > 4)
		snprintf(have + have_len - 4, 4, "...");
	return found;
}

int de_iface_flags(const char *ifname, unsigned *flags, struct de_err *err)
{
	struct ifaddrs *ifs, *i;
	int found = 0;

	if (getifaddrs(&ifs) != 0)
		return de_errf(err, "getifaddrs: %s", strerror(errno));
	for (i = ifs; i != NULL && !found; i = i->ifa_next) {
		if (strcmp(i->ifa_name, ifname) == 0) {
			*flags = i->ifa_flags;
			found = 1;
		}
	}
	freeifaddrs(ifs);
	if (!found)
		return de_errf(err, "no interface named %s", ifname);
	return 0;
}

void de_sock_tune(int fd)
{
	int one = 1;

	/* Latency for small messages. Buffer sizes are left to the kernel:
	 * setting SO_SNDBUF/SO_RCVBUF turns off TCP autotuning and caps them
	 * at net.core.[rw]mem_max, slower than what autotuning reaches. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int de_send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
	const uint8_t *p = buf;
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (de_now_ms() >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pf, 1, remaining(deadline)) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

void de_rbuf_free(struct de_rbuf *rb)
{
	free(rb->data);
	memset(rb, 0, sizeof(*rb));
}

/* Frame at the start of rb, if whole: 1; 0 need more; -1 bad. */
static int rbuf_frame(struct de_rbuf *rb, uint32_t max, enum de_msg *type,
		      const uint8_t **frame, size_t *len, struct de_err *err)
{
	size_t flen;
	int rc;

	if (rb->consumed) {
		memmove(rb->data, rb->data + rb->consumed, rb->len - rb->consumed);
		rb->len -= rb->consumed;
		rb->consumed = 0;
	}
	rc = de_frame_check(rb->data, rb->len, max, type, &flen, err);
	if (rc <= 0)
		return rc;
	*frame = rb->data;
	*len = flen;
	rb->consumed = flen;
	return 1;
}

static int rbuf_read(int fd, struct de_rbuf *rb, uint32_t max)
{
	ssize_t n;

	if (rb->cap - rb->len < 4096) {
		size_t cap = rb->cap ? rb->cap * 2 : 8192;
		uint8_t *d;

		if (cap > (size_t)max + DE_PROTO_HDR + 8192)
			cap = (size_t)max + DE_PROTO_HDR + 8192;
		if (cap <= rb->len) {
			errno = EMSGSIZE;
			return -1;
		}
		d = realloc(rb->data, cap);
		if (d == NULL)
			return -1;
		rb->data = d;
		rb->cap = cap;
	}
	n = recv(fd, rb->data + rb->len, rb->cap - rb->len, MSG_DONTWAIT);
	if (n > 0)
		rb->len += (size_t)n;
	return (int)(n > 0 ? 1 : n);
}

int de_rbuf_fill(int fd, struct de_rbuf *rb, uint32_t max, enum de_msg *type,
		 const uint8_t **frame, size_t *len, struct de_err *err)
{
	int rc = rbuf_frame(rb, max, type, frame, len, err);

	if (rc != 0)
		return rc;
	rc = rbuf_read(fd, rb, max);
	if (rc == 0)
		return -2;
	if (rc < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		de_errf(err, "%s", strerror(errno));
		return -2;
	}
	return rbuf_frame(rb, max, type, frame, len, err);
}

int de_recv_frame(int fd, struct de_rbuf *rb, uint32_t max, int64_t deadline,
		  enum de_msg *type, const uint8_t **frame, size_t *len,
		  struct de_err *err)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	for (;;) {
		int rc = de_rbuf_fill(fd, rb, max, type, frame, len, err);

		if (rc == 1 || rc == -1)
			return rc;
		if (rc == -2)
			return 0;
		if (de_now_ms() >= deadline)
			return de_errf(err, "timed out waiting for a frame");
		if (poll(&pf, 1, remaining(deadline)) < 0 && errno != EINTR)
			return de_errf(err, "poll: %s", strerror(errno));
	}
}
