#!/usr/bin/env bash
# The Python package's tests: builds the extension (maturin, dev profile, in the same target
# directory as `cargo nextest run`, so DataFusion is not compiled again) into a virtual
# environment with datafusion 55.0.0, pyarrow, pandas (a kind of input), deltalake (a reader
# of the Delta tables it publishes), playwright (which drives Debian's Chromium, if installed,
# through the HTML reports: tests/test_html_reports.py) and mypy from PyPI, then checks the
# types and runs pytest.
# Idempotent: the environment is created once and kept in the target directory; pip and cargo
# skip what is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# cargo's own default when unset, so that this reuses what `cargo nextest run` built
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
venv="$CARGO_TARGET_DIR/python-venv"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ ! -x "$venv/bin/python" ]; then
    echo "python/run_tests.sh: creating $venv"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "datafusion==55.0.0" "pyarrow>=15" "maturin>=1.6,<2" "pytest>=7" "deltalake>=1.1,<2" \
    "playwright>=1.40,<2" "pandas>=2" "mypy>=1.10"

# `maturin develop` installs the package in the environment: the compiled module goes next to
# the Python sources (python/python/datafusion_anonymity/_internal.*.so, git-ignored)
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop \
    --manifest-path "$here/Cargo.toml" --profile dev --quiet

# the `anon` binary `cargo nextest run` built, for the tests that compare the command line
# with Python (tests/test_parity.py)
export ANON_BIN="${ANON_BIN:-$CARGO_TARGET_DIR/debug/anon}"
# the loopback S3-compatible server (examples/s3_server.rs) `cargo nextest run` built, for the
# tests of where a Python job's objects go (tests/test_storage.py)
export ANON_S3_SERVER="${ANON_S3_SERVER:-$CARGO_TARGET_DIR/debug/examples/s3_server}"

cd "$here"
# the types (issue 57): the package, its report TypedDicts and the stub of the compiled module
# checked by mypy (strict), then the stub against the module as built (stubtest)
"$venv/bin/python" -m mypy --config-file mypy.ini --cache-dir "$CARGO_TARGET_DIR/mypy-cache"
"$venv/bin/python" -m mypy.stubtest datafusion_anonymity._internal --mypy-config-file mypy.ini
exec "$venv/bin/python" -m pytest tests -q -p no:cacheprovider "$@"
