"""The dashboard in a real browser (headless Chromium, Selenium): each persona signs in
through Keystone and sees what the policy lets it do; a forged request is refused all the
same; an admin watches a plan run to completion on the fake cloud."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.functional.api_stack import Stack, api_stack
from tests.functional.browser import CLIPPED, UNLABELLED, chromium, screenshot
from tests.functional.waits import wait_until

PASSWORDS = {"reader": "reader-secret", "operator": "operator-secret",
             "cloud-admin": "cloud-admin-secret"}
#: A forged approve from the signed-in page: the form's CSRF token, the plan's ETag.
FORGE = """
const done = arguments[arguments.length - 1];
const form = new FormData();
form.append('csrf', document.querySelector('input[name=csrf]').value);
form.append('etag', arguments[1]);
fetch('/dashboard/plans/' + arguments[0] + '/approve', {method: 'POST', body: form,
      redirect: 'manual'}).then(r => r.text().then(t => done([r.status, t])));
"""


def sign_in(driver: Any, stack: Stack, user: str) -> None:
    """Sign in from the keyboard alone: type, Tab, type, Enter."""
    driver.get(stack.url + "/dashboard/login")
    name = driver.find_element(By.ID, "username")
    assert driver.switch_to.active_element == name       # the form has the focus
    name.send_keys(user, Keys.TAB, PASSWORDS[user], Keys.ENTER)
    wait_until(lambda: "/dashboard/hosts" in driver.current_url, f"{user} to be signed in")


def sign_out(driver: Any) -> None:
    driver.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_until(lambda: "/dashboard/login" in driver.current_url, "the sign-out")


def plan_status(stack: Stack) -> str:
    return str(json.loads(stack.cli("plans", "list", "-f", "json").out)[0]["status"])


def test_a_reader_sees_hosts_and_a_plan_and_may_not_approve(tmp_path: Path) -> None:
    with api_stack(tmp_path) as stack, chromium() as driver:
        driver.get(stack.url + f"/dashboard/plans/{stack.plan_id}")
        assert "/dashboard/login" in driver.current_url      # no page without signing in
        assert driver.find_elements(By.ID, "username")
        sign_in(driver, stack, "reader")
        cookie = driver.get_cookie("consolidator_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert "reader-secret" not in json.dumps(driver.get_cookies())
        tiles = driver.find_elements(By.CSS_SELECTOR, ".tile")
        assert sorted(t.find_element(By.TAG_NAME, "b").text for t in tiles) == [
            "c1", "c2", "c3", "c4"]
        assert all("s-in-service" in t.get_attribute("class") for t in tiles)
        # each host's usage from the newest snapshot: 3 instances of 2 vCPUs and 2 GiB on
        # 16 vCPUs and 32 GiB, in words (what a screen reader reads) and in the tooltip
        c1 = next(t for t in tiles if t.find_element(By.TAG_NAME, "b").text == "c1")
        assert c1.text.splitlines()[1:] == ["in service · 3 inst.", "CPU 38% · RAM 19%"]
        assert "CPU 6 of 16 vCPUs, memory 6 of 32 GiB in use" in c1.get_attribute("title")
        assert driver.execute_script(CLIPPED) == []
        assert driver.execute_script(UNLABELLED) == []
        screenshot(driver, "dashboard-hosts", tmp_path)

        driver.find_element(By.ID, "zone").send_keys("west")
        driver.find_element(By.XPATH, "//button[text()='Filter']").send_keys(Keys.ENTER)
        wait_until(lambda: "zone=west" in driver.current_url, "the zone filter")
        assert sorted(t.text.split()[0] for t in driver.find_elements(
            By.CSS_SELECTOR, ".tile")) == ["c2", "c4"]

        driver.get(stack.url + f"/dashboard/plans/{stack.plan_id}")
        figures = {d.find_element(By.TAG_NAME, "dt").text: d.find_element(By.TAG_NAME, "dd").text
                   for d in driver.find_elements(By.CSS_SELECTOR, ".figures div")}
        assert (figures["Hosts freed"], figures["Migrations"]) == ("1", "3")
        assert driver.find_elements(By.ID, "approve") == []
        assert driver.find_elements(By.ID, "no-actions")
        assert driver.execute_script(UNLABELLED) == []
        status, text = driver.execute_async_script(FORGE, stack.plan_id, '"any"')
        assert status == 403
        assert "consolidation:plan:approve" in text
        assert plan_status(stack) == "proposed"

        for page in ("plans", "journal", "history"):
            driver.get(stack.url + f"/dashboard/{page}")
            assert driver.execute_script(UNLABELLED) == [], page


def test_an_operator_approves_and_an_admin_watches_the_apply(tmp_path: Path) -> None:
    with api_stack(tmp_path) as stack, chromium() as driver:
        sign_in(driver, stack, "operator")
        driver.get(stack.url + f"/dashboard/plans/{stack.plan_id}")
        assert driver.find_elements(By.ID, "apply") == []     # an operator does not apply
        screenshot(driver, "dashboard-plan", tmp_path)
        driver.find_element(By.ID, "approve").send_keys(Keys.ENTER)
        wait_until(lambda: text_of(driver, "plan-status") == "approved",
                   "the plan to be approved")
        sign_out(driver)

        sign_in(driver, stack, "cloud-admin")
        driver.get(stack.url + f"/dashboard/plans/{stack.plan_id}")
        with stack.daemon():
            driver.find_element(By.ID, "apply").click()
            wait_until(lambda: "/dashboard/jobs/" in driver.current_url, "the job page")
            seen = set()

            def finished() -> bool:
                state = job_state(driver)
                seen.add(state)
                return state in ("succeeded", "failed", "expired")

            wait_until(finished, "the job to finish", interval=0.2)
        assert driver.find_element(By.ID, "job-state").text == "succeeded"
        assert seen & {"queued", "running"}, seen          # it was watched, not just read
        badges = driver.find_elements(By.CSS_SELECTOR, "[data-move]")
        assert [b.text for b in badges] == ["succeeded"] * 3
        screenshot(driver, "dashboard-job", tmp_path)
        assert plan_status(stack) == "succeeded"

        driver.get(stack.url + f"/dashboard/journal?plan_id={stack.plan_id}&action=migrate")
        rows = driver.find_elements(By.CSS_SELECTOR, "table.list tbody tr")
        assert len(rows) == 3 and all("succeeded" in r.text for r in rows)
        screenshot(driver, "dashboard-journal", tmp_path)
        stack.cli("snapshot")
        driver.get(stack.url + "/dashboard/history")
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.chart")) == 3
        screenshot(driver, "dashboard-history", tmp_path)
        driver.get(stack.url + "/dashboard/hosts")
        states = {t.text.split()[0]: t.get_attribute("class") for t in
                  driver.find_elements(By.CSS_SELECTOR, ".tile")}
        assert "s-off" in states["c4"], states


def text_of(driver: Any, element_id: str) -> str:
    """An element's text, read as the page is redrawn or replaced by the next one after a
    form's post ("" while the element is replaced, or the next page not yet drawn: not yet a
    state, not an error; a wait on it still fails if it never comes). Chromium reports an
    element replaced between the find and the read as a stale reference, or, under load,
    as an inspector error: "Node with given id does not belong to the document"."""
    try:
        return driver.find_element(By.ID, element_id).text
    except (StaleElementReferenceException, NoSuchElementException):
        return ""
    except WebDriverException as exc:
        if "does not belong to the document" not in str(exc.msg):
            raise
        return ""


def job_state(driver: Any) -> str:
    """The job page's state, read as it is redrawn live."""
    return text_of(driver, "job-state")


def test_an_operator_picks_a_point_of_the_front_from_the_keyboard(tmp_path: Path) -> None:
    with api_stack(tmp_path) as stack, chromium() as driver, stack.daemon():
        sign_in(driver, stack, "operator")
        driver.get(stack.url + f"/dashboard/plans/{stack.plan_id}")
        driver.find_element(By.XPATH, "//button[text()='Compute the front of this snapshot']"
                            ).send_keys(Keys.ENTER)
        wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#front a.point"),
                   "the front to be drawn")
        points = driver.find_elements(By.CSS_SELECTOR, "#front a.point")
        labels = [p.get_attribute("aria-label") for p in points]
        assert all(re.search(r"\d+ hosts? freed for \d+ migrations?", label)
                   for label in labels), labels
        best = max(points, key=lambda p: int(re.search(
            r"(\d+) hosts? freed", p.get_attribute("aria-label")).group(1)))
        driver.execute_script("arguments[0].focus()", best)
        driver.switch_to.active_element.send_keys(Keys.ENTER)     # pick it from the keyboard
        picked = wait_until(lambda: driver.find_elements(By.ID, "picked"), "the pick")
        assert re.search(r"hosts? freed for", picked[0].text)
        assert "picked" in driver.find_element(
            By.CSS_SELECTOR, "#front a.point.picked").get_attribute("class")
        screenshot(driver, "dashboard-front", tmp_path)
        most = int(re.search(r"for (\d+) migrations?", picked[0].text).group(1))
        driver.find_element(By.ID, "plan-point").send_keys(Keys.ENTER)
        wait_until(lambda: job_state(driver) == "succeeded", "the plan job")
        driver.find_element(By.PARTIAL_LINK_TEXT, "Plan ").click()
        figures = {d.find_element(By.TAG_NAME, "dt").text: d.find_element(By.TAG_NAME, "dd").text
                   for d in driver.find_elements(By.CSS_SELECTOR, ".figures div")}
        assert driver.find_element(By.ID, "plan-status").text == "proposed"
        assert int(figures["Migrations"]) <= most
