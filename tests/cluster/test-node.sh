#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check --node as Slurm's own HealthCheckProgram on the real local
# cluster: slurmd runs a two-line wrapper (`distenv-check --node --drain`)
# as root every 2 s on every node (up --health-check). A healthy node
# passes in one line, under a second; node2's name made to resolve to
# 127.0.1.1 (its own /etc/hosts, in its mount namespace: slurmd and the
# health check see it) fails with hostname-loopback and is drained by the
# health check with Reason="distenv: ..." (drained by hand for another
# reason, it is left so; resumed by hand, drained again); fixed, the
# health check resumes it; node1, drained by hand meanwhile, stays drained:
# its reason is not distenv's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_need_check
cluster_require --nodes 2 --cpus 4
tmp=$(mktemp -d /tmp/distenv-test-node.XXXXXX)
chmod 0755 "$tmp"
BROKEN='' # the node whose /etc/hosts is covered, until it is uncovered
HEALTH=0  # 1 while the cluster runs our health check
cleanup() {
	[[ -z $BROKEN ]] || nx "$BROKEN" umount /etc/hosts >/dev/null 2>&1
	if ((HEALTH)); then
		# The health check lives in $tmp: back to a cluster without it.
		cx scontrol update NodeName=node1,node2 State=RESUME >/dev/null 2>&1
		cluster_up_raw --nodes 2 --cpus 4 >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

conf=$("$DISTENV_CLUSTER" env | sed -n 's/^export SLURM_CONF=//p')
# HealthCheckProgram takes no arguments, and slurmd runs it with no PATH
# and no SLURM_CONF (SLURMD_NODENAME only): the wrapper an admin writes.
# Each run's line goes to a log per node.
cat >"$tmp/health" <<EOF
#!/bin/sh
SLURM_CONF=$conf
export SLURM_CONF
exec $CHECK --node --drain >>$tmp/health-\$SLURMD_NODENAME.log 2>&1
EOF
chmod 0755 "$tmp/health"
HEALTH=1
if ! cluster_up --nodes 2 --cpus 4 --health-check "$tmp/health" --health-check-interval 2; then
	tap_fail "the cluster comes up with HealthCheckProgram=$tmp/health"
	tap_done
	exit 1
fi
tap_like "$(grep '^HealthCheck' "$conf")" $'^HealthCheckProgram='"$tmp"$'/health\nHealthCheckInterval=2\nHealthCheckNodeState=ANY$' \
	"slurm.conf has HealthCheckProgram, HealthCheckInterval=2, HealthCheckNodeState=ANY"

# wait_for SECONDS CMD...: until CMD succeeds (0) or the time is up (1).
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}
# logged NODE REGEX: a line of NODE's health log matches.
logged() { grep -qE "$2" "$tmp/health-$1.log" 2>/dev/null; }
# node_is NODE STATE REASON: scontrol's State and Reason (REASON a prefix;
# "" none; "*" any: Slurm 24.11 keeps the reason of a resumed node, 22.05
# and 26.05 clear it).
node_is() {
	local rec
	rec=$(cx scontrol show node -o "$1" 2>&1)
	[[ $rec == *" State=$2 "* ]] || return 1
	case $3 in
	'*') ;;
	'') [[ $rec != *" Reason="* ]] ;;
	*) [[ $rec == *" Reason=$3"* ]] ;;
	esac
}
node_diag() { tap_diag "$(cx scontrol show node -o "$1" 2>&1 | grep -oE '(State|Reason)=.*')" "$(cat "$tmp/health-$1.log" 2>&1)"; }

# --- healthy: the health check runs and passes ----------------------------------
ok_re='^distenv-check: node node1: OK: node1 is 10\.77\.0\.11; data interface eth0 up, MTU [0-9]+ \(holds 10\.77\.0\.11\); MASTER_PORT range 20000-29399 outside the ephemeral ports [0-9]+-[0-9]+; no GPU (expected|\(Gres: none\))$'
if wait_for 8 logged node1 "$ok_re" && wait_for 4 logged node2 '^distenv-check: node node2: OK: '; then
	tap_ok "slurmd runs the health check on each node (as root, SLURMD_NODENAME set): OK, nothing to do"
	cluster_example node-check-ok "$(grep -m1 -E "$ok_re" "$tmp/health-node1.log")"
else
	tap_fail "the health check passes on both nodes" "$(cat "$tmp"/health-*.log 2>&1)"
fi

# By hand, inside node1: one line, exit 0, under a second (timed there).
# shellcheck disable=SC2016 # expanded by the inner bash
out=$(nx node1 bash -c 's=${EPOCHREALTIME/./}; out=$("$0" --node 2>&1); rc=$?; e=${EPOCHREALTIME/./}
	echo "$rc $(((e - s) / 1000))"; echo "$out"' "$CHECK")
read -r rc took <<<"$(head -n 1 <<<"$out")"
line=$(tail -n +2 <<<"$out")
# The time is said, not asserted (speed is a benchmark's; a busy machine
# must not fail a test).
tap_diag "distenv-check --node on node1 took $took ms"
if [[ $rc == 0 && $(wc -l <<<"$line") == 1 && $line =~ $ok_re ]]; then
	tap_ok "distenv-check --node on node1: one OK line, exit 0"
else
	tap_fail "distenv-check --node on node1: one OK line, exit 0" "exit $rc in $took ms" "$line"
fi

# --- node2's name resolves to loopback ----------------------------------------------
printf '127.0.0.1 localhost\n127.0.1.1 node2\n10.77.0.11 node1\n10.77.0.2 ctl\n' >"$tmp/hosts-loopback"
chmod 0644 "$tmp/hosts-loopback"
if nx node2 mount --bind "$tmp/hosts-loopback" /etc/hosts; then
	BROKEN=node2
	tap_ok "node2's /etc/hosts now maps node2 to 127.0.1.1 (node2's mount namespace: slurmd's)"
else
	tap_fail "cover node2's /etc/hosts"
fi
fail_re="^distenv-check: node node2: FAIL hostname-loopback: this node's name node2 resolves to 127\.0\.1\.1 \(loopback\)"
out=$(nx node2 "$CHECK" --node 2>&1) && rc=0 || rc=$?
if [[ $rc == 1 && $(wc -l <<<"$out") == 1 && $out =~ $fail_re" -- " ]]; then
	tap_ok "distenv-check --node on node2: one line, FAIL hostname-loopback, exit 1"
else
	tap_fail "distenv-check --node on node2: FAIL hostname-loopback, exit 1 (exit $rc)" "$out"
fi

reason="distenv: hostname-loopback: this node's name node2 resolves to 127.0.1.1 (loopback)"
t0=$SECONDS
if wait_for 10 node_is node2 IDLE+DRAIN "$reason"; then
	tap_ok "the health check drained node2 within $((SECONDS - t0))s: Reason=\"$reason\""
	cluster_example node-check-drained "$(grep -m1 -E "$fail_re; drained -- " "$tmp/health-node2.log")"
else
	tap_fail "the health check drains node2 with distenv's reason" "$(node_diag node2)"
fi
if wait_for 6 logged node2 "$fail_re; already drained by distenv -- "; then
	tap_ok "... the next runs leave node2 as it is (already drained by distenv)"
else
	tap_fail "... the next runs say node2 is already drained by distenv" "$(node_diag node2)"
fi
if node_is node1 IDLE ""; then
	tap_ok "node1 is left alone (idle, no reason)"
else
	tap_fail "node1 is left alone" "$(node_diag node1)"
fi

# Drained by hand for another reason while still broken: left as it is;
# resumed by hand while still broken: drained again.
cx scontrol update NodeName=node2 State=DRAIN "Reason=disk swap by hand"
: >"$tmp/health-node2.log"
if wait_for 6 logged node2 "$fail_re; already drained, not by distenv \(\"disk swap by hand\"\): left as it is -- " &&
	node_is node2 IDLE+DRAIN "disk swap by hand"; then
	tap_ok "node2 re-drained by hand (another reason) while broken: the health check leaves it as it is"
else
	tap_fail "node2 re-drained by hand while broken: left as it is" "$(node_diag node2)"
fi
cx scontrol update NodeName=node2 State=RESUME
if wait_for 8 node_is node2 IDLE+DRAIN "$reason"; then
	tap_ok "node2 resumed by hand while still broken: the health check drains it again, distenv's reason"
else
	tap_fail "node2 resumed by hand while broken: drained again" "$(node_diag node2)"
fi

# --- node1 drained by hand; node2 fixed -------------------------------------------------
cx scontrol update NodeName=node1 State=DRAIN "Reason=maintenance by hand"
: >"$tmp/health-node1.log"
if nx node2 umount /etc/hosts; then
	BROKEN=''
fi
t0=$SECONDS
if wait_for 10 node_is node2 IDLE '*'; then
	tap_ok "node2 fixed: the health check resumed it within $((SECONDS - t0))s (idle, not drained)"
else
	tap_fail "node2 fixed: the health check resumes it" "$(node_diag node2)"
fi
if grep -F -- "; resumed (drained by distenv: \"$reason\")" "$tmp/health-node2.log" |
	grep -qE '^distenv-check: node node2: OK: '; then
	tap_ok "... its line says so: resumed (drained by distenv: \"...\")"
	cluster_example node-check-resumed "$(grep -m1 -E '; resumed \(' "$tmp/health-node2.log")"
else
	tap_fail "... its line says resumed" "$(node_diag node2)"
fi
left_re='^distenv-check: node node1: OK: .*; left drained: the reason is not distenv.s \("maintenance by hand"\)$'
if wait_for 6 logged node1 "$left_re" && node_is node1 IDLE+DRAIN "maintenance by hand"; then
	tap_ok "node1, drained by hand, passes and stays drained: the reason is not distenv's"
else
	tap_fail "node1, drained by hand, stays drained" "$(node_diag node1)"
fi
cx scontrol update NodeName=node1 State=RESUME
if wait_for 6 node_is node1 IDLE '*'; then
	tap_ok "node1 resumed by hand"
else
	tap_fail "node1 resumed by hand" "$(node_diag node1)"
fi
tap_done
