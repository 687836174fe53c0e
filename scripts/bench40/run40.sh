#!/bin/sh
# issue 40: whole processes, paired runs. Usage: [OUT=runs.tsv] run40.sh <anon binary> <runs>
ANON=${1:-/work/release-target/release/anon}
RUNS=${2:-9}
DATA=/work/bench/patients10m.parquet
OUT=${OUT:-/work/bench/issue40/runs.tsv}
G="zip, age, sex"
ALL="k_anonymity() AS a, k_anonymity(patient_id) AS b, l_diversity(disease) AS c, entropy_l_diversity(disease) AS d, recursive_cl_diversity(disease, 2) AS e, t_closeness(disease) AS f, t_closeness_ordered(income) AS g, ncp(zip, age) AS h, entropy_leakage() AS i, reidentification_risk() AS j"
CONSUME="count(*), min(a), min(b), min(c), min(d), min(e), max(f), max(g), max(h), max(i), max(j)"
q_floor="SELECT count(*), min(n) FROM (SELECT $G, count(*) AS n FROM patients GROUP BY $G)"
q_k="SELECT count(*), min(k) FROM (SELECT $G, k_anonymity() AS k FROM patients GROUP BY $G)"
q_l="SELECT count(*), min(l) FROM (SELECT $G, l_diversity(disease) AS l FROM patients GROUP BY $G)"
q_all="SELECT $CONSUME FROM (SELECT $G, $ALL FROM patients GROUP BY $G)"
# all functions but t_closeness_ordered(income): the one whose class states are as large as the
# rows (each class has about as many distinct incomes as rows)
ALL_BUT_ORDERED="k_anonymity() AS a, k_anonymity(patient_id) AS b, l_diversity(disease) AS c, entropy_l_diversity(disease) AS d, recursive_cl_diversity(disease, 2) AS e, t_closeness(disease) AS f, ncp(zip, age) AS h, entropy_leakage() AS i, reidentification_risk() AS j"
q_all_but_ordered="SELECT count(*), min(a), min(b), min(c), min(d), min(e), max(f), max(h), max(i), max(j) FROM (SELECT $G, $ALL_BUT_ORDERED FROM patients GROUP BY $G)"
q_one="SELECT 1"
OFF="SET anonymity.packed_aggregation = false;"
run() { # name sql: wall seconds (ns clock) and peak RSS (KiB, /usr/bin/time)
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o /tmp/run40.time "$ANON" sql -t patients=$DATA "$2" > /tmp/run40.out 2>&1 || { echo "FAILED $1"; cat /tmp/run40.out; }
  end=$(date +%s%N)
  secs=$(awk -v a=$start -v b=$end 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
  echo "$i	$1	$secs $(tail -1 /tmp/run40.time)" >> $OUT
}
: > $OUT
for i in $(seq 1 $RUNS); do
  run floor "$q_floor"
  run floor_off "$OFF $q_floor"
  run k "$q_k"
  run k_off "$OFF $q_k"
  run l "$q_l"
  run all "$q_all"
  run all_off "$OFF $q_all"
  run all_but_ordered "$q_all_but_ordered"
  run select1 "$q_one"
  python3 $(dirname "$0")/duck40.py $DATA | while read name secs; do echo "$i	$name	$secs 0" >> $OUT; done
done
cat /tmp/run40.out
