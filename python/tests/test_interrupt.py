"""Ctrl-C stops a job (issue 57): the job run from Python stops, commits nothing and leaves
no staging, and the `KeyboardInterrupt` is raised with a note saying nothing was published.

Each job runs in a child Python process held at a named point by the engine's test hook
(`ANON_TEST_PAUSE_AT`, a blocking sleep), so the SIGINT lands where the test says: before the
search, and after the release's files were written (the staging then holds data).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import POLICIES

CHILD = """
import sys
import datafusion_anonymity as anon
try:
    anon.anonymize(sys.argv[1], out=sys.argv[2], algorithm="mondrian", format=sys.argv[3], seed=1)
except KeyboardInterrupt as interrupted:
    print("KeyboardInterrupt:", " ".join(getattr(interrupted, "__notes__", [])), flush=True)
    sys.exit(3)
print("finished", flush=True)
"""


@pytest.mark.parametrize(
    ("point", "out", "fmt"),
    [
        ("before-search", "out.parquet", "parquet"),
        ("after-write", "out.parquet", "parquet"),
        ("before-commit", "table", "delta"),
    ],
)
def test_ctrl_c_stops_the_job_and_publishes_nothing(tmp_path, point, out, fmt):
    source = (POLICIES / "li2007_drop.toml").read_text()
    source = source.replace('"../data/li2007.csv"', f'"{POLICIES.parent / "data" / "li2007.csv"}"')
    policy = tmp_path / "p.toml"
    policy.write_text(source)
    log = tmp_path / "stderr.log"
    env = dict(os.environ, ANON_TEST_PAUSE_AT=point, ANON_TEST_PAUSE_SECONDS="2")
    with open(log, "w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(policy), str(tmp_path / out), fmt],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 120
        while f"paused at {point}" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            assert child.poll() is None, log.read_text()
            time.sleep(0.02)
        if point == "after-write":
            assert [p for p in os.listdir(tmp_path) if ".anon-tmp-" in p], "nothing staged yet"
        child.send_signal(signal.SIGINT)
        stdout, _ = child.communicate(timeout=120)
    assert child.returncode == 3, (stdout, log.read_text())
    assert "nothing was published" in stdout, stdout
    # nothing at the output, and no staging beside it
    assert not (tmp_path / out).exists()
    assert not [p for p in os.listdir(tmp_path) if ".anon-tmp-" in p]
