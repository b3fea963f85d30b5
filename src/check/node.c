/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --node: this node alone, before a job meets it. No peers,
 * no MASTER_*, nothing on the network but the name lookups the check is
 * about. In order, the first finding wins:
 *   1. this node's name (and its Slurm name, where that differs) resolves
 *      to a non-loopback address that an interface of this node holds;
 *   2. the data interface (DISTENV_SOCKET_IFNAME, GLOO_ or NCCL_, else
 *      the one holding that address) is up with a carrier; its MTU said;
 *   3. the MASTER_PORT range (--port-range) is outside the kernel's
 *      ephemeral ports, or reserved from them;
 *   4. where GPUs are expected, NCCL and the CUDA runtime load and CUDA
 *      sees that many.
 * One line, exit 0 or 1. With --drain the verdict goes to Slurm: a
 * finding drains the node, a pass resumes it if distenv drained it
 * (nodecheck.c decides, scontrol.c runs scontrol). */
#include "config.h"

#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cudalib.h"
#include "identity.h"
#include "node.h"
#include "nodecheck.h"
#include "parse.h"
#include "port.h"
#include "preflight.h"
#include "scontrol.h"
#ifdef HAVE_NCCL
#include "nccl_lib.h"
#endif

/* Without --timeout: well inside Slurm's limit on a HealthCheckProgram. */
#define NODE_TIMEOUT_S 10

struct node {
	struct de_check *c;
	const char *name;       /* SLURMD_NODENAME, else the host name: the line's, scontrol's */
	const char *slurm_name; /* SLURMD_NODENAME, or NULL */
	struct de_addr addr;    /* the address of this node's host name */
	char addr_str[64];
	char addr_iface[64];    /* the interface that holds it */
	char scontrol[512];     /* --drain: the scontrol it runs */
	struct de_node_rec rec; /* --drain: the node as Slurm has it */
	int have_rec;
	char rec_err[DE_ERR_MAX];
	int64_t deadline;
	char facts[1024];       /* what passed, for the OK line */
};

__attribute__((format(printf, 2, 3)))
static void fact(struct node *n, const char *fmt, ...)
{
	size_t off = strlen(n->facts);
	va_list ap;

	if (off > 0 && off + 2 < sizeof(n->facts)) {
		memcpy(n->facts + off, "; ", 3);
		off += 2;
	}
	va_start(ap, fmt);
	vsnprintf(n->facts + off, sizeof(n->facts) - off, fmt, ap);
	va_end(ap);
}

/* One name: resolves, not to loopback, to an address of this node. The
 * host name's address and interface go into n (the data interface's
 * default). */
static int check_name(struct node *n, const char *name, const char *what, int host,
		      struct de_fail *f)
{
	char a[64], ifname[64], have[300];
	struct de_addr addr;
	struct de_err e;
	unsigned flags = 0;
	int found;

	if (de_resolve(name, 0, &addr, &e))
		return de_fail_set(f, DE_D_HOST_RESOLVE, "this node's %s: %s", what, e.msg);
	de_addr_str(&addr, a, sizeof(a));
	if (de_addr_is_loopback(&addr))
		return de_fail_set(f, DE_D_HOST_LOOPBACK, "this node's %s %s resolves to %s (loopback)",
				   what, name, a);
	found = de_addr_iface(&addr, ifname, sizeof(ifname), &flags, have, sizeof(have), &e);
	if (found < 0)
		return de_fail_set(f, DE_D_INTERNAL, "%s", e.msg);
	if (!found)
		return de_fail_set(f, DE_D_HOST_NOT_LOCAL,
				   "this node's %s %s resolves to %s, which no interface of this node has (it has: %s)",
				   what, name, a, have[0] ? have : "none of that family");
	if (host) {
		n->addr = addr;
		snprintf(n->addr_str, sizeof(n->addr_str), "%s", a);
		snprintf(n->addr_iface, sizeof(n->addr_iface), "%s", ifname);
	}
	return 0;
}

static int check_names(struct node *n, struct de_fail *f)
{
	const char *host = n->c->id.host;

	if (check_name(n, host, "name", 1, f))
		return -1;
	/* MASTER_ADDR is a Slurm node name: where it is not the host name,
	 * it must resolve here to this node too. */
	if (n->slurm_name != NULL && strcmp(n->slurm_name, host) != 0) {
		if (check_name(n, n->slurm_name, "Slurm name (SLURMD_NODENAME)", 0, f))
			return -1;
		fact(n, "%s (Slurm's %s) is %s", host, n->slurm_name, n->addr_str);
	} else {
		fact(n, "%s is %s", host, n->addr_str);
	}
	return 0;
}

static int check_iface(struct node *n, struct de_fail *f)
{
	struct de_link *l = &n->c->net;
	struct de_err e;
	unsigned flags = 0;
	int named, mtu;

	named = de_named_iface(n->c, n->addr.ss.ss_family, DE_D_IFACE, f);
	if (named < 0)
		return -1;
	if (!named) {
		snprintf(l->iface, sizeof(l->iface), "%s", n->addr_iface);
		snprintf(l->iface_how, sizeof(l->iface_how), "holds %s", n->addr_str);
	}
	if (de_iface_flags(l->iface, &flags, &e))
		return de_fail_set(f, DE_D_IFACE, "the data interface %s (%s): %s", l->iface,
				   l->iface_how, e.msg);
	if (flags & IFF_LOOPBACK)
		return de_fail_set(f, DE_D_IFACE, "the data interface %s (%s) is loopback", l->iface,
				   l->iface_how);
	if (!(flags & IFF_UP))
		return de_fail_set(f, DE_D_IFACE, "the data interface %s (%s) is down", l->iface,
				   l->iface_how);
	if (!(flags & IFF_RUNNING))
		return de_fail_set(f, DE_D_IFACE, "the data interface %s (%s) is up but has no carrier (the link is down)",
				   l->iface, l->iface_how);
	mtu = de_iface_mtu(l->iface);
	fact(n, "data interface %s up, MTU %d (%s)", l->iface, mtu, l->iface_how);
	if (named && strcmp(l->iface, n->addr_iface) != 0)
		fact(n, "the name's address is on %s", n->addr_iface);
	return 0;
}

static int check_ports(struct node *n, struct de_fail *f)
{
	uint16_t lo = n->c->o.port_lo, hi = n->c->o.port_hi, elo, ehi, first = 0;
	struct de_err e;
	long open;

	if (de_ephemeral_read(DE_EPHEMERAL_PATH, &elo, &ehi, &e))
		return de_fail_set(f, DE_D_EPHEMERAL, "%s", e.msg);
	if (!de_port_ranges_overlap(lo, hi, elo, ehi)) {
		fact(n, "MASTER_PORT range %u-%u outside the ephemeral ports %u-%u", lo, hi, elo, ehi);
		return 0;
	}
	/* Reserved ports are never handed out as ephemeral ones. */
	open = de_reserved_read(DE_RESERVED_PATH, lo > elo ? lo : elo, hi < ehi ? hi : ehi, &first, &e);
	if (open < 0)
		return de_fail_set(f, DE_D_EPHEMERAL, "%s", e.msg);
	if (open > 0)
		return de_fail_set(f, DE_D_EPHEMERAL,
				   "the MASTER_PORT range %u-%u overlaps this node's ephemeral ports %u-%u (net.ipv4.ip_local_port_range), %ld of its ports from %u not reserved (net.ipv4.ip_local_reserved_ports)",
				   lo, hi, elo, ehi, open, first);
	fact(n, "MASTER_PORT range %u-%u inside the ephemeral ports %u-%u but reserved (net.ipv4.ip_local_reserved_ports)",
	     lo, hi, elo, ehi);
	return 0;
}

/* The GPUs this node must show, and where that number comes from: 1
 * known, 0 not, -1 with f (a malformed variable). */
static int expected_gpus(struct node *n, unsigned *want, char *src, size_t len, struct de_fail *f)
{
	const char *v;
	unsigned long ul;
	struct de_err e;

	if (n->c->o.gpus >= 0) {
		*want = (unsigned)n->c->o.gpus;
		snprintf(src, len, "--gpus=%d", n->c->o.gpus);
		return 1;
	}
	if ((v = getenv("SLURM_GPUS_ON_NODE")) != NULL) {
		if (de_env_ulong("SLURM_GPUS_ON_NODE", v, 0, 1024, &ul, &e))
			return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
		*want = (unsigned)ul;
		snprintf(src, len, "SLURM_GPUS_ON_NODE=%s", v);
		return 1;
	}
	if ((v = getenv("SLURM_JOB_GPUS")) != NULL) {
		if (de_device_list_count("SLURM_JOB_GPUS", v, want, &e))
			return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
		snprintf(src, len, "SLURM_JOB_GPUS=%.60s", v);
		/* A Prolog sees every GPU of the node: count the job's. */
		if (getenv("CUDA_VISIBLE_DEVICES") == NULL && *want > 0)
			setenv("CUDA_VISIBLE_DEVICES", v, 1);
		return 1;
	}
	if ((v = getenv("CUDA_VISIBLE_DEVICES")) != NULL) {
		if (de_device_list_count("CUDA_VISIBLE_DEVICES", v, want, &e))
			return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
		snprintf(src, len, "CUDA_VISIBLE_DEVICES=%.60s", v);
		return 1;
	}
	if (n->have_rec && n->rec.gres[0] != '\0') {
		/* A Gres we cannot read is not the node's fault: no GPU check. */
		if (de_gres_gpus(n->rec.gres, want, &e))
			return 0;
		snprintf(src, len, "Gres%s%.60s", strcmp(n->rec.gres, "(null)") == 0 ? ": none" : "=",
			 strcmp(n->rec.gres, "(null)") == 0 ? "" : n->rec.gres);
		return 1;
	}
	return 0;
}

static int check_gpus(struct node *n, struct de_fail *f)
{
	enum de_backend be = n->c->o.backend;
	char src[96] = "";
	unsigned want = 0;
	int known;

	if (be == DE_BACKEND_SOCKET) {
		fact(n, "GPUs not checked (--backend=socket)");
		return 0;
	}
	known = expected_gpus(n, &want, src, sizeof(src), f);
	if (known < 0)
		return -1;
	if (be != DE_BACKEND_NCCL && (!known || want == 0)) {
		if (known)
			fact(n, "no GPU (%s)", src);
		else
			fact(n, "no GPU expected");
		return 0;
	}
	if (!known)
		snprintf(src, sizeof(src), "--backend=nccl");
#ifdef HAVE_NCCL
	{
		struct de_fail lf;
		struct de_err why;
		const char *msg;
		int got, major = 0, minor = 0, patch = 0;

		if (de_nccl_lib_load(&lf)) {
			/* The loader words it for the backend's option. */
			msg = strncmp(lf.msg, "--backend=nccl: ", 16) == 0 ? lf.msg + 16 : lf.msg;
			return de_fail_set(f, lf.diag, "GPUs expected (%s), but %s", src, msg);
		}
		got = de_nccl_device_count(&why);
		if (known && got != (int)want)
			return de_fail_set(f, DE_D_GPU_COUNT, "%u GPU%s expected (%s), CUDA sees %d%s%s", want,
					   want == 1 ? "" : "s", src, got, got == 0 ? ": " : "",
					   got == 0 ? why.msg : "");
		if (got == 0)
			return de_fail_set(f, DE_D_GPU_COUNT, "--backend=nccl, but CUDA sees no GPU: %s", why.msg);
		de_nccl_version_split(de_nl.nccl_version, &major, &minor, &patch, &why);
		fact(n, "%d GPU%s (%s), NCCL %d.%d.%d loads", got, got == 1 ? "" : "s", src, major, minor,
		     patch);
		return 0;
	}
#else
	return de_fail_set(f, DE_D_NCCL_MISSING,
			   "GPUs expected (%s), but this distenv-check was built without CUDA/NCCL headers",
			   src);
#endif
}

/* --drain: Slurm hears the verdict. What was done, into act; -1 when it
 * could not be done. */
static int tell_slurm(struct node *n, const struct de_fail *f, int failed, char *act, size_t len)
{
	char reason[200] = "";
	struct de_err e;

	if (!n->have_rec) {
		snprintf(act, len, "could not read this node's Slurm state: %s", n->rec_err);
		return -1;
	}
	if (failed)
		de_drain_reason(de_diag_name(f->diag), f->msg, reason, sizeof(reason));
	switch (de_drain_decide(failed, &n->rec, reason)) {
	case DE_DRAIN_NOTHING:
		return 0;
	case DE_DRAIN_SET:
		if (de_scontrol_drain(n->scontrol, n->name, reason, n->deadline, &e)) {
			snprintf(act, len, "could not drain it: %s", e.msg);
			return -1;
		}
		snprintf(act, len, "drained");
		return 0;
	case DE_DRAIN_SAME:
		snprintf(act, len, "already drained by distenv");
		return 0;
	case DE_DRAIN_OTHER:
		if (failed)
			snprintf(act, len, "already drained, not by distenv (\"%s\"): left as it is",
				 n->rec.reason[0] ? n->rec.reason : "no reason");
		else
			snprintf(act, len, "left drained: the reason is not distenv's (\"%s\")",
				 n->rec.reason[0] ? n->rec.reason : "no reason");
		return 0;
	case DE_DRAIN_RESUME:
		if (de_scontrol_resume(n->scontrol, n->name, n->deadline, &e)) {
			snprintf(act, len, "could not resume it: %s", e.msg);
			return -1;
		}
		snprintf(act, len, "resumed (drained by distenv: \"%s\")", n->rec.reason);
		return 0;
	}
	return 0;
}

int de_node_mode(struct de_check *c)
{
	static struct node n;
	struct de_fail f;
	struct de_err e;
	char act[1024] = "";
	int failed, rc;

	memset(&n, 0, sizeof(n));
	memset(&f, 0, sizeof(f));
	n.c = c;
	n.deadline = de_now_ms() + (int64_t)(c->o.timeout_given ? c->o.timeout_s : NODE_TIMEOUT_S) * 1000;
	if (de_getenv_str("SLURMD_NODENAME", "this node's name in Slurm", &n.slurm_name, &f)) {
		printf("distenv-check: node %s: FAIL %s: %s -- %s\n", c->id.host, de_diag_name(f.diag),
		       f.msg, de_diag_hint(f.diag));
		return 2;
	}
	n.name = n.slurm_name != NULL ? n.slurm_name : c->id.host;
	if (c->o.drain) {
		if (de_scontrol_find(c->o.scontrol, n.scontrol, sizeof(n.scontrol), &e))
			return de_usage_error("distenv-check", "--drain: %s", e.msg);
		/* First: the node's Gres tells the GPU check what to expect. */
		n.have_rec = de_scontrol_node(n.scontrol, n.name, n.deadline, &n.rec, &e) == 0;
		if (!n.have_rec)
			snprintf(n.rec_err, sizeof(n.rec_err), "%s", e.msg);
	}
	failed = check_names(&n, &f) || check_iface(&n, &f) || check_ports(&n, &f) ||
		 check_gpus(&n, &f);
	/* A variable of ours set wrong is the caller's to fix, not the
	 * node's: exit 2, and Slurm is not told. */
	if (failed && (f.diag == DE_D_ENV_VALUE || f.diag == DE_D_USAGE)) {
		printf("distenv-check: node %s: FAIL %s: %s -- %s\n", n.name, de_diag_name(f.diag), f.msg,
		       de_diag_hint(f.diag));
		return 2;
	}
	rc = failed;
	if (c->o.drain && tell_slurm(&n, &f, failed, act, sizeof(act)))
		rc = 1;
	if (failed)
		printf("distenv-check: node %s: FAIL %s: %s%s%s -- %s\n", n.name, de_diag_name(f.diag),
		       f.msg, act[0] ? "; " : "", act, de_diag_hint(f.diag));
	else
		printf("distenv-check: node %s: OK: %s%s%s\n", n.name, n.facts, act[0] ? "; " : "", act);
	return rc;
}
