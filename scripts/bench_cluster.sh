#!/usr/bin/env bash
# 10M generated patients: anon sql / anonymize locally, then on a loopback Ballista cluster of a
# scheduler and two executors (anon scheduler / anon executor), in one run. Prints wall time
# and peak RSS of the client and of each cluster process.
#
#   cargo build --release && scripts/bench_cluster.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${1:-10000000}"
TARGET="${CARGO_TARGET_DIR:-target}"
ANON="${ANON:-$TARGET/release/anon}"
WORK="$TARGET/bench-data/cluster"
mkdir -p "$WORK"
DATA="$WORK/patients-$ROWS.parquet"
[ -f "$DATA" ] || "$ANON" generate --rows "$ROWS" --out "$DATA"
sed "s|^path = .*|path = \"$(realpath "$DATA")\"|" examples/patients/policy.toml > "$WORK/policy.toml"
QUERY="SELECT min(k) AS k, max(t) AS t FROM (SELECT k_anonymity() AS k, t_closeness(disease) AS t FROM p GROUP BY zip, age, sex)"

peak() { grep VmHWM "/proc/$1/status" | awk '{printf "%.0f MiB", $2/1024}'; }
run() { # label, command...
  local label="$1"; shift
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$WORK/rss" "$@" > /dev/null 2> "$WORK/err" || { cat "$WORK/err"; exit 1; }
  end=$(date +%s.%N)
  printf "%-34s %7.2f s  client peak %5.0f MiB\n" "$label" "$(echo "$end - $start" | bc)" "$(($(cat "$WORK/rss") / 1024))"
}

run "local sql (k, t over 3 QIs)" "$ANON" sql -t "p=$DATA" "$QUERY"
run "local anonymize" "$ANON" anonymize --policy "$WORK/policy.toml" --out "$WORK/local.parquet" --overwrite --quiet

PORT=$((40000 + RANDOM % 20000))
"$ANON" scheduler --bind "127.0.0.1:$PORT" 2> "$WORK/scheduler.log" & SCHED=$!
"$ANON" executor --scheduler "127.0.0.1:$PORT" --bind "127.0.0.1:$((PORT + 1))" --grpc-port $((PORT + 2)) --concurrent-tasks 1 2> "$WORK/ex1.log" & EX1=$!
"$ANON" executor --scheduler "127.0.0.1:$PORT" --bind "127.0.0.1:$((PORT + 3))" --grpc-port $((PORT + 4)) --concurrent-tasks 1 2> "$WORK/ex2.log" & EX2=$!
trap 'kill $SCHED $EX1 $EX2 2>/dev/null || true' EXIT
sleep 3
run "cluster sql (k, t over 3 QIs)" "$ANON" sql --cluster "df://127.0.0.1:$PORT" -t "p=$DATA" "$QUERY"
run "cluster anonymize" "$ANON" anonymize --policy "$WORK/policy.toml" --out "$WORK/cluster.parquet" --overwrite --quiet --cluster "df://127.0.0.1:$PORT"
echo "cluster processes: scheduler $(peak $SCHED), executor 1 $(peak $EX1), executor 2 $(peak $EX2)"
