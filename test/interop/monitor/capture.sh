#!/usr/bin/env bash
# What a real Redisson sends to Redis for lock/unlock, fair, read/write, semaphore, fenced and the
# watchdog, as MONITOR shows it. Writes monitor/redisson-<version>.txt beside this script.
#
#   test/interop/monitor/capture.sh 4.7.0 [port]
#
# Needs the driver jar (built by the spec, or: cd ../redisson-driver && mvn -q -B -DskipTests
# -Dredisson.version=<v> package) and redis-server / redis-cli on PATH. One JVM, watchdog 3000 ms;
# holders h1..h5 are five Java threads. The transcript is normalised: the client id becomes
# <client>, unlock request ids <req>, script SHA1s <sha:first 8>, client-clock epoch ms <now>;
# PINGs and SCRIPT LOAD bodies (Redisson's script text) are left out.
set -euo pipefail
v=${1:?usage: capture.sh <redisson version> [port]}
port=${2:-6399}
here=$(cd "$(dirname "$0")" && pwd)
jar="$here/../redisson-driver/target/redisson-$v/redisson-driver.jar"
[ -f "$jar" ] || { echo "no jar at $jar: build it first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes >/dev/null
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" MONITOR > "$tmp/monitor" &
monitor=$!
mark() { redis-cli -p "$port" ECHO "--- $1 ---" >/dev/null; }
{
  sleep 4 # JVM start; the replies are not read: the sleeps leave each step time to finish
  echo "0 h1 owner"; echo "0 h2 owner"; echo "0 h3 owner"; sleep 0.5
  mark "rlock: lock, tryLock by another thread, re-entry, two unlocks"
  echo "1 h1 lock L"; sleep 0.2; echo "2 h2 tryLock L 0"; sleep 0.2; echo "3 h1 lock L"; sleep 0.2
  echo "4 h1 unlock L"; sleep 0.2; echo "5 h1 unlock L"; sleep 0.3
  mark "rlock with a waiter (lease 20000)"
  echo "6 h1 lock W 20000"; sleep 0.2; echo "7 h2 lock W 20000"; sleep 0.4; echo "8 h1 unlock W"; sleep 0.4; echo "9 h2 unlock W"; sleep 0.4
  mark "unlock by a thread that does not hold the lock"
  echo "10 h1 lock U"; sleep 0.2; echo "11 h2 unlock U"; sleep 0.2; echo "12 h1 unlock U"; sleep 0.3
  mark "fair lock with a queued waiter"
  echo "13 h1 fairLock F"; sleep 0.2; echo "14 h2 fairLock F"; sleep 0.4; echo "15 h1 fairUnlock F"; sleep 0.4; echo "16 h2 fairUnlock F"; sleep 0.4
  mark "read/write: two readers, a waiting writer"
  echo "17 h1 readLock R"; sleep 0.2; echo "18 h3 readLock R"; sleep 0.2; echo "19 h2 writeLock R"; sleep 0.4
  echo "20 h1 readUnlock R"; sleep 0.3; echo "21 h3 readUnlock R"; sleep 0.4; echo "22 h2 writeUnlock R"; sleep 0.4
  mark "semaphore: 1 permit, a waiter"
  echo "23 h1 semTrySetPermits S 1"; sleep 0.2; echo "24 h1 semAcquire S 1"; sleep 0.2; echo "25 h2 semAcquire S 1"; sleep 0.4
  echo "26 h1 semRelease S 1"; sleep 0.4; echo "27 h3 semRelease S 1"; sleep 0.4
  mark "fenced lock"
  echo "28 h1 fencedLock X"; sleep 0.2; echo "29 h1 fencedUnlock X"; sleep 0.3
  mark "watchdog renewal (3000 ms) of a lock and a read lock"
  echo "30 h4 lock D"; echo "31 h5 readLock DR"; sleep 1.6; echo "32 h4 unlock D"; echo "33 h5 readUnlock DR"; sleep 0.3
  mark "permit-expirable semaphore (lease 5000)"
  echo "34 h1 pesTrySetPermits P 1"; sleep 0.2; echo "35 h1 pesAcquire P 5000"; sleep 0.4
  mark "quit"
  echo "99 h1 quit"
} | java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar "$jar" --address "redis://127.0.0.1:$port" --watchdog 3000 > "$tmp/replies" 2> "$tmp/stderr"
sleep 0.3
kill "$monitor" 2>/dev/null || true
client=$(head -1 "$tmp/replies" | cut -f2)
out="$here/redisson-$v.txt"
{
  echo "# Redisson $v as MONITOR saw it (test/interop/monitor/capture.sh); [c] a Redisson connection, [lua] a script's own command"
  grep -v -e '"PING"' -e '"SCRIPT" "LOAD"' -e '^OK$' "$tmp/monitor" \
    | sed -E "s/^[0-9.]+ \[0 lua\]/[lua]/; s/^[0-9.]+ \[0 [0-9.:]+\]/[c]/; s/$client/<client>/g" \
    | sed -E 's/"([0-9a-f]{8})[0-9a-f]{32}"/"<sha:\1>"/g; s/[0-9a-f]{32}/<req>/g; s/"1[0-9]{12}"/"<now>"/g'
} > "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
