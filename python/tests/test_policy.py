"""Policies from Python: the generalized table as a table provider, anonymize, apply, profile.

The policies are the repository's (sql/policies) over sql/data/li2007.csv, the 9-row table of
conftest.py. At the policies' transformation (zip masked 2 characters, age in 10-year
buckets) the classes are, by hand:

    476**, [20, 30): salaries 3, 4, 5   gastric ulcer, gastritis, stomach cancer   3 rows
    476**, [30, 40): salaries 7, 9, 10  bronchitis, pneumonia, stomach cancer      3 rows
    479**, [40, 50): salaries 6, 8      gastritis, bronchitis                      2 rows
    479**, [50, 60): salary 11          flu                                        1 row
"""

from __future__ import annotations

import collections
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datafusion_anonymity as anon
from conftest import POLICIES, rows, session

KEPT = [
    ("476**", "[20, 30)", 3, "gastric ulcer"),
    ("476**", "[20, 30)", 4, "gastritis"),
    ("476**", "[20, 30)", 5, "stomach cancer"),
    ("476**", "[30, 40)", 7, "bronchitis"),
    ("476**", "[30, 40)", 9, "pneumonia"),
    ("476**", "[30, 40)", 10, "stomach cancer"),
]


def test_register_policy_serves_input_and_generalized_table(ctx):
    # li2007_drop: k = 3, smaller classes dropped: the two 479** classes (2 and 1 rows) go
    names = anon.register_policy(ctx, POLICIES / "li2007_drop.toml")
    assert names == ["li2007", "li2007_anon"]
    assert rows(ctx, "SELECT * FROM li2007_anon ORDER BY salary") == KEPT
    # the input is there too, and generalize() knows the policy's hierarchies
    assert rows(
        ctx,
        "SELECT generalize(zip, 'zip', 2) AS z, generalize(age, 'age', 1) AS a, count(*) "
        "FROM li2007 GROUP BY 1, 2 ORDER BY 1, 2",
    ) == [
        ("476**", "[20, 30)", 3),
        ("476**", "[30, 40)", 3),
        ("479**", "[40, 50)", 2),
        ("479**", "[50, 60)", 1),
    ]
    # the table is suppressed as a whole, then the query filters: salary <= 4 keeps 2 rows of
    # a 3-row class, which is published
    assert rows(ctx, "SELECT salary FROM li2007_anon WHERE salary <= 4 ORDER BY salary") == [
        (3,),
        (4,),
    ]
    # projections (none at all for count(*)) and limits reach the crate's plan
    assert rows(ctx, "SELECT count(*) FROM li2007_anon") == [(6,)]
    assert len(rows(ctx, "SELECT disease FROM li2007_anon LIMIT 2")) == 2
    assert rows(ctx, "SELECT DISTINCT zip FROM li2007_anon") == [("476**",)]
    # joins with datafusion-python's own tables: the 6 published salaries, 3..10 without 6, 8
    ctx.from_pydict({"salary": [3, 6, 8, 10]}, name="wanted")
    assert rows(
        ctx,
        "SELECT a.salary FROM li2007_anon a JOIN wanted w ON a.salary = w.salary ORDER BY 1",
    ) == [(3,), (10,)]
    # and the crate's functions run over it in datafusion-python's plan: 2 classes of 3
    assert rows(
        ctx,
        "SELECT min(p), count(*) FROM (SELECT l_diversity(disease) AS p "
        "FROM li2007_anon GROUP BY zip, age)",
    ) == [(3, 2)]


def test_generalized_table_with_l_and_t_requirements(ctx):
    # li2007_diverse: k = 2, distinct l = 3, t = 0.45 (equal distance) on disease; dropped.
    # 476**/[20, 30): l = 3; t = 4/9 = 0.444 (see test_functions) <= 0.45: kept
    # 476**/[30, 40): bronchitis, pneumonia, stomach cancer at 1/3 against 2/9, 1/9, 2/9 and
    #   the absent gastric ulcer 1/9, gastritis 2/9, flu 1/9: (1+2+1+1+2+1)/9 / 2 = 4/9: kept
    # 479**/[40, 50): k = 2 but l = 2 < 3: dropped; 479**/[50, 60): k = 1: dropped.
    # t needs the whole-table rewrite: the table is planned in the crate's own session.
    table = anon.generalized_table(POLICIES / "li2007_diverse.toml")
    # id (an identifier) is dropped, the quasi-identifiers are labels
    assert pa.schema(table).names == ["zip", "age", "salary", "disease"]
    ctx.register_table("diverse", table)
    assert rows(ctx, "SELECT * FROM diverse ORDER BY salary") == KEPT


def test_generalized_table_masks(ctx):
    # li2007_mask: k = 3, suppression = "mask": the 3 rows of the 479** classes stay, with
    # every quasi-identifier *
    ctx.register_table("masked", anon.generalized_table(POLICIES / "li2007_mask.toml"))
    got = rows(ctx, "SELECT zip, age, salary FROM masked ORDER BY salary")
    assert got == [
        ("476**", "[20, 30)", 3),
        ("476**", "[20, 30)", 4),
        ("476**", "[20, 30)", 5),
        ("*", "*", 6),
        ("476**", "[30, 40)", 7),
        ("*", "*", 8),
        ("476**", "[30, 40)", 9),
        ("476**", "[30, 40)", 10),
        ("*", "*", 11),
    ]


def test_generalized_table_at_other_levels(ctx, tmp_path):
    # age at level 2 (20-year buckets): 476** / [20, 40) holds the 6 rows of 476, 479** /
    # [40, 60) the 3 rows of 479: every class has 3+ rows, nothing dropped
    table = anon.generalized_table(POLICIES / "li2007_drop.toml", levels={"zip": 2, "age": 2})
    ctx.register_table("t", table)
    assert rows(ctx, "SELECT zip, age, count(*) FROM t GROUP BY zip, age ORDER BY zip") == [
        ("476**", "[20, 40)", 6),
        ("479**", "[40, 60)", 3),
    ]
    # a quasi-identifier not named stays at level 0, as in a policy's [transformation]: the
    # nine ages as they are make nine classes of one row, all below k = 3, so `apply` refuses
    # the 9 suppressed rows (max_suppression = 0.5 allows 4), as it does with age = 0 named
    for levels in ({"zip": 2}, {"zip": 2, "age": 0}):
        with pytest.raises(anon.AnonymityError, match="suppresses 9 of 9 rows"):
            anon.apply(POLICIES / "li2007_drop.toml", levels=levels, out=tmp_path / "o.parquet")
        # and the generalized table is not served either, as apply refuses to publish it
        with pytest.raises(
            anon.InvalidValueError,
            match=r"suppresses 9 of 9 rows, above the policy's limit of 4 \(max_suppression "
            r"= 0.5\); nothing served",
        ):
            anon.generalized_table(POLICIES / "li2007_drop.toml", levels=levels)
    with pytest.raises(anon.AnonymityError, match="'salary' is not a quasi-identifier"):
        anon.generalized_table(
            POLICIES / "li2007_drop.toml", levels={"zip": 2, "age": 1, "salary": 0}
        )


def test_policy_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(anon.AnonymityError, match="nope.toml"):
        anon.generalized_table(missing)


def test_sql_with_policy(tmp_path):
    # anon sql --policy: the policy's tables and hierarchies in the crate's own session
    table = anon.sql(
        "SELECT zip, age, k_anonymity() AS k, t_closeness(disease) AS t "
        "FROM li2007_diverse_anon GROUP BY zip, age ORDER BY age",
        policy=POLICIES / "li2007_diverse.toml",
    )
    got = rows(table)
    assert [r[:3] for r in got] == [("476**", "[20, 30)", 3), ("476**", "[30, 40)", 3)]
    # t within the published table (6 rows: gu 1, gastritis 1, sc 2, bronchitis 1,
    # pneumonia 1): [20, 30) = gu, gastritis, sc at 1/3 vs 1/6, 1/6, 2/6 and absent
    # bronchitis 1/6, pneumonia 1/6: (1/6 + 1/6 + 0 + 1/6 + 1/6) / 2 = 1/3; [30, 40) the same
    assert [r[3] for r in got] == pytest.approx([1 / 3, 1 / 3])


def _classes(path, qis):
    table = pq.read_table(path)
    keys = list(zip(*(table.column(q).to_pylist() for q in qis)))
    return table, collections.Counter(keys)


def test_anonymize_publishes_and_reports(tmp_path):
    out = tmp_path / "out.parquet"
    report_path = tmp_path / "report.json"
    report = anon.anonymize(POLICIES / "li2007_drop.toml", out=out, report=report_path)
    # the report is the CLI's: written to the file as returned, but for the seed drawn, which
    # only the returned result holds (record_seed=True writes it too)
    assert isinstance(report["publish"].pop("seed"), int)
    assert json.loads(report_path.read_text()) == report
    assert report["algorithm"] == "optimal"
    assert report["recoding"] == "full-domain"
    assert [level["quasi_identifier"] for level in report["levels"]] == ["zip", "age"]
    verification = report["publish"]["verification"]
    assert verification["failures"] == []
    # the policy: k = 3, at most 50% of the 9 rows suppressed
    assert verification["k"] >= 3
    assert report["publish"]["suppressed_rows"] <= 4
    # the written file agrees, counted here: every class of the published labels has 3+ rows
    table, classes = _classes(out, ["zip", "age"])
    assert table.num_rows == verification["rows"] == 9 - report["publish"]["suppressed_rows"]
    assert min(classes.values()) >= 3
    assert "id" not in table.column_names
    # the chosen levels serve the same rows as a generalized table
    ctx = session()
    ctx.register_table("again", anon.generalized_table(POLICIES / "li2007_drop.toml", levels=report["levels"]))
    assert sorted(rows(ctx, "SELECT zip, age, salary, disease FROM again")) == sorted(
        rows(table.select(["zip", "age", "salary", "disease"]))
    )
    # an existing output is kept unless overwrite=True
    with pytest.raises(anon.AnonymityError, match="exists"):
        anon.anonymize(POLICIES / "li2007_drop.toml", out=out)
    anon.anonymize(POLICIES / "li2007_drop.toml", out=out, overwrite=True)


def test_anonymize_local_recoding(tmp_path):
    out = tmp_path / "mondrian.parquet"
    report = anon.anonymize(POLICIES / "li2007_drop.toml", out=out, algorithm="mondrian")
    assert report["recoding"] == "local"
    assert report["publish"]["verification"]["k"] >= 3
    _, classes = _classes(out, ["zip", "age"])
    assert min(classes.values()) >= 3
    with pytest.raises(anon.AnonymityError, match="unknown algorithm 'best'"):
        anon.anonymize(POLICIES / "li2007_drop.toml", out=tmp_path / "x.parquet", algorithm="best")


def test_apply_publishes_the_fixed_transformation(tmp_path):
    out = tmp_path / "applied.parquet"
    report = anon.apply(POLICIES / "li2007_drop.toml", out=out)
    # the 6 rows of KEPT; the 3 rows of the 479** classes suppressed
    assert report["command"] == "apply"
    assert report["publish"]["suppressed_rows"] == 3
    assert report["publish"]["verification"]["rows"] == 6
    assert report["publish"]["verification"]["k"] == 3
    table = pq.read_table(out)
    assert sorted(rows(table.select(["zip", "age", "salary", "disease"]))) == KEPT


def test_profile(tmp_path, li2007):
    path = tmp_path / "li.parquet"
    pq.write_table(li2007, path)
    # raw quasi-identifiers zip, age: every row its own class -> k = 1, 9 sample uniques
    report = anon.profile(path, qi=["zip", "age"], sensitive=["disease"], queries=10)
    assert report["rows"] == 9
    assert report["anonymity"]["classes"] == 9
    assert report["anonymity"]["k"] == 1
    assert report["anonymity"]["sample_uniques"] == 9
    # no values unless asked for
    assert report["risky_classes"] is None
    # by zip prefix... the profile takes columns: age alone has 9 distinct values too; salary
    # and disease are no quasi-identifiers. With zip only (9 distinct) the same k = 1.
    with pytest.raises(anon.AnonymityError, match="quasi-identifiers"):
        anon.profile(path)


def test_k_of_one_is_refused_by_python_too(tmp_path):
    """Microaggregation in groups of one publishes every value: the policy is refused when
    read, naming the key, and nothing is written (issue 52)."""
    (tmp_path / "t.csv").write_text("income,age\n" + "".join(f"{i},{i % 7}\n" for i in range(20)))
    micro = '{ role = "quasi_identifier", perturbation = { kind = "microaggregation" } }'
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[input]\npath = "t.csv"\n[privacy]\nmethod = "perturbation"\nk = 1\n'
        f"[attributes]\nincome = {micro}\nage = {micro}\n"
    )
    out = tmp_path / "out.parquet"
    with pytest.raises(anon.AnonymityError, match="privacy.k = 1 protects nobody"):
        anon.anonymize(policy, out=out)
    assert not out.exists()


def test_a_dropped_person_column_with_t_closeness(tmp_path):
    """Issue 57: a person column (dropped) with t-closeness and β-likeness published from
    Python as from the command line. Six patients, two visits each, in two zip codes of three
    patients: at zip 0 every class holds 3 persons (6 rows); the release keeps no pid and its
    classes, recounted through the visit number, hold 3 persons each."""
    visits = ["visit,pid,zip,diagnosis"]
    for v in range(12):
        patient = v // 2
        visits.append(f"{v},{patient},{47601 + patient // 3},{['flu', 'cold', 'asthma'][v % 3]}")
    (tmp_path / "v.csv").write_text("\n".join(visits) + "\n")
    for requirement in ('t_closeness = { kind = "equal", t = 0.5 }', "beta_likeness = { beta = 2.0 }"):
        policy = tmp_path / "p.toml"
        policy.write_text(
            '[input]\npath = "v.csv"\n[privacy]\nk = 3\nperson = "pid"\nmax_suppression = 0.5\n'
            '[attributes]\nvisit = { role = "insensitive" }\npid = { role = "identifier" }\n'
            'zip = { role = "quasi_identifier", hierarchy = { kind = "mask", length = 5 } }\n'
            f'diagnosis = {{ role = "sensitive", {requirement} }}\n'
        )
        out = tmp_path / "out.parquet"
        for algorithm in ("optimal", "mondrian"):
            report = anon.anonymize(policy, out=out, algorithm=algorithm, overwrite=True, seed=1)
            assert report["publish"]["person"]["published"] == "dropped"
            table = pq.read_table(out)
            assert "pid" not in table.column_names
            persons = collections.defaultdict(set)
            for visit, zip_label in rows(table.select(["visit", "zip"])):
                persons[zip_label].add(int(visit) // 2)
            assert persons and all(len(p) >= 3 for p in persons.values()), persons


def test_errors_name_the_python_keywords(tmp_path):
    """The engine names options, each shell words them (issue 57): Python's messages say the
    keyword the caller typed, never a command-line flag."""
    out = tmp_path / "out.parquet"
    with pytest.raises(anon.AnonymityError, match=r'refine=False is for algorithm="mondrian", not optimal'):
        anon.anonymize(POLICIES / "li2007_drop.toml", out=out, refine=False)
    anon.apply(POLICIES / "li2007_drop.toml", out=out, seed=1)
    with pytest.raises(anon.AnonymityError, match=r"exists; pass overwrite=True to replace it"):
        anon.apply(POLICIES / "li2007_drop.toml", out=out, seed=1)
    with pytest.raises(anon.AnonymityError, match=r"append=True adds a version to a Delta table"):
        anon.apply(POLICIES / "li2007_drop.toml", out=tmp_path / "x.parquet", format="parquet", append=True)


def test_the_exception_is_named_after_the_package(tmp_path):
    """Issue 57: a traceback names the class as users import it."""
    assert anon.AnonymityError.__module__ == "datafusion_anonymity"
    assert anon.AnonymityError.__name__ == "AnonymityError"
    with pytest.raises(anon.AnonymityError) as raised:
        anon.anonymize(tmp_path / "missing.toml", out=tmp_path / "out.parquet")
    assert type(raised.value).__module__ == "datafusion_anonymity"


def test_arguments_are_refused_in_python_words(tmp_path, li2007):
    """Issue 57: a negative seed is a ValueError naming the seed (not an OverflowError), a
    seed of another type a TypeError; `qi="zip,sex"` is two columns, as `--qi zip,sex` is; a
    missing policy says "cannot read" once."""
    policy = POLICIES / "li2007_drop.toml"
    with pytest.raises(ValueError, match="seed must be an integer from 0 to 2\\*\\*64 - 1"):
        anon.anonymize(policy, out=tmp_path / "a.parquet", seed=-1)
    with pytest.raises(TypeError, match="seed must be an int, got str"):
        anon.apply(policy, out=tmp_path / "b.parquet", seed="1")
    assert not (tmp_path / "a.parquet").exists() and not (tmp_path / "b.parquet").exists()
    table = tmp_path / "li.parquet"
    pq.write_table(li2007, table)
    by_string = anon.profile(table, qi="zip, age", sensitive="disease", queries=10)
    by_list = anon.profile(table, qi=["zip", "age"], sensitive=["disease"], queries=10)
    # the figures, not the timings
    for report in (by_string, by_list):
        report.pop("seconds", None)
    assert by_string == by_list
    with pytest.raises(anon.AnonymityError) as raised:
        anon.anonymize(tmp_path / "missing.toml", out=tmp_path / "c.parquet")
    assert str(raised.value).count("cannot read") == 1, str(raised.value)


def test_generalized_table_of_a_saved_local_recoding(ctx, tmp_path):
    """Mondrian's classes saved with recoding_out: the generalized table of that recoding
    holds the rows `apply(recoding=...)` publishes (the same multiset; apply shuffles them)."""
    import pyarrow.parquet as pq

    policy = POLICIES / "li2007_drop.toml"
    recoding = tmp_path / "classes.json"
    anon.anonymize(policy, algorithm="mondrian", out=tmp_path / "m.parquet", seed=1,
                   recoding_out=recoding)
    anon.apply(policy, recoding=recoding, out=tmp_path / "applied.parquet", seed=2)
    published = pq.read_table(tmp_path / "applied.parquet")
    ctx.register_table("local", anon.generalized_table(policy, recoding=recoding))
    columns = ", ".join(published.column_names)
    served = rows(ctx, f"SELECT {columns} FROM local")
    assert sorted(served) == sorted(rows(published))
    assert len(served) == published.num_rows > 0
    with pytest.raises(anon.InvalidValueError, match="levels or a recoding, not both"):
        anon.generalized_table(policy, levels={"zip": 2, "age": 1}, recoding=recoding)
