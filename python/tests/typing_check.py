"""Type-checking exercise of the stub (``_internal.pyi``) and the report ``TypedDict``s
(``reports.py``): read by mypy, never run (pytest does not collect it: its name does not start
with ``test_``). Each function uses the reports as a caller would, so that a key renamed or
retyped in a ``TypedDict`` or a parameter changed in the stub shows up as a mypy error here.

    MYPYPATH=python/python mypy --config-file python/mypy.ini \\
        python/python/datafusion_anonymity/_internal.pyi \\
        python/python/datafusion_anonymity/reports.py python/tests/typing_check.py
"""

from __future__ import annotations

import json
from typing import assert_type

import pyarrow as pa
from datafusion import AggregateUDF, ScalarUDF, SessionContext, WindowUDF

from datafusion_anonymity import _internal
from datafusion_anonymity.reports import (
    AnonymizeReport,
    ApplyReport,
    BucketizationReport,
    CloakingReport,
    HierarchyBuildReport,
    HierarchyCheckReport,
    PerturbationReport,
    ProfileReport,
    Report,
)

# --- the reports, as a caller reads them -------------------------------------------------------


def seed_of(report: AnonymizeReport) -> int | None:
    return report["publish"]["seed"]


def levels_of(report: AnonymizeReport) -> dict[str, int]:
    return {level["quasi_identifier"]: level["level"] for level in report["levels"]}


def worst_l(report: AnonymizeReport, attribute: str) -> float | str | None:
    for achieved in report["publish"]["verification"]["sensitive"]:
        if achieved["attribute"] == attribute:
            return achieved.get("l")
    return None


def k_map(report: AnonymizeReport) -> int | None:
    population = report["publish"]["verification"].get("population")
    return None if population is None else population["k_map"]


def delta_presence_max(report: AnonymizeReport) -> float | None:
    population = report["publish"]["verification"].get("population")
    if population is None or population["delta_presence"] is None:
        return None
    high = population["delta_presence"]["max"]
    return float("inf") if high == "inf" else high


def input_version(report: AnonymizeReport) -> int | None:
    return report.get("input_version")


def utility_loss(report: AnonymizeReport) -> float | None:
    utility = report["utility"]
    return None if utility is None else utility["loss_metric"]


def total_seconds(report: AnonymizeReport) -> float:
    return report["seconds"]["total"]


def rows_written(report: Report) -> int:
    """Every method's written rows: ``command`` marks a generalization, ``method`` the rest."""
    if "command" in report:
        assert_type(report, AnonymizeReport)
        return report["publish"]["verification"]["rows"]
    if report["method"] == "cloaking":
        assert_type(report, CloakingReport)
        return report["publish"]["rows"]
    if report["method"] == "perturbation":
        assert_type(report, PerturbationReport)
        return report["verification"]["rows"]
    assert_type(report, BucketizationReport)
    return report["publish"]["rows"]


def applied_seed(report: ApplyReport) -> int | None:
    if "command" in report:
        return report["publish"]["seed"]
    return report["seed"]


def cloaking_unicity(report: CloakingReport) -> list[float]:
    return report["unicity_release"]["unique"]


def pram_associations(report: PerturbationReport) -> list[tuple[str, str, float]]:
    return [
        (pram["attribute"], association["with"], association["after"])
        for pram in report.get("pram", [])
        for association in pram["associations"]
    ]


def pinned(report: BucketizationReport) -> dict[str, int]:
    return {
        str(attribute): int(records)
        for attribute, records in report["publish"]["attack"]["pinned_per_attribute"]
    }


def profile_k(report: ProfileReport) -> int:
    return report["anonymity"]["k"]


def profile_l(report: ProfileReport) -> dict[str, int]:
    return {s["attribute"]: s["l_distinct"] for s in report["anonymity"]["sensitive"]}


def journalist_risk(report: ProfileReport) -> float | None:
    population = report["risk"]["population"]
    return None if population is None else population["journalist"]


def fully_pinned(report: ProfileReport) -> int | None:
    attack = report["fingerprint_attack"]
    return None if attack is None else attack["fully_pinned"]


def hierarchy_classes(report: HierarchyBuildReport) -> list[int]:
    return [level["classes"] for level in report["levels"]]


def unused_leaves(report: HierarchyCheckReport) -> int:
    return report["unused_leaves"]


# --- the extension module, with the arguments __init__.py passes -------------------------------


def decode_anonymize(text: str) -> Report:
    report: Report = json.loads(text)
    return report


def exercise_internal(ctx: SessionContext, data: pa.Table) -> None:
    """Never called: its calls are type-checked against the stub."""
    for aggregate in _internal.aggregate_functions():
        assert_type(aggregate.name, str)
        ctx.register_udaf(AggregateUDF.from_pycapsule(aggregate))
    for scalar in _internal.scalar_functions([("ages", "ages.csv")], "policy.toml"):
        ctx.register_udf(ScalarUDF.from_pycapsule(scalar))
    for window in _internal.window_functions():
        ctx.register_udwf(WindowUDF.from_pycapsule(window))
    planner = _internal.query_planner(ctx.__datafusion_query_planner__(ctx))
    if planner is not None:
        ctx.set_query_planner(planner)
    assert_type(_internal.planner_layers(ctx.__datafusion_query_planner__(ctx)), int)
    codec_id: str = _internal.LogicalCodec.__datafusion_codec_id__
    assert codec_id in ctx.logical_extension_codec_ids()
    _internal.LogicalCodec().__datafusion_logical_extension_codec__(ctx)
    _internal.PhysicalCodec().__datafusion_physical_extension_codec__(ctx)

    for name, table in _internal.policy_tables("policy.toml", {"age": 1}, "2GiB"):
        ctx.register_table(name, table)
    ctx.register_table("anon", _internal.generalized_table("policy.toml", None, None))

    anonymized = decode_anonymize(
        _internal.anonymize(
            "policy.toml", "out.parquet", None, "mondrian", "loss", 42, True, "2GiB",
            None, True, "recoding.json", "parquet", False, True, False,
        )
    )
    rows_written(anonymized)
    applied: ApplyReport = json.loads(
        _internal.apply(
            "policy.toml", {"age": 1}, "out.parquet", False, None, "report.json", None,
            None, False, None, None, False, False,
        )
    )
    applied_seed(applied)
    profiled: ProfileReport = json.loads(
        _internal.profile(
            "release.parquet", ["zip", "age"], ["disease"], None, None, "original.parquet",
            "id", None, [("age", "ages.csv")], 2.0, 1000, 42, False, None, 3, False, None,
            None, None, None, "bucket_id",
        )
    )
    profile_k(profiled)
    stream = _internal.sql(
        "SELECT count(*) FROM t", {"t": "t.parquet", "u": data}, None, None, [], None
    )
    pa.RecordBatchReader.from_stream(stream).read_all()
    built: HierarchyBuildReport = json.loads(
        _internal.build_hierarchy(
            "t.parquet", "age", "ages.csv", "interval", [5.0, 10.0], 0.0, None, None, None,
            False,
        )
    )
    hierarchy_classes(built)
    checked: HierarchyCheckReport = json.loads(
        _internal.check_hierarchy("ages.csv", "age", "t.parquet")
    )
    unused_leaves(checked)
    assert_type(_internal.function_names(), list[str])

    try:
        _internal.check_hierarchy("ages.csv", "age", "t.parquet")
    except _internal.NotFoundError as error:
        assert isinstance(error, FileNotFoundError)
        assert isinstance(error, _internal.AnonymityError)
    except _internal.InvalidValueError as error:
        assert isinstance(error, ValueError)
