#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-versions.sh: the local cluster on other Slurm releases
# (scripts/distenv-cluster up --slurm VERSION): every daemon and client from
# the Debian root that ships that Slurm, the plugin and tools built against
# its own headers, the shared paths, sbatch, and a `down` that leaves no
# mount, namespace or process behind. Versions: $DISTENV_TEST_SLURM, e.g.
# "24.11 26.05"; unset, the file skips (opt-in until tests/run runs it on
# purpose: the first run makes the roots, about 2 min each from Debian's
# archive; with the roots and builds cached the file takes about 45 s).
# Needs root; skips otherwise. Commands for the tasks are single-quoted on
# purpose: they expand there.
# shellcheck disable=SC2016
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

S=$DISTENV_CLUSTER
cluster_forget_job_env
[[ $(id -u) -eq 0 ]] || tap_skip_all "needs root (network namespaces, chroot, Slurm daemons)"

[[ -n ${DISTENV_TEST_SLURM:-} ]] ||
	tap_skip_all "opt-in: set DISTENV_TEST_SLURM='24.11 26.05' (makes Debian roots with mmdebstrap the first time)"
read -r -a versions <<<"$DISTENV_TEST_SLURM"
for v in "${versions[@]}"; do
	if [[ -z $(cluster_release_of "$v") ]]; then
		tap_fail "DISTENV_TEST_SLURM: '$v' is not a version (expected $(or_list "$(slurm_versions)"), space-separated)"
		tap_done
		exit 1
	fi
done
CACHE=${DISTENV_CLUSTER_CACHE:-/var/cache/distenv-cluster}
STATE_DIR=${DISTENV_CLUSTER_DIR:-/run/distenv-cluster}
[[ -d /run ]] || STATE_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster}

cluster_scratch versions

now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
oneline() { sort | tr '\n' ' ' | sed 's/ $//'; }

# Everything of ours that could be left behind, one line each (empty: clean).
# Mounts are looked for in every process's mount namespace, not only ours:
# the roots are mounted on inside the holders' namespaces.
leftovers() {
	local ns f p
	for ns in $(ip netns list | awk '/^distenv-/ { print $1 }'); do
		echo "netns $ns: pids $(ip netns pids "$ns" | tr '\n' ' ')"
	done
	ip -o link show | awk -F': ' '$2 ~ /^distenv/ { print "link " $2 }'
	awk '$2 ~ /distenv/ { print "mount " $2 }' /proc/self/mounts
	for f in /proc/[0-9]*/mountinfo; do
		p=${f#/proc/}
		p=${p%%/*}
		awk -v r="$roots_re" -v p="$p" '$5 ~ r { print "pid " p " has mount " $5; exit }' "$f" 2>/dev/null
	done
	for f in /proc/[0-9]*/root; do
		p=$(readlink "$f" 2>/dev/null) || continue
		[[ $p =~ $roots_re ]] && echo "process ${f//[^0-9]/} runs in $p"
	done
	[[ -e $STATE_DIR ]] && echo "state dir $STATE_DIR"
	return 0
}

cluster_pids() {
	local ns
	cat "$STATE_DIR"/run/*.pid 2>/dev/null | awk '{ print $1 }'
	for ns in $(ip netns list | awk '/^distenv-/ { print $1 }'); do
		ip netns pids "$ns"
	done
}


# The roots under test (not a root some other run is making or building in
# meanwhile).
rels=()
for v in "${versions[@]}"; do rels+=("$(cluster_release_of "$v")"); done
roots_re=$(IFS='|' && echo "^${CACHE//./\\.}/roots/(${rels[*]})(/|\$)")

# --- refusals (no cluster, no lock needed) -------------------------------------

out=$("$S" up --slurm 25.11 2>&1)
tap_is "$?" 2 "up --slurm 25.11 exits 2"
tap_like "$out" "unknown Slurm version '25.11' \(expected host, 22.05, 24.11 or 26.05\)" \
	"... naming the value and the expected forms"
tap_is "$(wc -l <<<"$out")" 1 "... in one line"
out=$("$S" build --slurm host 2>&1)
tap_is "$?" 2 "build --slurm host exits 2 (the checkout's own build)"
out=$("$S" env --slurm 9 2>&1)
tap_is "$?" 2 "env --slurm 9 exits 2"
out=$("$S" up --topology interleave 2>&1)
tap_is "$?" 2 "up --topology interleave on the host's Slurm exits 2"
tap_like "$out" "--topology interleave needs --slurm 24\.11 or 26\.05" "... saying which versions have it"
out=$("$S" up --slurm 26.05 --topology ring 2>&1)
tap_like "$out" "--topology: unknown value 'ring' \(expected interleave\)" "up --topology ring: names the value and the expected one"
out=$("$S" up --slurm 26.05 --nodes 2 --topology interleave 2>&1)
tap_like "$out" "needs --nodes 3 or more" "up --topology interleave --nodes 2: refused (no order to change)"
out=$("$S" up --auth slurm 2>&1)
tap_is "$?" 2 "up --auth slurm on the host's Slurm exits 2"
tap_like "$out" "--auth slurm needs Slurm 23.11 or later .*--slurm 24.11 or --slurm 26.05, not --slurm host" \
	"... naming the version and what is expected"
out=$("$S" up --slurm 26.05 --auth kerberos 2>&1)
tap_is "$?" 2 "up --auth kerberos exits 2"
tap_like "$out" "unknown authentication 'kerberos' \(expected munge or slurm\)" "... naming the value and the expected ones"

# No mmdebstrap: a PATH with everything in /usr/bin but it, an empty cache.
mkdir -p "$tmp/bin"
ln -s /usr/bin/* "$tmp/bin/" 2>/dev/null
rm -f "$tmp/bin/mmdebstrap"
out=$(PATH=$tmp/bin DISTENV_CLUSTER_CACHE=$tmp/cache "$S" build --slurm 24.11 2>&1)
tap_is "$?" 2 "no mmdebstrap: build exits 2"
tap_like "$out" "mmdebstrap not found.*trixie.*24\.11" "... and says mmdebstrap is needed for the trixie root"
# No network: a mirror nobody answers; the failed build leaves no root.
out=$(DISTENV_CLUSTER_MIRROR=http://127.0.0.1:9/debian DISTENV_CLUSTER_CACHE=$tmp/cache \
	timeout 120 "$S" build --slurm 24.11 2>&1)
tap_is "$?" 2 "unreachable mirror: build exits 2"
tap_like "$out" "cannot reach http://127.0.0.1:9/debian" "... and names the mirror"
tap_is "$(find "$tmp/cache/roots" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)" "" \
	"... leaving no root, whole or half"
# Killed while making a root: no root, no mount left in any namespace; the
# next build starts over (it removes the hidden .tmp dir).
setsid env DISTENV_CLUSTER_CACHE="$tmp/cache3" "$S" build --slurm 24.11 >"$tmp/killed.log" 2>&1 &
builder=$!
deadline=$((SECONDS + 30))
until compgen -G "$tmp/cache3/roots/.trixie.tmp.*/usr" >/dev/null || ((SECONDS >= deadline)); do sleep 0.2; done
sleep 2
if compgen -G "$tmp/cache3/roots/.trixie.tmp.*/usr" >/dev/null && kill -0 "$builder" 2>/dev/null; then
	tap_ok "a root build is under way (to be killed)"
else
	tap_fail "a root build is under way (to be killed)" "$(cat "$tmp/killed.log")"
fi
kill -KILL -- "-$builder" 2>/dev/null
wait "$builder" 2>/dev/null
sleep 0.5
tap_is "$(find "$tmp/cache3/roots" -mindepth 1 -maxdepth 1 -type d ! -name '.*' 2>&1)" "" "a root build killed midway leaves no root (only a hidden .tmp dir)"
tap_is "$(grep -l "$tmp/cache3" /proc/[0-9]*/mountinfo 2>/dev/null)" "" "... and no mount in any namespace"
rm -rf --one-file-system -- "$tmp/cache3"

# roots --clean removes a cache (a stand-in one here).
mkdir -p "$tmp/cache2/roots/x" "$tmp/cache2/build/24.11"
echo "release=x" >"$tmp/cache2/roots/x/.distenv-root"
out=$(DISTENV_CLUSTER_CACHE=$tmp/cache2 "$S" roots 2>&1)
tap_like "$out" "^x +slurm" "roots lists a cached root"
out=$(DISTENV_CLUSTER_CACHE=$tmp/cache2 "$S" roots --clean 2>&1)
tap_is "$?" 0 "roots --clean exits 0"
tap_is "$(ls -A "$tmp/cache2" 2>&1)" "ls: cannot access '$tmp/cache2': No such file or directory" \
	"roots --clean removes the cache"

# --- builds (outside the cluster lock: minutes the first time) ------------------

for v in "${versions[@]}"; do
	t0=$(now)
	out=$("$S" build --slurm "$v" 2>&1)
	rc=$?
	tap_is "$rc" 0 "build --slurm $v exits 0" || tap_diag "$out"
	tap_diag "build --slurm $v: $(secs "$t0") s" "$out"
	bdir=$("$S" env --slurm "$v" 2>/dev/null | sed -n 's/^export DISTENV_BUILD_DIR=//p')
	tap_is "$bdir" "$CACHE/build/$v" "env --slurm $v names the build dir"
	tap_like "$(grep DISTENV_SLURM_VERSION "$bdir/config.h" 2>&1)" \
		"#define DISTENV_SLURM_VERSION \"${v//./\\.}\.[0-9]+\"" \
		"config.h of the $v build: DISTENV_SLURM_VERSION $v.x"
	tap_like "$(grep 'Slurm version:' "$bdir/config.log" 2>&1)" \
		"Slurm version: +${v//./\\.}\.[0-9]+" "configure's summary says Slurm $v.x"
done
out=$("$S" roots 2>&1)
for v in "${versions[@]}"; do
	tap_like "$out" "$(cluster_release_of "$v") +slurm ${v//./\\.}\." "roots lists the $(cluster_release_of "$v") root with Slurm $v"
done

# --- each version's cluster -------------------------------------------------------

# One local cluster per machine: hold the test lock from here to the end.
cluster_lock
# From no cluster: the first `up` of each version must make one, whatever
# the file before left running.
"$S" down >/dev/null 2>&1

for v in "${versions[@]}"; do
	rel=$(cluster_release_of "$v")
	root=$CACHE/roots/$rel
	bdir=$CACHE/build/$v
	vre=${v//./\\.}

	t0=$(now)
	out=$("$S" up --slurm "$v" 2>&1)
	rc=$?
	tap_is "$rc" 0 "[$v] up --slurm $v exits 0" || { tap_diag "$out"; continue; }
	tap_diag "[$v] up: $(secs "$t0") s" "$out"
	tap_like "$out" "idle in .* Slurm $vre\.[0-9]+ \(Debian $rel root\)" "[$v] up reports Slurm $v.x from the $rel root"

	ctld_pid=$(cat "$STATE_DIR/run/slurmctld.pid" 2>/dev/null)
	out=$("$S" up --slurm "$v" 2>&1)
	tap_like "$out" "already up" "[$v] up --slurm $v again: already up" || tap_diag "$out"
	tap_is "$(cat "$STATE_DIR/run/slurmctld.pid" 2>/dev/null)" "$ctld_pid" "[$v] ... the same slurmctld"

	out=$("$S" status 2>&1)
	tap_is "$?" 0 "[$v] status exits 0"
	tap_like "$out" "slurm: +$vre\.[0-9]+ \(Debian $rel root" "[$v] status shows the Slurm version"
	tap_like "$out" "plugstack: required $bdir/spank/\.libs/distenv\.so check_path=$bdir/src/distenv-check" \
		"[$v] the plugin and distenv-check are the $v build's"
	tap_like "$(cx sinfo -V 2>&1)" "^slurm(-wlm)? $vre\." "[$v] exec's clients are Slurm $v's"
	tap_like "$(cx srun -V 2>&1)" "^slurm(-wlm)? $vre\." "[$v] exec's srun is Slurm $v's"
	pid=$(cat "$STATE_DIR/run/slurmd-node1.pid" 2>/dev/null)
	tap_is "$(readlink "/proc/$pid/root" 2>&1)" "$root" "[$v] slurmd runs inside the $rel root"
	tap_like "$(grep -h 'slurmd version' "$STATE_DIR/log/node1.log" 2>&1)" "slurmd version $vre\." "[$v] slurmd's log: version $v"

	out=$(cx srun -N2 -n4 --ntasks-per-node=2 bash -c \
		'echo "$(hostname) $SLURM_PROCID RANK=$RANK LOCAL_RANK=$LOCAL_RANK NODE_RANK=$NODE_RANK WORLD_SIZE=$WORLD_SIZE MASTER_ADDR=$MASTER_ADDR"' 2>&1 | sort)
	tap_is "$out" "node1 0 RANK=0 LOCAL_RANK=0 NODE_RANK=0 WORLD_SIZE=4 MASTER_ADDR=node1
node1 1 RANK=1 LOCAL_RANK=1 NODE_RANK=0 WORLD_SIZE=4 MASTER_ADDR=node1
node2 2 RANK=2 LOCAL_RANK=0 NODE_RANK=1 WORLD_SIZE=4 MASTER_ADDR=node1
node2 3 RANK=3 LOCAL_RANK=1 NODE_RANK=1 WORLD_SIZE=4 MASTER_ADDR=node1" \
		"[$v] srun -N2 -n4 --ntasks-per-node=2: the plugin's RANK, LOCAL_RANK, NODE_RANK, MASTER_ADDR"
	out=$(cx srun -N1 -n1 --dist-env=verbose true 2>&1)
	tap_like "$out" "distenv: RANK=0 \(set\)" "[$v] srun --dist-env=verbose: the plugin reports what it set"
	# sid calls itself by the next testing release's name (forky, ...).
	# shellcheck source=/dev/null # the root's own file
	codename=$(. "$root/etc/os-release" && echo "${VERSION_CODENAME:-$VERSION_ID}")
	tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 sh -c '. /etc/os-release; echo "$(hostname) ${VERSION_CODENAME:-$VERSION_ID}"' 2>&1 | oneline)" \
		"node1 $codename node2 $codename" "[$v] tasks run inside the $rel root ($codename)"

	# Shared paths: what the login host writes in /tmp and the checkout is
	# there, at the same path, on every node.
	echo "hello $v" >"$tmp/shared"
	tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 cat "$tmp/shared" 2>&1 | oneline)" "hello $v hello $v" \
		"[$v] every node sees the login host's /tmp"
	want=$(md5sum <"$DISTENV_SRCDIR/configure.ac")
	tap_is "$(cx srun -N1 -n1 -w node2 sh -c "md5sum <'$DISTENV_SRCDIR/configure.ac'" 2>&1)" "$want" \
		"[$v] node2 sees the checkout at its path"

	out=$(cx srun -N2 -n4 --ntasks-per-node=2 --dist-check true 2>&1)
	tap_like "$out" "distenv-check: PASS: 4 ranks on 2 nodes" "[$v] srun --dist-check: the $v build's distenv-check passes" ||
		tap_diag "$out"

	out=$(cx srun -N1 -n1 python3 -c 'import torch; print("torch", torch.__version__)' 2>&1)
	tap_like "$out" "^torch [0-9]+\.[0-9]+" "[$v] a task imports the root's PyTorch"
	tap_diag "[$v] $out"

	# sbatch with a job file under /tmp, written on the login host.
	cat >"$tmp/job.sh" <<'EOF'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
srun bash -c 'echo "task $SLURM_PROCID RANK=$RANK on $(hostname)"'
EOF
	jid=$(cd "$tmp" && cx sbatch --parsable -o "$tmp/job-%j.out" job.sh 2>&1)
	tap_like "$jid" '^[0-9]+$' "[$v] sbatch (a job file in /tmp, relative path) returns a job id"
	if cluster_wait_job "$jid" 60; then
		tap_ok "[$v] the batch job completes with exit code 0"
	else
		tap_fail "[$v] the batch job completes with exit code 0"
	fi
	tap_is "$(sort "$tmp/job-$jid.out" 2>&1 | tr '\n' ' ')" "task 0 RANK=0 on node1 task 1 RANK=1 on node2 " \
		"[$v] the batch job's step ran with the plugin on both nodes"

	tap_is "$(nx node2 sh -c '. /etc/os-release; echo "$(hostname) ${VERSION_CODENAME:-$VERSION_ID}"' 2>&1)" \
		"node2 $codename" "[$v] node-exec runs inside the root too"

	# Topology order (TopologyParam=SwitchAsNodeRank): Slurm orders a step's
	# nodes by switch, not by name (node3 under s1 before node2 under s2).
	# Task 0, NODE_RANK 0 and MASTER_ADDR must follow Slurm's order.
	# (Not where Slurm has no SwitchAsNodeRank: 22.05.)
	if release_has_switch_as_node_rank "$v"; then
		out=$("$S" up --slurm "$v" --nodes 4 --cpus 2 --topology interleave 2>&1)
		tap_is "$?" 0 "[$v] up --nodes 4 --topology interleave exits 0" || tap_diag "$out"
		tap_like "$("$S" status 2>&1)" "shape: +4 nodes x 2 CPUs, topology interleave" "[$v] status shows the topology"
		tap_is "$(cx srun -N2 -n2 -w node2,node3 printenv SLURM_STEP_NODELIST 2>&1 | sort -u)" "node[3,2]" \
			"[$v] Slurm orders the step's nodes by switch: node[3,2] for -w node2,node3"
		out=$(cx srun -N2 -n4 -w node2,node3 bash -c \
			'echo "$(hostname) $SLURM_PROCID RANK=$RANK LOCAL_RANK=$LOCAL_RANK NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR"' 2>&1 |
			grep -v '^srun: job [0-9]* \(queued\|has been allocated\)' | sort -k2 -n)
		tap_is "$out" "node3 0 RANK=0 LOCAL_RANK=0 NODE_RANK=0 MASTER_ADDR=node3
node3 1 RANK=1 LOCAL_RANK=1 NODE_RANK=0 MASTER_ADDR=node3
node2 2 RANK=2 LOCAL_RANK=0 NODE_RANK=1 MASTER_ADDR=node3
node2 3 RANK=3 LOCAL_RANK=1 NODE_RANK=1 MASTER_ADDR=node3" \
			"[$v] topology order: task 0, NODE_RANK 0 and MASTER_ADDR on node3, LOCAL_RANK per node"
		out=$(cx srun -N2 -n4 -w node2,node3 --dist-check true 2>&1)
		tap_like "$out" "distenv-check: PASS: 4 ranks on 2 nodes node\[2-3\], 2 per node" "[$v] topology order: --dist-check passes" ||
			tap_diag "$out"
	fi

	# down with a step still running: nothing left, anywhere.
	cx srun -N2 -n2 --ntasks-per-node=1 sleep 300 >/dev/null 2>&1 &
	client=$!
	deadline=$((SECONDS + 15))
	until [[ $(cx squeue -h -t R -o %i 2>/dev/null) =~ [0-9] ]] || ((SECONDS >= deadline)); do sleep 0.1; done
	mapfile -t before < <(cluster_pids)
	t0=$(now)
	out=$("$S" down 2>&1)
	tap_is "$?" 0 "[$v] down exits 0"
	tap_diag "[$v] down: $(secs "$t0") s"
	wait "$client" 2>/dev/null
	sleep 0.2
	tap_is "$(leftovers)" "" "[$v] down leaves no netns, link, mount (in any namespace), chrooted process or state dir"
	tap_is "$(alive_pids "${before[@]}" | oneline)" "" "[$v] down leaves none of the cluster's processes alive"
	tap_like "$(ls "$root/usr/sbin/slurmd" 2>&1)" "slurmd" "[$v] down keeps the cached root"

	# Without MUNGE (23.11+): auth/slurm, sackd on the login side, and
	# --dist-check on the plugin's step secret, one per step under sbatch.
	release_has_auth_slurm "$v" || continue
	t="[$v auth/slurm]"
	out=$("$S" up --slurm "$v" --auth slurm 2>&1)
	tap_is "$?" 0 "$t up --auth slurm exits 0" || { tap_diag "$out"; continue; }
	tap_like "$out" "Slurm $vre\.[0-9]+ \(Debian $rel root\); auth/slurm" "$t up says it runs auth/slurm"
	tap_like "$("$S" status 2>&1)" "auth: +auth/slurm, cred/slurm \(key $STATE_DIR/slurm.key; no munged; sackd on login running\)" \
		"$t status names the auth, the key and sackd"
	tap_is "$(grep -E '^(AuthType|CredType|AuthInfo)=' "$STATE_DIR/slurm.conf" | oneline)" \
		"AuthType=auth/slurm CredType=cred/slurm" "$t slurm.conf: auth/slurm and cred/slurm, no MUNGE socket"
	tap_is "$(stat -c '%a %U %s' "$STATE_DIR/slurm.key" 2>&1)" "600 root 1024" \
		"$t slurm.key beside slurm.conf: 1 KiB, mode 600, root's"
	tap_is "$([[ -e $STATE_DIR/run/munged.pid ]] && echo munged)" "" "$t no munged started"
	cat >"$tmp/auth-job.sh" <<'EOF'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
for s in 1 2; do
	srun --dist-check bash -c 'umask 077; printf %s "$DISTENV_STEP_SECRET" >"$0.$1.$SLURM_PROCID"' "$1" "$s"
done
EOF
	jid=$(cd "$tmp" && cx sbatch --parsable -o "$tmp/auth-%j.out" auth-job.sh "$tmp/sec" 2>&1)
	if cluster_wait_job "$jid" 90; then
		tap_ok "$t a batch job of two srun --dist-check steps completes"
	else
		tap_fail "$t a batch job of two srun --dist-check steps completes" "$(cat "$tmp/auth-$jid.out" 2>&1)"
	fi
	tap_is "$(grep -c 'distenv-check: PASS: 2 ranks .*(authentication: step secret)' "$tmp/auth-$jid.out" 2>&1)" 2 \
		"$t both steps' checks pass on the step secret"
	n=$(cat "$tmp/sec.1.0" "$tmp/sec.1.1" "$tmp/sec.2.0" "$tmp/sec.2.1" 2>/dev/null | fold -w 64 | sort -u | wc -l)
	tap_is "$n" 2 "$t under sbatch each srun is its own step: one secret per step, the same in its tasks"
	mapfile -t before < <(cluster_pids)
	before+=("$(cat "$STATE_DIR/run/sackd.pid" 2>/dev/null)")
	"$S" down >/dev/null 2>&1
	tap_is "$(leftovers)" "" "$t down leaves nothing behind"
	tap_is "$(alive_pids "${before[@]}" | oneline)" "" "$t down leaves none of the cluster's processes alive (sackd included)"
done

# A source newer than a build: up rebuilds it first (make redoes the
# changed parts only), and the checkout's own tree is left as it was.
v=${versions[0]}
in_tree=$(cd "$DISTENV_SRCDIR" && git status --porcelain --ignored 2>/dev/null | md5sum)
src_file=$DISTENV_SRCDIR/src/lib/hostlist.c
touch -r "$src_file" "$tmp/mtime"
touch "$src_file"
out=$("$S" up --slurm "$v" 2>&1)
tap_is "$?" 0 "[$v] up after a source changed exits 0" || tap_diag "$out"
touch -r "$tmp/mtime" "$src_file" # as it was: the checkout's own build need not redo it
tap_like "$out" "building distenv for Slurm $v" "[$v] ... and rebuilds the $v build first"
tap_is "$(cd "$DISTENV_SRCDIR" && git status --porcelain --ignored 2>/dev/null | md5sum)" "$in_tree" \
	"the checkout's own files are untouched by the version builds"
out=$("$S" up --slurm "$v" 2>&1)
tap_is "$(grep -c "building distenv" <<<"$out")" 0 "[$v] up with nothing changed does not build"

# From a version's cluster straight back to the host's Slurm (no down).
out=$("$S" up --no-plugin 2>&1)
tap_is "$?" 0 "up with no --slurm while Slurm $v runs exits 0" || tap_diag "$out"
tap_like "$out" "running Slurm $v: rebuilding with Slurm host" "... says it rebuilds with the host's Slurm"
out=$("$S" status 2>&1)
tap_like "$out" "slurm: +[0-9]+\.[0-9]+\.[0-9]+ \(the host's\)" "status shows the host's Slurm version"
tap_like "$(cx srun -N2 -n2 --ntasks-per-node=1 sh -c '. /etc/os-release; echo "$VERSION_CODENAME"' 2>&1 | oneline)" \
	"^$(. /etc/os-release && echo "$VERSION_CODENAME") " "tasks run on the host's own system again"
"$S" down >/dev/null 2>&1
tap_is "$(leftovers)" "" "final down leaves nothing behind"

tap_done
