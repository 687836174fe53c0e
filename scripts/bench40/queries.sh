# issue 40's data, queries and timed run, shared by run40.sh and ab.sh (sourced, not run)
DATA=${DATA:-/work/bench/patients10m.parquet}
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
# lower bounds of any plan reading the all-functions query's six columns: decoding them without
# grouping (and the floor's three alone), and the cheapest grouped aggregate over them (a count
# and three sums). sum(length(…)) and sum(…), not max(…): the Parquet statistics answer max.
q_scan3="SELECT sum(length(zip)), sum(age), sum(length(sex)) FROM patients"
q_scan6="SELECT sum(length(zip)), sum(age), sum(length(sex)), sum(income), sum(patient_id), sum(length(disease)) FROM patients"
q_six_sums="SELECT count(*), min(n), max(a), max(b), max(c) FROM (SELECT $G, count(*) AS n, sum(income) AS a, sum(patient_id) AS b, sum(length(disease)) AS c FROM patients GROUP BY $G)"
q_distinct="SELECT count(DISTINCT patient_id) FROM patients"
q_one="SELECT 1"
OFF="SET anonymity.packed_aggregation = false;"

# run_timed <name> <anon binary> <sql>: appends "run	name	seconds peak-RSS-KiB" to $OUT
# (wall time of the whole process, ns clock; peak RSS from /usr/bin/time; run number $i)
run_timed() {
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o /tmp/bench40.time "$2" sql -t patients=$DATA "$3" > /tmp/bench40.out 2>&1 || { echo "FAILED $1"; cat /tmp/bench40.out; }
  end=$(date +%s%N)
  echo "$i	$1	$(awk -v a=$start -v b=$end 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 /tmp/bench40.time)" >> $OUT
}
