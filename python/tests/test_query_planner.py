"""The query planner in a user's own datafusion-python SessionContext.

The brute-force reference suite's queries (crates/datafusion-anonymity/tests/support/reference.rs: every function,
four WHERE filters, seven groupings, on Parquet files) run in a plain ``SessionContext`` with
the user's ``register_parquet`` table, at 1 and 4 partitions, and must give the values of the
crate's Rust session (``datafusion_anonymity.sql``, the engine ``anon sql`` runs), which the
Rust suite checks against its brute-force reference on the same data (``reference.gen_rows``
is a port of its generator). Then a join, and how the planner composes with others.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafusion import SessionConfig, SessionContext

import datafusion_anonymity as anon
from conftest import LI2007, rows, without_planner
from reference import MEASURES, Rng, gen_rows, queries, write_parquet


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= 1e-9 * (1.0 + abs(b))
    return a == b


@pytest.fixture(scope="module", params=[(1, 161), (7, 1500)], ids=["seed 1", "seed 7"])
def reference_dir(request, tmp_path_factory):
    seed, count = request.param
    directory = tmp_path_factory.mktemp(f"reference-{seed}")
    write_parquet(directory, gen_rows(seed, count))
    return directory


def test_generator_is_splitmix64():
    # splitmix64's published first outputs from seed 0 (Vigna's reference implementation)
    r = Rng(0)
    assert [r.next() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


@pytest.mark.parametrize("partitions", [1, 4])
def test_reference_suite_matches_rust(reference_dir, partitions):
    ctx = SessionContext(
        SessionConfig().with_target_partitions(partitions).with_batch_size(7)
    )
    anon.register(ctx)
    ctx.register_parquet("t", str(reference_dir))
    checked = 0
    for query in queries():
        expected = rows(anon.sql(query, tables={"t": str(reference_dir)}))
        got = rows(ctx, query)
        assert len(got) == len(expected), query
        for g, e in zip(got, expected):
            for i, (x, y) in enumerate(zip(g, e)):
                assert same(x, y), (query[:60], MEASURES[i - (len(g) - len(MEASURES))], g, e)
                checked += 1
    # 22 queries; every measure of every class
    assert checked > 22 * len(MEASURES)


@pytest.fixture
def regions(tmp_path):
    patients = tmp_path / "patients.parquet"
    pq.write_table(pa.table(LI2007), patients)
    regions = tmp_path / "regions.parquet"
    pq.write_table(pa.table({"zip3": ["476", "479"], "region": ["north", "south"]}), regions)
    return patients, regions


JOIN = """
SELECT r.region, k_anonymity() AS k, t_closeness(p.disease) AS t, l_diversity(p.disease) AS l
FROM p JOIN regions r ON substr(p.zip, 1, 3) = r.zip3
WHERE p.age < 50
GROUP BY r.region ORDER BY r.region
"""


@pytest.mark.parametrize("partitions", [1, 4])
def test_group_by_with_where_and_join(regions, partitions):
    # WHERE age < 50 drops id 5 (52, flu): 8 rows; the whole (filtered) table: gastric
    # ulcer 1, gastritis 2, stomach cancer 2, bronchitis 2, pneumonia 1 (eighths).
    # north (476): ids 1,2,3,7,8,9 = gu, gastritis, sc, bronchitis, pneumonia, sc: k = 6,
    #   l = 5; t = (|1/6-1/8| + |1/6-2/8| + |2/6-2/8| + |1/6-2/8| + |1/6-1/8|) / 2
    #     = (1 + 2 + 2 + 2 + 1) / 24 / 2 = 1/6
    # south (479): ids 4, 6 = gastritis, bronchitis: k = 2, l = 2;
    #   t = (1/8 + |1/2-2/8| + 2/8 + |1/2-2/8| + 1/8) / 2 = (3+6+6+6+3)/24/2 = 1/2
    patients, region_file = regions
    ctx = SessionContext(SessionConfig().with_target_partitions(partitions))
    anon.register(ctx)
    ctx.register_parquet("p", str(patients))
    ctx.register_parquet("regions", str(region_file))
    got = rows(ctx, JOIN)
    assert [(r, k, l) for r, k, _, l in got] == [("north", 6, 5), ("south", 2, 2)]
    assert [t for _, _, t, _ in got] == pytest.approx([1 / 6, 1 / 2])
    expected = rows(anon.sql(JOIN, tables={"p": str(patients), "regions": str(region_file)}))
    assert all(same(x, y) for g, e in zip(got, expected) for x, y in zip(g, e))


T_BY_ZIP3 = "SELECT substr(zip, 1, 3) AS z, t_closeness(disease) AS t FROM p GROUP BY 1 ORDER BY 1"
# 476 (6 rows): t = 2/9; 479 (gastritis, flu, bronchitis): t = 4/9 (test_functions.py)
T_EXPECTED = [2 / 9, 4 / 9]


def t_values(ctx) -> list[float]:
    return [t for _, t in rows(ctx, T_BY_ZIP3)]


def test_installed_twice_is_installed_once():
    # register twice, then the bundle on top: one planner, the same answers
    ctx = SessionContext()
    anon.register(ctx)
    anon.register(ctx)
    ctx = ctx.with_extensions(anon.extension())
    ctx.from_pydict(LI2007, name="p")
    assert anon._internal.planner_layers(ctx.__datafusion_query_planner__()) == 1
    assert t_values(ctx) == pytest.approx(T_EXPECTED)


def test_with_extensions_in_a_new_session():
    ctx = SessionContext().with_extensions(anon.extension())
    ctx.from_pydict(LI2007, name="p")
    assert t_values(ctx) == pytest.approx(T_EXPECTED)
    assert anon._internal.planner_layers(ctx.__datafusion_query_planner__()) == 1


def test_after_the_users_own_planner():
    # the user's planner (here: another session's, which plans whatever it is given) stays:
    # the crate's planner wraps it, rewrites, and hands the plan to it
    ctx = SessionContext()
    users = SessionContext().__datafusion_query_planner__()
    ctx.set_query_planner(users)
    anon.register(ctx)
    ctx.from_pydict(LI2007, name="p")
    assert t_values(ctx) == pytest.approx(T_EXPECTED)
    assert rows(ctx, "SELECT count(*) FROM p") == [(9,)]


def test_replaced_by_a_later_planner_then_reinstalled():
    ctx = SessionContext()
    anon.register(ctx)
    ctx.from_pydict(LI2007, name="p")
    without_planner(ctx)
    assert anon._internal.planner_layers(ctx.__datafusion_query_planner__()) == 0
    with pytest.raises(Exception, match=r"install it with datafusion_anonymity\.register\(ctx\)"):
        t_values(ctx)
    # ordinary queries are untouched
    assert rows(ctx, "SELECT count(*) FROM p") == [(9,)]
    anon.register(ctx)
    assert t_values(ctx) == pytest.approx(T_EXPECTED)


def test_ordinary_queries_and_in_memory_tables_still_work():
    # every query of the session goes through the planner: plain SQL, in-memory tables
    # (carried across the FFI by reference), joins, subqueries, window functions
    ctx = SessionContext()
    anon.register(ctx)
    ctx.from_pydict({"a": [1, 2, 2, 3]}, name="m")
    ctx.register_record_batches("n", [[pa.RecordBatch.from_pydict({"a": [2, 3]})]])
    assert rows(
        ctx,
        "SELECT m.a, count(*), sum(m.a) OVER () FROM m JOIN n ON m.a = n.a "
        "WHERE m.a IN (SELECT a FROM n) GROUP BY m.a ORDER BY m.a",
    ) == [(2, 2, 5), (3, 1, 5)]
    # an in-memory table is scanned through the FFI (HeldExec), not written into the plan by
    # value (a MemoryScan, every batch encoded and decoded twice per query)
    plan = ctx.sql("SELECT count(*) FROM m").execution_plan().display_indent()
    assert "HeldExec" in plan, plan


def test_whole_table_function_as_a_window_is_refused(regions):
    patients, _ = regions
    ctx = SessionContext()
    anon.register(ctx)
    ctx.register_parquet("p", str(patients))
    with pytest.raises(Exception, match="not as a window function"):
        rows(ctx, "SELECT t_closeness(disease) OVER () FROM p")


PACKED = (
    "SELECT g1, g2, k_anonymity() AS k, l_diversity(s) AS l, "
    "t_closeness_ordered(n) AS t, count(*) AS rows FROM t GROUP BY g1, g2 "
    "ORDER BY g1 NULLS FIRST, g2 NULLS FIRST"
)


@pytest.mark.parametrize("partitions", [1, 4])
def test_group_by_runs_in_the_packed_kernel(tmp_path, partitions):
    # integer and short-text keys (NULLs among them) pack: the planner runs the packed kernel,
    # as the Rust session does, and its values are those of DataFusion's own aggregation (the
    # Rust session with the kernel off) and of counting the rows by hand
    cols = gen_rows(3, 700)
    write_parquet(tmp_path, cols)
    ctx = SessionContext(SessionConfig().with_target_partitions(partitions).with_batch_size(7))
    anon.register(ctx)
    ctx.register_parquet("t", str(tmp_path))
    plan = ctx.sql(PACKED).execution_plan().display_indent()
    assert "PackedAggregateExec" in plan, plan
    assert " AggregateExec" not in plan and not plan.startswith("AggregateExec"), plan
    got = rows(ctx, PACKED)
    unpacked = rows(
        anon.sql(
            "SET anonymity.packed_aggregation = false; " + PACKED, tables={"t": str(tmp_path)}
        )
    )
    assert len(got) == len(unpacked)
    for g, e in zip(got, unpacked):
        assert all(same(x, y) for x, y in zip(g, e)), (g, e)
    # k and count(*) of each class, counted here
    by_hand: dict[tuple, int] = {}
    for key in zip(cols["g1"], cols["g2"]):
        by_hand[key] = by_hand.get(key, 0) + 1
    assert {(g1, g2): k for g1, g2, k, _, _, _ in got} == by_hand
    assert all(k == n for _, _, k, _, _, n in got)


# DataFusion's own functions with literal arguments (date/time, string, regex, math, and
# aggregates with a literal parameter), as keys, aggregate arguments, filters, HAVING and
# window arguments, grouped and not (issue 57: a grouped date_part failed in a registered
# context, its literal 'year' reaching it as an array through the FFI)
BUILTINS = [
    "SELECT sex, max(date_part('year', birth_date)) FROM p GROUP BY sex",
    "SELECT date_part('year', birth_date) AS y, count(*) FROM p GROUP BY y",
    "SELECT extract(month FROM birth_date) AS m, min(sex) FROM p GROUP BY 1",
    "SELECT date_trunc('hour', ts) AS h, count(*) FROM p GROUP BY h",
    "SELECT date_bin(interval '15 minutes', ts) AS b, sum(cost) FROM p GROUP BY b",
    "SELECT sex, max(date_bin(interval '1 hour', ts, TIMESTAMP '2020-01-01T00:30:00')) FROM p "
    "GROUP BY sex",
    "SELECT to_char(birth_date, '%Y-%m') AS ym, count(*) FROM p GROUP BY ym",
    "SELECT sex, max(to_timestamp(stamp, '%Y/%m/%d %H:%M')) FROM p GROUP BY sex",
    "SELECT regexp_replace(name, '[aeiou]', '_', 'g') AS r, count(*) FROM p GROUP BY r",
    "SELECT sex, count(*) FROM p WHERE regexp_like(name, '^[A-M]') GROUP BY sex",
    "SELECT sex, max(split_part(name, 'a', 2)), min(lpad(name, 8, '*')), "
    "max(substr(name, 2, 3)) FROM p GROUP BY sex",
    "SELECT concat_ws('-', sex, zip) AS c, count(*) FROM p GROUP BY c",
    "SELECT zip, round(avg(cost), 1), max(power(cost, 2)), min(log(2, cost)), "
    "max(trunc(cost, 1)) FROM p GROUP BY zip",
    "SELECT sex, approx_percentile_cont(cost, 0.5), string_agg(name, ',' ORDER BY name) "
    "FROM p GROUP BY sex",
    "SELECT sex, count(*) FROM p GROUP BY sex HAVING max(date_part('year', birth_date)) > 1975",
    "SELECT name, row_number() OVER (PARTITION BY date_part('year', birth_date) % 10 "
    "ORDER BY name) FROM p",
    "SELECT date_part('year', birth_date), date_trunc('day', ts), regexp_replace(name, 'a', 'A'), "
    "round(cost, 1), arrow_cast(zip, 'Int32') FROM p",
]


@pytest.mark.parametrize("partitions", [1, 4])
def test_registering_never_changes_a_query_that_does_not_use_it(tmp_path, partitions):
    # the same queries in a plain context (the expectation: no code of this library runs there)
    # and in a registered one, on a Parquet file and an in-memory table
    import datetime

    n = 60
    names = ["Ada", "Bob", "Cyd", "Dee", "Eve", "Mia", "Noa", "Zoe"]
    table = pa.table(
        {
            "sex": [["f", "m"][i % 2] for i in range(n)],
            "zip": [47600 + i % 5 for i in range(n)],
            "name": [names[i % len(names)] for i in range(n)],
            "cost": [1.0 + (i * 37 % 101) / 7 for i in range(n)],
            "birth_date": [datetime.date(1950 + i % 50, 1 + i % 12, 1 + i % 28) for i in range(n)],
            "ts": [datetime.datetime(2020, 1, 1) + datetime.timedelta(minutes=13 * i) for i in range(n)],
            "stamp": [f"2021/0{1 + i % 9}/1{i % 10} 0{i % 10}:{10 + i % 50}" for i in range(n)],
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")

    def contexts():
        config = SessionConfig().with_target_partitions(partitions)
        plain, registered = SessionContext(config), SessionContext(config)
        anon.register(registered)
        return plain, registered

    for source in ("parquet", "memory"):
        plain, registered = contexts()
        for ctx in (plain, registered):
            if source == "parquet":
                ctx.register_parquet("p", str(tmp_path / "p.parquet"))
            else:
                ctx.register_record_batches("p", [table.to_batches()])
        for query in BUILTINS:
            expected = sorted(rows(plain, query), key=repr)
            got = sorted(rows(registered, query), key=repr)
            assert got == expected, (source, query)


def test_the_crates_options_reach_the_planner(tmp_path):
    """`SET anonymity.packed_aggregation = false` has no namespace in a datafusion-python
    session; `register(ctx, options=...)` gives the planner the option instead: the same
    query then runs DataFusion's own aggregation, with the same rows."""
    cols = gen_rows(3, 700)
    write_parquet(tmp_path, cols)
    ctx = SessionContext()
    anon.register(ctx)
    ctx.register_parquet("t", str(tmp_path))
    with pytest.raises(Exception, match="anonymity"):
        ctx.sql("SET anonymity.packed_aggregation = false").collect()
    packed = ctx.sql(PACKED).execution_plan().display_indent()
    assert "PackedAggregateExec" in packed, packed
    expected = rows(ctx, PACKED)
    # registered again with the option: the planner's layer replaced, not doubled
    anon.register(ctx, options={"packed_aggregation": False})
    plain = ctx.sql(PACKED).execution_plan().display_indent()
    assert "PackedAggregateExec" not in plain and "AggregateExec" in plain, plain
    assert rows(ctx, PACKED) == expected
    assert anon._internal.planner_layers(ctx.__datafusion_query_planner__()) == 1
    # registered again without options: the ones given stay
    anon.register(ctx)
    assert "PackedAggregateExec" not in ctx.sql(PACKED).execution_plan().display_indent()
    # with the prefix too; an unknown option is refused by name
    other = SessionContext()
    anon.register(other, options={"anonymity.packed_aggregation": "false"})
    other.register_parquet("t", str(tmp_path))
    assert "PackedAggregateExec" not in other.sql(PACKED).execution_plan().display_indent()
    with pytest.raises(Exception, match="no_such_option"):
        anon.register(SessionContext(), options={"no_such_option": True})


def test_explain_shows_the_plans_the_planner_runs(tmp_path):
    """EXPLAIN in a registered session: DataFusion's FFI keeps only an Explain node's input, so
    the planner shows the final logical plan (rewritten) and the physical plan it runs (the
    packed kernel in it), as DataFusion shows them in its own sessions."""
    cols = gen_rows(3, 700)
    write_parquet(tmp_path, cols)
    ctx = SessionContext(SessionConfig().set("datafusion.explain.format", "indent"))
    anon.register(ctx)
    ctx.register_parquet("t", str(tmp_path))
    explained = ctx.sql("EXPLAIN " + PACKED).to_arrow_table().to_pylist()
    kinds = [row["plan_type"] for row in explained]
    assert kinds == ["logical_plan", "physical_plan"], explained
    assert "PackedAggregateExec" in explained[1]["plan"], explained
    # the whole-table rewrite shows in the logical plan
    assert "__anon_t_closeness_ordered_final" in explained[0]["plan"], explained
    tree = SessionContext(SessionConfig().set("datafusion.explain.format", "tree"))
    anon.register(tree)
    tree.register_parquet("t", str(tmp_path))
    rendered = tree.sql("EXPLAIN " + PACKED).to_arrow_table().to_pylist()
    assert [row["plan_type"] for row in rendered] == ["physical_plan"], rendered
    assert "PackedAggregateExec" in rendered[0]["plan"], rendered
