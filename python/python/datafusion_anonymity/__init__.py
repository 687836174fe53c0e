"""k-anonymity, l-diversity, t-closeness and friends for datafusion-python.

The functions of the Rust crate ``datafusion-anonymity``, usable from a ``datafusion``
(55.0.0) ``SessionContext``, plus its batch jobs (``anonymize``, ``apply``, ``profile``) and
its own SQL engine (``sql``)::

    from datafusion import SessionContext
    import datafusion_anonymity as anon

    ctx = SessionContext()
    anon.register(ctx)
    ctx.register_parquet("patients", "patients.parquet")
    ctx.sql("SELECT zip, age, k_anonymity(patient_id) AS persons, l_diversity(disease) AS l "
            "FROM patients GROUP BY zip, age").show()

What runs where:

- ``register(ctx)`` puts the per-class aggregate functions (``k_anonymity(person_id)``,
  ``l_diversity``, ``entropy_l_diversity``, ``recursive_cl_diversity``,
  ``reidentification_risk(person_id)``) and the recoding functions (``mask``, ``bucket``,
  ``generalize_date``, ``generalize``) on the session. They run inside datafusion-python's
  own plans and give the same values as in Rust.
- ``t_closeness``, ``t_closeness_ordered``, ``ncp`` and ``entropy_leakage`` need statistics of
  the whole table, which the crate computes by rewriting the query; datafusion-python cannot
  run that rewrite, so in its sessions they refuse with an error when the query is planned
  (never a wrong number). ``k_anonymity()`` and ``reidentification_risk()`` without an
  argument refuse too (write ``count(*)`` and ``1.0 / count(*)``). ``sql(query, tables=...)``
  runs any query, these included, in the crate's own session and returns a pyarrow Table.
- ``register_policy(ctx, policy)`` / ``generalized_table(policy)`` serve a policy's input and
  its generalized, suppressed table (``<name>_anon``) to datafusion-python; they are planned
  and run by the crate.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from datafusion import AggregateUDF, ScalarUDF, SessionContext

from . import _internal
from ._internal import AnonymityError

__all__ = [
    "AnonymityError",
    "anonymize",
    "apply",
    "generalized_table",
    "profile",
    "register",
    "register_policy",
    "sql",
]

PathLike = str | os.PathLike


def _path(value: PathLike | None) -> str | None:
    return None if value is None else os.fspath(value)


def _hierarchies(hierarchies: Mapping[str, PathLike] | None) -> list[tuple[str, str]]:
    return [(name, os.fspath(path)) for name, path in (hierarchies or {}).items()]


def _levels(levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None) -> dict[str, int] | None:
    """Levels as {quasi_identifier: level}; also takes the ``levels`` list of a report."""
    if levels is None:
        return None
    if isinstance(levels, Mapping):
        return {str(k): int(v) for k, v in levels.items()}
    return {str(item["quasi_identifier"]): int(item["level"]) for item in levels}


def register(
    ctx: SessionContext,
    *,
    hierarchies: Mapping[str, PathLike] | None = None,
    policy: PathLike | None = None,
) -> None:
    """Registers the anonymity functions on a datafusion ``SessionContext``.

    Args:
        ctx: the session.
        hierarchies: generalization hierarchies for ``generalize(col, 'name', level)``, by
            name: ARX hierarchy CSV files (one row per value, ``;``-separated levels).
        policy: a policy file: its quasi-identifiers' hierarchies are registered under the
            column names (its input is read to size masks and check value trees).
    """
    for function in _internal.aggregate_functions():
        ctx.register_udaf(AggregateUDF.from_pycapsule(function))
    for function in _internal.scalar_functions(_hierarchies(hierarchies), _path(policy)):
        ctx.register_udf(ScalarUDF.from_pycapsule(function))


def register_policy(
    ctx: SessionContext,
    policy: PathLike,
    *,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    memory_limit: str | None = None,
) -> list[str]:
    """What ``anon sql --policy`` registers, on a datafusion ``SessionContext``.

    The functions (with the policy's hierarchies), the policy's input under its table name and,
    when the policy has a ``[transformation]`` or ``levels`` are given, the generalized and
    suppressed table as ``<name>_anon``. Returns the names of the tables registered.

    Args:
        levels: a level per quasi-identifier, ``{column: level}`` or the ``levels`` of the
            report ``anonymize`` returns; replaces the policy's ``[transformation]``.
        memory_limit: the memory limit of the session the tables are planned in (e.g. "2GiB").
    """
    register(ctx, policy=policy)
    names = []
    for name, table in _internal.policy_tables(os.fspath(policy), _levels(levels), memory_limit):
        ctx.register_table(name, table)
        names.append(name)
    return names


def generalized_table(
    policy: PathLike,
    *,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    memory_limit: str | None = None,
) -> Any:
    """The generalized and suppressed table of a policy, for ``ctx.register_table(name, ...)``.

    At the policy's ``[transformation]``, or at ``levels`` (``{column: level}``, or the
    ``levels`` of the report ``anonymize`` returns).
    """
    return _internal.generalized_table(os.fspath(policy), _levels(levels), memory_limit)


def anonymize(
    policy: PathLike,
    *,
    out: PathLike | None = None,
    report: PathLike | None = None,
    algorithm: str = "optimal",
    metric: str = "loss",
    seed: int | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
    html_report: PathLike | None = None,
    utility: bool = False,
    recoding_out: PathLike | None = None,
    format: str | None = None,
    append: bool = False,
) -> dict[str, Any]:
    """``anon anonymize``: search, publish as Parquet, verify. Returns the report as a dict:
    the keys ``anon anonymize --report`` writes, from the same pipeline.

    Args:
        policy: the policy file.
        out: a ``.parquet`` file or a directory (default: the policy's ``[output] path``).
        report: also write the report (JSON) there.
        algorithm: ``optimal``, ``iab-full-domain``, ``mondrian``, ``kaca`` or ``iab``.
        metric: ``loss``, ``discernibility``, ``classes`` or ``precision``.
        seed: seed of every random choice: the written rows' order (shuffled, so releases
            cannot be joined row by row) and KACA's next class. ``None`` draws one, recorded in
            the report's ``publish.seed``; the same input, policy and seed give the same bytes
            as ``anon anonymize --seed``. Keep it as secret as the data: it undoes the shuffle.
        overwrite: replace an existing output (once the new one is complete and verified).
        memory_limit: e.g. ``"2GiB"``.
        html_report: also write the report as one self-contained HTML page there.
        utility: also measure the utility against each row's own original (``utility``).
        recoding_out: local recoding: also save the published classes' labels there, for
            ``anon apply --recoding``.
        format: ``"parquet"`` or ``"delta"`` (a Delta Lake table, committed in one commit
            once verified); default: the policy's ``[output] format``, or Delta when ``out`` is
            a Delta table. With Delta, ``overwrite`` publishes a new version replacing the
            rows and ``append`` one adding them (same full-domain levels only).
        append: add the release to the Delta table ``out`` as a new version.
    """
    text = _internal.anonymize(
        os.fspath(policy),
        _path(out),
        _path(report),
        algorithm,
        metric,
        seed,
        overwrite,
        memory_limit,
        _path(html_report),
        utility,
        _path(recoding_out),
        format,
        append,
    )
    return json.loads(text)


def apply(
    policy: PathLike,
    *,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
    report: PathLike | None = None,
    html_report: PathLike | None = None,
    seed: int | None = None,
    utility: bool = False,
    recoding: PathLike | None = None,
    format: str | None = None,
    append: bool = False,
) -> dict[str, Any]:
    """``anon apply``: publish the policy's input at its ``[transformation]`` (or ``levels``,
    or a ``recoding`` saved by ``anonymize(recoding_out=...)``), through the same pipeline as
    the command line. Returns the report (the keys ``anon apply --report`` writes; the
    publication's figures under ``publish``). ``seed`` orders the written rows (``None``: drawn
    at random, recorded as ``publish.seed``). ``format`` and ``append`` as for
    ``anonymize``: ``format="delta"`` publishes a Delta Lake table."""
    text = _internal.apply(
        os.fspath(policy),
        _levels(levels),
        _path(out),
        overwrite,
        memory_limit,
        _path(report),
        _path(html_report),
        seed,
        utility,
        _path(recoding),
        format,
        append,
    )
    return json.loads(text)


def profile(
    input: PathLike,
    *,
    qi: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    person_id: str | None = None,
    population: PathLike | None = None,
    original: PathLike | None = None,
    key: str | None = None,
    policy: PathLike | None = None,
    hierarchies: Mapping[str, PathLike] | None = None,
    recursive_c: float = 2.0,
    queries: int = 1000,
    seed: int = 42,
    show_values: bool = False,
    memory_limit: str | None = None,
    background_values: int = 3,
    by_position: bool = False,
    relink: PathLike | None = None,
    fingerprint_st: PathLike | None = None,
    linking: str | None = None,
    determined: Sequence[str] | None = None,
    bucket_column: str = "bucket_id",
) -> dict[str, Any]:
    """``anon profile --format json``: the risk and utility report of a table, as a dict,
    from the same pipeline as the command line (its flags as keywords: ``relink`` the
    re-linking attack, ``fingerprint_st`` and ``linking`` the fingerprint-correlation
    attack on a bucketized release)."""
    text = _internal.profile(
        os.fspath(input),
        list(qi),
        list(sensitive),
        person_id,
        _path(population),
        _path(original),
        key,
        _path(policy),
        _hierarchies(hierarchies),
        float(recursive_c),
        int(queries),
        int(seed),
        bool(show_values),
        memory_limit,
        int(background_values),
        bool(by_position),
        _path(relink),
        _path(fingerprint_st),
        linking,
        None if determined is None else list(determined),
        bucket_column,
    )
    return json.loads(text)


def sql(
    query: str,
    *,
    tables: Mapping[str, Any] | None = None,
    policy: PathLike | None = None,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    hierarchies: Mapping[str, PathLike] | None = None,
    memory_limit: str | None = None,
):
    """``anon sql``: runs ``query`` in the crate's own session and returns a pyarrow Table.

    Every function works here, the whole-table ones (``t_closeness``, ``ncp``, ...) included.
    Statements separated by ``;`` run in order; the last one's result is returned.

    Args:
        tables: name -> a path (Parquet or CSV file or directory, or URL) or Arrow data (a
            pyarrow Table or RecordBatchReader, a datafusion DataFrame such as
            ``ctx.table(name)``: anything with ``__arrow_c_stream__``, read whole).
        policy: registers the policy's input, hierarchies and (with a ``[transformation]`` or
            ``levels``) ``<name>_anon``.
        hierarchies: ARX hierarchy CSV files for ``generalize``, by name.
    """
    import pyarrow as pa

    sources = {
        name: (os.fspath(value) if isinstance(value, (str, os.PathLike)) else value)
        for name, value in (tables or {}).items()
    }
    stream = _internal.sql(
        query,
        sources,
        _path(policy),
        _levels(levels),
        _hierarchies(hierarchies),
        memory_limit,
    )
    return pa.RecordBatchReader.from_stream(stream).read_all()
