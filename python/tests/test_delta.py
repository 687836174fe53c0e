"""Delta Lake releases read back by the `deltalake` package (delta-rs's Python binding, not
this extension): one version per release, its commitInfo, time travel."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import datafusion_anonymity as anon
from conftest import POLICIES, rows

deltalake = pytest.importorskip("deltalake")

# li2007_drop.toml fixes zip, age levels whose 479** classes fail k = 3: 6 of the 9 rows kept
# (test_policy.py's KEPT, counted by hand in docs/definitions.md's worked example)
KEPT_ROWS = 6


def test_apply_publishes_one_delta_version_per_release(tmp_path):
    out = tmp_path / "release"
    report = anon.apply(POLICIES / "li2007_drop.toml", out=out, format="delta", seed=1)
    assert report["publish"]["delta_version"] == 0
    table = deltalake.DeltaTable(str(out))
    assert table.version() == 0
    first = table.to_pyarrow_table()
    assert first.num_rows == KEPT_ROWS
    # the commit says what was done, with the verified figures, and not the seed
    info = table.history(1)[0]
    assert info["anonymity"]["command"] == "apply"
    assert info["anonymity"]["figures"]["k"] == 3
    assert info["anonymity"]["figures"]["suppressed"] == 3
    assert "seed" not in str(info)

    # a new version replacing the rows, and one adding them; older versions stay readable
    anon.apply(POLICIES / "li2007_drop.toml", out=out, overwrite=True, seed=2)
    anon.apply(POLICIES / "li2007_drop.toml", out=out, append=True, seed=3)
    table = deltalake.DeltaTable(str(out))
    assert table.version() == 2
    assert table.to_pyarrow_table().num_rows == 2 * KEPT_ROWS
    old = deltalake.DeltaTable(str(out), version=0).to_pyarrow_table()
    assert sorted(rows(old)) == sorted(rows(first))

    # an existing table needs overwrite or append
    with pytest.raises(anon.AnonymityError, match="exists; pass overwrite=True"):
        anon.apply(POLICIES / "li2007_drop.toml", out=out, format="delta")
    with pytest.raises(anon.AnonymityError, match="unknown output format 'orc'"):
        anon.apply(POLICIES / "li2007_drop.toml", out=tmp_path / "x", format="orc")


def test_a_table_partitioned_by_an_insensitive_column(tmp_path):
    """`[output] partition_by`: the release's files lie in one `salary=<value>/` directory per
    salary, without the column, and the deltalake package reads back the rows, salary
    included, that the unpartitioned Parquet release of the same seed holds."""
    source = (POLICIES / "li2007_drop.toml").read_text()
    source = source.replace('"../data/li2007.csv"', f'"{POLICIES.parent / "data" / "li2007.csv"}"')
    plain = tmp_path / "plain.toml"
    plain.write_text(source)
    partitioned = tmp_path / "partitioned.toml"
    partitioned.write_text(source + '\n[output]\nformat = "delta"\npartition_by = ["salary"]\n')

    out = tmp_path / "release"
    anon.apply(partitioned, out=out, seed=4)
    anon.apply(plain, out=tmp_path / "plain.parquet", seed=4)
    table = deltalake.DeltaTable(str(out))
    assert table.metadata().partition_columns == ["salary"]
    expected = pq.read_table(tmp_path / "plain.parquet")
    read = table.to_pyarrow_table().select(expected.column_names)
    assert sorted(rows(read), key=repr) == sorted(rows(expected), key=repr)
    assert read.num_rows == KEPT_ROWS
    # one directory per salary of the kept rows, and no salary column in the files
    salaries = {row[0] for row in rows(expected.select(["salary"]))}
    files = list(out.glob("anon-*/salary=*/*.parquet"))
    assert {f.parent.name for f in files} == {f"salary={s}" for s in salaries}
    assert all("salary" not in pq.read_schema(f).names for f in files)

    # an append must be partitioned as the table is
    with pytest.raises(anon.AnonymityError, match="it is partitioned by salary, this release by no column"):
        anon.apply(plain, out=out, format="delta", append=True)
