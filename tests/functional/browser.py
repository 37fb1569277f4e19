"""Headless Chromium from Debian's packages, driven by Selenium through chromium-driver."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
MISSING = ("the browser tests need Debian's chromium and chromium-driver: "
           "apt-get install -y chromium chromium-driver")
#: Unlabelled form controls of the page: each named by its id or tag.
UNLABELLED = """
const controls = 'input:not([type=hidden]), select, textarea, button';
return Array.from(document.querySelectorAll(controls))
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !el.getAttribute('aria-labelledby')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.id || el.name || el.tagName);
"""

#: The texts of the host tiles that their tile cuts off (drawn wider than the tile shows).
CLIPPED = """
return Array.from(document.querySelectorAll('.tile b, .tile span'))
  .filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.textContent);
"""


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver, quit when the block ends."""
    if not (Path(CHROMIUM).exists() and (Path(DRIVER).exists() or shutil.which("chromedriver"))):
        pytest.fail(MISSING, pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, name: str, tmp_path: Path) -> Path:
    """A screenshot of the whole page, in tmp_path, and in $CONSOLIDATOR_SCREENSHOTS when
    set (tools write docs/images/ this way)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height), 600), 2400))
    target = tmp_path / f"{name}.png"
    driver.save_screenshot(str(target))
    folder = os.environ.get("CONSOLIDATOR_SCREENSHOTS")
    if folder:
        shutil.copy(target, Path(folder) / f"{name}.png")
    driver.set_window_size(1280, 900)
    return target
