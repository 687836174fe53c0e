#!/bin/sh
# issue 40: whole processes, paired runs. Usage: [OUT=runs.tsv] run40.sh <anon binary> <runs>
# (stats: python3 scripts/bench40/stats40.py <OUT>)
here=$(dirname "$0")
. "$here/queries.sh"
ANON=${1:-/work/release-target/release/anon}
RUNS=${2:-9}
OUT=${OUT:-/work/bench/issue40/runs.tsv}
: > $OUT
for i in $(seq 1 $RUNS); do
  run_timed floor "$ANON" "$q_floor"
  run_timed floor_off "$ANON" "$OFF $q_floor"
  run_timed k "$ANON" "$q_k"
  run_timed k_off "$ANON" "$OFF $q_k"
  run_timed l "$ANON" "$q_l"
  run_timed all "$ANON" "$q_all"
  run_timed all_off "$ANON" "$OFF $q_all"
  run_timed all_but_ordered "$ANON" "$q_all_but_ordered"
  run_timed scan3 "$ANON" "$q_scan3"
  run_timed scan6 "$ANON" "$q_scan6"
  run_timed six_sums "$ANON" "$q_six_sums"
  run_timed select1 "$ANON" "$q_one"
  python3 "$here/duck40.py" $DATA | while read name secs; do echo "$i	$name	$secs 0" >> $OUT; done
done
