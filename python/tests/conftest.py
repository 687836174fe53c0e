"""Shared fixtures: the repository's worked-example data and policies, sessions."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pytest
from datafusion import SessionConfig, SessionContext

import datafusion_anonymity as anon

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "sql" / "data"
POLICIES = REPO / "sql" / "policies"

# The 9-row table of Li et al. 2007 (sql/data/li2007.csv, docs/definitions.md's worked example).
LI2007 = {
    "id": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "zip": ["47677", "47602", "47678", "47905", "47909", "47906", "47605", "47673", "47607"],
    "age": [29, 22, 27, 43, 52, 47, 30, 36, 32],
    "salary": [3, 4, 5, 6, 11, 8, 7, 9, 10],
    "disease": [
        "gastric ulcer",
        "gastritis",
        "stomach cancer",
        "gastritis",
        "flu",
        "bronchitis",
        "bronchitis",
        "pneumonia",
        "stomach cancer",
    ],
}


@pytest.fixture
def li2007() -> pa.Table:
    return pa.table(LI2007)


def session(target_partitions: int = 2, batch_size: int = 8192, **settings: str) -> SessionContext:
    config = SessionConfig().with_target_partitions(target_partitions).with_batch_size(batch_size)
    for key, value in settings.items():
        config = config.set(key, value)
    ctx = SessionContext(config)
    anon.register(ctx)
    return ctx


@pytest.fixture
def ctx() -> SessionContext:
    return session()


def without_planner(ctx: SessionContext) -> SessionContext:
    """``ctx`` with its query planner replaced by DataFusion's own (a later
    ``set_query_planner``, as a user may do): the functions stay, the rewrite is gone."""
    ctx.set_query_planner(SessionContext().__datafusion_query_planner__())
    return ctx


def rows(ctx_or_df, query: str | None = None) -> list[tuple]:
    """The rows of a query (on a datafusion session) or of a pyarrow Table, as tuples."""
    table = ctx_or_df.sql(query).to_arrow_table() if query is not None else ctx_or_df
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*columns))
