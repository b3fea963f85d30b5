#!/bin/bash
# Authenticated rendezvous on the real cluster (MUNGE): a process of
# another uid cannot join a job or inject data, a HELLO without credential,
# with a credential made for another connection (replay) or for another job
# is refused -- and in every case the real job completes correctly.
# shellcheck disable=SC2016
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

build=${DISTENV_BUILD_DIR:-$(cd "$here/../.." && pwd)}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
command -v useradd >/dev/null || tap_skip_all "useradd missing"
command -v munge >/dev/null || tap_skip_all "munge client missing"
cluster_require --nodes 2 --cpus 4
tmp=$(mktemp -d)
chmod 755 "$tmp"
intruder=distenv-intruder-$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$intruder"
cleanup() { userdel "$intruder" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
conf=$(cx printenv SLURM_CONF)
# The intruder runs its own copy: the checkout may sit in a folder only
# root can enter (mktemp -d is 0700).
install -m 755 "$CHECK" "$tmp/distenv-check"

# A job one of whose ranks (1 unless LATE says otherwise) arrives 3 s
# late, so intruders get in first.
start_job() { # PORT OUT [LATE]
	cx srun -N2 -n2 -J "auth-$1" --dist-port="$1" bash -c 'if [ "$SLURM_PROCID" = "$1" ]; then sleep 3; fi; exec "$0" --timeout=20' "$CHECK" "${3:-1}" >"$2" 2>&1 &
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

# 1. Another uid runs a real distenv-check claiming rank 1 of the job.
start_job 24701 "$tmp/j1.out"
sleep 0.5
out=$(cd / && setpriv --reuid="$intruder" --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin \
	SLURM_CONF="$conf" SLURM_JOB_ID="$jobid" SLURM_STEP_ID=0 SLURM_PROCID=1 RANK=1 WORLD_SIZE=2 \
	MASTER_ADDR=10.77.0.11 MASTER_PORT=24701 "$tmp/distenv-check" --timeout=5 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"FAIL authentication: rank 0 refused this rank: MUNGE credential of uid"* ]]; then
	tap_ok "a process of another uid claiming rank 1 is refused (its MUNGE uid is not the job's)"
else
	tap_fail "another uid refused (rc=$rc)" "$out"
fi
tap_unlike() { if [[ $1 =~ $2 ]]; then tap_fail "$3" "$1"; else tap_ok "$3"; fi; }
tap_unlike "$out" "PASS|allreduce=" "the intruder never gets the peer table, the session key or a result"
job_ok "$tmp/j1.out" "the real job completes correctly after the intruder"
tap_like "$(cat "$tmp/j1.out")" "rank 0: rejected .*: MUNGE credential of uid [0-9]+, this job runs as uid 0" "rank 0 logs the refusal with the peer address and the reason"

# 2-4. Hand-made HELLOs: none, replayed/for another challenge, another job.
start_job 24702 "$tmp/j2.out"
/usr/bin/python3 - "$jobid" "$conf" >"$tmp/h.log" 2>&1 <<'PY'
import socket, struct, subprocess, sys, time, os
jobid, conf = sys.argv[1], sys.argv[2]
addr = ("10.77.0.11", 24702)
def s(b): return struct.pack(">H", len(b)) + b
def conn():
    for _ in range(100):
        try:
            c = socket.create_connection(addr, timeout=3); break
        except OSError: time.sleep(0.05)
    hdr = c.recv(12); n = struct.unpack(">I", hdr[8:12])[0]
    return c, c.recv(n)  # the challenge nonce
def mstr(b): return struct.pack(">I", len(b)) + b
def cred(token, rank, nonce_s, nonce_c):
    payload = mstr(b"distenv-hello-v1") + mstr(token) + struct.pack(">II", rank, 2) + nonce_s + nonce_c
    sock = [l.split("socket=")[1].split(",")[0].strip() for l in open(conf) if "AuthInfo" in l and "socket=" in l]
    args = ["munge"] + (["-S", sock[0]] if sock else [])
    return subprocess.run(args, input=payload, capture_output=True, check=True).stdout.strip()
def hello(token, rank, nonce_c, auth):
    body = (s(token) + struct.pack(">IIIIIIBH", rank, 2, 0, 1, 1, 4242, 1, 1)
            + s(b"intruder") + s(b"10.77.0.1") + s(b"eth0")
            + s(b"check float32 count=262147 sizes=0:0*0 iters=0 warmup=0") + nonce_c + s(auth))
    return b"DENV" + struct.pack(">HHI", 1, 1, len(body)) + body
tok = ("slurm:%s.0" % jobid).encode()
nc = os.urandom(16)
# no credential
c, ns = conn(); c.sendall(hello(tok, 1, nc, b"")); time.sleep(0.3); c.close()
# a credential made for connection A's challenge, replayed on B and C
a, nsa = conn(); cr = cred(tok, 1, nsa, nc); a.close()
b, nsb = conn(); b.sendall(hello(tok, 1, nc, cr)); time.sleep(0.3); b.close()
d, nsd = conn(); d.sendall(hello(tok, 1, nc, cr)); time.sleep(0.3); d.close()
# another job's credential, for the right challenge
e, nse = conn(); ft = b"slurm:999999.0"; e.sendall(hello(ft, 1, nc, cred(ft, 1, nse, nc))); time.sleep(0.3); e.close()
print("sent")
PY
job_ok "$tmp/j2.out" "the real job completes correctly after forged HELLOs"
out=$(cat "$tmp/j2.out" "$tmp/h.log")
tap_like "$out" "rejected .*claims rank 1.*: no credential" "a HELLO without a credential is refused"
tap_like "$out" "rejected .*claims rank 1.*: MUNGE credential made for another job, rank or challenge" "a credential made for another connection's challenge is refused"
tap_like "$out" "rejected .*claims rank 1.*: MUNGE credential refused: Replayed credential" "the same credential sent again is refused as replayed"
tap_like "$out" 'rejected .*: it belongs to job "slurm:999999.0"' "another job's credential is refused"

# 5. Data injection: another uid connects to rank 1's data port. Rank 0
# is the late one: rank 1 listens from its start and cannot finish before
# rank 0 arrives, so the port is still open when the intruder calls.
start_job 24703 "$tmp/j3.out" 0
port=""
for _ in $(seq 200); do
	pid=$(nx node2 ss -ltnpH 2>/dev/null | grep distenv-check | grep -v ':24703 ' | grep -o '10.77.0.12:[0-9]*' | head -1)
	[ -n "$pid" ] && { port=${pid#*:}; break; }
	sleep 0.05
done
if [ -n "$port" ]; then
	setpriv --reuid="$intruder" --regid=nogroup --clear-groups /usr/bin/python3 - "$port" "$jobid" >"$tmp/d.log" 2>&1 <<'PY'
import socket, struct, sys
port, jobid = int(sys.argv[1]), sys.argv[2]
c = socket.create_connection(("10.77.0.12", port), timeout=3)
hdr = c.recv(12); c.recv(struct.unpack(">I", hdr[8:12])[0])
tok = ("slurm:%s.0" % jobid).encode()
body = struct.pack(">H", len(tok)) + tok + struct.pack(">IB", 0, 2) + bytes(32)
c.sendall(b"DENV" + struct.pack(">HHI", 1, 7, len(body)) + body + b"\x7f" * 65536)
try:
    print("answer:", c.recv(100))
except OSError as e:
    print("closed:", e)
PY
	job_ok "$tmp/j3.out" "the real job completes correctly after a data-port injection attempt"
	tap_like "$(cat "$tmp/j3.out")" "data port: rejected 10.77.0.1 \(claims rank 0\): no proof of this job's session key" "data without the session key's proof is refused before any payload"
else
	wait "$job"
	tap_fail "found rank 1's data port" "$(cat "$tmp/j3.out")"
	tap_skip "data injection refused" "no data port found"
fi

# The key is only ever sent inside credentials only the job's uid decodes.
cred=$(munge -S "$(sed -n 's/.*AuthInfo=.*socket=\([^, ]*\).*/\1/p' "$conf")" -u 0 -s key 2>&1)
out=$(printf '%s' "$cred" | setpriv --reuid="$intruder" --regid=nogroup --clear-groups unmunge -S "$(sed -n 's/.*AuthInfo=.*socket=\([^, ]*\).*/\1/p' "$conf")" 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *Unauthorized* ]]; then
	tap_ok "a uid-restricted MUNGE credential (how rank 0 sends the session key) cannot be decoded by another uid"
else
	tap_fail "uid-restricted credential unreadable by another uid (rc=$rc)" "$out"
fi
tap_check "cluster healthy after the authentication tests" cluster_healthy
tap_done
