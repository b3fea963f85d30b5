#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Authenticated rendezvous on the real cluster, on the Slurm and the auth
# the cluster runs: DISTENV_CLUSTER_SLURM (host, 24.11, 26.05) and
# DISTENV_CLUSTER_AUTH (munge, the default; slurm: auth/slurm, no munged,
# so distenv-check proves the step's DISTENV_STEP_SECRET that the plugin's
# srun side made). A process of another uid cannot join a job, read its
# secret or inject data; a HELLO without credential, with a credential made
# for another connection (replay) or for another job is refused -- and in
# every case the real job completes correctly. The step secret is never in
# the job's output, the JSON summary or the daemons' logs. Every line names
# the version and auth, e.g. "[26.05 auth/slurm] ...".
# shellcheck disable=SC2016
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
AUTH=${DISTENV_CLUSTER_AUTH:-munge}
TAP_TAG=${TAP_TAG:-${DISTENV_CLUSTER_SLURM:-host} auth/$AUTH}
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"
# shellcheck source=tests/lib/frames.sh
. "$here/../lib/frames.sh"

cluster_need_check
frames_need "$DISTENV_BUILD_DIR"
command -v useradd >/dev/null || tap_skip_all "useradd missing"
[[ $AUTH == munge || $AUTH == slurm ]] ||
	tap_skip_all "DISTENV_CLUSTER_AUTH=$AUTH: expected munge or slurm"
cluster_require --nodes 2 --cpus 4
tmp=$(mktemp -d)
chmod 755 "$tmp"
intruder=distenv-intruder-$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$intruder"
# By number: a root's /etc/passwd is the host's as it was at `up`.
iuid=$(id -u "$intruder")
cleanup() { userdel "$intruder" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
conf=$(cx printenv SLURM_CONF)
logdir=$(dirname "$conf")/log
# Everything runs through cx (inside the version's root, where the build's
# libraries are). The intruder runs its own copy: the checkout may sit in a
# folder only root can enter (mktemp -d is 0700).
install -m 755 "$CHECK" "$tmp/distenv-check"
as_intruder() { cx setpriv --reuid="$iuid" --regid=65534 --clear-groups "$@"; }
if [[ $AUTH == munge ]]; then
	cx sh -c 'command -v munge' >/dev/null || tap_skip_all "munge client missing"
	refused="MUNGE credential of uid [0-9]+, this job runs as uid 0"
else
	refused="wrong proof of the step secret \(DISTENV_STEP_SECRET\)"
fi

# A job one of whose ranks (1 unless LATE says otherwise) first runs PRE
# (default: sleeps 3 s), so intruders get in first.
start_job() { # PORT OUT [LATE [PRE]]
	cx srun -N2 -n2 -J "auth-$1" --dist-port="$1" bash -c 'if [ "$SLURM_PROCID" = "$1" ]; then eval "$2"; fi; exec "$0" --timeout=20' "$CHECK" "${3:-1}" "${4:-sleep 3}" >"$2" 2>&1 &
	job=$!
	for _ in $(seq 100); do
		jobid=$(cx squeue -h -n "auth-$1" -o %i 2>/dev/null | head -1)
		[ -n "$jobid" ] && break
		sleep 0.05
	done
}
job_ok() { # OUT DESC
	local ranks
	wait "$job"
	local rc=$?
	ranks=$(grep -cE '^\[rank [01]/2\] .* OK$' "$1" || true)
	if [ "$rc" -eq 0 ] && [ "$ranks" = 2 ]; then tap_ok "$2"; else tap_fail "$2 (rc=$rc)" "$(cat "$1")"; fi
}
tap_unlike() { if [[ $1 =~ $2 ]]; then tap_fail "$3" "$1"; else tap_ok "$3"; fi; }
# The pid of the distenv-check listening on PORT on NODE.
listener() { # NODE PORT
	local p
	for _ in $(seq 100); do
		p=$(nx "$1" ss -ltnpH 2>/dev/null | grep ":$2 " | grep -o 'pid=[0-9]*' | head -1)
		[ -n "$p" ] && { echo "${p#pid=}"; return 0; }
		sleep 0.05
	done
	return 1
}

# 1. Another uid runs a real distenv-check claiming rank 1 of the job: with
# its own MUNGE credential, or (auth/slurm) a guessed step secret.
start_job 24701 "$tmp/j1.out"
pid0=$(listener node1 24701) || pid0=''
if [ -n "$pid0" ]; then
	out=$(as_intruder cat "/proc/$pid0/environ" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -ne 0 ] && [[ $out == *"Permission denied"* ]]; then
		tap_ok "another uid cannot read the environment (and its DISTENV_STEP_SECRET) of the job's rank 0"
	else
		tap_fail "another uid cannot read rank 0's environment (rc=$rc)" "${out:0:200}"
	fi
else
	tap_fail "found rank 0's distenv-check on node1" "$(nx node1 ss -ltnp 2>&1)"
fi
guess=()
[[ $AUTH == slurm ]] && guess=(DISTENV_STEP_SECRET="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')")
out=$(as_intruder env -i PATH=/usr/bin:/bin "${guess[@]}" SLURM_CONF="$conf" SLURM_JOB_ID="$jobid" \
	SLURM_STEP_ID=0 SLURM_PROCID=1 RANK=1 WORLD_SIZE=2 MASTER_ADDR=10.77.0.11 MASTER_PORT=24701 \
	"$tmp/distenv-check" --timeout=5 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ $out =~ "FAIL authentication: rank 0 refused this rank: "$refused ]]; then
	tap_ok "a process of another uid claiming rank 1 is refused ($refused)"
else
	tap_fail "another uid refused (rc=$rc)" "$out"
fi
tap_unlike "$out" "PASS|allreduce=" "the intruder never gets the peer table, the session key or a result"
if [[ $AUTH == slurm ]]; then
	out=$(as_intruder env -i PATH=/usr/bin:/bin SLURM_CONF="$conf" SLURM_JOB_ID="$jobid" SLURM_STEP_ID=0 \
		RANK=1 WORLD_SIZE=2 MASTER_ADDR=10.77.0.11 MASTER_PORT=24701 "$tmp/distenv-check" --timeout=5 2>&1) && rc=0 || rc=$?
	tap_like "$out" "FAIL usage: no authentication: MUNGE is not usable .*DISTENV_SECRET is not set and there is no DISTENV_STEP_SECRET" \
		"without the step secret and with no munged, the intruder's distenv-check does not even try"
fi
job_ok "$tmp/j1.out" "the real job completes correctly after the intruder"
tap_like "$(cat "$tmp/j1.out")" "rank 0: rejected .*: $refused" "rank 0 logs the refusal with the peer address and the reason"

# 2-4. Hand-made HELLOs: none, replayed/for another challenge, another job.
# MUNGE: an outsider with the cluster's munge client. auth/slurm: an
# insider (rank 1's own task, which knows the step secret) before its real
# check: even the secret does not make a replayed or foreign proof pass.
cat >"$tmp/forge.py" <<'PY'
import hashlib, hmac, os, socket, struct, subprocess, sys, time
mode, host, port, jobid, conf = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def mstr(b): return struct.pack(">I", len(b)) + b
def conn():
    for _ in range(100):
        try:
            c = socket.create_connection((host, port), timeout=3); break
        except OSError: time.sleep(0.05)
    hdr = c.recv(12); n = struct.unpack(">I", hdr[8:12])[0]
    return c, c.recv(n)  # the challenge nonce
def payload(token, rank, nonce_s, nonce_c):
    return mstr(b"distenv-hello-v1") + mstr(token) + struct.pack(">II", rank, 2) + nonce_s + nonce_c
def cred(token, rank, nonce_s, nonce_c):
    if mode == "munge":
        sock = [l.split("socket=")[1].split(",")[0].strip() for l in open(conf) if "AuthInfo" in l and "socket=" in l]
        args = ["munge"] + (["-S", sock[0]] if sock else [])
        return subprocess.run(args, input=payload(token, rank, nonce_s, nonce_c), capture_output=True, check=True).stdout.strip()
    key = hashlib.sha256(b"distenv-step-secret-v1" + os.environ["DISTENV_STEP_SECRET"].encode()).digest()
    return hmac.new(key, payload(token, rank, nonce_s, nonce_c), hashlib.sha256).hexdigest().encode()
def frame(*args):  # tests/tools/de-frame: the frames proto.c makes
    return subprocess.run([os.environ["DE_FRAME"], *args], check=True, stdout=subprocess.PIPE).stdout
def hello(token, rank, nonce_c, auth):  # the real job's parameters, not failed
    return frame("hello", "token=" + token.decode(), "rank=%d" % rank, "world=2", "node_rank=1", "pid=4242",
                 "port=1", "probe_port=2", "host=intruder", "addr=10.77.0.1", "iface=eth0",
                 "params=check float32 count=262147 sizes=0:0*0 iters=0 warmup=0", "failed=0", "why=",
                 "nonce=" + nonce_c.hex(), "auth=" + auth.decode())
def answer(c):  # the type of rank 0's first frame, or how the line ended
    c.settimeout(5)
    try: h = c.recv(12)
    except OSError as e: return "error %s" % e
    t = subprocess.run([os.environ["DE_FRAME"], "type", h.hex()], check=True, stdout=subprocess.PIPE).stdout
    return t.decode().strip() if t.strip() in (b"REJECT", b"PEERS", b"ABORT") else "other"
tok = ("slurm:%s.0" % jobid).encode()
nc = os.urandom(16)
if len(sys.argv) > 6:  # control: a proof for this very connection
    c, ns = conn(); c.sendall(hello(tok, 1, nc, cred(tok, 1, ns, nc)))
    print("forger: control answer", answer(c), flush=True); c.close(); sys.exit(0)
# no credential
c, ns = conn(); c.sendall(hello(tok, 1, nc, b"")); time.sleep(0.3); c.close()
# a credential made for connection A's challenge, replayed on B and C
a, nsa = conn(); cr = cred(tok, 1, nsa, nc); a.close()
b, nsb = conn(); b.sendall(hello(tok, 1, nc, cr)); time.sleep(0.3); b.close()
d, nsd = conn(); d.sendall(hello(tok, 1, nc, cr)); time.sleep(0.3); d.close()
# another job's credential, for the right challenge
e, nse = conn(); ft = b"slurm:999999.0"; e.sendall(hello(ft, 1, nc, cred(ft, 1, nse, nc))); time.sleep(0.3); e.close()
print("forger: sent", flush=True)
PY
if [[ $AUTH == munge ]]; then
	# Rank 1 comes 8 s late: four connections with a munge(1) run each take
	# more than 3 s on a loaded machine.
	start_job 24702 "$tmp/j2.out" 1 "sleep 8"
	cx env DE_FRAME="$DE_FRAME" /usr/bin/python3 "$tmp/forge.py" munge 10.77.0.11 24702 "$jobid" "$conf" >"$tmp/h.log" 2>&1
	replay="MUNGE credential made for another job, rank or challenge"
	again="MUNGE credential refused: Replayed credential"
else
	: >"$tmp/h.log"
	forge="DE_FRAME=$DE_FRAME /usr/bin/python3 $tmp/forge.py slurm \"\$MASTER_ADDR\" \"\$MASTER_PORT\" \"\$SLURM_JOB_ID\" x"
	start_job 24702 "$tmp/j2.out" 1 "$forge"
	replay=$refused again=$refused
fi
job_ok "$tmp/j2.out" "the real job completes correctly after forged HELLOs"
out=$(cat "$tmp/j2.out" "$tmp/h.log")
tap_like "$out" "forger: sent" "the forger ran"
tap_like "$out" "rejected .*claims rank 1.*: no credential" "a HELLO without a credential is refused"
tap_like "$out" "rejected .*claims rank 1.*: $replay" "a credential made for another connection's challenge is refused"
if [[ $AUTH == munge ]]; then
	tap_like "$out" "rejected .*claims rank 1.*: $again" "the same credential sent again is refused as replayed"
else
	n=$(grep -cE "rejected .*claims rank 1.*: $replay" <<<"$out" || true)
	tap_is "$n" 2 "the same proof sent again is refused again (it is bound to a challenge that is gone)"
fi
tap_like "$out" 'rejected .*: it belongs to job "slurm:999999.0"' "another job's credential is refused"
if [[ $AUTH == slurm ]]; then
	# Control: the forger's proof for its own connection's challenge passes
	# (so the refusals above are the challenge's and the token's doing, not
	# a wrong HMAC). The job then fails: the forger took rank 1's place.
	start_job 24704 "$tmp/j4.out" 1 "$forge control"
	wait "$job"
	tap_like "$(cat "$tmp/j4.out")" "forger: control answer (PEERS|ABORT)" \
		"control: a proof made with the step secret for the connection's own challenge is accepted"
fi

# 5. Data injection: another uid connects to rank 1's data port. Rank 0
# is the late one: rank 1 listens from its start and cannot finish before
# rank 0 arrives, so the port is still open when the intruder calls.
# Rank 1 has two listeners: the data port, which speaks first (its
# challenge), and the node probe's, which never says anything. Rank 0
# comes 8 s late: finding the ports, forging the frame and starting the
# intruder's Python took over 3 s on a loaded 2-core machine.
start_job 24703 "$tmp/j3.out" 0 "sleep 8"
ports=()
for _ in $(seq 200); do
	mapfile -t ports < <(nx node2 ss -ltnpH 2>/dev/null | grep distenv-check | grep -v ':24703 ' |
		grep -o '10.77.0.12:[0-9]*' | cut -d: -f2)
	((${#ports[@]} >= 2)) && break
	sleep 0.05
done
if ((${#ports[@]} == 2)); then
	# Made here: the intruder's uid cannot reach the build tree.
	forged=$("$DE_FRAME" data token="slurm:$jobid.0" rank=0 purpose=ring mac="$(printf '%064d' 0)" |
		od -An -v -tx1 | tr -d ' \n')
	as_intruder /usr/bin/python3 - "$forged" "${ports[@]}" >"$tmp/d.log" 2>&1 <<'PY'
import socket, struct, sys, time
forged, ports = bytes.fromhex(sys.argv[1]), [int(p) for p in sys.argv[2:]]
data = probe = None
for p in ports:
    c = socket.create_connection(("10.77.0.12", p), timeout=1.5)
    try:
        hdr = c.recv(12)
    except socket.timeout:
        hdr = None
    if hdr:
        data, dc, dhdr = p, c, hdr
    else:
        probe, pc = p, c
print("data port", data, "probe port", probe)
# The probe port: silent, and what sends it data is closed at once.
t0 = time.time()
pc.settimeout(5)
pc.sendall(b"GET / HTTP/1.1\r\n\r\n")
try:
    got = pc.recv(100)
    print("probe port: %s after %.1f s" % ("closed" if got == b"" else "answered %r" % got, time.time() - t0))
except ConnectionResetError:
    print("probe port: closed after %.1f s" % (time.time() - t0))
except socket.timeout:
    print("probe port: still open after 5 s")
c = dc
c.recv(struct.unpack(">I", dhdr[8:12])[0])  # the challenge
c.sendall(forged + b"\x7f" * 65536)  # a DATA frame without the session key's proof, then payload
try:
    print("answer:", c.recv(100))
except OSError as e:
    print("closed:", e)
PY
	job_ok "$tmp/j3.out" "the real job completes correctly after a data-port injection attempt"
	tap_like "$(cat "$tmp/j3.out")" "data port: rejected 10.77.0.1 \(claims rank 0\): no proof of this job's session key" \
		"data without the session key's proof is refused before any payload" ||
		tap_diag "the intruder's side: $(cat "$tmp/d.log")"
	tap_like "$(cat "$tmp/d.log")" "probe port: closed after [0-4]\.[0-9] s" \
		"the node probe's port says nothing and closes a connection that sends it data"
else
	wait "$job"
	tap_fail "found rank 1's two listeners (got ${#ports[@]})" "$(cat "$tmp/j3.out")"
	tap_skip "data injection refused" "no data port found"
	tap_skip "probe port closes data" "no probe port found"
fi

if [[ $AUTH == munge ]]; then
	# The key is only ever sent inside credentials only the job's uid decodes.
	sock=$(sed -n 's/.*AuthInfo=.*socket=\([^, ]*\).*/\1/p' "$conf")
	cred=$(cx munge -S "$sock" -u 0 -s key 2>&1)
	out=$(printf '%s' "$cred" | as_intruder unmunge -S "$sock" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -ne 0 ] && [[ "$out" == *Unauthorized* ]]; then
		tap_ok "a uid-restricted MUNGE credential (how rank 0 sends the session key) cannot be decoded by another uid"
	else
		tap_fail "uid-restricted credential unreadable by another uid (rc=$rc)" "$out"
	fi
fi

# 6. --dist-check with no user action; the step secret: one per step, the
# same in every task, never a user's, never shown. Each task keeps its copy
# in a root-only file for the comparisons.
want=munge
[[ $AUTH == slurm ]] && want="step secret"
keep='umask 077; printf %s "$DISTENV_STEP_SECRET" >"$0.$SLURM_PROCID"'
out=$(cx env DISTENV_CHECK_OPTS="--json-summary=$tmp/summary.json" srun -v -N2 -n2 --ntasks-per-node=1 \
	--dist-check --dist-env=verbose bash -c "$keep" "$tmp/s1" 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ $out == *"distenv-check: PASS: 2 ranks"*"(authentication: $want)"* ]]; then
	tap_ok "srun --dist-check passes with no user action (authentication: $want)"
else
	tap_fail "srun --dist-check passes with no user action (rc=$rc)" "$out"
fi
s0=$(cat "$tmp/s1.0" 2>/dev/null) s1=$(cat "$tmp/s1.1" 2>/dev/null)
if [[ $s0 =~ ^[0-9a-f]{64}$ && $s0 == "$s1" ]]; then
	tap_ok "every task of the step has the same DISTENV_STEP_SECRET (64 hex digits)"
else
	tap_fail "one DISTENV_STEP_SECRET per step" "rank 0: ${#s0} chars, rank 1: ${#s1} chars, equal: $([[ $s0 == "$s1" ]] && echo yes || echo no)"
fi
if [[ -n $s0 ]]; then
	hits=$( { printf '%s\n' "$out"; cat "$tmp/summary.json" "$logdir"/*.log; } 2>/dev/null | grep -c -F "$s0")
	tap_is "$hits" 0 "the secret is in no output (srun -v, --dist-env=verbose, the check), nor the JSON summary, nor any daemon's log"
	[[ -s $tmp/summary.json ]] || tap_diag "(no JSON summary was written at $tmp/summary.json)"
else
	tap_skip "the secret is never shown" "no secret to look for"
fi
cx env DISTENV_STEP_SECRET="$s0" srun -N1 -n1 bash -c "$keep" "$tmp/s2" >/dev/null 2>&1
s2=$(cat "$tmp/s2.0" 2>/dev/null)
if [[ $s2 =~ ^[0-9a-f]{64}$ && $s2 != "$s0" ]]; then
	tap_ok "the next step gets a fresh secret, even with the last one in srun's environment"
else
	tap_fail "a fresh secret per step" "got ${#s2} chars, same as before: $([[ $s2 == "$s0" ]] && echo yes || echo no)"
fi
out=$(cx env DISTENV_SECRET=distenv-test-user-secret-0123 srun -N2 -n2 --ntasks-per-node=1 --dist-check \
	printenv DISTENV_SECRET 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ $out == *"(authentication: shared secret)"* ]] &&
	[[ $(grep -c '^distenv-test-user-secret-0123$' <<<"$out") == 2 ]]; then
	tap_ok "a user's DISTENV_SECRET comes first and reaches the tasks untouched"
else
	tap_fail "a user's DISTENV_SECRET comes first (rc=$rc)" "$out"
fi
if [[ $AUTH == slurm ]]; then
	tap_is "$([[ -e $(dirname "$conf")/run/munged.pid ]] && echo pid)|$(cx sh -c 'ls -A /run/munge 2>/dev/null | wc -l')" "|0" \
		"the auth/slurm cluster started no munged (no pid file, no socket on the login host)"
fi
tap_check "cluster healthy after the authentication tests" cluster_healthy
tap_done
