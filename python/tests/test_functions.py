"""The functions in a datafusion-python SessionContext, on docs/definitions.md's worked example.

Every expected value is computed by hand in the comments from the 9 rows of Li et al. 2007
(conftest.LI2007):

    id zip    age salary disease         class (zip[0:3], age decade*)
    1  47677  29  3      gastric ulcer   476,2*
    2  47602  22  4      gastritis       476,2*
    3  47678  27  5      stomach cancer  476,2*
    4  47905  43  6      gastritis       479,>=40
    5  47909  52  11     flu             479,>=40
    6  47906  47  8      bronchitis      479,>=40
    7  47605  30  7      bronchitis      476,3*
    8  47673  36  9      pneumonia       476,3*
    9  47607  32  10     stomach cancer  476,3*
"""

from __future__ import annotations

import datetime
import math

import pyarrow as pa
import pytest

import datafusion_anonymity as anon
from conftest import LI2007, rows, session, without_planner

CLASSES = (
    "substr(zip, 1, 3) AS z, "
    "CASE WHEN age < 30 THEN '2*' WHEN age < 40 THEN '3*' ELSE '>=40' END AS a"
)


@pytest.fixture
def patients(ctx):
    ctx.from_pydict(LI2007, name="patients")
    return ctx


def test_per_class_functions(patients):
    # each class: 3 rows of 3 persons (ids distinct), 3 distinct diseases of 1/3 each:
    # l = 3; entropy l = exp(ln 3) = 3; recursive (c = 2), counts 1,1,1: for l = 3,
    # r1 = 1 < 2 * r3 = 2 holds -> 3; risk = 1 / 3 persons.
    got = rows(
        patients,
        f"""SELECT {CLASSES}, count(*), k_anonymity(id), l_diversity(disease),
                   entropy_l_diversity(disease), recursive_cl_diversity(disease, 2),
                   reidentification_risk(id)
            FROM patients GROUP BY 1, 2 ORDER BY 1, 2""",
    )
    assert [r[:5] for r in got] == [
        ("476", "2*", 3, 3, 3),
        ("476", "3*", 3, 3, 3),
        ("479", ">=40", 3, 3, 3),
    ]
    for r in got:
        assert r[5] == pytest.approx(3.0)
        assert r[6] == 3
        assert r[7] == pytest.approx(1 / 3)


def test_whole_table_as_one_class(patients):
    # no GROUP BY: 9 persons; diseases gastric ulcer 1, gastritis 2, stomach cancer 2, flu 1,
    # bronchitis 2, pneumonia 1 -> l = 6.
    # entropy: H = 3 * (2/9) ln(9/2) + 3 * (1/9) ln 9 = 1.00272 + 0.73241 = 1.73513,
    #   exp(H) = 5.6696.
    # recursive c = 2, counts sorted 2,2,2,1,1,1: l = 6: 2 < 2 * 1 fails; l = 5:
    #   2 < 2 * (1 + 1) holds -> 5.
    # risk: 1 / 9.
    [(k, l, el, rl, risk)] = rows(
        patients,
        """SELECT k_anonymity(id), l_diversity(disease), entropy_l_diversity(disease),
                  recursive_cl_diversity(disease, 2), reidentification_risk(id) FROM patients""",
    )
    assert (k, l, rl) == (9, 6, 5)
    assert el == pytest.approx(math.exp(6 * (2 / 9) * math.log(9 / 2) / 2 + 3 * (1 / 9) * math.log(9)))
    assert el == pytest.approx(5.6696, abs=1e-4)
    assert risk == pytest.approx(1 / 9)


def test_persons_with_several_rows(ctx):
    # class a: persons 1, 1, 2 -> 2 persons, risk 1/2; class b: person 3 twice and a NULL
    # person, who may be person 3 -> 1 person, risk 1
    ctx.from_pydict(
        {"g": ["a", "a", "a", "b", "b", "b"], "pid": [1, 1, 2, 3, 3, None]}, name="visits"
    )
    got = rows(
        ctx,
        "SELECT g, k_anonymity(pid), reidentification_risk(pid) FROM visits GROUP BY g ORDER BY g",
    )
    assert got == [("a", 2, 0.5), ("b", 1, 1.0)]


def test_recursive_c_must_be_constant(patients):
    # c is a constant in Rust; a column is refused the same way from Python
    with pytest.raises(Exception, match="c must be a constant number"):
        patients.sql(
            "SELECT recursive_cl_diversity(disease, salary) FROM patients GROUP BY zip"
        ).to_arrow_table()


@pytest.mark.parametrize(
    "call",
    [
        "t_closeness(disease)",
        "t_closeness_ordered(salary)",
        "ncp(age, zip)",
        "beta_likeness(disease)",
        "enhanced_beta_likeness(disease)",
        "delta_disclosure(disease)",
        "tuple_diversity(salary)",
    ],
)
def test_whole_table_functions_refuse_without_the_planner(patients, call):
    # the planner replaced by a later set_query_planner: no number, the line that fixes it
    name = call.split("(")[0]
    without_planner(patients)
    with pytest.raises(Exception) as raised:
        patients.sql(f"SELECT {CLASSES}, {call} FROM patients GROUP BY 1, 2").to_arrow_table()
    message = str(raised.value)
    assert f"{name} needs statistics of the whole table" in message
    assert "install it with datafusion_anonymity.register(ctx)" in message
    # and that line fixes it
    anon.register(patients)
    assert len(rows(patients, f"SELECT {CLASSES}, {call} FROM patients GROUP BY 1, 2")) == 3


@pytest.mark.parametrize(
    "call", ["k_anonymity()", "reidentification_risk()", "entropy_leakage()"]
)
def test_nullary_forms_refuse_without_the_planner(patients, call):
    # Without the planner a call with no argument never reaches the crate: DataFusion 55
    # refuses to build any aggregate without arguments (AggregateExprBuilder::build,
    # "args should not be empty"; its own count(*) is rewritten to count(1) first). No
    # number, but DataFusion's message, not ours (docs/python.md says so).
    without_planner(patients)
    for query in (
        f"SELECT {call} FROM patients GROUP BY zip",
        f"SELECT {call} FROM patients",
    ):
        with pytest.raises(Exception, match="args should not be empty"):
            patients.sql(query).to_arrow_table()
    anon.register(patients)
    assert len(rows(patients, f"SELECT {call} FROM patients GROUP BY zip")) == 9


def test_design_card_query_in_a_plain_session(patients):
    # the design card's query, verbatim shape, in the user's own SessionContext:
    # classes by zip (9 distinct zips -> 9 classes of 1 row): k = 1 each; t of a class with
    # one disease d is (1 - p(d) + (1 - p(d))) / 2 = 1 - p(d): gu 8/9, gastritis 7/9, ...
    got = rows(
        patients,
        "SELECT zip, k_anonymity() AS k, t_closeness(disease) AS t FROM patients "
        "GROUP BY zip ORDER BY zip",
    )
    share = {"gastric ulcer": 1, "gastritis": 2, "stomach cancer": 2, "flu": 1,
             "bronchitis": 2, "pneumonia": 1}
    expected = sorted(zip(LI2007["zip"], LI2007["disease"]))
    assert [z for z, _, _ in got] == [z for z, _ in expected]
    assert [k for _, k, _ in got] == [1] * 9
    assert [t for _, _, t in got] == pytest.approx([1 - share[d] / 9 for _, d in expected])


@pytest.mark.parametrize("where", ["user's context", "crate's session"])
def test_whole_table_functions(li2007, where):
    # the same query in the crate's own session, with the rewrite:
    # t (disease), table distribution gu 1/9, gastritis 2/9, sc 2/9, flu 1/9, bronchitis 2/9,
    #   pneumonia 1/9. 476,2* = {gu, gastritis, sc} at 1/3: |diffs| 2/9, 1/9, 1/9 plus absent
    #   flu 1/9, bronchitis 2/9, pneumonia 1/9 = 8/9, t = 4/9; the other two by symmetry.
    # t ordered (salary 3..11, 9 values, m - 1 = 8), cumulative sums of p_E - 1/9 in ninths:
    #   476,2* {3,4,5}: 2,4,6,5,4,3,2,1,0 -> 27/9 / 8 = 0.375
    #   476,3* {7,9,10}: -1,-2,-3,-4,-2,-3,-1,1,0 -> 17/9 / 8 = 0.2361
    #   479,>=40 {6,8,11}: -1,-2,-3,-1,-2,0,-1,-2,0 -> 12/9 / 8 = 0.1667
    # ncp(age, zip): age range 22..52 = 30; zip 3 of 9 distinct = 1/3 per class
    #   476,2* 7/30, 476,3* 6/30, 479,>=40 9/30 -> ((7|6|9)/30 + 1/3) / 2
    # entropy leakage: (3/9) * (log2 9 - log2 3) / log2 9 = 1/6; k_anonymity() = 3
    query = f"""SELECT {CLASSES}, t_closeness(disease), t_closeness_ordered(salary),
                       ncp(age, zip), entropy_leakage(), k_anonymity(), reidentification_risk()
                FROM patients GROUP BY 1, 2 ORDER BY 1, 2"""
    if where == "crate's session":
        got = rows(anon.sql(query, tables={"patients": li2007}))
    else:
        from conftest import session

        ctx = session()
        ctx.register_record_batches("patients", [li2007.to_batches()])
        got = rows(ctx, query)
    assert [r[:2] for r in got] == [("476", "2*"), ("476", "3*"), ("479", ">=40")]
    expected = [
        (4 / 9, 27 / 72, (7 / 30 + 1 / 3) / 2),
        (4 / 9, 17 / 72, (6 / 30 + 1 / 3) / 2),
        (4 / 9, 12 / 72, (9 / 30 + 1 / 3) / 2),
    ]
    for r, (t, t_ordered, ncp) in zip(got, expected):
        assert r[2] == pytest.approx(t)
        assert r[3] == pytest.approx(t_ordered)
        assert r[4] == pytest.approx(ncp)
        assert r[5] == pytest.approx(1 / 6)
        assert r[6] == 3
        assert r[7] == pytest.approx(1 / 3)


def test_sql_takes_datafusion_dataframes(patients):
    # what the refusal suggests: the session's own table handed to the crate's session.
    # By zip prefix: 476 (6 rows) t = 2/9 (gu 1/6 vs 1/9, gastritis 1/6 vs 2/9, sc 2/6 vs
    # 2/9, bronchitis 1/6 vs 2/9, pneumonia 1/6 vs 1/9, flu 0 vs 1/9: (1+1+2+1+1+2)/18 / 2);
    # 479 (gastritis, flu, bronchitis at 1/3): (1/9+2/9+1/9+1/9+2/9+1/9) / 2 = 4/9
    table = anon.sql(
        "SELECT substr(zip, 1, 3) AS z, t_closeness(disease) AS t FROM p GROUP BY 1 ORDER BY 1",
        tables={"p": patients.table("patients")},
    )
    got = rows(table)
    assert [z for z, _ in got] == ["476", "479"]
    assert [t for _, t in got] == pytest.approx([2 / 9, 4 / 9])


def test_sql_reads_paths_runs_statements_in_order(tmp_path):
    # a CSV file with a header row; two statements, the last one's result is returned
    path = tmp_path / "p.csv"
    path.write_text("zip,disease\n47677,flu\n47678,flu\n47905,cold\n")
    # classes by zip prefix: 476 (flu, flu) and 479 (cold); table flu 2/3, cold 1/3.
    # 476 is all flu: (|1 - 2/3| + |0 - 1/3|) / 2 = 1/3; 479 all cold: (2/3 + 2/3) / 2 = 2/3
    table = anon.sql(
        "CREATE VIEW v AS SELECT substr(CAST(zip AS VARCHAR), 1, 3) AS z, disease FROM p; "
        "SELECT z, t_closeness(disease) AS t FROM v GROUP BY z ORDER BY z",
        tables={"p": path},
    )
    assert table.column_names == ["z", "t"]
    got = rows(table)
    assert [z for z, _ in got] == ["476", "479"]
    assert [t for _, t in got] == pytest.approx([1 / 3, 2 / 3])


def test_sql_errors_name_the_problem():
    with pytest.raises(anon.AnonymityError, match="table '[a-z.]*nope' not found"):
        anon.sql("SELECT * FROM nope")
    with pytest.raises(TypeError, match="give a path"):
        anon.sql("SELECT 1", tables={"t": 42})


def test_recoding_functions(patients, tmp_path):
    # mask(zip, 2): last 2 characters masked; bucket(age, 10): 10-year interval
    assert rows(patients, "SELECT mask(zip, 2), bucket(age, 10) FROM patients WHERE id = 1") == [
        ("476**", "[20, 30)")
    ]
    # constants too (the whole expression is folded by datafusion-python's planner)
    assert rows(patients, "SELECT mask('12345', 3)") == [("12***",)]
    # generalize_date: to the month / year
    patients.from_pydict({"born": [datetime.date(1990, 5, 17)]}, name="b")
    [(month, year)] = rows(
        patients, "SELECT generalize_date(born, 'month'), generalize_date(born, 'year') FROM b"
    )
    assert (month, year) == ("1990-05", "1990")


def test_generalize_with_a_hierarchy_file(ctx, tmp_path):
    # an ARX hierarchy: value; level 1; level 2
    hierarchy = tmp_path / "disease.csv"
    hierarchy.write_text(
        "flu;respiratory;*\nbronchitis;respiratory;*\ngastritis;digestive;*\n"
    )
    anon.register(ctx, hierarchies={"disease": hierarchy})
    ctx.from_pydict({"d": ["flu", "gastritis", "bronchitis"]}, name="t")
    got = rows(
        ctx,
        "SELECT d, generalize(d, 'disease', 1), generalize(d, 'disease', 2) FROM t ORDER BY d",
    )
    assert got == [
        ("bronchitis", "respiratory", "*"),
        ("flu", "respiratory", "*"),
        ("gastritis", "digestive", "*"),
    ]
    # an unknown hierarchy name is refused when planned, listing the known ones
    with pytest.raises(Exception, match="unknown hierarchy 'zip'"):
        ctx.sql("SELECT generalize(d, 'zip', 1) FROM t").to_arrow_table()


def test_empty_input(ctx):
    # GROUP BY over no rows: no class; the recoding of no rows: no rows
    ctx.register_record_batches(
        "e", [[pa.RecordBatch.from_pydict({"z": pa.array([], pa.string()), "s": pa.array([], pa.string())})]]
    )
    assert rows(ctx, "SELECT z, l_diversity(s) FROM e GROUP BY z") == []
    assert rows(ctx, "SELECT mask(z, 1) FROM e") == []


def test_every_aggregate_without_arguments_runs_or_refuses_clearly(patients):
    # with the planner, a user-facing function without arguments runs (k_anonymity,
    # reidentification_risk, entropy_leakage) or is an arity error naming what it takes
    for function in anon._internal.aggregate_functions():
        if function.name.startswith("__anon"):
            continue
        query = f"SELECT {function.name}() FROM patients GROUP BY zip"
        try:
            got = rows(patients, query)
        except Exception as raised:
            assert f"{function.name} takes" in str(raised), str(raised)
        else:
            assert function.name in ("k_anonymity", "reidentification_risk", "entropy_leakage")
            assert len(got) == 9


def test_the_dataframe_api_helpers_give_what_sql_gives(li2007):
    """Each helper of `datafusion_anonymity.functions` against the same function in SQL, on
    the 9 rows of Li et al. 2007 grouped by masked zip: the classes 476** (ids 1-3, 7-9) and
    479** (ids 4-6)."""
    from datafusion import col, lit

    from datafusion_anonymity import functions as af

    ctx = session()
    ctx.register_record_batches("t", [li2007.to_batches()])
    frame = ctx.table("t").aggregate(
        [af.mask(col("zip"), lit(2)).alias("zip")],
        [
            af.k_anonymity().alias("k"),
            af.l_diversity(col("disease")).alias("l"),
            af.t_closeness(col("disease")).alias("t"),
            af.alpha_anonymity(col("disease")).alias("a"),
            af.tuple_diversity(col("salary")).alias("d"),
        ],
    ).sort(col("zip").sort())
    by_sql = ctx.sql(
        "SELECT mask(zip, 2) AS zip, k_anonymity() AS k, l_diversity(disease) AS l, "
        "t_closeness(disease) AS t, alpha_anonymity(disease) AS a, "
        "tuple_diversity(salary) AS d FROM t GROUP BY mask(zip, 2) ORDER BY zip"
    )
    got = rows(frame.to_arrow_table())
    assert got == rows(by_sql.to_arrow_table())
    # by hand: 476** holds 6 rows with 5 diseases (stomach cancer twice), 479** 3 rows with 3
    assert [(z, k, l) for z, k, l, *_ in got] == [("476**", 6, 5), ("479**", 3, 3)]
