"""Random data: the functions through datafusion-python's FFI give exactly the values the
crate's own Rust session gives (``datafusion_anonymity.sql``, the engine of ``anon sql``).

datafusion-python plans aggregations its own way (the crate's query planner adds its rewrite
and single-phase rule, but the settings below still choose the path): one partition, partial
aggregation skipped for many groups (states converted row by row), many partitions and small
batches. Each setting forces one of these paths; the answers must not move.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datafusion_anonymity as anon
from conftest import rows, session

SETTINGS = {
    "one partition": dict(target_partitions=1),
    "four partitions, small batches": dict(target_partitions=4, batch_size=37),
    # partial aggregation skipped after the first row: every state built by convert_to_state
    "partial aggregation skipped": dict(
        target_partitions=3,
        batch_size=50,
        **{
            "datafusion.execution.skip_partial_aggregation_probe_rows_threshold": "1",
            "datafusion.execution.skip_partial_aggregation_probe_ratio_threshold": "0.0",
        },
    ),
}

DISEASES = ["flu", "cold", "asthma", "gastritis", "ulcer", "angina", "migraine", "covid"]


def random_table(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    zips = [f"{rng.randint(10, 14)}{rng.randint(0, 999):03d}" for _ in range(40)]

    def maybe(value, p_null=0.05):
        return None if rng.random() < p_null else value

    data = {
        "pid": [maybe(rng.randint(1, n // 3)) for _ in range(n)],
        "zip": [rng.choice(zips) for _ in range(n)],
        "age": [maybe(rng.randint(17, 90)) for _ in range(n)],
        "sex": [maybe(rng.choice("MF")) for _ in range(n)],
        # skewed, so classes differ in diversity
        "disease": [maybe(DISEASES[min(int(rng.expovariate(0.6)), 7)]) for _ in range(n)],
        "income": [maybe(round(rng.lognormvariate(10, 0.5), 2)) for _ in range(n)],
    }
    return pa.table(data)


def partitions(table: pa.Table, parts: int, chunk: int) -> list[list[pa.RecordBatch]]:
    batches = table.to_batches(max_chunksize=chunk)
    return [batches[i::parts] for i in range(parts)]


def assert_same(ffi: list[tuple], rust: list[tuple]) -> None:
    assert len(ffi) == len(rust)
    for a, b in zip(ffi, rust):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            if isinstance(x, float) or isinstance(y, float):
                assert x == pytest.approx(y, rel=1e-12, abs=1e-12), (a, b)
            else:
                assert x == y, (a, b)


PER_CLASS = """
SELECT substr(zip, 1, 3) AS z, age / 10 AS decade, sex,
       count(*) AS n,
       k_anonymity(pid) AS persons,
       l_diversity(disease) AS l,
       entropy_l_diversity(disease) AS el,
       recursive_cl_diversity(disease, 2) AS rl2,
       recursive_cl_diversity(disease, 1.5) AS rl15,
       reidentification_risk(pid) AS risk,
       l_diversity(income) AS l_income,
       l_diversity(disease) FILTER (WHERE age > 40) AS l_old
FROM t
GROUP BY 1, 2, 3
ORDER BY 1 NULLS FIRST, 2 NULLS FIRST, 3 NULLS FIRST
"""

WHOLE = """
SELECT k_anonymity(pid), l_diversity(disease), entropy_l_diversity(disease),
       recursive_cl_diversity(disease, 3), reidentification_risk(pid)
FROM t
"""

TABLE_LEVEL = """
SELECT min(persons), min(l), min(el), max(risk), count(*) FROM (
  SELECT k_anonymity(pid) AS persons, l_diversity(disease) AS l,
         entropy_l_diversity(disease) AS el, reidentification_risk(pid) AS risk
  FROM t GROUP BY zip, age)
"""

RECODING = """
SELECT id, mask(zip, 2), mask(zip, 5), bucket(age, 10), bucket(income, 1000),
       generalize_date(seen, 'quarter')
FROM t ORDER BY id
"""


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_aggregates_match_rust(seed, setting):
    options = SETTINGS[setting]
    table = random_table(seed, 4000)
    rust = {q: rows(anon.sql(q, tables={"t": table})) for q in (PER_CLASS, WHOLE, TABLE_LEVEL)}
    ctx = session(**options)
    ctx.register_record_batches("t", partitions(table, 3, 333))
    for query, expected in rust.items():
        assert_same(rows(ctx, query), expected)
    # the queries are not trivial: many classes, several sizes and diversities
    per_class = rust[PER_CLASS]
    assert len(per_class) > 100
    assert len({r[5] for r in per_class}) > 3


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_dictionary_encoded_values_match_rust(setting):
    # Parquet often gives strings dictionary-encoded; the functions decode them
    table = random_table(3, 2000)
    table = table.set_column(
        table.column_names.index("disease"), "disease", table.column("disease").dictionary_encode()
    )
    expected = rows(anon.sql(PER_CLASS, tables={"t": table}))
    ctx = session(**SETTINGS[setting])
    ctx.register_record_batches("t", partitions(table, 2, 250))
    assert_same(rows(ctx, PER_CLASS), expected)


def test_recoding_matches_rust():
    import datetime

    rng = random.Random(4)
    table = random_table(4, 1500)
    table = table.append_column("id", pa.array(range(table.num_rows)))
    start = datetime.date(1990, 1, 1)
    table = table.append_column(
        "seen",
        pa.array([start + datetime.timedelta(days=rng.randint(0, 12000)) for _ in range(table.num_rows)]),
    )
    expected = rows(anon.sql(RECODING, tables={"t": table}))
    ctx = session(target_partitions=4, batch_size=100)
    ctx.register_record_batches("t", partitions(table, 4, 100))
    assert rows(ctx, RECODING) == expected


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_whole_table_functions_match_rust(setting):
    # through the query planner, the whole-table functions give the Rust session's values,
    # also inside other expressions and subqueries
    table = random_table(5, 500)
    ctx = session(**SETTINGS[setting])
    ctx.register_record_batches("t", partitions(table, 2, 100))
    for call in [
        "t_closeness(disease)",
        "t_closeness_ordered(income)",
        "ncp(age, zip)",
        "entropy_leakage()",
        "k_anonymity()",
        "reidentification_risk()",
    ]:
        query = f"SELECT substr(zip, 1, 2) AS z, {call} AS v FROM t GROUP BY 1 ORDER BY 1"
        expected = rows(anon.sql(query, tables={"t": table}))
        assert len(expected) == 5
        assert_same(rows(ctx, query), expected)
        outer = f"SELECT max(v), count(*) FROM ({query})"
        assert_same(rows(ctx, outer), rows(anon.sql(outer, tables={"t": table})))


@pytest.mark.parametrize("seed", [6, 7])
def test_generalized_table_matches_rust(tmp_path, seed):
    # a policy over random data with k and l requirements: the table served to
    # datafusion-python holds exactly the rows the crate's own session serves
    table = random_table(seed, 3000).drop_columns(["income"])
    data = tmp_path / "data.parquet"
    pq.write_table(table, data)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f"""
name = "r"

[input]
path = "{data.name}"

[privacy]
k = 4
max_suppression = 0.9

[attributes]
pid = {{ role = "identifier" }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask" }} }}
age = {{ role = "quasi_identifier", hierarchy = {{ kind = "interval", widths = [10, 20, 40] }} }}
sex = {{ role = "insensitive" }}
disease = {{ role = "sensitive", l_diversity = {{ kind = "distinct", l = 2 }}, t_closeness = {{ kind = "equal", t = 0.6 }} }}

[transformation]
zip = 2
age = 1
"""
    )
    query = "SELECT zip, age, sex, disease FROM r_anon ORDER BY zip, age, sex NULLS FIRST, disease NULLS FIRST"
    expected = rows(anon.sql(query, policy=policy))
    ctx = session(target_partitions=4, batch_size=100)
    anon.register_policy(ctx, policy)
    got = rows(ctx, query)
    assert got == expected
    # some classes were dropped, some kept
    assert 0 < len(got) < table.num_rows
    # and every published class has k = 4 rows and 2 diseases, counted here in Python
    classes: dict = {}
    for zip_, age, _, disease in got:
        classes.setdefault((zip_, age), []).append(disease)
    assert min(len(v) for v in classes.values()) >= 4
    assert min(len({d for d in v if d is not None}) for v in classes.values()) >= 2
