"""The data and queries of the brute-force reference suite (crates/datafusion-anonymity/tests/support/reference.rs).

``gen_rows`` is a port of the Rust generator (splitmix64, the same draws in the same order),
so ``gen_rows(seed, count)`` here is the table the Rust suite checks against its brute-force
reference for the same seed; ``write_parquet`` writes it as the Rust suite does (four files of
uneven sizes, batches of 11 rows). ``MEASURES``, ``CASES`` and ``GROUPINGS`` are the suite's
select list, filters and groupings, plus the whole-table functions it does not list
(``alpha_anonymity``, ``beta_likeness``, ``enhanced_beta_likeness``, ``delta_disclosure``).
"""

from __future__ import annotations

import math
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

MASK = (1 << 64) - 1


class Rng:
    """splitmix64, as ``Rng`` in crates/datafusion-anonymity/tests/support/reference.rs."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def chance(self, pct: int) -> bool:
        return self.below(100) < pct


def gen_rows(seed: int, count: int) -> dict[str, list]:
    r = Rng(seed)

    def strs(vals: list[str], null_pct: int):
        if r.chance(null_pct):
            return None
        i = 0 if r.chance(30) else r.below(len(vals))
        return vals[i]

    cols: dict[str, list] = {k: [] for k in ("g1", "g2", "pid", "s", "n", "f", "c", "h", "u", "w")}
    for i in range(count):
        # fields in declaration order, as the Rust struct literal evaluates them
        cols["g1"].append(None if r.chance(10) else r.below(4))
        cols["g2"].append(strs(["a", "b", "c, a group key longer than 12 bytes"], 10))
        cols["pid"].append(None if r.chance(15) else r.below(20))
        cols["s"].append(
            strs(["x", "y", "z", "w", "v, a sensitive value longer than 12 bytes"], 15)
        )
        cols["n"].append(None if r.chance(10) else r.below(7))
        if r.chance(10):
            f = None
        elif r.chance(4):
            f = math.nan
        else:
            f = r.below(8) * 0.5 - 1.0
        cols["f"].append(f)
        cols["c"].append(strs(["p", "q", "r", "s, a long quasi-identifier value"], 10))
        if r.chance(5):
            h = None
        elif r.chance(40):
            h = r.below(5)
        else:
            h = r.below(250)
        cols["h"].append(h)
        if r.chance(3):
            u = None
        elif r.chance(10):
            u = (r.below(count) - count // 2) * 1_000_003
        else:
            u = (i - count // 2) * 1_000_003
        cols["u"].append(u)
        cols["w"].append(None if r.chance(4) else r.below(5 * count) - 100)
    return cols


SCHEMA = pa.schema(
    [
        ("g1", pa.int64()),
        ("g2", pa.string()),
        ("pid", pa.int64()),
        ("s", pa.string()),
        ("n", pa.int64()),
        ("f", pa.float64()),
        ("c", pa.string()),
        ("h", pa.int64()),
        ("u", pa.int64()),
        ("w", pa.int64()),
    ]
)


def write_parquet(directory: pathlib.Path, cols: dict[str, list]) -> None:
    """Four files of uneven sizes, in batches of 11 rows (``write_parquet`` of the suite)."""
    table = pa.table(cols, schema=SCHEMA)
    n = table.num_rows
    cuts = [0, n // 5, n // 2, n * 3 // 4, n]
    for i in range(4):
        part = table.slice(cuts[i], cuts[i + 1] - cuts[i])
        with pq.ParquetWriter(directory / f"part-{i}.parquet", SCHEMA) as writer:
            for start in range(0, part.num_rows, 11):
                writer.write_table(part.slice(start, 11))


MEASURES = [
    "k_anonymity()",
    "k_anonymity(pid)",
    "k_anonymity('#' || CAST(pid AS VARCHAR))",
    "k_anonymity(h)",
    "l_diversity(s)",
    "entropy_l_diversity(s)",
    "recursive_cl_diversity(s, 2)",
    "recursive_cl_diversity(s, 3)",
    "t_closeness(s)",
    "t_closeness_ordered(n)",
    "t_closeness_ordered(f)",
    "ncp(f, c)",
    "ncp(n)",
    "entropy_leakage()",
    "reidentification_risk()",
    "reidentification_risk(pid)",
    "l_diversity(n)",
    "t_closeness(n)",
    "t_closeness(f)",
    "entropy_l_diversity(f)",
    "l_diversity(h)",
    "entropy_l_diversity(h)",
    "recursive_cl_diversity(h, 1.5)",
    "t_closeness(h)",
    "t_closeness_ordered(h)",
    "ncp(h)",
    "t_closeness('#' || CAST(h AS VARCHAR))",
    "ncp('#' || CAST(h AS VARCHAR))",
    "l_diversity('#' || CAST(h AS VARCHAR))",
    "k_anonymity(u)",
    "reidentification_risk(u)",
    "k_anonymity('#' || CAST(u AS VARCHAR))",
    "t_closeness_ordered(w)",
    "t_closeness(w)",
    "entropy_l_diversity(w)",
    "ncp(c, n, h, f)",
    # not in the Rust suite's list: the other functions of the crate
    "alpha_anonymity(s)",
    "beta_likeness(s)",
    "enhanced_beta_likeness(s)",
    "delta_disclosure(s)",
]

CASES = ["TRUE", "g1 IS DISTINCT FROM 0", "pid > 3", "pid > 1000"]

GROUPINGS: list[list[str]] = [
    ["g1", "g2"],
    ["g2"],
    ["g1"],
    [],
    ["n"],
    ["h"],
    ["g1", "c", "n"],
]


def queries() -> list[str]:
    """Every filter with every grouping, except that the filter leaving no rows is only run
    without GROUP BY and with one grouping (as the suite's ``queries``)."""
    select = ", ".join(f"{m} AS m{i}" for i, m in enumerate(MEASURES))
    out = []
    for case in CASES:
        for group_by in GROUPINGS:
            if case == "pid > 1000" and len(group_by) == 1:
                continue
            if group_by:
                keys = ", ".join(group_by)
                out.append(
                    f"SELECT {keys}, {select} FROM t WHERE {case} GROUP BY {keys} "
                    f"ORDER BY {', '.join(f'{k} NULLS FIRST' for k in group_by)}"
                )
            else:
                out.append(f"SELECT {select} FROM t WHERE {case}")
    return out
