"""One pipeline per job: the command line and Python run the same `anonymize`, so the same
policy and seed give the same bytes and a report with the same keys and figures (timings
aside). The `anon` binary is the one `cargo nextest run` built (python/run_tests.sh passes its
path as ANON_BIN)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

import datafusion_anonymity as anon

from conftest import REPO

ADULT = REPO / "examples" / "adult" / "policy.toml"


def anon_binary() -> pathlib.Path:
    path = os.environ.get("ANON_BIN")
    if not path or not pathlib.Path(path).is_file():
        pytest.skip("ANON_BIN does not name the anon binary (python/run_tests.sh sets it)")
    return pathlib.Path(path)


def without_timings(value):
    """The report without its timings (every `seconds` object, at any depth) and its seed
    (which the returned result holds and a written report does not, unless record_seed), its
    floats rounded to 12 significant digits: a mean summed over partitions may differ in its
    last bits with the order the partitions finish in, on one shell as on the other."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in ("seconds", "seed")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.12g}")
    return value


@pytest.mark.parametrize(
    "algorithm,refine", [("optimal", True), ("mondrian", True), ("mondrian", False)]
)
def test_cli_and_python_publish_the_same_bytes_and_report(tmp_path, algorithm, refine):
    cli_out, cli_report = tmp_path / "cli.parquet", tmp_path / "cli.json"
    done = subprocess.run(
        [
            str(anon_binary()),
            "anonymize",
            "--policy", str(ADULT),
            "--algorithm", algorithm,
            "--seed", "11",
            "--out", str(cli_out),
            "--report", str(cli_report),
            "--quiet",
        ]
        + ([] if refine else ["--no-refine"]),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    py_out, py_report = tmp_path / "py.parquet", tmp_path / "py.json"
    returned = anon.anonymize(
        ADULT, out=py_out, report=py_report, algorithm=algorithm, seed=11, refine=refine
    )

    assert cli_out.read_bytes() == py_out.read_bytes()
    from_cli = json.loads(cli_report.read_text())
    written = json.loads(py_report.read_text())
    # the returned dict is the written report, but for the seed, which no written report
    # holds unless record_seed=True
    assert returned["publish"].pop("seed") == 11
    assert "seed" not in written["publish"]
    assert without_timings(returned) == without_timings(written)
    # the same keys and figures; only the timings and the output's own name differ
    for report in (from_cli, written):
        assert report["publish"].pop("output") in (str(cli_out), str(py_out))
    assert without_timings(from_cli) == without_timings(written)
    assert from_cli["command"] == "anonymize" and "seed" not in from_cli["publish"]
    assert set(from_cli["seconds"]) == set(written["seconds"])


def test_python_draws_a_seed_when_none_is_given(tmp_path):
    """Without a seed the row order is drawn at random (a fixed default would let anyone
    undo the shuffle), and the result returns the seed drawn; the written report holds it
    only with record_seed=True."""
    first = anon.anonymize(ADULT, out=tmp_path / "a.parquet")
    second = anon.anonymize(ADULT, out=tmp_path / "b.parquet")
    assert first["publish"]["seed"] != second["publish"]["seed"]
    kept = anon.anonymize(
        ADULT, out=tmp_path / "c.parquet", report=tmp_path / "c.json", record_seed=True
    )
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["publish"]["seed"] == kept["publish"]["seed"]


def test_cli_and_python_profile_alike(tmp_path):
    """`anon profile --format json` and `profile()` are one pipeline: the same figures."""
    adult = REPO / "examples" / "adult" / "adult.parquet"
    done = subprocess.run(
        [
            str(anon_binary()),
            "profile",
            str(adult),
            "--policy", str(ADULT),
            "--format", "json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    from_cli = json.loads(done.stdout)
    from_python = anon.profile(adult, policy=ADULT)
    assert without_timings(from_cli) == without_timings(from_python)
    assert from_cli["rows"] == 30162  # the Adult extract's rows (examples/adult/README)


def test_cli_and_python_apply_alike(tmp_path):
    """`anon apply` and `apply()` are one pipeline: the same bytes for the same seed, and the
    same report (the publication under `publish`)."""
    policy = REPO / "sql" / "policies" / "li2007_drop.toml"
    cli_out, cli_report = tmp_path / "cli.parquet", tmp_path / "cli.json"
    done = subprocess.run(
        [
            str(anon_binary()),
            "apply",
            "--policy", str(policy),
            "--seed", "3",
            "--out", str(cli_out),
            "--report", str(cli_report),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    py_out = tmp_path / "py.parquet"
    returned = anon.apply(policy, out=py_out, seed=3)
    assert cli_out.read_bytes() == py_out.read_bytes()
    from_cli = json.loads(cli_report.read_text())
    for report in (from_cli, returned):
        report["publish"].pop("output")
    assert without_timings(from_cli) == without_timings(returned)
    # Li et al.'s 9 rows, the 3 of the 479** classes dropped (tests/test_policy.py)
    assert returned["publish"]["suppressed_rows"] == 3


def test_cli_and_python_perturb_alike(tmp_path):
    """A perturbation policy (the CASC Census set microaggregated by MDAV, k = 3) through the
    command line and through Python (anonymize() and apply()): the same bytes for the same
    seed, the same report, and MDAV's published IL (5.69, examples/casc/README.md)."""
    census = REPO / "examples" / "casc" / "census.csv"
    columns = census.read_text().splitlines()[0].split(",")
    policy = tmp_path / "census.toml"
    attributes = "\n".join(
        f'{c} = {{ role = "quasi_identifier", perturbation = {{ kind = "microaggregation" }} }}'
        for c in columns
    )
    policy.write_text(
        f'[input]\npath = "{census}"\n[privacy]\nmethod = "perturbation"\nk = 3\n'
        f'[perturbation]\nalgorithm = "mdav"\n[attributes]\n{attributes}\n'
    )
    cli_out, cli_report = tmp_path / "cli.parquet", tmp_path / "cli.json"
    done = subprocess.run(
        [
            str(anon_binary()), "anonymize", "--policy", str(policy), "--seed", "5",
            "--out", str(cli_out), "--report", str(cli_report), "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    py_out = tmp_path / "py.parquet"
    returned = anon.anonymize(policy, out=py_out, seed=5)
    assert cli_out.read_bytes() == py_out.read_bytes()
    from_cli = json.loads(cli_report.read_text())
    for report in (from_cli, returned):
        assert report.pop("output") in (str(cli_out), str(py_out))
    assert without_timings(from_cli) == without_timings(returned)
    assert abs(returned["microaggregation"]["information_loss"] - 5.69) < 0.005
    assert returned["verification"]["k"] >= 3
    # apply() publishes the policy as anonymize() does: the same bytes for the same seed
    applied_out = tmp_path / "applied.parquet"
    applied = anon.apply(policy, out=applied_out, seed=5)
    assert applied_out.read_bytes() == py_out.read_bytes()
    applied.pop("output")
    assert without_timings(applied) == without_timings(returned)


def test_cli_and_python_cloak_alike(tmp_path):
    """A cloaking policy (`method = "cloaking"`) runs through the same job from both shells:
    the same seed gives the same bytes and the same figures."""
    trips = tmp_path / "trips.parquet"
    done = subprocess.run(
        [str(anon_binary()), "generate", "--table", "trips", "--rows", "20000",
         "--out", str(trips)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    policy = tmp_path / "trips.toml"
    policy.write_text(
        f'[input]\npath = "{trips}"\n'
        '[privacy]\nmethod = "cloaking"\nk = 5\nperson = "device_id"\nlatitude = "lat"\n'
        'longitude = "lon"\ntime = "ts"\nmax_cell_side = 3000\nwindow = "15m"\n'
        'max_window = "2h"\nmax_suppression = 0.5\n'
        '[attributes]\ndevice_id = { role = "identifier" }\n'
        'lat = { role = "quasi_identifier" }\nlon = { role = "quasi_identifier" }\n'
        'ts = { role = "quasi_identifier" }\nactivity = { role = "insensitive" }\n'
    )
    cli_out, cli_report = tmp_path / "cli.parquet", tmp_path / "cli.json"
    done = subprocess.run(
        [str(anon_binary()), "anonymize", "--policy", str(policy), "--seed", "11",
         "--out", str(cli_out), "--report", str(cli_report), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    py_out = tmp_path / "py.parquet"
    returned = anon.anonymize(policy, out=py_out, seed=11)
    assert cli_out.read_bytes() == py_out.read_bytes()
    from_cli = json.loads(cli_report.read_text())
    for report in (from_cli, returned):
        assert report["publish"].pop("output") in (str(cli_out), str(py_out))
        report["publish"].pop("write_seconds")
        report["publish"].pop("verify_seconds")
    assert without_timings(from_cli) == without_timings(returned)
    assert returned["method"] == "cloaking" and returned["figures"]["min_anonymity"] >= 5


@pytest.mark.parametrize("table", anon.GENERATED_TABLES)
def test_cli_and_python_generate_the_same_bytes(tmp_path, table):
    cli_out, py_out = tmp_path / "cli.parquet", tmp_path / "py.parquet"
    done = subprocess.run(
        [str(anon_binary()), "generate", "--table", table, "--rows", "500", "--seed", "5",
         "--out", str(cli_out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    anon.generate(table, 500, py_out, seed=5)
    assert py_out.read_bytes() == cli_out.read_bytes()
    # another seed, another table
    anon.generate(table, 500, tmp_path / "other.parquet", seed=6)
    assert (tmp_path / "other.parquet").read_bytes() != cli_out.read_bytes()


def test_generate_refuses_an_unknown_table(tmp_path):
    with pytest.raises(anon.InvalidValueError, match="no generated table 'people': choose one of"):
        anon.generate("people", 10, tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()


def test_cli_and_python_attack_alike(tmp_path):
    """A sensitive table of two buckets: physician A is in both, with specialties {x, y} in
    bucket 1 and {x, z} in bucket 2, so the intersection pins A's specialty to x on both of
    A's records (at least 2 of the 4 pinned)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    st = tmp_path / "st.parquet"
    pq.write_table(
        pa.table(
            {
                "bucket_id": [1, 1, 2, 2],
                "physician": ["A", "B", "A", "C"],
                "specialty": ["x", "y", "x", "z"],
            }
        ),
        st,
    )
    done = subprocess.run(
        [str(anon_binary()), "attack", "fingerprint", "--st", str(st), "--linking",
         "physician", "--determined", "specialty", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = anon.attack_fingerprint(st, linking="physician", determined="specialty")
    assert report == json.loads(done.stdout)
    assert report["records"] == 4
    assert report["partially_pinned"] >= 2
    assert report["refuted"] == []
    with pytest.raises(anon.InvalidValueError, match="no linking attribute 'doctor'"):
        anon.attack_fingerprint(st, linking="doctor")


def test_cli_and_python_profile_render_alike(tmp_path):
    data = REPO / "sql" / "data" / "li2007.csv"
    for fmt in ("text", "html"):
        cli_out = tmp_path / f"cli.{fmt}"
        done = subprocess.run(
            [str(anon_binary()), "profile", str(data), "--qi", "zip,age", "--sensitive",
             "disease", "--format", fmt, "--out", str(cli_out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        py_out = tmp_path / f"py.{fmt}"
        anon.profile(data, qi="zip,age", sensitive="disease", **{f"{fmt}_report": py_out})
        assert py_out.read_text() == cli_out.read_text(), fmt
    assert (tmp_path / "py.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_cli_and_python_build_the_same_hierarchy(tmp_path):
    data = REPO / "sql" / "data" / "li2007.csv"
    cli_out, py_out = tmp_path / "cli.csv", tmp_path / "py.csv"
    done = subprocess.run(
        [str(anon_binary()), "hierarchy", "build", "--table", str(data), "--column", "age",
         "--out", str(cli_out), "--kind", "interval", "--widths", "5,10,20"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = anon.build_hierarchy(data, "age", py_out, "interval", widths=[5, 10, 20])
    assert py_out.read_bytes() == cli_out.read_bytes()
    # the nine ages, 22 to 52, are the leaves
    assert report["leaves"] == 9
    checked = subprocess.run(
        [str(anon_binary()), "hierarchy", "check", str(cli_out), "--column", "age",
         "--table", str(data)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert anon.check_hierarchy(py_out, "age", data)["unused_leaves"] == 0


def test_cli_and_python_sql_alike(tmp_path):
    data = REPO / "sql" / "data" / "li2007.csv"
    query = (
        "SELECT mask(CAST(zip AS VARCHAR), 2) AS zip, k_anonymity() AS k, "
        "l_diversity(disease) AS l, t_closeness(disease) AS t FROM li GROUP BY 1 ORDER BY 1"
    )
    done = subprocess.run(
        [str(anon_binary()), "sql", "--table", f"li={data}", "--format", "csv", query],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    table = anon.sql(query, tables={"li": data})
    lines = done.stdout.strip().splitlines()
    assert lines[0].split(",") == table.column_names
    python_rows = [
        [f"{v:g}" if isinstance(v, float) else str(v) for v in row.values()]
        for row in table.to_pylist()
    ]
    cli_rows = [
        [f"{float(v):g}" if "." in v else v for v in line.split(",")] for line in lines[1:]
    ]
    assert cli_rows == python_rows
    # by hand: 476** has 6 rows and 5 diseases, 479** 3 rows and 3
    assert [(r["zip"], r["k"], r["l"]) for r in table.to_pylist()] == [
        ("476**", 6, 5), ("479**", 3, 3)
    ]
