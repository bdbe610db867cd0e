"""The page at /web, driven in headless Chromium (Debian's `chromium`, through Playwright): pick a task, let the
oracle play every role, read the final score off the page; and play a role by typing tool calls.

Without Chromium (or Playwright) these tests skip and say why. With DRILL_REQUIRE_BROWSER=1, as `.ci/run` sets after
installing Debian's chromium, a missing browser fails them instead, so CI always proves the page.

Set DRILL_WEB_SCREENSHOT=docs/serving-web.png to refresh the screenshot docs/serving.md shows."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import NoReturn
from pathlib import Path

import pytest

from drill import registry
from drill.core import run_episodes

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAPTOP = {"width": 1366, "height": 768}
REQUIRE_BROWSER = "DRILL_REQUIRE_BROWSER"  # set to 1 (as .ci/run does): a missing browser fails instead of skipping


def no_browser(reason: str) -> NoReturn:
    """Skip with the reason, or fail with it where the environment says a browser must be there."""
    if os.environ.get(REQUIRE_BROWSER, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_BROWSER} is set, so the web page tests must run)")
    pytest.skip(f"{reason}; the web page tests need it ({REQUIRE_BROWSER}=1 makes this a failure)")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    try:
        from playwright import sync_api as playwright
    except ImportError:
        no_browser("Playwright is not installed: pip install 'drill[dev]'")
    if not Path(CHROMIUM).exists():
        no_browser("headless Chromium was not found on PATH or at /usr/bin/chromium: apt-get install chromium")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


def expect(locator: object) -> object:
    """Playwright's `expect` (imported here: the module loads, and its tests skip, without Playwright)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def new_page(browser) -> tuple[object, list[str]]:
    """A page and the errors its console reports: the page must run under its Content-Security-Policy with
    nothing refused (a refused inline style or script shows only there)."""
    page, errors = browser.new_page(viewport=LAPTOP), []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page, errors


def test_pick_a_task_play_it_with_the_oracle_and_read_the_final_score(serve, browser, tmp_path) -> None:
    spec = registry.get("chaosops")
    server = serve("chaosops")
    task = next(t for t in spec.make({})().tasks("test") if t.tier == "hard")
    local = run_episodes(spec.make({}), [(task, 4)], spec.baselines({})["oracle"](), spec.rubric_for({}))[0]

    page, errors = new_page(browser)
    page.goto(server.url + "/web")
    page.wait_for_selector(f"#task option[value='{task.id}']", state="attached")
    assert page.locator("#task optgroup[label='test · hard']").count() == 1  # tasks grouped by tier
    page.select_option("#task", task.id)
    page.fill("#seed", "4")
    for role in spec.make({})().roles:
        page.select_option(f"select[data-role='{role}']", "oracle")
    page.click("#start")
    expect(page.locator("#play")).to_be_enabled()  # (Playwright's wait_for_function evals: the CSP refuses it)
    page.click("#step")  # one turn first
    page.wait_for_selector(".turn")
    assert page.locator(".turn").count() == 1
    page.click("#play")
    page.wait_for_selector("#final:not([hidden])", timeout=60_000)
    shown = float(page.inner_text("#final-total"))
    assert shown == pytest.approx(local.score.total, abs=1e-3)
    assert page.locator(".turn").count() == len(local.turns)
    assert page.inner_text("#running-total") == page.inner_text("#final-total")
    components = page.locator("#final-table td:first-child").all_inner_texts()
    assert components == list(local.score.components)
    assert "oracle (scripted)" in page.inner_text("#turns")  # who played each turn, always on the page
    screenshot = tmp_path / "serving-web.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("DRILL_WEB_SCREENSHOT"):
        shutil.copy(screenshot, os.environ["DRILL_WEB_SCREENSHOT"])
    assert errors == []
    page.close()


def test_a_person_plays_a_role_by_typing_tool_calls(serve, browser) -> None:
    server = serve("triage", "--mode", "agent")
    page, errors = new_page(browser)
    page.goto(server.url + "/web")
    page.wait_for_selector("select[data-role='agent'] option[value='__human__']", state="attached")
    page.select_option("select[data-role='agent']", "__human__")
    page.click("#start")
    page.wait_for_selector("#human:not([hidden])")
    assert page.locator("#step").is_disabled()
    page.select_option("#tool", "get_article")
    page.fill("#args", '{"article_id": 7}')  # the wrong type: the environment says so, the page shows it
    page.click("#send")
    page.wait_for_selector(".turn .err")
    assert "article_id" in page.inner_text(".turn .err")
    page.select_option("#tool", "search_kb")
    page.fill("#args", '{"query": "certificate expired"}')
    page.click("#send")
    expect(page.locator(".turn")).to_have_count(2)
    assert "searched" in page.inner_text("#turns")
    # what an agent writes is shown as text: no markup runs, and a bidi override (which turned the rest of the
    # action line around, so the page showed another call than the one made) is written out as [U+202E]
    hostile = '<img src=x onerror=alert(1)><svg onload=alert(2)>" onmouseover="alert(3) \u202edrowssap\u202c\u2066'
    page.fill("#args", json.dumps({"query": hostile}))
    page.click("#send")
    expect(page.locator(".turn")).to_have_count(3)
    shown = page.inner_text("#turns")
    assert "[U+202E]drowssap[U+202C][U+2066]" in shown and "\u202e" not in shown and "\u2066" not in shown
    assert page.locator("#turns img, #turns svg, #turns script, [onmouseover]").count() == 0
    page.fill("#args", "{not json")
    page.click("#send")
    assert "not JSON" in page.inner_text("#status")
    page.select_option("select[data-role='agent']", "oracle")  # hand the role to the oracle to finish
    page.click("#play")
    page.wait_for_selector("#final:not([hidden])", timeout=60_000)
    assert float(page.inner_text("#final-total")) <= 1.0
    assert errors == []
    page.close()
