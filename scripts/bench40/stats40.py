# medians and spreads of run40.sh's paired runs; ratios paired per run
import sys, statistics as st, collections
rows = [l.split("\t") for l in open(sys.argv[1] if len(sys.argv) > 1 else "/work/bench/issue40/runs.tsv")]
by = collections.defaultdict(dict)
for i, name, tm in rows:
    secs, rss = tm.split()
    by[name][i] = (float(secs), int(rss))
def show(name):
    v = [s for s, _ in by[name].values()]; r = [m for _, m in by[name].values()]
    print(f"{name:14s} median {st.median(v):.3f} s  min {min(v):.3f} max {max(v):.3f}  peak RSS median {st.median(r)/1024:.0f} MiB  (n={len(v)})")
for n in by: show(n)
def ratio(a, b):
    rs = sorted(by[a][i][0] / by[b][i][0] for i in by[a] if i in by[b])
    print(f"{a}/{b}: median {st.median(rs):.2f}  min {rs[0]:.2f} max {rs[-1]:.2f}  (n={len(rs)})")
for a, b in [("k", "floor"), ("all", "floor"), ("all_but_ordered", "floor"), ("all_off", "floor_off"), ("all", "floor_off"), ("floor", "floor_off"), ("k_off", "floor"), ("l", "floor"),
             ("k", "duck_count"), ("floor", "duck_count"), ("l", "duck_distinct"), ("all", "all_off"), ("k", "k_off"), ("scan3", "floor"), ("scan6", "floor"), ("six_sums", "floor"), ("all", "six_sums"),
             ("k_after", "k_before"), ("all_after", "all_before"), ("floor_after", "floor_before"),
             ("l_after", "l_before"), ("distinct_after", "distinct_before"),
             ("all_before", "floor_before"), ("all_after", "floor_after")]:
    if a in by and b in by: ratio(a, b)
