#!/bin/sh
# issue 40: two builds of anon, paired whole-process runs of the queries named in QUERIES
# (those of queries.sh, without the q_ prefix; default: floor all l distinct).
# Usage: [OUT=ab.tsv] [QUERIES="k all"] ab.sh <anon before> <anon after> <runs>
# (stats: python3 scripts/bench40/stats40.py <OUT> prints the *_after/*_before ratios)
. "$(dirname "$0")/queries.sh"
A=$1; B=$2; RUNS=${3:-7}
OUT=${OUT:-/work/bench/issue40/ab.tsv}
: > $OUT
for i in $(seq 1 $RUNS); do
  for q in ${QUERIES:-floor all l distinct}; do
    eval sql=\"\$q_$q\"
    run_timed ${q}_before "$A" "$sql"
    run_timed ${q}_after "$B" "$sql"
  done
done
