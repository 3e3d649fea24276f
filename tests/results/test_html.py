"""report.html: self-contained, untrusted text stays text, and it works in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pytest_mlab.results.aggregate import aggregate
from pytest_mlab.results.html import write_report
from pytest_mlab.results.plots import write_plots
from pytest_mlab.trace.step_scores import STEP_SCORES
from tests.results.builders import run, saved_run

EVIL = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> & "quotes"'
CHROMEDRIVER = "/usr/bin/chromedriver"


def report(tmp_path: Path) -> tuple[Path, list]:
    first = saved_run(tmp_path / "runs" / "a", [
        ("Write File", {"train.py": "print(1)\n"}, "File train.py written successfully."),
        ("Write File", {"train.py": "print(2)\nprint('new line')\n"}, EVIL),
        ("Execute Script", {}, "EnvError: no such script"),
    ], run(tokens=1234, cost=0.05), extra_records=[
        {"type": "llm", "role": "main", "model": "gpt-4", "prompt_tokens": 1000, "completion_tokens": 234, "cost": 0.05}])
    (tmp_path / "runs" / "a" / STEP_SCORES).write_text(json.dumps({"best_improvement": 0.5, "steps": [
        {"step": 1, "snapshot": "x", "score": None, "improvement": None, "invalid_reason": "no submission"},
        {"step": 2, "snapshot": "y", "score": 0.9, "improvement": 0.5, "invalid_reason": None}]}))
    second = run("diabetes", "baseline", message=EVIL, passed=False, success=False, improvement=float("inf"))
    runs = [first, second]
    plots = write_plots(tmp_path, aggregate(runs))
    return write_report(tmp_path, runs, plots, title=EVIL), runs


def test_the_report_is_one_file_with_everything_inline(tmp_path):
    path, _ = report(tmp_path)
    page = path.read_text()
    assert page.count("data:image/png;base64,") == 3
    assert not re.search(r'(src|href)="(https?:|//|file:)', page)  # nothing to fetch
    data = page.split('id="mlab-data">', 1)[1].split("</script>", 1)[0]
    parsed = {entry["task"]: entry for entry in json.loads(data)["runs"]}
    assert parsed["digits"]["steps"][1]["observation"] == EVIL
    assert parsed["diabetes"]["improvement"] is None  # infinity is not JSON a browser reads
    assert parsed["digits"]["steps"][0]["llm"][0]["prompt_tokens"] == 1000
    diff = parsed["digits"]["steps"][1]["diff"][0]
    assert diff["path"] == "train.py" and "+print(2)" in diff["text"] and "-print(1)" in diff["text"]


def test_untrusted_text_never_appears_as_markup(tmp_path):
    page = report(tmp_path)[0].read_text()
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert page.count("</script>") == 2  # the data block and the page's own script


@pytest.fixture
def browser():
    if not Path(CHROMEDRIVER).exists() or not shutil.which("chromium"):
        pytest.skip("needs Debian's chromium and chromium-driver (.ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.slow
def test_the_report_works_in_headless_chromium(tmp_path, browser):
    from selenium.webdriver.common.by import By

    path, runs = report(tmp_path)
    browser.get(path.as_uri())
    assert browser.title == EVIL  # escaped in <title>, shown as text
    assert "100.0%" in browser.find_element(By.ID, "agents").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#plots img")) == 3
    assert all(browser.execute_script("return arguments[0].naturalWidth", img) > 0
               for img in browser.find_elements(By.CSS_SELECTOR, "#plots img"))
    buttons = browser.find_elements(By.CSS_SELECTOR, "button.open-run")
    assert [button.text for button in buttons] == [r.run_id for r in sorted(runs, key=lambda r: r.nodeid)]
    next(button for button in buttons if button.text == runs[0].run_id).click()
    assert browser.find_element(By.ID, "run-view").is_displayed()
    assert not browser.find_element(By.ID, "summary-view").is_displayed()
    steps = browser.find_elements(By.CSS_SELECTOR, "details.step")
    assert len(steps) == 3
    assert not steps[1].find_element(By.XPATH, ".//pre[2]").is_displayed()  # closed until clicked
    steps[1].find_element(By.TAG_NAME, "summary").click()
    text = steps[1].text
    assert EVIL in text and "+print(2)" in text
    steps[0].find_element(By.TAG_NAME, "summary").click()
    assert "gpt-4" in steps[0].text and "1000" in steps[0].text
    assert "error" in steps[2].get_attribute("class")
    assert "0.9" in browser.find_element(By.ID, "run-curve").text
    assert browser.execute_script("return window.pwned === undefined")
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    browser.find_element(By.ID, "back").click()
    assert browser.find_element(By.ID, "summary-view").is_displayed()
