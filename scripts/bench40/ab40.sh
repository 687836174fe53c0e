#!/bin/sh
# issue 40: two builds of anon, paired whole-process runs of k_anonymity() and all functions.
# Usage: [OUT=ab.tsv] ab40.sh <anon before> <anon after> <runs>
A=$1; B=$2; RUNS=${3:-9}
DATA=/work/bench/patients10m.parquet
OUT=${OUT:-/work/bench/issue40/ab.tsv}
G="zip, age, sex"
ALL="k_anonymity() AS a, k_anonymity(patient_id) AS b, l_diversity(disease) AS c, entropy_l_diversity(disease) AS d, recursive_cl_diversity(disease, 2) AS e, t_closeness(disease) AS f, t_closeness_ordered(income) AS g, ncp(zip, age) AS h, entropy_leakage() AS i, reidentification_risk() AS j"
CONSUME="count(*), min(a), min(b), min(c), min(d), min(e), max(f), max(g), max(h), max(i), max(j)"
q_k="SELECT count(*), min(k) FROM (SELECT $G, k_anonymity() AS k FROM patients GROUP BY $G)"
q_all="SELECT $CONSUME FROM (SELECT $G, $ALL FROM patients GROUP BY $G)"
run() { # name binary sql
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o /tmp/ab40.time "$2" sql -t patients=$DATA "$3" > /tmp/ab40.out 2>&1 || { echo "FAILED $1"; cat /tmp/ab40.out; }
  end=$(date +%s%N)
  echo "$i	$1	$(awk -v a=$start -v b=$end 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 /tmp/ab40.time)" >> $OUT
}
: > $OUT
for i in $(seq 1 $RUNS); do
  run k_before $A "$q_k"
  run k_after $B "$q_k"
  run all_before $A "$q_all"
  run all_after $B "$q_all"
done
