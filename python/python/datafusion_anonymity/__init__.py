"""k-anonymity, l-diversity, t-closeness and friends for datafusion-python.

The functions of the Rust crate ``datafusion-anonymity``, usable from a ``datafusion``
(55.0.0) ``SessionContext``, plus its batch jobs (``anonymize``, ``apply``, ``profile``) and
its own SQL engine (``sql``)::

    from datafusion import SessionContext
    import datafusion_anonymity as anon

    ctx = SessionContext()
    anon.register(ctx)
    ctx.register_parquet("patients", "patients.parquet")
    ctx.sql("SELECT zip, age, k_anonymity() AS k, t_closeness(disease) AS t "
            "FROM patients GROUP BY zip, age").show()

What runs where:

- ``register(ctx)`` (or ``SessionContext().with_extensions(anon.extension())``) puts every
  function on the session (the per-class aggregates, the whole-table ones, the recoding
  functions) and installs the crate's query planner, which runs the rewrite the Rust session
  runs as an analyzer rule: the whole-table functions (``t_closeness``, ``ncp``, ...) and
  ``k_anonymity()`` without an argument work in the user's own context, with its tables, and
  give the same values as in Rust. The plan is then planned and run by datafusion-python.
- In a session without the planner (functions registered by hand, or the planner replaced
  by a later ``ctx.set_query_planner``), those calls refuse when the query runs, naming
  ``datafusion_anonymity.register(ctx)`` (never a wrong number).
- ``sql(query, tables=...)`` runs a query in the crate's own session and returns a pyarrow
  Table.
- ``register_policy(ctx, policy)`` / ``generalized_table(policy)`` serve a policy's input and
  its generalized, suppressed table (``<name>_anon``) to datafusion-python; they are planned
  and run by the crate.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, NamedTuple, Sequence, cast

from datafusion import AggregateUDF, ScalarUDF, SessionContext, WindowUDF

from . import _internal
from .reports import (
    AnonymizeReport,
    ApplyReport,
    FingerprintReport,
    HierarchyBuildReport,
    HierarchyCheckReport,
    ProfileReport,
    Report,
)
from ._internal import (
    AlreadyExistsError,
    AnonymityError,
    AnonymityWarning,
    InvalidValueError,
    MemoryLimitError,
    NotFoundError,
)

__all__ = [
    "AlreadyExistsError",
    "AnonymityError",
    "AnonymityWarning",
    "InvalidValueError",
    "MemoryLimitError",
    "NotFoundError",
    "Extension",
    "Progress",
    "AnonymizeReport",
    "ApplyReport",
    "FingerprintReport",
    "attack_fingerprint",
    "HierarchyBuildReport",
    "HierarchyCheckReport",
    "ProfileReport",
    "Report",
    "anonymize",
    "apply",
    "build_hierarchy",
    "check_hierarchy",
    "extension",
    "generalized_table",
    "generate",
    "GENERATED_TABLES",
    "profile",
    "register",
    "register_policy",
    "sql",
]

if TYPE_CHECKING:
    import pyarrow as pa

PathLike = str | os.PathLike[str]
# a policy: a file (path or URL), TOML text (a str holding a line break) or a dict of the
# file's keys and values
PolicyLike = PathLike | Mapping[str, Any]


class Progress(NamedTuple):
    """Where a running job is, as its ``progress`` callback receives it: the phase (``"frequency
    set"``, ``"search"``, ``"shuffle"``, ``"write"``, ...), the units done of the total (``None``
    when not known) and the unit (``"rows"``, ``"nodes"``, ...). Counts only, never values."""

    phase: str
    done: int
    total: int | None
    unit: str


ProgressCallback = Callable[[Progress], object]


def _path(value: PathLike | None) -> str | None:
    return None if value is None else os.fspath(value)


def _seed(seed: int | None) -> int | None:
    """A seed as the engine takes it (an unsigned 64-bit integer), refused in Python's words
    otherwise: not an ``OverflowError`` from deep inside the extension."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**64:
        raise ValueError("seed must be an integer from 0 to 2**64 - 1")
    return seed


def _columns(columns: Sequence[str] | str) -> list[str]:
    """Column names: a sequence of names, or one string of comma-separated names (as the
    command line's ``--qi zip,sex``), never a string read as its characters."""
    if isinstance(columns, str):
        return [name.strip() for name in columns.split(",") if name.strip()]
    return list(columns)


def _policy_arguments(policy: PolicyLike | None) -> dict[str, str | None]:
    """``policy=`` as the extension takes it: a path (``policy``), TOML text (``policy_text``: a
    ``str`` with a line break, which no usable path has and every policy has) or a dict
    (``policy_table``, as JSON). Relative paths in text or a dict resolve against the current
    directory."""
    arguments: dict[str, str | None] = {"policy": None, "policy_text": None, "policy_table": None}
    if policy is None:
        return arguments
    if isinstance(policy, Mapping):
        arguments["policy_table"] = json.dumps(policy, default=_policy_value)
    elif isinstance(policy, str) and "\n" in policy:
        arguments["policy_text"] = policy
    elif isinstance(policy, (str, os.PathLike)):
        arguments["policy"] = os.fspath(policy)
    else:
        raise TypeError(
            "policy must be a path, TOML text or a dict, got " + type(policy).__name__
        )
    return arguments


def _policy_value(value: Any) -> Any:
    """A value of a policy dict that JSON has no type for: a path becomes its text."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(
        f"a policy dict holds strings, numbers, booleans, lists and dicts, not "
        f"{type(value).__name__}"
    )


def _is_pandas(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "to_parquet")


@contextlib.contextmanager
def _input_path(input: Any, name: str = "input") -> Iterator[str | None]:
    """A job's input as a path: a path as it is; Arrow data (a pyarrow Table or
    RecordBatchReader, a pandas DataFrame, a datafusion DataFrame: anything with
    ``__arrow_c_stream__``) written batch by batch to a Parquet file in a private temporary
    directory, removed when the job is over, whatever its outcome."""
    if input is None or isinstance(input, (str, os.PathLike)):
        yield None if input is None else os.fspath(input)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    if _is_pandas(input):
        # pandas' own convention: a plain row-number index is metadata, any other index a
        # column (`__index_level_0__` when unnamed, which a policy must then name)
        reader = pa.Table.from_pandas(input).to_reader()
    elif hasattr(input, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(input)
    else:
        raise TypeError(
            f"{name} must be a path or Arrow data (a pyarrow Table or RecordBatchReader, a "
            f"pandas or datafusion DataFrame), not {type(input).__name__}"
        )
    # mkdtemp: readable by this user only; the file holds the data as given
    with tempfile.TemporaryDirectory(prefix="datafusion-anonymity-") as directory:
        path = os.path.join(directory, f"{name}.parquet")
        with pq.ParquetWriter(path, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
        yield path


@contextlib.contextmanager
def _progress(progress: ProgressCallback | bool | None) -> Iterator[Callable[..., None] | None]:
    """The callback the extension calls with ``(phase, done, total, unit)`` while a job runs:
    the caller's, given a :class:`Progress`; ``True`` draws a line per phase on stderr,
    rewritten in place (no bar library needed; for tqdm, pass a callback that updates one)."""
    if progress is None or progress is False:
        yield None
        return
    if progress is True:
        line = _StderrLine()
        try:
            yield line.show
        finally:
            line.close()
        return
    if not callable(progress):
        raise TypeError("progress must be a callable, True or None")
    callback = progress

    def call(phase: str, done: int, total: int | None, unit: str) -> None:
        callback(Progress(phase, done, total, unit))

    yield call


class _StderrLine:
    """``progress=True``: one line per phase on stderr, rewritten in place."""

    def __init__(self) -> None:
        self._phase: str | None = None

    def show(self, phase: str, done: int, total: int | None, unit: str) -> None:
        if self._phase is not None and phase != self._phase:
            sys.stderr.write("\n")
        self._phase = phase
        if total:
            text = f"{phase}: {done:,} / {total:,} {unit} ({100 * min(done, total) / total:.0f} %)"
        else:
            text = f"{phase}: {done:,} {unit}"
        sys.stderr.write(f"\r{text:<72}")
        sys.stderr.flush()

    def close(self) -> None:
        if self._phase is not None:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _hierarchies(hierarchies: Mapping[str, PathLike] | None) -> list[tuple[str, str]]:
    return [(name, os.fspath(path)) for name, path in (hierarchies or {}).items()]


def _levels(levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None) -> dict[str, int] | None:
    """Levels as {quasi_identifier: level}; also takes the ``levels`` list of a report."""
    if levels is None:
        return None
    if isinstance(levels, Mapping):
        return {str(k): int(v) for k, v in levels.items()}
    return {str(item["quasi_identifier"]): int(item["level"]) for item in levels}


def _register_functions(
    ctx: SessionContext,
    hierarchies: Mapping[str, PathLike] | None,
    policy: PathLike | None,
) -> None:
    """The functions, the internal ones the query planner's rewrite inserts included."""
    for aggregate in _internal.aggregate_functions():
        ctx.register_udaf(AggregateUDF.from_pycapsule(aggregate))
    for scalar in _internal.scalar_functions(_hierarchies(hierarchies), _path(policy)):
        ctx.register_udf(ScalarUDF.from_pycapsule(scalar))
    for window in _internal.window_functions():
        ctx.register_udwf(WindowUDF.from_pycapsule(window))


#: The crate's options: ``anonymity.<name>`` in its own sessions (``SET``), ``options=`` here.
Options = Mapping[str, bool | str]


def _options(options: Options | None) -> dict[str, str] | None:
    if options is None:
        return None
    return {
        str(name): (str(value).lower() if isinstance(value, bool) else str(value))
        for name, value in options.items()
    }


def register(
    ctx: SessionContext,
    *,
    hierarchies: Mapping[str, PathLike] | None = None,
    policy: PathLike | None = None,
    options: Options | None = None,
) -> None:
    """Registers the anonymity functions and installs the query planner on a ``SessionContext``.

    After this every function of the crate runs in ``ctx``, with ``ctx``'s own tables, as in
    Rust: the per-class functions, ``k_anonymity()`` without an argument and the whole-table
    functions (``t_closeness``, ``t_closeness_ordered``, ``ncp``, ``entropy_leakage``,
    ``beta_likeness``, ``enhanced_beta_likeness``, ``delta_disclosure``, ``tuple_diversity``),
    whose rewrite the
    query planner runs.

    The planner wraps the one the session has (DataFusion's own, or one the user installed
    before): it rewrites each plan, then hands it to that one. Calling ``register`` again, or
    installing ``extension()`` as well, keeps the one planner already there. A later
    ``ctx.set_query_planner(...)`` replaces it; the functions that need it then refuse, naming
    this call.

    Args:
        ctx: the session.
        hierarchies: generalization hierarchies for ``generalize(col, 'name', level)``, by
            name: ARX hierarchy CSV files (one row per value, ``;``-separated levels).
        policy: a policy file: its quasi-identifiers' hierarchies are registered under the
            column names (its input is read to size masks and check value trees).
        options: the crate's session options by name (``packed_aggregation``,
            ``single_phase_aggregation``; with or without the ``anonymity.`` prefix), which
            ``SET anonymity.<name> = ...`` sets in the crate's own sessions: a datafusion-python
            session knows no ``anonymity`` namespace (configuration extensions do not cross
            the FFI), so ``SET`` fails there and the planner takes them instead. Registering
            again with options replaces the planner's; without, keeps them.
    """
    # the planner is the session's, shared by every handle on it: installed through a new
    # handle (which carries the bundle's codecs, and binds the planner to them), it serves `ctx`
    ctx.with_extensions(Extension(hierarchies=hierarchies, policy=policy, options=options))


class Extension:
    """The extension bundle: ``SessionContext().with_extensions(datafusion_anonymity.extension())``.

    What ``register`` does, as datafusion-python's extension protocol: its planner hook
    registers the functions on the context it is given and returns the query planner wrapping
    ``fallback`` (the planner built so far), or ``None`` when that is this library's planner
    already (installed twice, it is installed once). Bundles listed after it wrap it.
    """

    def __init__(
        self,
        *,
        hierarchies: Mapping[str, PathLike] | None = None,
        policy: PathLike | None = None,
        options: Options | None = None,
    ) -> None:
        self._hierarchies = dict(hierarchies or {})
        self._policy = policy
        self._options = _options(options)

    def __datafusion_session_components__(self, ctx: SessionContext) -> Any:
        from datafusion import SessionExtensionComponents

        # the codecs that carry in-memory tables and other libraries' providers across the
        # planner's boundary by reference; once per handle (a second copy would clash)
        logical = () if _internal.LogicalCodec.__datafusion_codec_id__ in (
            ctx.logical_extension_codec_ids()
        ) else (_internal.LogicalCodec(),)
        physical = () if _internal.PhysicalCodec.__datafusion_codec_id__ in (
            ctx.physical_extension_codec_ids()
        ) else (_internal.PhysicalCodec(),)
        return SessionExtensionComponents(
            logical_extension_codecs=logical, physical_extension_codecs=physical
        )

    def __datafusion_session_planner__(self, ctx: SessionContext, fallback: Any) -> Any:
        _register_functions(ctx, self._hierarchies, self._policy)
        return _internal.query_planner(fallback, self._options)

    def __repr__(self) -> str:
        return "datafusion_anonymity.extension()"


def extension(
    *,
    hierarchies: Mapping[str, PathLike] | None = None,
    policy: PathLike | None = None,
    options: Options | None = None,
) -> Extension:
    """The extension bundle for ``SessionContext.with_extensions(...)``; see ``register``."""
    return Extension(hierarchies=hierarchies, policy=policy, options=options)


def register_policy(
    ctx: SessionContext,
    policy: PathLike,
    *,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    memory_limit: str | None = None,
    recoding: PathLike | None = None,
) -> list[str]:
    """What ``anon sql --policy`` registers, on a datafusion ``SessionContext``.

    The functions (with the policy's hierarchies), the policy's input under its table name and,
    when the policy has a ``[transformation]`` or ``levels`` are given, the generalized and
    suppressed table as ``<name>_anon``. Returns the names of the tables registered.

    Args:
        levels: a level per quasi-identifier, ``{column: level}`` or the ``levels`` of the
            report ``anonymize`` returns; replaces the policy's ``[transformation]``.
        memory_limit: the memory limit of the session the tables are planned in (e.g. "2GiB").
        recoding: a local recoding saved by ``anonymize(recoding_out=...)`` (Mondrian, KACA,
            ...): ``<name>_anon`` serves its classes, as ``apply(recoding=...)`` publishes them.
    """
    register(ctx, policy=policy)
    names = []
    tables = _internal.policy_tables(
        os.fspath(policy), _levels(levels), memory_limit, _path(recoding)
    )
    for name, table in tables:
        ctx.register_table(name, table)
        names.append(name)
    return names


def generalized_table(
    policy: PathLike,
    *,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    memory_limit: str | None = None,
    recoding: PathLike | None = None,
) -> Any:
    """The generalized and suppressed table of a policy, for ``ctx.register_table(name, ...)``.

    At the policy's ``[transformation]``, or at ``levels`` (``{column: level}``, or the
    ``levels`` of the report ``anonymize`` returns), or the classes of a local recoding
    saved by ``anonymize(recoding_out=...)`` (``recoding``: what ``apply(recoding=...)``
    publishes; one scan of the input maps them when the table is made).
    """
    return _internal.generalized_table(
        os.fspath(policy), _levels(levels), memory_limit, _path(recoding)
    )


def anonymize(
    policy: PolicyLike,
    *,
    input: Any = None,
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
    refine: bool = True,
    record_seed: bool = False,
    progress: ProgressCallback | bool | None = None,
    cluster: str | None = None,
) -> Report:
    """``anon anonymize``: search, publish as Parquet, verify. Returns the report as a dict:
    the keys ``anon anonymize --report`` writes, from the same pipeline.

    Args:
        policy: the policy: a file (path or URL), TOML text (a ``str`` holding a line break)
            or a dict of the file's keys and values. Relative paths in text or a dict resolve
            against the current directory.
        input: read this instead of the policy's ``[input] path``: a path or URL, or Arrow
            data (a pyarrow Table or RecordBatchReader, a pandas DataFrame, a datafusion
            DataFrame), written to a private temporary Parquet file for the job (removed
            afterwards; the report's ``input`` names that file).
        out: a ``.parquet`` file or a directory (default: the policy's ``[output] path``).
        report: also write the report (JSON) there.
        algorithm: ``optimal``, ``iab-full-domain``, ``mondrian``, ``kaca`` or ``iab``.
        metric: ``loss``, ``discernibility``, ``classes`` or ``precision``.
        seed: seed of every random choice: the written rows' order (shuffled, so releases
            cannot be joined row by row) and KACA's next class. ``None`` draws one, returned in
            the result's ``publish.seed`` (generalization) or ``seed`` (cloaking); the same
            input, policy and seed give the same bytes as ``anon anonymize --seed``. Keep it
            as secret as the data: it undoes the shuffle.
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
        refine: ``algorithm="mondrian"``: refine its small regions (the default); ``False``
            for plain top-down partitioning, faster on millions of combinations at a higher
            Loss (``--no-refine``).
        record_seed: also write the seed into the ``report`` and ``html_report`` files
            (``--record-seed``); by default no written report holds it.
        progress: a callable given a :class:`Progress` (phase, done, total, unit) whenever
            it changes, at most every 50 ms; an exception it raises stops the job, which
            publishes nothing. ``True`` shows the progress on stderr.
        cluster: run the queries on the Ballista cluster whose scheduler is at this URL
            (``df://host:port``, started with ``anon scheduler`` and ``anon executor``), as
            ``--cluster``; the search and the writing stay in this process (also for
            ``apply``, ``profile`` and ``sql``).

    The job's warnings (an identifier whose values repeat, a column that makes many rows
    unique) are raised as :class:`AnonymityWarning` once it is over, and listed in the
    report's ``warnings``.
    """
    seed = _seed(seed)
    policy_arguments = _policy_arguments(policy)
    with _input_path(input) as input_path, _progress(progress) as callback:
        text = _internal.anonymize(
            policy_arguments["policy"],
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
            refine,
            record_seed,
            policy_text=policy_arguments["policy_text"],
            policy_table=policy_arguments["policy_table"],
            input=input_path,
            progress=callback,
            cluster=cluster,
        )
    return cast(Report, json.loads(text))


def apply(
    policy: PolicyLike,
    *,
    input: Any = None,
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
    record_seed: bool = False,
    progress: ProgressCallback | bool | None = None,
    cluster: str | None = None,
) -> ApplyReport:
    """``anon apply``: publish the policy's input at its ``[transformation]`` (or ``levels``,
    or a ``recoding`` saved by ``anonymize(recoding_out=...)``), through the same pipeline as
    the command line. Returns the report (the keys ``anon apply --report`` writes; the
    publication's figures under ``publish``). ``seed`` orders the written rows (``None``: drawn
    at random, returned as ``publish.seed``; the ``report`` and ``html_report`` files hold it
    only with ``record_seed=True``). ``format`` and ``append`` as for ``anonymize``:
    ``format="delta"`` publishes a Delta Lake table. ``policy``, ``input`` and ``progress`` as
    for :func:`anonymize`."""
    seed = _seed(seed)
    policy_arguments = _policy_arguments(policy)
    with _input_path(input) as input_path, _progress(progress) as callback:
        text = _internal.apply(
            policy_arguments["policy"],
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
            record_seed,
            policy_text=policy_arguments["policy_text"],
            policy_table=policy_arguments["policy_table"],
            input=input_path,
            progress=callback,
            cluster=cluster,
        )
    return cast(ApplyReport, json.loads(text))


def profile(
    input: Any,
    *,
    qi: Sequence[str] | str = (),
    sensitive: Sequence[str] | str = (),
    person_id: str | None = None,
    population: PathLike | None = None,
    original: PathLike | None = None,
    key: str | None = None,
    policy: PolicyLike | None = None,
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
    progress: ProgressCallback | bool | None = None,
    bad_values: str | None = None,
    text_report: PathLike | None = None,
    html_report: PathLike | None = None,
    cluster: str | None = None,
) -> ProfileReport:
    """``anon profile --format json``: the risk and utility report of a table, as a dict,
    from the same pipeline as the command line (its flags as keywords: ``relink`` the
    re-linking attack, ``fingerprint_st`` and ``linking`` the fingerprint-correlation
    attack on a bucketized release). ``input`` is a path or URL, or Arrow data as for
    :func:`anonymize`; ``policy`` a file, TOML text or a dict; ``progress`` as for
    :func:`anonymize`. ``bad_values`` (``"error"`` or ``"null"``): what becomes of CSV values
    that do not convert to their column's type (``--bad-values``; overrides the policy's).
    ``text_report`` and ``html_report`` (paths or URLs): also write the report as the command
    line's text or as one self-contained HTML page there (``--format text|html --out``)."""
    seed_value = _seed(seed)
    if seed_value is None:
        raise TypeError("seed must be an int")
    policy_arguments = _policy_arguments(policy)
    with _input_path(input) as input_path, _progress(progress) as callback:
        if input_path is None:
            raise TypeError("input must be a path or Arrow data, not None")
        text = _internal.profile(
            input_path,
            _columns(qi),
            _columns(sensitive),
            person_id,
            _path(population),
            _path(original),
            key,
            policy_arguments["policy"],
            _hierarchies(hierarchies),
            float(recursive_c),
            int(queries),
            seed_value,
            bool(show_values),
            memory_limit,
            int(background_values),
            bool(by_position),
            _path(relink),
            _path(fingerprint_st),
            linking,
            None if determined is None else list(determined),
            bucket_column,
            policy_text=policy_arguments["policy_text"],
            policy_table=policy_arguments["policy_table"],
            progress=callback,
            bad_values=bad_values,
            text_report=_path(text_report),
            html_report=_path(html_report),
            cluster=cluster,
        )
    return cast(ProfileReport, json.loads(text))


def sql(
    query: str,
    *,
    tables: Mapping[str, Any] | None = None,
    policy: PolicyLike | None = None,
    levels: Mapping[str, int] | Sequence[Mapping[str, Any]] | None = None,
    hierarchies: Mapping[str, PathLike] | None = None,
    memory_limit: str | None = None,
    bad_values: str | None = None,
    cluster: str | None = None,
) -> "pa.Table":
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
        bad_values: ``"error"`` or ``"null"``: what becomes of CSV values that do not
            convert to their column's type (``--bad-values``; overrides the policy's).
    """
    import pyarrow as pa

    sources = {
        name: (os.fspath(value) if isinstance(value, (str, os.PathLike)) else value)
        for name, value in (tables or {}).items()
    }
    policy_arguments = _policy_arguments(policy)
    stream = _internal.sql(
        query,
        sources,
        policy_arguments["policy"],
        _levels(levels),
        _hierarchies(hierarchies),
        memory_limit,
        policy_text=policy_arguments["policy_text"],
        policy_table=policy_arguments["policy_table"],
        bad_values=bad_values,
        cluster=cluster,
    )
    return pa.RecordBatchReader.from_stream(stream).read_all()


def build_hierarchy(
    table: PathLike,
    column: str,
    out: PathLike,
    kind: str,
    *,
    widths: Sequence[float] | None = None,
    origin: float | None = None,
    min_size: Sequence[int] | None = None,
    keep: Sequence[int] | None = None,
    units: Sequence[str] | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
) -> HierarchyBuildReport:
    """``anon hierarchy build``: writes a hierarchy file (ARX's CSV format, what a policy's
    ``kind = "tree"`` reads) built from ``column`` of ``table`` (a Parquet or CSV path or
    URL), and returns the report: leaves, and per level its classes and smallest class.

    ``kind`` is ``interval`` (``widths``, ``origin``), ``quantile`` (``min_size``: rows per
    class at each level), ``prefix`` (``keep``: characters kept at each level), ``date``
    (``units``: ``month``, ``year``, ...) or ``category`` (``min_size``: rare values merged
    first). Nothing is written when it fails; an existing file is replaced only with
    ``overwrite``. ``memory_limit`` (e.g. ``"2GiB"``) bounds the scan of the column."""
    text = _internal.build_hierarchy(
        os.fspath(table),
        column,
        os.fspath(out),
        kind,
        None if widths is None else [float(w) for w in widths],
        None if origin is None else float(origin),
        None if min_size is None else [int(n) for n in min_size],
        None if keep is None else [int(n) for n in keep],
        None if units is None else list(units),
        bool(overwrite),
        memory_limit,
    )
    return cast(HierarchyBuildReport, json.loads(text))


def check_hierarchy(
    file: PathLike, column: str, table: PathLike, *, memory_limit: str | None = None
) -> HierarchyCheckReport:
    """``anon hierarchy check``: checks a hierarchy file by every rule a policy applies and
    against the values of ``column`` of ``table``; returns the report (raises
    :class:`AnonymityError` naming the file, the line and the rule otherwise)."""
    text = _internal.check_hierarchy(os.fspath(file), column, os.fspath(table), memory_limit)
    return cast(HierarchyCheckReport, json.loads(text))


def attack_fingerprint(
    sensitive_table: PathLike,
    *,
    linking: str,
    generalized_table: PathLike | None = None,
    determined: Sequence[str] | str | None = None,
    bucket_column: str = "bucket_id",
    memory_limit: str | None = None,
) -> FingerprintReport:
    """``anon attack fingerprint``: the fingerprint-correlation attack of seed 002 on a
    bucketized release's sensitive table (a path or URL: a bucket id and the sensitive
    attributes), counting the records whose values it pins down. ``linking``: the attribute
    the adversary knows of her target; ``determined``: those she assumes it determines
    (default: every other; an assumption the cells contradict is dropped and listed in
    ``refuted``); ``generalized_table``: the release's other table, checked to link to it
    bucket for bucket."""
    text = _internal.attack_fingerprint(
        os.fspath(sensitive_table),
        linking,
        _path(generalized_table),
        None if determined is None else _columns(determined),
        bucket_column,
        memory_limit,
    )
    return cast(FingerprintReport, json.loads(text))


#: The synthetic tables :func:`generate` writes.
GENERATED_TABLES = ("patients", "medical", "visits", "firms", "trips")


def generate(table: str, rows: int, out: PathLike, *, seed: int = 42) -> None:
    """``anon generate``: writes ``rows`` rows of a seeded synthetic table to ``out``
    (Parquet, zstd; the whole table or nothing: written under a temporary name and renamed
    when complete). The same seed gives the same file. ``table`` is one of
    :data:`GENERATED_TABLES`: ``patients`` (repeated persons, one disease per visit),
    ``medical`` (one row per patient), ``visits`` (1 to 22 visits per patient), ``firms`` (five
    correlated numeric attributes, for microaggregation) or ``trips`` (location pings, for
    cloaking)."""
    seed_value = _seed(seed)
    if seed_value is None:
        raise TypeError("seed must be an int")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise ValueError("rows must be a non-negative int")
    _internal.generate(table, rows, os.fspath(out), seed_value)
