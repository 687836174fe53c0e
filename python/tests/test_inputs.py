"""What a job reads (issue 57, "Inputs"): a policy as a file, TOML text or a dict; the data as
a path or as Arrow data (a pyarrow Table, a pandas DataFrame, a datafusion DataFrame); and
pandas' index column named when it has no role. Then a job's progress callback.

The reference for every form is the same job on files: a policy file and a Parquet file
written by pyarrow, run with the same seed (the row order depends on the seed alone, so the
same rows come out in the same order)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext

import datafusion_anonymity as anon
from conftest import LI2007, POLICIES, REPO

POLICY_FILE = POLICIES / "li2007_drop.toml"

# li2007_drop.toml as a dict: its keys and values, the input relative to the repository
POLICY_DICT = {
    "name": "li2007",
    "input": {"path": "sql/data/li2007.csv"},
    "privacy": {"k": 3, "max_suppression": 0.5},
    "attributes": {
        "id": {"role": "identifier"},
        "zip": {"role": "quasi_identifier", "hierarchy": {"kind": "mask"}},
        "age": {
            "role": "quasi_identifier",
            "hierarchy": {"kind": "interval", "widths": [10, 20]},
        },
        "salary": {"role": "insensitive"},
        "disease": {"role": "sensitive"},
    },
    "transformation": {"zip": 2, "age": 1},
}


def published(path) -> pa.Table:
    return pq.read_table(path)


def test_a_policy_as_toml_text_or_a_dict_publishes_what_its_file_does(tmp_path, monkeypatch):
    reference = anon.apply(POLICY_FILE, out=tmp_path / "file.parquet", seed=7)
    # relative paths of text and dicts resolve against the current directory
    monkeypatch.chdir(REPO)
    text = POLICY_FILE.read_text().replace('"../data/li2007.csv"', '"sql/data/li2007.csv"')
    from_text = anon.apply(text, out=tmp_path / "text.parquet", seed=7)
    from_dict = anon.apply(POLICY_DICT, out=tmp_path / "dict.parquet", seed=7)
    expected = published(tmp_path / "file.parquet")
    # li2007 at zip 2, age 1: classes 476**/[20,30) (ids 1-3) and 476**/[30,40) (ids 7-9)
    # have 3 rows; 479**/[40,50) (4, 6) and 479**/[50,60) (5) fail k = 3: 6 rows written
    assert expected.num_rows == 6
    assert published(tmp_path / "text.parquet").equals(expected)
    assert published(tmp_path / "dict.parquet").equals(expected)
    assert reference["publish"]["suppressed_rows"] == 3
    for report in (from_text, from_dict):
        assert report["publish"]["suppressed_rows"] == 3
    assert from_text["policy"] == "(text)"
    assert from_dict["policy"] == "(dict)"


def test_errors_in_text_and_dicts_name_them(tmp_path):
    broken = POLICY_FILE.read_text().replace("k = 3", 'k = "three"')
    with pytest.raises(anon.InvalidValueError) as error:
        anon.apply(broken, out=tmp_path / "out.parquet")
    # `k` is on line 9 of li2007_drop.toml
    assert str(error.value).startswith("policy (text): line 9:"), str(error.value)
    broken = dict(POLICY_DICT, privacy={"k": "three"})
    with pytest.raises(anon.InvalidValueError, match=r"^policy \(dict\): "):
        anon.apply(broken, out=tmp_path / "out.parquet")
    with pytest.raises(TypeError, match="not object"):
        anon.apply(dict(POLICY_DICT, name=object()), out=tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def li2007_parquet(tmp_path) -> tuple[pa.Table, str]:
    table = pa.table(LI2007)
    path = str(tmp_path / "li2007.parquet")
    pq.write_table(table, path)
    return table, path


def test_arrow_data_as_input_publishes_what_its_file_does(tmp_path):
    import pandas as pd

    table, path = li2007_parquet(tmp_path)
    anon.apply(POLICY_FILE, input=path, out=tmp_path / "file.parquet", seed=3)
    expected = published(tmp_path / "file.parquet")
    assert expected.num_rows == 6
    ctx = SessionContext()
    ctx.register_record_batches("li2007", [table.to_batches()])
    inputs = {
        "table": table,
        "reader": table.to_reader(),
        # a plain row-number index is pandas metadata, not a column
        "pandas": pd.DataFrame(LI2007),
        "datafusion": ctx.table("li2007"),
    }
    for name, data in inputs.items():
        out = tmp_path / f"{name}.parquet"
        report = anon.apply(POLICY_FILE, input=data, out=out, seed=3)
        assert published(out).equals(expected), name
        # the temporary file is gone once the job is over
        assert report["input"].endswith("input.parquet"), report["input"]
        assert not os.path.exists(report["input"]), name


def test_a_pandas_index_without_a_role_is_named(tmp_path):
    import pandas as pd

    # an index that is not a plain row number (a RangeIndex is kept as metadata only)
    frame = pd.DataFrame(LI2007, index=[10, 12, 11, 15, 14, 13, 18, 17, 16])
    path = tmp_path / "indexed.parquet"
    frame.to_parquet(path)
    assert "__index_level_0__" in pq.read_schema(path).names
    for data in (path, frame):
        with pytest.raises(anon.InvalidValueError) as error:
            anon.apply(POLICY_FILE, input=data, out=tmp_path / "out.parquet")
        message = str(error.value)
        assert "column '__index_level_0__'" in message, message
        assert "the index pandas wrote" in message, message
        assert "index=False" in message, message
    # given a role, it is an identifier like any other, left out of the release
    policy = dict(POLICY_DICT)
    policy["attributes"] = dict(POLICY_DICT["attributes"], __index_level_0__={"role": "identifier"})
    anon.apply(policy, input=path, out=tmp_path / "out.parquet", seed=1)
    assert "__index_level_0__" not in published(tmp_path / "out.parquet").column_names


def test_input_that_is_neither_a_path_nor_arrow_data_is_refused(tmp_path):
    with pytest.raises(TypeError, match="input must be a path or Arrow data"):
        anon.apply(POLICY_FILE, input=[1, 2, 3], out=tmp_path / "out.parquet")


def test_progress_reaches_the_callback_and_its_exception_stops_the_job(tmp_path, monkeypatch):
    # the job holds 1 s once its files are written, so the callback sees the write pass
    monkeypatch.setenv("ANON_TEST_PAUSE_AT", "after-write")
    monkeypatch.setenv("ANON_TEST_PAUSE_SECONDS", "1")
    seen: list[anon.Progress] = []
    report = anon.apply(POLICY_FILE, out=tmp_path / "out.parquet", seed=1, progress=seen.append)
    assert seen, "the callback was never called"
    assert all(isinstance(p, anon.Progress) for p in seen)
    assert all(p.total is None or p.done <= p.total for p in seen)
    # the write pass: 9 input rows, 3 suppressed (hand count above)
    writes = [p for p in seen if p.phase == "write"]
    assert writes[-1] == anon.Progress("write", 6, 6, "rows"), seen
    assert report["publish"]["verification"]["rows"] == 6

    def stop(progress: anon.Progress) -> None:
        raise RuntimeError("stop here")

    out = tmp_path / "stopped.parquet"
    with pytest.raises(RuntimeError, match="stop here") as error:
        anon.apply(POLICY_FILE, out=out, seed=1, progress=stop)
    assert "nothing was published" in " ".join(getattr(error.value, "__notes__", []))
    assert not out.exists()
    # nothing staged left behind either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]


def test_bad_values_override_the_policys(tmp_path):
    """A CSV value that does not convert to its attribute's type is an error (the policy's
    default), or NULL with ``bad_values="null"``: of the three birth dates below one is not a
    date, so two are counted."""
    data = tmp_path / "visits.csv"
    data.write_text("id,zip,birth_date\n1,47677,1980-01-02\n2,47602,not a date\n3,47678,1975-05-06\n")
    policy = {
        "name": "visits",
        "input": {"path": str(data)},
        "privacy": {"k": 2},
        "attributes": {
            "id": {"role": "identifier"},
            "zip": {"role": "quasi_identifier", "hierarchy": {"kind": "mask"}},
            "birth_date": {"role": "insensitive", "type": "date"},
        },
    }
    query = "SELECT count(birth_date) AS dates FROM visits"
    with pytest.raises(anon.InvalidValueError, match="birth_date"):
        anon.sql(query, policy=policy)
    assert anon.sql(query, policy=policy, bad_values="null").to_pylist() == [{"dates": 2}]
    report = anon.profile(data, qi="zip", policy=policy, bad_values="null")
    assert report["rows"] == 3
    with pytest.raises(anon.InvalidValueError, match='"error" or "null", not "drop"'):
        anon.sql(query, policy=policy, bad_values="drop")
