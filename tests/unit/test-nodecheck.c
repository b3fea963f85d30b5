/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --node's pure parts: scontrol's node record, Gres GPUs,
 * device lists, and what --drain does. The records are scontrol's own
 * text (Slurm 22.05's `scontrol show node -o`, shortened where noted). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "nodecheck.h"
#include "tap.h"

static const char idle[] =
	"NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=2.61 "
	"AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=10.77.0.11 "
	"NodeHostName=node1 Version=22.05.8 OS=Linux 6.18.44-fc-v1272 #1 SMP PREEMPT_DYNAMIC @0  "
	"RealMemory=1 AllocMem=0 FreeMem=22091 Sockets=4 Boards=1 State=IDLE ThreadsPerCore=1 "
	"TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-12-06T04:28:19 "
	"SlurmdStartTime=2026-12-06T11:59:32 LastBusyTime=2026-12-06T11:59:32 "
	"CfgTRES=cpu=4,mem=1M,billing=4 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
	"ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";
static const char drained[] =
	"NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 Gres=gpu:a100:4(S:0-1) "
	"NodeAddr=10.77.0.11 OS=Linux 6.18.44-fc-v1272 #1 SMP PREEMPT_DYNAMIC @0  State=IDLE+DRAIN "
	"ThreadsPerCore=1 ExtSensorsTemp=n/s Reason=distenv: hostname-loopback: node1 resolves "
	"to 127.0.1.1 (x=y) [root@2026-12-06T11:59:32]\n";

static void test_record(void)
{
	struct de_node_rec r;
	struct de_err e;
	char later[1024];

	ok(de_node_rec_parse(idle, &r, &e) == 0, "an idle node's record parses");
	is_str(r.name, "node1", "its name");
	is_str(r.state, "IDLE", "its state");
	is_int(r.drain, 0, "not drained");
	is_str(r.reason, "", "no reason");
	is_str(r.gres, "(null)", "Gres (null)");

	ok(de_node_rec_parse(drained, &r, &e) == 0, "a drained node's record parses");
	is_str(r.state, "IDLE+DRAIN", "its state");
	is_int(r.drain, 1, "drained");
	is_str(r.reason, "distenv: hostname-loopback: node1 resolves to 127.0.1.1 (x=y)",
	       "the reason, blanks and '=' kept, without Slurm's [user@time]");
	is_str(r.gres, "gpu:a100:4(S:0-1)", "Gres");

	/* A field after the reason (newer Slurms print more). */
	snprintf(later, sizeof(later), "%.*s Comment=x\n", (int)(sizeof(drained) - 2), drained);
	ok(de_node_rec_parse(later, &r, &e) == 0 &&
	   strcmp(r.reason, "distenv: hostname-loopback: node1 resolves to 127.0.1.1 (x=y)") == 0,
	   "a field after the reason's bracket is not part of it");
	ok(de_node_rec_parse("NodeName=n1 State=MIXED+DRAIN Reason=maintenance by hand\n", &r, &e) == 0 &&
	   strcmp(r.reason, "maintenance by hand") == 0 && r.drain,
	   "a reason without the bracket runs to the end of the line");
	ok(de_node_rec_parse("NodeName=n1 State=DRAINING\nNodeName=n2 State=IDLE\n", &r, &e) == 0 &&
	   r.drain && strcmp(r.name, "n1") == 0, "DRAINING is drained; the first record only");
	ok(de_node_rec_parse("NodeName=n1 State=DOWN+NOT_RESPONDING\n", &r, &e) == 0 && !r.drain,
	   "DOWN is not drained");
	ok(de_node_rec_parse("NodeName=n1 NextState=DRAIN State=IDLE\n", &r, &e) == 0 &&
	   strcmp(r.state, "IDLE") == 0, "State, not NextState");
	ok(de_node_rec_parse("Node nodeX not found\n", &r, &e) == -1, "scontrol's not found is no record");
	is_str(e.msg, "not a node record (expected NodeName=... State=...): \"Node nodeX not found\"",
	       "its error quotes the line");
	ok(de_node_rec_parse("", &r, &e) == -1, "empty text is no record");
	ok(de_node_rec_parse("NodeName= State=IDLE", &r, &e) == -1, "a record without a name is refused");
}

static void test_gres(void)
{
	static const struct {
		const char *gres;
		unsigned gpus;
	} ok_cases[] = {
		{ "(null)", 0 },
		{ "", 0 },
		{ "gpu:4", 4 },
		{ "gpu:a100:4", 4 },
		{ "gpu:a100:4(S:0-1)", 4 },
		{ "gpu:a100:2(S:0),gpu:v100:2(S:1)", 4 },
		{ "gpu:4(S:0,2),mps:400", 4 },
		{ "mps:400", 0 },
		{ "gpu", 1 },
		{ "gpu:tesla", 1 },
		{ "gpus:2", 0 },
	};
	struct de_err e;
	unsigned n, i;

	for (i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]); i++) {
		int rc = de_gres_gpus(ok_cases[i].gres, &n, &e);

		ok(rc == 0 && n == ok_cases[i].gpus, "Gres \"%s\": %u GPUs (got %u)", ok_cases[i].gres,
		   ok_cases[i].gpus, n);
	}
	ok(de_gres_gpus("gpu:4x", &n, &e) == -1, "Gres gpu:4x is an error");
	is_str(e.msg, "Gres entry \"gpu:4x\": expected a GPU count after the last ':'", "... naming the entry");
	ok(de_gres_gpus("gpu:2,,gpu:2", &n, &e) == -1, "an empty Gres entry is an error");
}

static void test_device_list(void)
{
	struct de_err e;
	unsigned n;

	ok(de_device_list_count("SLURM_JOB_GPUS", "0,1,2,3", &n, &e) == 0 && n == 4, "0,1,2,3: 4");
	ok(de_device_list_count("CUDA_VISIBLE_DEVICES", "GPU-8f6c,GPU-12ab", &n, &e) == 0 && n == 2,
	   "two UUIDs: 2");
	ok(de_device_list_count("CUDA_VISIBLE_DEVICES", "", &n, &e) == 0 && n == 0, "empty: none");
	ok(de_device_list_count("CUDA_VISIBLE_DEVICES", "NoDevFiles", &n, &e) == 0 && n == 0,
	   "Slurm's NoDevFiles: none");
	ok(de_device_list_count("SLURM_JOB_GPUS", "0,,1", &n, &e) == -1, "an empty entry is an error");
	is_str(e.msg, "SLURM_JOB_GPUS=\"0,,1\": an empty entry (expected devices, comma-separated, e.g. 0,1)",
	       "... naming the variable");
	ok(de_device_list_count("SLURM_JOB_GPUS", "0,", &n, &e) == -1, "a trailing comma is an error");
}

static void test_decide(void)
{
	struct de_node_rec r;
	const char *ours = "distenv: hostname-loopback: x";

	memset(&r, 0, sizeof(r));
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_NOTHING, "passed, not drained: nothing");
	is_int(de_drain_decide(1, &r, ours), DE_DRAIN_SET, "failed, not drained: drain");
	r.drain = 1;
	snprintf(r.reason, sizeof(r.reason), "%s", ours);
	is_int(de_drain_decide(1, &r, ours), DE_DRAIN_SAME, "failed, drained by us for this: nothing new");
	is_int(de_drain_decide(1, &r, "distenv: data-interface: y"), DE_DRAIN_SET,
	       "failed, drained by us for another finding: the reason updated");
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_RESUME, "passed, drained by us: resume");
	snprintf(r.reason, sizeof(r.reason), "maintenance by hand");
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_OTHER, "passed, drained by someone else: left");
	is_int(de_drain_decide(1, &r, ours), DE_DRAIN_OTHER, "failed, drained by someone else: left");
	snprintf(r.reason, sizeof(r.reason), "distenv");
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_OTHER, "\"distenv\" without the colon is not ours");
	r.reason[0] = '\0';
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_OTHER, "drained without a reason: not ours");
	r.drain = 0;
	snprintf(r.reason, sizeof(r.reason), "%s", ours);
	is_int(de_drain_decide(0, &r, ours), DE_DRAIN_NOTHING,
	       "passed, our reason left on a node no longer drained: nothing");
}

static void test_reason(void)
{
	char out[64];

	de_drain_reason("hostname-loopback", "name \"node2\" is\n127.0.1.1", out, sizeof(out));
	is_str(out, "distenv: hostname-loopback: name 'node2' is 127.0.1.1",
	       "the reason: prefix, diagnosis, message; no double quotes or newlines");
	de_drain_reason("x", "0123456789012345678901234567890123456789012345678901234567890123456789",
			out, 20);
	is_int((long long)strlen(out), 19, "cut to its room");
}

int main(void)
{
	test_record();
	test_gres();
	test_device_list();
	test_decide();
	test_reason();
	return tap_done();
}
