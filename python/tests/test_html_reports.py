"""Every kind of HTML report opened in a real browser: headless Chromium (Debian's `chromium`)
driven by Playwright. Each page must load without a console error, a script error or a failed
request (the pages are self-contained: nothing may be fetched), and every chart must draw: each
SVG has a size and its bars. Skipped, saying so, where no Chromium is installed (.ci/run
installs it)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

import datafusion_anonymity as anon
from conftest import REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium installed (apt-get install chromium): the HTML reports were not opened "
    "in a browser",
)

EVENTS = (
    "device_id,lat,lon,ts,activity\n"
    + "".join(
        # no trailing zero: a number spelled otherwise than it prints stays text
        f"d{i % 7},48.8{i % 9 + 1},2.3{i % 8 + 1},2024-03-04T08:{i % 60:02}:00,"
        f"{['home', 'work'][i % 2]}\n"
        for i in range(200)
    )
)
CLOAKING = """[input]
path = "events.csv"
[privacy]
method = "cloaking"
person = "device_id"
latitude = "lat"
longitude = "lon"
time = "ts"
k = 2
max_cell_side = 5000
window = "15m"
max_window = "1h"
max_suppression = 0.5
cells = "adaptive"
[attributes]
device_id = { role = "identifier" }
lat = { role = "quasi_identifier" }
lon = { role = "quasi_identifier" }
ts = { role = "quasi_identifier", type = "timestamp" }
activity = { role = "insensitive" }
"""
RECORDS = "income,age,sector\n" + "".join(
    f"{1000 + (i * 37) % 500},{20 + i % 50},{['x', 'y', 'z'][i % 3]}\n" for i in range(300)
)
MICRO = '{ role = "quasi_identifier", perturbation = { kind = "microaggregation" } }'
PERTURBATION = f"""[input]
path = "records.csv"
[privacy]
method = "perturbation"
k = 3
[attributes]
income = {MICRO}
age = {MICRO}
sector = {{ role = "quasi_identifier", perturbation = {{ kind = "pram", retention = 0.8 }} }}
"""


def open_in_chromium(page_path: pathlib.Path) -> tuple[list[str], list[list[float]]]:
    """The errors the page raised while loading, and each chart's [width, height, bars]."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        page.goto(page_path.as_uri(), wait_until="load")
        charts = page.eval_on_selector_all(
            "figure svg",
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [r.width, r.height, e.querySelectorAll('rect').length]; })",
        )
        browser.close()
    return errors, charts


def assert_renders(page_path: pathlib.Path, charts_expected: int) -> None:
    errors, charts = open_in_chromium(page_path)
    assert errors == [], f"{page_path.name}: {errors}"
    assert len(charts) >= charts_expected, f"{page_path.name}: {charts}"
    for width, height, bars in charts:
        assert width > 0 and height > 0 and bars > 0, f"{page_path.name}: {charts}"


def test_every_html_report_renders_in_chromium(tmp_path):
    # generalization (anonymize): the release's class sizes chart
    generalized = tmp_path / "generalized.html"
    anon.anonymize(
        REPO / "examples" / "adult" / "policy.toml",
        out=tmp_path / "adult.parquet",
        html_report=generalized,
    )
    assert_renders(generalized, 1)

    # perturbation: its groups by size
    (tmp_path / "records.csv").write_text(RECORDS)
    (tmp_path / "perturbation.toml").write_text(PERTURBATION)
    perturbed = tmp_path / "perturbed.html"
    anon.anonymize(
        tmp_path / "perturbation.toml", out=tmp_path / "p.parquet", html_report=perturbed
    )
    assert_renders(perturbed, 1)

    # cloaking: its labels by size
    (tmp_path / "events.csv").write_text(EVENTS)
    (tmp_path / "cloaking.toml").write_text(CLOAKING)
    cloaked = tmp_path / "cloaked.html"
    anon.anonymize(tmp_path / "cloaking.toml", out=tmp_path / "c.parquet", html_report=cloaked)
    assert_renders(cloaked, 1)

    # the profile, from the command line
    binary = os.environ.get("ANON_BIN")
    if binary and pathlib.Path(binary).is_file():
        profile = tmp_path / "profile.html"
        done = subprocess.run(
            [
                binary,
                "profile",
                str(REPO / "examples" / "adult" / "adult.parquet"),
                "--policy",
                str(REPO / "examples" / "adult" / "policy.toml"),
                "--format",
                "html",
                "--quiet",
            ],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        profile.write_text(done.stdout)
        assert_renders(profile, 1)
