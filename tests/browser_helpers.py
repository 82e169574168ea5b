"""Headless Chromium driven by selenium (Debian's chromium and chromium-driver), for the report tests."""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    return exe


@contextmanager
def browser(width: int = 1400, height: int = 1000):
    """A selenium Chrome driver on headless Chromium with a fresh profile; skips when chromium,
    chromedriver or selenium is missing."""
    exe = chromium()
    driver_path = shutil.which("chromedriver") or (CHROMEDRIVER if Path(CHROMEDRIVER).exists() else None)
    if driver_path is None:
        pytest.skip("chromedriver is not installed (Debian's chromium-driver; .ci/run installs it)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extra has it)")
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="noise-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = exe
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
