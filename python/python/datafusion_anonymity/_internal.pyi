"""Stub of ``datafusion_anonymity._internal``, the compiled part of the package (its Rust
source is ``python/src/lib.rs``; the exceptions are made in ``python/src/errors.rs``).

The jobs (``anonymize``, ``apply``, ``profile``, ``build_hierarchy``, ``check_hierarchy``)
return their report as a JSON string: ``datafusion_anonymity.reports`` describes the
decoded dicts. Every parameter is positional-or-keyword, as PyO3 makes them.
"""

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, final

from typing_extensions import CapsuleType

__all__ = [
    "AnonymityError",
    "AnonymityWarning",
    "NotFoundError",
    "AlreadyExistsError",
    "InvalidValueError",
    "MemoryLimitError",
    "AggregateFunction",
    "ScalarFunction",
    "WindowFunction",
    "Planner",
    "LogicalCodec",
    "PhysicalCodec",
    "Table",
    "ArrowStream",
    "aggregate_functions",
    "scalar_functions",
    "window_functions",
    "query_planner",
    "planner_layers",
    "policy_tables",
    "generalized_table",
    "anonymize",
    "apply",
    "profile",
    "sql",
    "build_hierarchy",
    "check_hierarchy",
    "generate",
    "attack_fingerprint",
    "function_names",
]

# --- exceptions (created at import by `add_exceptions`; their __module__ is
# `datafusion_anonymity`) --------------------------------------------------------------------

class AnonymityError(Exception):
    """An error of datafusion-anonymity: a policy, an input, a query or an output that cannot
    be used. The message names what is wrong; it never shows data values."""

class AnonymityWarning(UserWarning):
    """A warning of a datafusion-anonymity job: the job went on; the message says what to
    check."""

class NotFoundError(AnonymityError, FileNotFoundError):
    """A policy, input or hierarchy file (or object) that does not exist."""

class AlreadyExistsError(AnonymityError, FileExistsError):
    """An output that exists, where neither overwrite=True nor append=True was given."""

class InvalidValueError(AnonymityError, ValueError):
    """A policy, an argument or a query that cannot be used as given."""

class MemoryLimitError(AnonymityError, MemoryError):
    """A step that needs more memory than memory_limit leaves it; nothing was written."""

#: A job's progress callback: called with (phase, done, total, unit) whenever that changes, at
#: most every 50 ms, on the calling thread; an exception it raises stops the job as Ctrl-C does.
_Progress: TypeAlias = Callable[[str, int, int | None, str], object]

# --- classes (none but the codecs can be made from Python: they have no constructor) ----------

class _ArrowStreamExportable(Protocol):
    """Anything with ``__arrow_c_stream__`` (a pyarrow Table or RecordBatchReader, a
    datafusion DataFrame, ...)."""

    def __arrow_c_stream__(self, requested_schema: Any = None) -> object: ...

@final
class AggregateFunction:
    """An aggregate function of the crate, for ``AggregateUDF.from_pycapsule(...)``."""

    @property
    def name(self) -> str: ...
    def __datafusion_aggregate_udf__(self) -> CapsuleType: ...

@final
class ScalarFunction:
    """A scalar (recoding) function of the crate, for ``ScalarUDF.from_pycapsule(...)``."""

    @property
    def name(self) -> str: ...
    def __datafusion_scalar_udf__(self) -> CapsuleType: ...

@final
class WindowFunction:
    """A window function of the crate (the rewrite's finalizers), for
    ``WindowUDF.from_pycapsule(...)``."""

    @property
    def name(self) -> str: ...
    def __datafusion_window_udf__(self) -> CapsuleType: ...

@final
class Planner:
    """The crate's query planner, wrapping the planner a session had."""

    # `session` is required at run time (a TypeError without it)
    def __datafusion_query_planner__(self, session: object | None = None) -> CapsuleType: ...

@final
class LogicalCodec:
    """The logical half of the crate's extension codec."""

    __datafusion_codec_id__: ClassVar[Literal["datafusion_anonymity.held.logical"]]
    def __init__(self) -> None: ...
    # `session` is required at run time (a TypeError without it)
    def __datafusion_logical_extension_codec__(
        self, session: object | None = None
    ) -> CapsuleType: ...

@final
class PhysicalCodec:
    """The physical half of the crate's extension codec."""

    __datafusion_codec_id__: ClassVar[Literal["datafusion_anonymity.held.physical"]]
    def __init__(self) -> None: ...
    # `session` is required at run time (a TypeError without it)
    def __datafusion_physical_extension_codec__(
        self, session: object | None = None
    ) -> CapsuleType: ...

@final
class Table:
    """A table planned and run by the crate, for ``SessionContext.register_table(name, ...)``."""

    def __arrow_c_schema__(self) -> CapsuleType: ...
    def __datafusion_table_provider__(self, session: object) -> CapsuleType: ...

@final
class ArrowStream:
    """Query results (the Arrow PyCapsule stream protocol), readable once."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> CapsuleType: ...

# --- functions ---------------------------------------------------------------------------------

def aggregate_functions() -> list[AggregateFunction]: ...
def scalar_functions(
    hierarchies: Sequence[tuple[str, str]], policy: str | None = None
) -> list[ScalarFunction]: ...
def window_functions() -> list[WindowFunction]: ...
def query_planner(
    fallback: CapsuleType, options: dict[str, str] | None = None
) -> Planner | None: ...
def planner_layers(planner: CapsuleType) -> int: ...

# `levels` must be a dict (PyO3 extracts a HashMap from a dict only)
def policy_tables(
    policy: str,
    levels: dict[str, int] | None = None,
    memory_limit: str | None = None,
    recoding: str | None = None,
) -> list[tuple[str, Table]]: ...
def generalized_table(
    policy: str,
    levels: dict[str, int] | None = None,
    memory_limit: str | None = None,
    recoding: str | None = None,
) -> Table: ...
# the jobs' policy: exactly one of `policy` (a path or URL), `policy_text` (TOML) and
# `policy_table` (a dict as JSON text), else a ValueError; `input` replaces its [input] path
def anonymize(
    policy: str | None,
    out: str | None = None,
    report: str | None = None,
    algorithm: str = ...,  # "optimal"
    metric: str = ...,  # "loss"
    seed: int | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
    html_report: str | None = None,
    utility: bool = False,
    recoding_out: str | None = None,
    format: str | None = None,
    append: bool = False,
    refine: bool = True,
    record_seed: bool = False,
    policy_text: str | None = None,
    policy_table: str | None = None,
    input: str | None = None,
    progress: _Progress | None = None,
    cluster: str | None = None,
) -> str: ...
def apply(
    policy: str | None,
    levels: dict[str, int] | None = None,
    out: str | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
    report: str | None = None,
    html_report: str | None = None,
    seed: int | None = None,
    utility: bool = False,
    recoding: str | None = None,
    format: str | None = None,
    append: bool = False,
    record_seed: bool = False,
    policy_text: str | None = None,
    policy_table: str | None = None,
    input: str | None = None,
    progress: _Progress | None = None,
    cluster: str | None = None,
) -> str: ...

# `qi`, `sensitive` and `determined` are sequences of names (a str is refused at run time)
def profile(
    input: str,
    qi: Sequence[str],
    sensitive: Sequence[str],
    person_id: str | None,
    population: str | None,
    original: str | None,
    key: str | None,
    policy: str | None,
    hierarchies: Sequence[tuple[str, str]],
    recursive_c: float,
    queries: int,
    seed: int,
    show_values: bool,
    memory_limit: str | None,
    background_values: int = 3,
    by_position: bool = False,
    relink: str | None = None,
    fingerprint_st: str | None = None,
    linking: str | None = None,
    determined: Sequence[str] | None = None,
    bucket_column: str = ...,  # "bucket_id"
    policy_text: str | None = None,
    policy_table: str | None = None,
    progress: _Progress | None = None,
    bad_values: str | None = None,
    text_report: str | None = None,
    html_report: str | None = None,
    cluster: str | None = None,
) -> str: ...

# `tables` must be a dict: name -> a path, or Arrow data (read whole)
def sql(
    query: str,
    tables: dict[str, str | _ArrowStreamExportable],
    policy: str | None = None,
    levels: dict[str, int] | None = None,
    hierarchies: Sequence[tuple[str, str]] = ...,
    memory_limit: str | None = None,
    policy_text: str | None = None,
    policy_table: str | None = None,
    bad_values: str | None = None,
    cluster: str | None = None,
) -> ArrowStream: ...
def build_hierarchy(
    table: str,
    column: str,
    out: str,
    kind: str,
    widths: Sequence[float] | None = None,
    origin: float | None = None,
    min_size: Sequence[int] | None = None,
    keep: Sequence[int] | None = None,
    units: Sequence[str] | None = None,
    overwrite: bool = False,
    memory_limit: str | None = None,
) -> str: ...
def check_hierarchy(file: str, column: str, table: str, memory_limit: str | None = None) -> str: ...
def generate(table: str, rows: int, out: str, seed: int = 42) -> None: ...
def attack_fingerprint(
    sensitive_table: str,
    linking: str,
    generalized_table: str | None = None,
    determined: Sequence[str] | None = None,
    bucket_column: str = ...,  # "bucket_id"
    memory_limit: str | None = None,
) -> str: ...
def function_names() -> list[str]: ...
