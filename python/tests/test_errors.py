"""The package's exceptions: every error is an `AnonymityError`, and those of a known kind are
also the built-in exception Python code catches for it (`FileNotFoundError`, `FileExistsError`,
`ValueError`), so that `except FileNotFoundError` works around a job as around `open()`. The
kind comes from the error's type in the engine, never from its text."""

from __future__ import annotations

import warnings

import pytest

import datafusion_anonymity as anon
from conftest import POLICIES


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("NotFoundError", FileNotFoundError),
        ("AlreadyExistsError", FileExistsError),
        ("InvalidValueError", ValueError),
        ("MemoryLimitError", MemoryError),
    ],
)
def test_each_kind_is_an_anonymity_error_and_its_builtin(name, builtin):
    cls = getattr(anon, name)
    assert issubclass(cls, anon.AnonymityError)
    assert issubclass(cls, builtin)
    # named after the package users import it from
    assert cls.__module__ == "datafusion_anonymity"
    assert name in anon.__all__


def test_a_missing_policy_is_file_not_found(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(FileNotFoundError) as error:
        anon.apply(missing, out=tmp_path / "out.parquet")
    assert isinstance(error.value, anon.NotFoundError)
    assert isinstance(error.value, anon.AnonymityError)
    # one layer of wrapping: "policy: cannot read <path>: <why>", the path said once
    message = str(error.value)
    assert message.startswith("policy: cannot read "), message
    assert message.count("nope.toml") == 1, message
    assert not (tmp_path / "out.parquet").exists()


def test_an_existing_output_is_file_exists(tmp_path):
    out = tmp_path / "out.parquet"
    anon.apply(POLICIES / "li2007_drop.toml", out=out, seed=1)
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True") as error:
        anon.apply(POLICIES / "li2007_drop.toml", out=out, seed=2)
    assert isinstance(error.value, anon.AlreadyExistsError)
    # refused before anything was written
    assert out.read_bytes() == before


def test_a_policy_that_cannot_be_used_is_a_value_error(tmp_path):
    policy = tmp_path / "bad.toml"
    policy.write_text((POLICIES / "li2007_drop.toml").read_text() + "\n[no_such_section]\n")
    with pytest.raises(ValueError) as error:
        anon.apply(policy, out=tmp_path / "out.parquet")
    assert isinstance(error.value, anon.InvalidValueError)
    assert "bad.toml" in str(error.value)


def test_a_query_on_a_missing_table_is_a_value_error():
    with pytest.raises(ValueError, match="table '[a-z.]*nope' not found") as error:
        anon.sql("SELECT k_anonymity() FROM nope")
    assert isinstance(error.value, anon.InvalidValueError)


def test_a_missing_input_file_is_file_not_found(tmp_path):
    source = (POLICIES / "li2007_drop.toml").read_text()
    assert '"../data/li2007.csv"' in source
    policy = tmp_path / "missing_input.toml"
    policy.write_text(source.replace('"../data/li2007.csv"', '"../data/nope.csv"'))
    with pytest.raises(FileNotFoundError, match="table 'li2007': cannot open ") as error:
        anon.apply(policy, out=tmp_path / "out.parquet")
    assert isinstance(error.value, anon.NotFoundError)
    assert not (tmp_path / "out.parquet").exists()


def test_a_jobs_warnings_are_python_warnings(tmp_path, capfd):
    """An identifier whose values repeat (ids 1, 1, 2, …, 8: the two rows of id 1 share it,
    2 of 9 rows = 22.2 %) is a warning of the `warnings` module, catchable and filterable,
    and is no longer printed on the process's stderr."""
    lines = (POLICIES.parent / "data" / "li2007.csv").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    assert header.split(",")[0] == "id" and len(rows) == 9
    ids = [1, 1, 2, 3, 4, 5, 6, 7, 8]
    data = tmp_path / "repeated.csv"
    data.write_text(
        "\n".join([header] + [f"{i}," + row.split(",", 1)[1] for i, row in zip(ids, rows)])
        + "\n"
    )
    source = (POLICIES / "li2007_drop.toml").read_text()
    policy = tmp_path / "repeated.toml"
    policy.write_text(source.replace('"../data/li2007.csv"', f'"{data}"'))
    with pytest.warns(anon.AnonymityWarning) as caught:
        report = anon.apply(policy, out=tmp_path / "out.parquet", seed=1)
    messages = [str(w.message) for w in caught if w.category is anon.AnonymityWarning]
    repeated = [m for m in messages if m.startswith("identifier")]
    assert len(repeated) == 1, messages
    assert repeated[0].startswith("identifier 'id' repeats: 22.2% of the rows (2 of 9)"), messages
    # the release's own warnings too: of the 6 rows written (li2007 at zip 2, age 1 drops
    # 3), every disease and every salary is unique within its class of 3
    assert any(m.startswith("'disease' makes 100.00% of the published rows unique (6 of 6)")
               for m in messages), messages
    # and the report lists the same lines, in the order raised
    assert report["warnings"] == messages
    assert issubclass(anon.AnonymityWarning, UserWarning)
    assert "repeats" not in capfd.readouterr().err
    # turned into an error by the caller's filter, as any Python warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", anon.AnonymityWarning)
        with pytest.raises(anon.AnonymityWarning):
            anon.apply(policy, out=tmp_path / "again.parquet", seed=1)
