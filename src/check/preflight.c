/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a rank checks of its own view before it talks to anyone: no
 * loopback on a job of several nodes, MASTER_ADDR among the step's nodes,
 * the data interface and its listeners, and which backend runs. A hand
 * run has no node count until the join: the loopback checks run again
 * then. */
#include "config.h"

#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "hostlist.h"
#include "identity.h"
#include "preflight.h"

static int is_numeric_addr(const char *s)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	rc = getaddrinfo(s, NULL, &hints, &res);
	if (res)
		freeaddrinfo(res);
	return rc == 0;
}

/* On a job of several nodes nothing may go through loopback: MASTER_ADDR
 * or this host's name (peers are told to connect to it)... */
static int name_loopback(struct de_check *c, uint32_t nodes, const char *counted,
			 struct de_fail *f)
{
	struct de_addr self;
	struct de_err e;
	char a[64];

	if (nodes <= 1 || c->id.simulated)
		return 0;
	if (de_addr_is_loopback(&c->net.master_addr)) {
		de_addr_str(&c->net.master_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_MASTER_LOOPBACK,
				   "MASTER_ADDR=%s is %s (loopback) but the job spans %u nodes%s",
				   c->id.master, a, nodes, counted);
	}
	if (de_resolve(c->id.host, 0, &self, &e) == 0 && de_addr_is_loopback(&self)) {
		de_addr_str(&self, a, sizeof(a));
		return de_fail_set(f, DE_D_HOST_LOOPBACK,
				   "this node's name %s resolves to %s (loopback) on a %u-node job%s",
				   c->id.host, a, nodes, counted);
	}
	return 0;
}

/* ... or the data interface. */
static int iface_loopback(struct de_check *c, uint32_t nodes, const char *counted,
			  struct de_fail *f)
{
	char a[64];

	if (nodes <= 1 || c->id.simulated)
		return 0;
	if (de_addr_is_loopback(&c->net.data_addr)) {
		de_addr_str(&c->net.data_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_USAGE,
				   "the data interface %s (%s, by %s) is loopback on a %u-node job%s%s",
				   c->net.iface, a, c->net.iface_how, nodes, counted,
				   strchr(c->net.iface_how, '=') ? "" :
				   ": name the interface the other nodes reach in DISTENV_SOCKET_IFNAME");
	}
	return 0;
}

/* After the join: a hand run on several machines has no node count from
 * Slurm or torchrun, but the peer table has one. */
int de_joined_checks(struct de_check *c, struct de_fail *f)
{
	uint32_t nodes = de_peers_nodes(&c->peers);

	const char *counted = " (counted from the ranks' host names)";

	if (c->id.nnodes != 0)
		return 0;
	return name_loopback(c, nodes, counted, f) || iface_loopback(c, nodes, counted, f) ? -1 : 0;
}

/* GLOO_SOCKET_IFNAME as PyTorch reads it: exact names, comma separated,
 * every one must exist (gloo opens a device on each); the data listener
 * takes the first. */
static int gloo_ifaces(struct de_check *c, const char *spec, int family, enum de_diag diag,
		       struct de_fail *f)
{
	char list[256], exact[80], *tok, *save = NULL, name[64];
	struct de_addr a;
	struct de_err e;
	int first = 1;

	if (strlen(spec) >= sizeof(list))
		return de_fail_set(f, diag, "GLOO_SOCKET_IFNAME is %zu characters: expected interface names",
				   strlen(spec));
	snprintf(list, sizeof(list), "%s", spec);
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		snprintf(exact, sizeof(exact), "=%.60s", tok);
		if (de_iface_pick(exact, family, &a, name, sizeof(name), &e))
			return de_fail_set(f, diag, "GLOO_SOCKET_IFNAME=\"%s\": %s%s", spec, e.msg,
					   strchr(spec, ',') ? "; gloo opens a device on every name listed, so each must exist" : "");
		if (first) {
			c->net.data_addr = a;
			snprintf(c->net.iface, sizeof(c->net.iface), "%s", name);
			first = 0;
		}
	}
	if (first)
		return de_fail_set(f, diag, "GLOO_SOCKET_IFNAME=\"%s\": expected interface names, comma separated",
				   spec);
	return 0;
}

int de_named_iface(struct de_check *c, int family, enum de_diag diag, struct de_fail *f)
{
	struct de_err e;
	const char *spec, *how;

	/* DISTENV_SOCKET_IFNAME is ours: empty is an error, as for every
	 * variable of distenv's. GLOO_ and NCCL_SOCKET_IFNAME keep their
	 * owners' reading: empty is not set (PyTorch, NCCL). */
	if (de_getenv_str("DISTENV_SOCKET_IFNAME", "interface names in NCCL's syntax (eth0, =eth0, ^docker)", &spec, f))
		return -1;
	if (spec != NULL)
		how = "DISTENV_SOCKET_IFNAME";
	else if ((spec = getenv("GLOO_SOCKET_IFNAME")) != NULL && *spec)
		how = "GLOO_SOCKET_IFNAME";
	else if ((spec = getenv("NCCL_SOCKET_IFNAME")) != NULL && *spec)
		how = "NCCL_SOCKET_IFNAME";
	else
		return 0;
	/* GLOO_: exact names, each must exist; the others NCCL's syntax:
	 * prefixes, =exact, ^exclude, comma lists. */
	if (strcmp(how, "GLOO_SOCKET_IFNAME") == 0) {
		if (gloo_ifaces(c, spec, family, diag, f))
			return -1;
	} else if (de_iface_pick(spec, family, &c->net.data_addr, c->net.iface, sizeof(c->net.iface), &e)) {
		return de_fail_set(f, diag, "%s=\"%s\": %s", how, spec, e.msg);
	}
	snprintf(c->net.iface_how, sizeof(c->net.iface_how), "%s=%s", how, spec);
	return 1;
}

/* What can be seen before talking to anyone. */
int de_preflight(struct de_check *c, struct de_fail *f)
{
	struct de_err e;
	int named;

	if (name_loopback(c, c->id.nnodes, "", f))
		return -1;
	if (c->id.nodelist != NULL && !is_numeric_addr(c->id.master) &&
	    de_hostlist_find(c->id.nodelist, DE_HL_SUFFIX, c->id.master, &e) < 0)
		return de_fail_set(f, DE_D_MASTER_NOT_IN_STEP,
				   "MASTER_ADDR=%s is not one of this step's nodes (%s)",
				   c->id.master, c->id.nodelist);
	/* The data listener: the interface the user named, else the one
	 * that routes to MASTER_ADDR, as gloo does. */
	named = de_named_iface(c, c->net.master_addr.ss.ss_family, DE_D_USAGE, f);
	if (named < 0)
		return -1;
	if (!named) {
		if (de_route_source(&c->net.master_addr, &c->net.data_addr, c->net.iface,
				    sizeof(c->net.iface), &e))
			return de_fail_set(f, DE_D_MASTER_TIMEOUT, "MASTER_ADDR=%s: %s",
					   c->id.master, e.msg);
		snprintf(c->net.iface_how, sizeof(c->net.iface_how), "route to MASTER_ADDR");
	}
	if (iface_loopback(c, c->id.nnodes, "", f))
		return -1;
	/* Every other node's prober connects at once: a short backlog drops
	 * SYNs, which come back only after a 1 s retransmission. */
	c->net.data_fd = de_listen(&c->net.data_addr, 4096, &e);
	if (c->net.data_fd < 0)
		return de_fail_set(f, DE_D_USAGE, "data listener on %s (by %s; DISTENV_SOCKET_IFNAME picks another): %s",
				   c->net.iface, c->net.iface_how, e.msg);
	c->net.probe_fd = de_listen_probe(&c->net.data_addr, &c->net.probe_port, &e);
	if (c->net.probe_fd < 0)
		return de_fail_set(f, DE_D_USAGE, "probe listener on %s (by %s; DISTENV_SOCKET_IFNAME picks another): %s",
				   c->net.iface, c->net.iface_how, e.msg);
	return 0;
}

/* The backends this distenv-check was built with, in auto's order of
 * preference. */
static const struct de_backend_ops *const backends[] = {
#ifdef HAVE_NCCL
	&de_nccl_backend,
#endif
	&de_socket_backend,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* With --verbose, the backend picked, on what, and why. */
static void say_backend(const struct de_check *c, const char *passed_over)
{
	char who[32], what[1200] = "";

	if (!c->o.verbose)
		return;
	snprintf(who, sizeof(who), "rank %u", c->id.rank);
	if (c->be->describe != NULL)
		c->be->describe(what, sizeof(what));
	de_log(who, "backend %s%s, device %s%s%s%s%s", c->be->name,
	       c->o.backend == DE_BACKEND_AUTO ? " (auto)" : "", c->device,
	       what[0] ? ", " : "", what, passed_over[0] ? "; " : "", passed_over);
}

/* --backend=auto takes the first usable one; a named one must be built. */
int de_choose_backend(struct de_check *c, struct de_fail *f)
{
	char passed_over[DE_ERR_MAX + 64] = "";
	struct de_err why;
	size_t i;

	for (i = 0; i < NBACKENDS; i++) {
		if (c->o.backend == DE_BACKEND_AUTO) {
			if (!backends[i]->usable(&why)) {
				/* The first one passed over is the one wanted. */
				if (passed_over[0] == '\0')
					snprintf(passed_over, sizeof(passed_over), "not %s: %s",
						 backends[i]->name, why.msg);
				continue;
			}
		} else if (backends[i]->id != c->o.backend) {
			continue;
		}
		c->be = backends[i];
		if (c->be->select(c, f))
			return -1;
		say_backend(c, passed_over);
		return 0;
	}
	if (c->o.backend == DE_BACKEND_NCCL)
		return de_fail_set(f, DE_D_USAGE, "--backend=nccl: this distenv-check was built without CUDA/NCCL headers");
	/* The socket backend is always built and always usable. */
	return de_fail_set(f, DE_D_INTERNAL, "no backend for --backend (%d)", (int)c->o.backend);
}
