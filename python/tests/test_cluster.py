"""`cluster=`: a Python job's queries on a Ballista cluster, a scheduler and an executor as
separate `anon` processes on 127.0.0.1 (the binary `cargo nextest run` built, ANON_BIN), as the
command line's `--cluster` runs them: the same figures as the local run."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

import pytest

import datafusion_anonymity as anon
from conftest import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cluster(tmp_path):
    binary = os.environ.get("ANON_BIN")
    if not binary or not pathlib.Path(binary).is_file():
        pytest.skip("ANON_BIN does not name the anon binary (python/run_tests.sh sets it)")
    scheduler = f"127.0.0.1:{free_port()}"
    log = open(tmp_path / "cluster.log", "w")
    processes = [
        subprocess.Popen(
            [binary, "executor", "--scheduler", scheduler, "--bind",
             f"127.0.0.1:{free_port()}", "--grpc-port", str(free_port()),
             "--concurrent-tasks", "2"],
            stdout=log,
            stderr=log,
        ),
        subprocess.Popen([binary, "scheduler", "--bind", scheduler], stdout=log, stderr=log),
    ]
    try:
        yield f"df://{scheduler}"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        log.close()


def test_sql_and_profile_on_a_cluster_give_the_local_figures(cluster, tmp_path):
    data = REPO / "sql" / "data" / "li2007.csv"
    query = (
        "SELECT mask(CAST(zip AS VARCHAR), 2) AS zip, k_anonymity() AS k, "
        "l_diversity(disease) AS l, t_closeness(disease) AS t FROM li GROUP BY 1 ORDER BY 1"
    )
    local = anon.sql(query, tables={"li": data})
    # the executor registers with the scheduler within seconds; until then a query fails
    deadline = time.monotonic() + 60
    while True:
        try:
            remote = anon.sql(query, tables={"li": data}, cluster=cluster)
            break
        except anon.AnonymityError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert remote.to_pylist() == local.to_pylist()
    # by hand: 476** has 6 rows and 5 diseases, 479** 3 rows and 3
    assert [(r["zip"], r["k"], r["l"]) for r in remote.to_pylist()] == [
        ("476**", 6, 5), ("479**", 3, 3)
    ]
    on_cluster = anon.profile(data, qi="zip,age", sensitive="disease", cluster=cluster)
    here = anon.profile(data, qi="zip,age", sensitive="disease")
    assert on_cluster["anonymity"] == here["anonymity"]


def test_an_unreachable_scheduler_is_named(tmp_path):
    url = f"df://127.0.0.1:{free_port()}"
    with pytest.raises(anon.AnonymityError, match=f"cannot use the Ballista cluster at {url}"):
        anon.sql("SELECT 1", cluster=url)
