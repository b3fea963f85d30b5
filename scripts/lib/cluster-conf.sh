# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster-conf.sh: the files distenv-cluster writes for a cluster: its
# keys, hosts and nsswitch.conf, slurm.conf, cgroup.conf, topology.conf and
# plugstack.conf. Sourced by scripts/distenv-cluster; functions only.

write_files() { # NODES CPUS PLUGIN ARGS
	local n=$1 cpus=$2 i lname
	lname=$(hostname 2>/dev/null || true)
	# Not when it is one of the cluster's own names (or not a plain name).
	if ! [[ $lname =~ ^[A-Za-z0-9][-A-Za-z0-9.]*$ ]] || [[ $lname =~ ^(localhost|login|ctl|node[0-9]+)$ ]]; then
		lname=''
	fi
	mkdir -p "$D"
	echo "state dir of $PROG; removed by $PROG down" >"$D/$MARKER"
	mkdir -p "$RUN" "$LOG" "$D/state" "$D/spool"
	chmod 0755 "$D"
	local auth_lines
	if [[ $AUTH == slurm ]]; then
		# auth/slurm's key: found beside slurm.conf (slurm.key); 1 KiB of
		# random; the daemons refuse it if others may read it; root (the
		# SlurmUser) owns it.
		(umask 077 && dd if=/dev/urandom of="$D/slurm.key" bs=1024 count=1 status=none)
		chmod 0600 "$D/slurm.key"
		chown root:root "$D/slurm.key"
		auth_lines="AuthType=auth/slurm
CredType=cred/slurm"
	else
		# munge key: 1 KiB of random, mode 0400.
		mkdir -p "$D/munge"
		chmod 0755 "$D/munge"
		(umask 077 && dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none)
		chmod 0400 "$D/munge/munge.key"
		auth_lines="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket"
	fi

	# Private name service for every namespace: files only, no DNS.
	{
		echo "127.0.0.1 localhost"
		echo "::1 localhost ip6-localhost ip6-loopback"
		# Slurm from 23.11 on (seen with 24.11) reaches srun by the name of
		# the host it was started on: give that name the login address
		# (else each step's end waits ~10 s on failing lookups).
		if [[ -n $lname ]]; then
			echo "$LOGIN_ADDR login $lname"
		else
			echo "$LOGIN_ADDR login"
		fi
		echo "$CTL_ADDR ctl"
		for ((i = 1; i <= n; i++)); do
			echo "$(node_addr "$i") node$i"
		done
	} >"$D/hosts"
	# The login host's view: the cluster's names, then the real /etc/hosts.
	{
		grep -v '^127\.0\.0\.1 localhost$' "$D/hosts" | grep -v '^::1 '
		echo "# --- the host's /etc/hosts ---"
		cat /etc/hosts 2>/dev/null || echo "127.0.0.1 localhost"
	} >"$D/login-hosts"
	for ((i = 1; i <= n; i++)); do
		mkdir -p "$D/spool/node$i"
	done
	if [[ -f /etc/nsswitch.conf ]]; then
		sed -e 's/^hosts:.*/hosts: files/' /etc/nsswitch.conf >"$D/nsswitch.conf"
		grep -q '^hosts:' "$D/nsswitch.conf" || echo 'hosts: files' >>"$D/nsswitch.conf"
	else
		printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$D/nsswitch.conf"
	fi
	if [[ -n $ROOT ]]; then
		sed -e 's/^hosts:.*/hosts: files/' "$ROOT/etc/nsswitch.conf" >"$D/nsswitch-root.conf"
		grep -q '^hosts:' "$D/nsswitch-root.conf" || echo 'hosts: files' >>"$D/nsswitch-root.conf"
	fi
	# A Slurm that knows CgroupPlugin=disabled (23.02 on) leaves cgroups
	# alone altogether: the nodes share the host's cgroup tree, which is not
	# theirs to change. 22.05, which knows no "disabled", and the host's
	# Slurm get no cgroup.conf (with proctrack/linuxproc and task/none they
	# only read the tree).
	rm -f "$D/cgroup.conf"
	if release_has_cgroup_disabled "$SLURM_V"; then
		echo "CgroupPlugin=disabled" >"$D/cgroup.conf"
	fi

	cat >"$CONF" <<EOF
# Written by $PROG; rewritten on every up.
ClusterName=distenv
SlurmctldHost=ctl($CTL_ADDR)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
$auth_lines
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$PLUGSTACK
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
KillWait=2
InactiveLimit=0
MessageTimeout=10
SlurmctldTimeout=120
SlurmdTimeout=600
TmpFS=/tmp
EOF
	for ((i = 1; i <= n; i++)); do
		echo "NodeName=node$i NodeAddr=$(node_addr "$i") NodeHostname=node$i CPUs=$cpus State=UNKNOWN"
	done >>"$CONF"
	echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP" >>"$CONF"
	# Ports slurmctld hands to each step, unique per node (up --resv-ports).
	[[ -z $RESV ]] || echo "MpiParams=ports=$RESV" >>"$CONF"
	# A node health check (up --health-check): "SECONDS PATH". ANY: drained
	# nodes too, so that a check that drained its node can resume it.
	if [[ -n $HEALTH ]]; then
		printf 'HealthCheckProgram=%s\nHealthCheckInterval=%s\nHealthCheckNodeState=ANY\n' \
			"${HEALTH#* }" "${HEALTH%% *}" >>"$CONF"
	fi
	rm -f "$D/topology.conf"
	if [[ $TOPO == interleave ]]; then
		write_topology "$n"
	fi

	write_plugstack "$3" "$4"
}

# write_topology NODES: two leaf switches, odd nodes under s1 and even under
# s2, node rank by switch: Slurm then orders a job's nodes (SLURM_NODEID)
# node1, node3, ..., node2, node4, ..., not as the node list reads.
write_topology() {
	local n=$1 i odd=() even=()
	for ((i = 1; i <= n; i++)); do
		if ((i % 2)); then odd+=("node$i"); else even+=("node$i"); fi
	done
	{
		echo "# Written by $PROG up --topology interleave."
		echo "SwitchName=s1 Nodes=$(IFS=, && echo "${odd[*]}")"
		((${#even[@]})) && echo "SwitchName=s2 Nodes=$(IFS=, && echo "${even[*]}")"
		echo "SwitchName=top Switches=s[1-2]"
	} >"$D/topology.conf"
	printf 'TopologyPlugin=topology/tree\nTopologyParam=SwitchAsNodeRank\n' >>"$CONF"
}

write_plugstack() { # PLUGIN ARGS
	local args=$2 check
	# A plugin from a build tree runs that tree's distenv-check for
	# --dist-check, unless the arguments name one.
	check=$(dirname "$(dirname "$(dirname "${1:-/x/y/z}")")")/src/distenv-check
	if [[ -n $1 && $args != *check_path=* && -x $check ]]; then
		args="${args:+$args }check_path=$check"
	fi
	{
		echo "# Written by $PROG; change with: $PROG plugstack ARGS..."
		if [[ -n $1 ]]; then
			echo "required $1${args:+ $args}"
		fi
	} >"$PLUGSTACK.tmp"
	mv -f "$PLUGSTACK.tmp" "$PLUGSTACK"
}

plugstack_line() {
	local l
	l=$(grep -v '^#' "$PLUGSTACK" 2>/dev/null || true)
	echo "${l:-(no plugin)}"
}
