"""Headless Chromium for the console's browser tests and screenshots: Debian's
``chromium`` and ``chromium-driver`` (``make install-chromium`` installs
them), driven by selenium with the driver's path given, so selenium never
downloads a browser or a driver."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

MISSING = (
    "headless Chromium is not installed: `make install-chromium` (as root) installs "
    "Debian's chromium and chromium-driver, or apt-get install chromium chromium-driver"
)


def chromium_available() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists() and shutil.which("chromium") is not None


def start_chromium(width: int = 1400, height: int = 900):  # type: ignore[no-untyped-def]
    """A headless Chromium driven by selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        f"--window-size={width},{height}",
        "--lang=en-GB",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
