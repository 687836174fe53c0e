"""build_hierarchy() and check_hierarchy(): the same jobs as `anon hierarchy build/check`."""

from __future__ import annotations

import collections

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datafusion_anonymity as anon


def _table(tmp_path):
    # ages 20..69, age a appearing (a % 7) + 1 times: a skewed column of 50 distinct values
    ages = [a for a in range(20, 70) for _ in range(a % 7 + 1)]
    names = ["n" + str(a % 5) for a in ages]
    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({"age": ages, "name": names}), path)
    return path, ages


def test_quantile_levels_meet_the_target_and_read_back(tmp_path):
    table, ages = _table(tmp_path)
    out = tmp_path / "age.csv"
    report = anon.build_hierarchy(table, "age", out, "quantile", min_size=[20, 60])
    assert report["leaves"] == 50
    assert report["rows"] == len(ages)
    # brute force: each level's label per row from the file, counted over the rows
    rows = [line.split(";") for line in out.read_text().splitlines()]
    label = {int(r[0]): r for r in rows}
    for level, target in ((1, 20), (2, 60)):
        sizes = collections.Counter(label[a][level] for a in ages)
        assert min(sizes.values()) >= target, (level, sizes)
        # each label of this level sits under one label of the next
        parents = collections.defaultdict(set)
        for r in rows:
            parents[r[level]].add(r[level + 1])
        assert all(len(p) == 1 for p in parents.values())
    # the report's smallest class is the brute-force one
    smallest = min(collections.Counter(label[a][1] for a in ages).values())
    assert report["levels"][1]["smallest"] == smallest
    checked = anon.check_hierarchy(out, "age", table)
    assert checked["unused_leaves"] == 0
    assert [level["classes"] for level in checked["levels"]] == [
        level["classes"] for level in report["levels"]
    ]


def test_interval_on_text_is_one_error_and_writes_nothing(tmp_path):
    table, _ = _table(tmp_path)
    out = tmp_path / "name.csv"
    with pytest.raises(anon.AnonymityError) as error:
        anon.build_hierarchy(table, "name", out, "interval", widths=[10])
    message = str(error.value)
    assert "column 'name' of" in message and "people.parquet" in message, message
    assert "needs a numeric column" in message, message
    assert not out.exists()


def test_check_names_file_line_and_rule(tmp_path):
    table, _ = _table(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("n0;x;*\nn1;x;*\nn0;y;*\n")
    with pytest.raises(anon.AnonymityError) as error:
        anon.check_hierarchy(bad, "name", table)
    message = str(error.value)
    assert "bad.csv, line 3: duplicate leaf" in message, message
    assert "[rule: unique leaves]" in message, message


def test_memory_limit_reaches_the_builders_session(tmp_path):
    table, ages = _table(tmp_path)
    out = tmp_path / "age.csv"
    # a limit that is not one is refused before anything is read or written
    with pytest.raises(anon.InvalidValueError, match="lots"):
        anon.build_hierarchy(table, "age", out, "quantile", min_size=[20], memory_limit="lots")
    with pytest.raises(anon.InvalidValueError, match="lots"):
        anon.check_hierarchy(out, "age", table, memory_limit="lots")
    assert not out.exists()
    # a real one bounds the session and gives the same report as none
    limited = anon.build_hierarchy(table, "age", out, "quantile", min_size=[20], memory_limit="64MiB")
    unlimited = anon.build_hierarchy(
        table, "age", tmp_path / "again.csv", "quantile", min_size=[20]
    )
    assert limited["levels"] == unlimited["levels"]
    assert out.read_text() == (tmp_path / "again.csv").read_text()
    assert anon.check_hierarchy(out, "age", table, memory_limit="64MiB")["unused_leaves"] == 0
