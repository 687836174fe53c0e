"""One query of BENCHMARKS.md's "Python: the query planner", in a plain datafusion-python
SessionContext with the crate's planner installed (the counterpart of `anon sql`).

    python python/bench/planner.py DATA.parquet QUERY_NAME   # card, all or memory

Prints the result and the wall time of ctx.sql(...).collect(); run it under
`/usr/bin/time -v` for the peak RSS.
"""

from __future__ import annotations

import sys
import time

from datafusion import SessionContext

import datafusion_anonymity as anon

QUERIES = {
    # the design card's query, reduced to one row so that printing costs nothing
    "card": "SELECT min(k), max(t), count(*) FROM (SELECT zip, age, sex, k_anonymity() AS k, "
    "t_closeness(disease) AS t FROM patients GROUP BY zip, age, sex)",
    # every kind: per-class (persons, l), whole-table (t, ncp, leakage), nullary
    "all": "SELECT min(k), min(p), min(l), max(t), max(n), max(e) FROM (SELECT "
    "k_anonymity() AS k, k_anonymity(patient_id) AS p, l_diversity(disease) AS l, "
    "t_closeness(disease) AS t, ncp(age, zip) AS n, entropy_leakage() AS e "
    "FROM patients GROUP BY zip, age, sex)",
}


def in_memory(data: str) -> None:
    """``SELECT count(*), max(age)`` over the first 2M rows as an in-memory table, without
    and with the planner (what every query of such a session pays for crossing the FFI)."""
    import pyarrow.parquet as pq

    table = pq.read_table(data).slice(0, 2_000_000)
    for install in (False, True):
        ctx = SessionContext()
        if install:
            anon.register(ctx)
        ctx.from_arrow(table, name="m")
        start = time.perf_counter()
        ctx.sql("SELECT count(*), max(age) FROM m").collect()
        label = "with the planner" if install else "without the planner"
        print(f"in-memory, {label}: {time.perf_counter() - start:.3f} s")


def main() -> None:
    data, name = sys.argv[1], sys.argv[2]
    if name == "memory":
        in_memory(data)
        return
    ctx = SessionContext()
    anon.register(ctx)
    ctx.register_parquet("patients", data)
    start = time.perf_counter()
    batches = ctx.sql(QUERIES[name]).collect()
    elapsed = time.perf_counter() - start
    print(batches[0].to_pylist())
    print(f"{name}: {elapsed:.3f} s")


if __name__ == "__main__":
    main()
