#!/usr/bin/env bash
# Load test of one gtco-server on loopback: starts the server (--no-auth, a temporary SQLite
# database) and CPU workers, runs load_gen (300 clients, 60 s by default) against it, stops
# everything and writes bench/results/load.md (machine, date, commands, the table, the server's
# threads/memory/CPU during the run and its log's warnings). Arguments go to load_gen, e.g.
#   bench/load/run_load.sh                          # 300 clients for 60 s
#   bench/load/run_load.sh --clients 50 --seconds 10
# Environment: BUILD_DIR (default build), WORKER (default $BUILD_DIR/worker/gtco-worker),
# WORKERS (CPU workers, default 1), WORKER_THREADS (threads per candidate, default 1),
# BACKGROUND_MODEL (a long job keeping the workers busy and the watch streams updating;
# default tests/data/transformer_block.onnx, "" for none), RESULTS (default bench/results/load.md).
# Exit status: load_gen's (0 when no call failed).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
worker_bin="${WORKER:-$build/worker/gtco-worker}"
workers="${WORKERS:-1}"
worker_threads="${WORKER_THREADS:-1}"
background_model="${BACKGROUND_MODEL-tests/data/transformer_block.onnx}"
results="${RESULTS:-$repo/bench/results/load.md}"
cd "$repo"

if [[ ! -x "$build/bench/load/load_gen" || ! -x "$build/server/gtco-server" ]]; then
  [[ -f "$build/CMakeCache.txt" ]] || cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build" --target load_gen gtco-server -j"$(nproc)"
fi
if [[ ! -x "$worker_bin" ]]; then
  echo "run_load.sh: no CPU worker at $worker_bin; build it (make gtco-worker, needs LLVM) or" \
       "set WORKER=/path/to/gtco-worker" >&2
  exit 2
fi

tmp="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
address="127.0.0.1:$port"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
# Hundreds of connections: one descriptor each on both sides.
ulimit -n "$(ulimit -H -n)" 2>/dev/null || true

server_cmd=("$build/server/gtco-server" --listen "$address" --db "$tmp/load.db" --no-auth)
"${server_cmd[@]}" >"$tmp/server.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
for _ in $(seq 100); do
  grep -q "listening" "$tmp/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.log" >&2; exit 1; }
  sleep 0.2
done
worker_cmd=("$worker_bin" --server "$address" --target cpu --threads "$worker_threads")
for index in $(seq "$workers"); do
  "${worker_cmd[@]}" >"$tmp/worker$index.log" 2>&1 &
  pids+=("$!")
done

# The server's threads, resident memory, descriptors and CPU time, once a second.
clock_ticks="$(getconf CLK_TCK)"
(
  while kill -0 "$server_pid" 2>/dev/null; do
    threads="$(awk '/^Threads:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)"
    rss_kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)"
    fds="$(ls "/proc/$server_pid/fd" 2>/dev/null | wc -l)"
    cpu_ticks="$(awk '{print $14 + $15}' "/proc/$server_pid/stat" 2>/dev/null || echo 0)"
    echo "$(date +%s) $threads $rss_kb $fds $cpu_ticks"
    sleep 1
  done
) >"$tmp/server_samples.txt" &
pids+=("$!")

# Defaults for the flags the arguments do not give.
load_cmd=("$build/bench/load/load_gen" --server "$address")
for default in "--clients 300" "--seconds 60" "--model tests/data/mlp.onnx" \
               "--background-model $background_model"; do
  flag="${default%% *}"
  [[ " $* " == *" $flag "* || " $* " == *" $flag="* || -z "${default#* }" ]] && continue
  load_cmd+=($default)
done
load_cmd+=("$@" --json "$tmp/load.json")
started="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
set +e
/usr/bin/time -f '%e s wall, %U s user, %S s system, %M KiB max RSS' -o "$tmp/load_gen_time.txt" \
  "${load_cmd[@]}" >"$tmp/load_gen.txt" 2>"$tmp/load_gen.err"
load_rc=$?
set -e
finished="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
cat "$tmp/load_gen.err" >&2
cat "$tmp/load_gen.txt"
cleanup
trap - EXIT

peaks="$(awk -v hz="$clock_ticks" 'NR == 1 {first = $5} {
    if ($2 > threads) threads = $2; if ($3 > rss) rss = $3; if ($4 > fds) fds = $4; last = $5 }
  END { printf "peak %d threads, peak %.0f MiB resident, peak %d open descriptors, %.1f s CPU",
        threads, rss / 1024, fds, (last - first) / hz }' "$tmp/server_samples.txt")"
log_warnings="$(grep -ciE 'warn|error|exhaust|deadline' "$tmp/server.log" || true)"
mkdir -p "$(dirname "$results")"
{
  echo "# Load test: one gtco-server, concurrent clients on loopback"
  echo
  echo "Written by \`bench/load/run_load.sh\` (load generator \`bench/load/load_gen.cc\`)."
  echo
  echo "- Machine: $(python3 "$repo/bench/machine.py"); $(uname -sr)"
  echo "- Commit: $(git -C "$repo" rev-parse --short=12 HEAD)"
  echo "- Run: $started to $finished; load average (1/5/15 min) before $load_before, after $load_after"
  echo "- Server: \`${server_cmd[*]/#$repo\//}\`"
  echo "- Workers: $workers x \`${worker_cmd[*]/#$repo\//}\`"
  echo "- Load: \`${load_cmd[*]/#$repo\//}\`"
  echo "- load_gen exit status: $load_rc ($([[ $load_rc == 0 ]] && echo "no call failed" || echo "calls failed, see errors"))"
  echo
  echo '```'
  head -1 "$tmp/load_gen.txt"
  echo '```'
  echo
  sed -n '3,$p' "$tmp/load_gen.txt"
  echo
  echo "Server process during the run (sampled each second): $peaks."
  echo "load_gen process: $(tail -1 "$tmp/load_gen_time.txt")."
  echo "Server log: $(wc -l <"$tmp/server.log") lines, $log_warnings mentioning warn/error/exhaust/deadline."
  if [[ "$log_warnings" != 0 ]]; then
    echo
    echo '```'
    grep -iE 'warn|error|exhaust|deadline' "$tmp/server.log" | head -20
    echo '```'
  fi
} >"$results"
echo "run_load.sh: wrote $results (logs in $tmp)" >&2
exit "$load_rc"
