"""Where a Python job's objects go (issue 52): the policy's `[storage] endpoint` names one
S3-compatible server, the environment (`AWS_ENDPOINT_URL`) another, each a process of its own
(examples/s3_server.rs: s3s-fs over a directory, bucket `b` the directory `<root>/b`). Every
object of an `anonymize()` (the data files, the manifest, the reports) must be on the
policy's server and none on the other; a policy without `[storage]` goes where the
environment says. Skipped, saying so, without the server binary (python/run_tests.sh sets
ANON_S3_SERVER)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import time

import pytest

import datafusion_anonymity as anon
from conftest import REPO

SERVER = os.environ.get("ANON_S3_SERVER")
KEY, SECRET = "anon-python-key", "anon-python-secret-4d"

POLICY = """name = "li2007"
[input]
path = "s3://raw/in/li2007.csv"
[privacy]
k = 3
max_suppression = 0.5
[attributes]
id = {{ role = "identifier" }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask" }} }}
age = {{ role = "quasi_identifier", hierarchy = {{ kind = "interval", widths = [10, 20] }} }}
salary = {{ role = "insensitive" }}
disease = {{ role = "sensitive" }}
{storage}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def objects(root: pathlib.Path) -> list[str]:
    """Every object of the server at `root`, as `bucket/key` (s3s-fs's own files, dot files at
    the root, left out)."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not str(p.relative_to(root)).startswith(".")
    )


@pytest.fixture
def two_servers(tmp_path, monkeypatch):
    if not SERVER or not pathlib.Path(SERVER).is_file():
        pytest.skip("ANON_S3_SERVER does not name examples/s3_server (python/run_tests.sh sets it)")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    servers = []
    for name in ("policy", "environment"):
        root = tmp_path / name
        for bucket in ("raw/in", "lake"):
            (root / bucket).mkdir(parents=True)
        shutil.copy(REPO / "sql" / "data" / "li2007.csv", root / "raw" / "in" / "li2007.csv")
        port = free_port()
        process = subprocess.Popen(
            [SERVER, str(root), f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        servers.append((root, f"http://127.0.0.1:{port}", process))
    for variable, value in [
        ("AWS_ACCESS_KEY_ID", KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ENDPOINT_URL", servers[1][1]),
    ]:
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield servers
    for _, _, process in servers:
        process.kill()
        process.wait()


def test_every_object_goes_to_the_store_the_policy_names(tmp_path, two_servers):
    (policy_root, policy_endpoint, _), (env_root, _, _) = two_servers
    before_env = objects(env_root)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        POLICY.format(storage=f'[storage]\nendpoint = "{policy_endpoint}"\nallow_http = true\n')
    )
    report = anon.anonymize(
        policy,
        out="s3://lake/rel/",
        report="s3://lake/rel.json",
        html_report="s3://lake/rel.html",
        seed=3,
    )
    assert report["publish"]["verification"]["k"] >= 3
    on_policy = objects(policy_root)
    for expected in ("lake/rel/_SUCCESS", "lake/rel.json", "lake/rel.html"):
        assert expected in on_policy, on_policy
    manifest = json.loads((policy_root / "lake" / "rel" / "_SUCCESS").read_text())
    for file in manifest["files"]:
        assert f"lake/rel/{file}" in on_policy, on_policy
    assert not any("anon-tmp" in o for o in on_policy), on_policy
    assert objects(env_root) == before_env, "the environment's server got objects"

    # without [storage]: the environment's server, and nothing more on the policy's
    plain = tmp_path / "plain.toml"
    plain.write_text(POLICY.format(storage=""))
    anon.anonymize(plain, out="s3://lake/env/", seed=3)
    assert objects(policy_root) == on_policy
    assert "lake/env/_SUCCESS" in objects(env_root)
