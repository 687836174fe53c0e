# DuckDB's query time in-process, after its import (issue 40): count(*) and count(DISTINCT
# disease) per class, consumed by the same outer aggregate as the anon queries.
import sys, time
import duckdb
path = sys.argv[1]
con = duckdb.connect()
g = "zip, age, sex"
queries = {
    "duck_count": f"SELECT count(*), min(n) FROM (SELECT {g}, count(*) AS n FROM '{path}' GROUP BY {g})",
    "duck_distinct": f"SELECT count(*), min(l) FROM (SELECT {g}, count(DISTINCT disease) AS l FROM '{path}' GROUP BY {g})",
}
for name, sql in queries.items():
    start = time.perf_counter()
    con.sql(sql).fetchall()
    print(name, f"{time.perf_counter() - start:.3f}")
