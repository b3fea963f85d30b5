#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-cluster.sh: the local cluster tool itself (scripts/distenv-cluster):
# refusal without root, up/idempotent up/status/down, srun across nodes,
# sbatch, heterogeneous steps, arbitrary distribution, node-exec, name
# resolution, plugstack.conf re-read per step, a clean teardown, 3 nodes.
# Needs root; skips otherwise. Brings the cluster down when it ends.
# Commands for the tasks are single-quoted on purpose: they expand there.
# shellcheck disable=SC2016
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

S=$DISTENV_CLUSTER
cluster_forget_job_env
[[ $(id -u) -eq 0 ]] || tap_skip_all "needs root (network namespaces, Slurm daemons)"
cluster_lock

tmp=$(mktemp -d /tmp/distenv-test-cluster.XXXXXX)
chmod 0755 "$tmp" # nobody runs a copy of the script from here
cleanup() {
	"$S" down >/dev/null 2>&1
	rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

STATE_DIR=${DISTENV_CLUSTER_DIR:-/run/distenv-cluster}
[[ -d /run ]] || STATE_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster}

now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
oneline() { sort | tr '\n' ' ' | sed 's/ $//'; }

# Everything of ours that could be left behind, one line each (empty: clean).
leftovers() {
	local ns
	for ns in $(ip netns list | awk '/^distenv-/ { print $1 }'); do
		echo "netns $ns: pids $(ip netns pids "$ns" | tr '\n' ' ')"
	done
	ip -o link show | awk -F': ' '$2 ~ /^distenv/ { print "link " $2 }'
	awk '$2 ~ /distenv/ { print "mount " $2 }' /proc/self/mounts
	[[ -e $STATE_DIR ]] && echo "state dir $STATE_DIR"
	return 0
}

# PID and its descendants.
descendants() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ parent[$1] = $2 }
		END {
			keep[root] = 1
			do {
				grew = 0
				for (p in parent)
					if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
			} while (grew)
			for (p in keep) print p
		}'
}

# Every pid of the running cluster: pid files and namespace members.
cluster_pids() {
	local ns
	cat "$STATE_DIR"/run/*.pid 2>/dev/null | awk '{ print $1 }'
	for ns in $(ip netns list | awk '/^distenv-/ { print $1 }'); do
		ip netns pids "$ns"
	done
}

# --- refusals ---------------------------------------------------------------

"$S" down >/dev/null 2>&1
tap_is "$(leftovers)" "" "down gives a clean slate"

# Run as nobody from a world-readable copy (the tree may not be readable).
install -m 0755 "$S" "$tmp/distenv-cluster"
install -m 0644 "$(dirname "$S")/releases.sh" "$tmp/releases.sh"
install -d -m 0755 "$tmp/lib"
install -m 0644 "$(dirname "$S")"/lib/cluster-*.sh "$tmp/lib/"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$tmp/distenv-cluster" up --no-plugin 2>&1)
rc=$?
tap_is "$rc" 2 "non-root: up exits 2"
tap_like "$out" "must run as root" "non-root: says root is needed"
tap_is "$(wc -l <<<"$out")" 1 "non-root: the refusal is one line"

out=$("$S" up --plugin "$tmp/no-such-plugin.so" 2>&1)
rc=$?
tap_is "$rc" 2 "up --plugin MISSING exits 2"
tap_like "$out" "plugin not found: $tmp/no-such-plugin.so" "up --plugin MISSING names the path"
tap_is "$(leftovers)" "" "up --plugin MISSING starts nothing"

out=$("$S" up --nodes 0 2>&1)
tap_is "$?" 2 "up --nodes 0 is refused"

# --- up from nothing ----------------------------------------------------------

t0=$(now)
out=$("$S" up --no-plugin 2>&1)
rc=$?
t_up=$(secs "$t0")
tap_is "$rc" 0 "up from nothing exits 0" || tap_diag "$out"
tap_diag "up from nothing: ${t_up} s"
tap_like "$out" "up: 2 nodes x 4 CPUs idle" "up reports 2 nodes x 4 CPUs idle"
if lt "$t_up" 20; then tap_ok "up within 20 s (${t_up} s)"; else tap_fail "up within 20 s" "took $t_up s"; fi

ctld_pid=$(cat "$STATE_DIR/run/slurmctld.pid" 2>/dev/null)
t0=$(now)
out=$("$S" up --no-plugin 2>&1)
rc=$?
t_again=$(secs "$t0")
tap_is "$rc" 0 "up again exits 0"
tap_like "$out" "already up" "up again says it is already up"
tap_is "$(cat "$STATE_DIR/run/slurmctld.pid" 2>/dev/null)" "$ctld_pid" "up again keeps the same slurmctld"
if lt "$t_again" 2; then tap_ok "up again is fast (${t_again} s)"; else tap_fail "up again is fast" "took $t_again s"; fi

out=$("$S" status 2>&1)
rc=$?
tap_is "$rc" 0 "status exits 0 when up" || tap_diag "$out"
tap_like "$out" "node1 +10\.77\.0\.11 +idle" "status lists node1, its address, idle"
tap_like "$out" "node2 +10\.77\.0\.12 +idle" "status lists node2, its address, idle"

tap_is "$(cx sinfo -h -N -o '%N %t' | oneline)" "node1 idle node2 idle" "sinfo: two nodes, idle"
tap_is "$(cx scontrol show node node1 | grep -o 'CPUTot=[0-9]*')" "CPUTot=4" "node1 advertises 4 CPUs"

# --- steps and jobs -------------------------------------------------------------

tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 hostname | oneline)" "node1 node2" \
	"srun -N2 -n2 hostname: node1 and node2"

out=$(cx srun -N2 -n2 --ntasks-per-node=1 bash -c \
	'h=$(hostname); echo "$h $(getent ahostsv4 "$h" | awk "{ print \$1 }" | sort -u | tr "\n" " ")"' |
	sort)
tap_is "$out" "node1 10.77.0.11 
node2 10.77.0.12 " "each task's hostname resolves to its node's bridge address only (no 127.x)"

out=$(cx srun -N1 -w node1 bash -c 'getent hosts login ctl node2 | awk "{ print \$2 \"=\" \$1 }"' | oneline)
tap_is "$out" "ctl=10.77.0.2 login=10.77.0.1 node2=10.77.0.12" "a node resolves login, ctl and the other nodes"

hosts_sum=$(md5sum </etc/hosts)
out=$(cx getent hosts node1 node2 | awk '{ print $2 "=" $1 }' | oneline)
tap_is "$out" "node1=10.77.0.11 node2=10.77.0.12" "the login host resolves node names (exec)"
tap_is "$(md5sum </etc/hosts)" "$hosts_sum" "the real /etc/hosts is untouched"

cx sh -c 'exit 7'
tap_is "$?" 7 "exec returns the command's exit status"

# sbatch: a 2-node batch script whose step writes where it ran.
cat >"$tmp/job.sh" <<'EOF'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
srun bash -c 'echo "task $SLURM_PROCID on $(hostname)"'
EOF
jid=$(cx sbatch --parsable -o "$tmp/job-%j.out" "$tmp/job.sh")
tap_like "$jid" '^[0-9]+$' "sbatch returns a job id"
state='' deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
	state=$(cx scontrol show job -o "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
	case $state in
	JobState=PENDING | JobState=RUNNING | JobState=CONFIGURING | JobState=COMPLETING | '') sleep 0.1 ;;
	*) break ;;
	esac
done
tap_is "$state" "JobState=COMPLETED" "the 2-node batch job completes"
tap_is "$(sort "$tmp/job-$jid.out" 2>&1 | tr '\n' ' ')" "task 0 on node1 task 1 on node2 " \
	"the batch job's step ran one task on each node"

# Heterogeneous step: component 0 on node2, component 1 (2 tasks) on node1.
out=$(cx srun -N1 -n1 -w node2 : -N1 -n2 -w node1 \
	bash -c 'echo "$SLURM_PROCID $(hostname)"' 2>"$tmp/het.err" | sort)
tap_is "$out" "0 node2
1 node1
2 node1" "heterogeneous step: rank 0 on node2, ranks 1-2 on node1" || tap_diag "$(cat "$tmp/het.err")"

# Arbitrary distribution: the hostfile puts task 0 on node2.
printf 'node2\nnode1\n' >"$tmp/hostfile"
out=$(SLURM_HOSTFILE=$tmp/hostfile cx srun -n2 -m arbitrary \
	bash -c 'echo "$SLURM_PROCID $(hostname) $SLURM_STEP_NODELIST"' | sort)
tap_is "$out" "0 node2 node[1-2]
1 node1 node[1-2]" "arbitrary distribution: task 0 on node2, nodelist sorted"

# --- node-exec --------------------------------------------------------------------

tap_is "$(nx node2 hostname)" node2 "node-exec node2: hostname"
tap_is "$(nx ctl hostname)" ctl "node-exec ctl: hostname"
tap_like "$(nx node1 ip -4 -o addr show dev eth0)" "inet 10\.77\.0\.11/24" "node-exec node1: its own address on eth0"
tap_check "node-exec node1 reaches node2 over the bridge" nx node1 bash -c 'exec 3<>/dev/tcp/10.77.0.12/6818'
out=$("$S" node-exec node9 -- true 2>&1)
tap_is "$?" 2 "node-exec on a missing node exits 2"

# --- plugstack ----------------------------------------------------------------------

out=$("$S" plugstack a=1 2>&1)
tap_is "$?" 2 "plugstack without a plugin is refused"

# A probe SPANK plugin (built here when a compiler and spank.h exist) proves
# that slurmstepd re-reads plugstack.conf for every step: no restart.
if command -v cc >/dev/null && [[ -f /usr/include/slurm/spank.h ]]; then
	cat >"$tmp/probe.c" <<'EOF'
#include <slurm/spank.h>
#include <string.h>
SPANK_PLUGIN(probe, 1);
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char buf[256] = "";
	for (int i = 0; i < ac; i++) {
		if (i)
			strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
		strncat(buf, av[i], sizeof(buf) - strlen(buf) - 1);
	}
	return spank_setenv(sp, "PROBE_ARGS", buf, 1) == ESPANK_SUCCESS ? 0 : -1;
}
EOF
	if cc -shared -fPIC -o "$tmp/probe.so" "$tmp/probe.c" 2>"$tmp/cc.err"; then
		slurmd_pids=$(cat "$STATE_DIR"/run/slurmd-*.pid | oneline)
		out=$("$S" up --plugin "$tmp/probe.so" --plugstack-args "a=1" 2>&1)
		tap_like "$out" "already up.*required $tmp/probe.so a=1" "up with a new plugin on the same shape rewrites plugstack.conf only"
		tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 bash -c 'echo "$(hostname) $PROBE_ARGS"' | oneline)" \
			"node1 a=1 node2 a=1" "tasks see the plugin's args"
		cluster_plugstack b=2 c=3
		tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 bash -c 'echo "$(hostname) $PROBE_ARGS"' | oneline)" \
			"node1 b=2,c=3 node2 b=2,c=3" "plugstack ARGS applies to the next step"
		tap_is "$(cat "$STATE_DIR"/run/slurmd-*.pid | oneline)" "$slurmd_pids" "... without restarting slurmd"
		"$S" up --no-plugin >/dev/null 2>&1
		tap_is "$(cx srun -N1 -n1 bash -c 'echo "${PROBE_ARGS-unset}"')" "unset" "up --no-plugin removes the plugin for new steps"
	else
		tap_skip "plugstack.conf re-read per step" "probe plugin did not build: $(head -n1 "$tmp/cc.err")"
	fi
else
	tap_skip "plugstack.conf re-read per step" "no cc or slurm/spank.h"
fi

# --- down -------------------------------------------------------------------------

# A client still running at down time (its tasks too) must be stopped.
cx srun -N2 -n2 --ntasks-per-node=1 sleep 300 >/dev/null 2>&1 &
client=$!
deadline=$((SECONDS + 15))
until [[ $(cx squeue -h -t R -o %i 2>/dev/null) =~ [0-9] ]] || ((SECONDS >= deadline)); do sleep 0.1; done
tap_like "$(cx squeue -h -t R -o '%N')" "node\[1-2\]" "a 2-node step is running before down"
mapfile -t client_pids < <(descendants "$client")
mapfile -t before < <(cluster_pids)
tap_diag "cluster pids before down: ${#before[@]}"

t0=$(now)
out=$("$S" down 2>&1)
rc=$?
t_down=$(secs "$t0")
tap_is "$rc" 0 "down exits 0"
tap_diag "down: ${t_down} s"
tap_is "$(leftovers)" "" "down leaves no netns, link, bridge, mount or state dir"
sleep 0.2
tap_is "$(alive_pids "${before[@]}" | oneline)" "" "down leaves none of the cluster's processes alive"
wait "$client" 2>/dev/null
tap_is "$(alive_pids "${client_pids[@]}" | oneline)" "" "down stops an srun started through exec (and its children)"

out=$("$S" down 2>&1)
tap_is "$?" 0 "down on nothing exits 0"
out=$("$S" status 2>&1)
tap_is "$?" 1 "status exits 1 when down"

# --- three nodes ---------------------------------------------------------------------

out=$("$S" up --nodes 3 --no-plugin 2>&1)
tap_is "$?" 0 "up --nodes 3 exits 0" || tap_diag "$out"
tap_is "$(cx sinfo -h -N -o '%N %t' | oneline)" "node1 idle node2 idle node3 idle" "sinfo: three nodes, idle"
tap_is "$(cx srun -N3 -n3 --ntasks-per-node=1 hostname | oneline)" "node1 node2 node3" \
	"srun -N3 -n3 hostname: node1..node3"
tap_is "$(nx node3 hostname)" node3 "node-exec node3: hostname"
out=$("$S" up --no-plugin 2>&1)
tap_like "$out" "rebuilding as 2 x 4" "up with another shape rebuilds"
tap_check "the rebuilt cluster is healthy" cluster_healthy
tap_is "$(cx sinfo -h -N -o '%N' | oneline)" "node1 node2" "the rebuilt cluster has two nodes"

out=$("$S" down 2>&1)
tap_is "$?" 0 "final down exits 0"
tap_is "$(leftovers)" "" "final down leaves nothing behind"

tap_done
