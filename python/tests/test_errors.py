"""The package's exceptions: every error is an `AnonymityError`, and those of a known kind are
also the built-in exception Python code catches for it (`FileNotFoundError`, `FileExistsError`,
`ValueError`), so that `except FileNotFoundError` works around a job as around `open()`. The
kind comes from the error's type in the engine, never from its text."""

from __future__ import annotations

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
