#!/bin/sh
# issue 40: two builds of anon, paired whole-process runs of count(*), all functions,
# l_diversity and count(DISTINCT patient_id). Usage: [OUT=ab.tsv] ab3.sh <before> <after> <runs>
# (stats: python3 scripts/bench40/stats40.py <OUT> prints the *_after/*_before ratios)
A=$1; B=$2; RUNS=${3:-7}
DATA=/work/bench/patients10m.parquet
OUT=${OUT:-/work/bench/issue40/ab-fast3.tsv}
G="zip, age, sex"
ALL="k_anonymity() AS a, k_anonymity(patient_id) AS b, l_diversity(disease) AS c, entropy_l_diversity(disease) AS d, recursive_cl_diversity(disease, 2) AS e, t_closeness(disease) AS f, t_closeness_ordered(income) AS g, ncp(zip, age) AS h, entropy_leakage() AS i, reidentification_risk() AS j"
CONSUME="count(*), min(a), min(b), min(c), min(d), min(e), max(f), max(g), max(h), max(i), max(j)"
q_floor="SELECT count(*), min(n) FROM (SELECT $G, count(*) AS n FROM patients GROUP BY $G)"
q_l="SELECT count(*), min(l) FROM (SELECT $G, l_diversity(disease) AS l FROM patients GROUP BY $G)"
q_all="SELECT $CONSUME FROM (SELECT $G, $ALL FROM patients GROUP BY $G)"
q_dist="SELECT count(DISTINCT patient_id) FROM patients"
run() { # name binary sql
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o /tmp/ab3.time "$2" sql -t patients=$DATA "$3" > /tmp/ab3.out 2>&1 || { echo "FAILED $1"; cat /tmp/ab3.out; }
  end=$(date +%s%N)
  echo "$i	$1	$(awk -v a=$start -v b=$end 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 /tmp/ab3.time)" >> $OUT
}
: > $OUT
for i in $(seq 1 $RUNS); do
  run floor_before $A "$q_floor"; run floor_after $B "$q_floor"
  run all_before $A "$q_all"; run all_after $B "$q_all"
  run l_before $A "$q_l"; run l_after $B "$q_l"
  run distinct_before $A "$q_dist"; run distinct_after $B "$q_dist"
done
