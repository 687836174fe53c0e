"""The crate's functions as expressions of datafusion-python's DataFrame API.

The same functions as in SQL (``docs/definitions.md`` defines each), built from the registered
aggregate functions, for ``DataFrame.aggregate`` and friends::

    from datafusion import SessionContext, col
    import datafusion_anonymity as anon
    from datafusion_anonymity import functions as af

    ctx = SessionContext()
    anon.register(ctx)                     # the planner: k_anonymity() and t_closeness need it
    df = ctx.read_parquet("patients.parquet")
    df.aggregate([col("zip"), col("age")],
                 [af.k_anonymity().alias("k"), af.t_closeness(col("disease")).alias("t")])

Every call returns a ``datafusion.Expr``; the arguments are expressions as in SQL (a constant
is ``datafusion.lit(...)``). ``k_anonymity()`` without an argument and the whole-table
functions (``t_closeness``, ``t_closeness_ordered``, ``ncp``, ``entropy_leakage``,
``beta_likeness``, ``enhanced_beta_likeness``, ``delta_disclosure``, ``tuple_diversity``) need
the query planner ``register(ctx)`` installs, as they do in SQL; without it they refuse when
the query runs. ``generalize`` needs the session's hierarchies, so it is SQL only.
"""

from __future__ import annotations

from functools import cache

from datafusion import AggregateUDF, Expr, ScalarUDF

from . import _internal

__all__ = [
    "alpha_anonymity",
    "beta_likeness",
    "bucket",
    "delta_disclosure",
    "enhanced_beta_likeness",
    "entropy_l_diversity",
    "entropy_leakage",
    "generalize_date",
    "k_anonymity",
    "l_diversity",
    "mask",
    "ncp",
    "recursive_cl_diversity",
    "reidentification_risk",
    "t_closeness",
    "t_closeness_ordered",
    "tuple_diversity",
]


@cache
def _aggregate(name: str) -> AggregateUDF:
    for function in _internal.aggregate_functions():
        if function.name == name:
            return AggregateUDF.from_pycapsule(function)
    raise LookupError(f"datafusion-anonymity has no aggregate function {name}")


@cache
def _scalar(name: str) -> ScalarUDF:
    for function in _internal.scalar_functions([], None):
        if function.name == name:
            return ScalarUDF.from_pycapsule(function)
    raise LookupError(f"datafusion-anonymity has no scalar function {name}")


def k_anonymity(*person: Expr) -> Expr:
    """The class's rows (``k_anonymity()``), or its distinct persons (``k_anonymity(person_id)``)."""
    return _aggregate("k_anonymity")(*person)


def l_diversity(sensitive: Expr) -> Expr:
    """Distinct sensitive values of the class."""
    return _aggregate("l_diversity")(sensitive)


def entropy_l_diversity(sensitive: Expr) -> Expr:
    """2 to the entropy of the class's sensitive values."""
    return _aggregate("entropy_l_diversity")(sensitive)


def recursive_cl_diversity(sensitive: Expr, c: Expr) -> Expr:
    """The largest l for which the class is recursive (c,l)-diverse (``c`` a constant)."""
    return _aggregate("recursive_cl_diversity")(sensitive, c)


def t_closeness(sensitive: Expr) -> Expr:
    """Equal-distance EMD of the class's sensitive values to the table's (whole-table)."""
    return _aggregate("t_closeness")(sensitive)


def t_closeness_ordered(sensitive: Expr) -> Expr:
    """Ordered-distance EMD of the class's sensitive values to the table's (whole-table)."""
    return _aggregate("t_closeness_ordered")(sensitive)


def ncp(*quasi_identifiers: Expr) -> Expr:
    """Normalized certainty penalty of the class (whole-table)."""
    return _aggregate("ncp")(*quasi_identifiers)


def entropy_leakage() -> Expr:
    """The class's share of the normalized average information loss (whole-table)."""
    return _aggregate("entropy_leakage")()


def reidentification_risk(*person: Expr) -> Expr:
    """The class's re-identification risk, 1/k (or 1/persons)."""
    return _aggregate("reidentification_risk")(*person)


def alpha_anonymity(sensitive: Expr) -> Expr:
    """α of (α,k)-anonymity: the largest share of one sensitive value in the class."""
    return _aggregate("alpha_anonymity")(sensitive)


def beta_likeness(sensitive: Expr) -> Expr:
    """Largest relative gain of a sensitive value's share over the table's (whole-table)."""
    return _aggregate("beta_likeness")(sensitive)


def enhanced_beta_likeness(sensitive: Expr) -> Expr:
    """Enhanced β-likeness of the class (whole-table)."""
    return _aggregate("enhanced_beta_likeness")(sensitive)


def delta_disclosure(sensitive: Expr) -> Expr:
    """Largest |log| ratio of a sensitive value's class share to its table share (whole-table)."""
    return _aggregate("delta_disclosure")(sensitive)


def tuple_diversity(sensitive: Expr) -> Expr:
    """The class's range of an ordered sensitive attribute over the table's (whole-table)."""
    return _aggregate("tuple_diversity")(sensitive)


def mask(value: Expr, level: Expr) -> Expr:
    """The text with its last ``level`` characters each replaced by ``*``."""
    return _scalar("mask")(value, level)


def bucket(value: Expr, width: Expr) -> Expr:
    """The number's bucket of ``width``, as the label ``[lo, hi)``."""
    return _scalar("bucket")(value, width)


def generalize_date(value: Expr, unit: Expr) -> Expr:
    """The date or timestamp cut to ``unit`` (``'month'``, ``'year'``, ...)."""
    return _scalar("generalize_date")(value, unit)
