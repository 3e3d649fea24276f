"""report.html in a real headless Chromium: what its cells show once its script ran, filtering,
anchors to runs and steps, the LLM texts, and that untrusted text never runs.

Most tests read the page as Chromium leaves it (``--dump-dom``), with filters and anchors given in
the URL; one clicks through it with selenium.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.results.support import COMPLETION, EVIL, PROMPT, STEPS, report

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
CHROMEDRIVER = "/usr/bin/chromedriver"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
DIGITS = "digits[mini-reference-s0]"


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: "Node | None") -> None:
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text for child in self.children)

    def all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        """Descendants with this tag whose attributes hold these values (``cls`` for class words)."""
        found = []
        for child in self.children:
            if isinstance(child, Node):
                classes = (child.attrs.get("class") or "").split()
                if (tag is None or child.tag == tag) and all(
                        value in classes if key == "cls" else child.attrs.get(key.replace("_", "-")) == value
                        for key, value in attrs.items()):
                    found.append(child)
                found.extend(child.all(tag, **attrs))
        return found

    def one(self, tag: str | None = None, **attrs: str) -> "Node":
        (node,) = self.all(tag, **attrs)
        return node

    @property
    def hidden(self) -> bool:
        return "hidden" in self.attrs


class Tree(HTMLParser):
    """The DOM Chromium serialised (every element closed, as it writes them)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#document", {}, None)
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_endtag(self, tag):
        if tag not in VOID and self.current.parent is not None:
            self.current = self.current.parent

    def handle_data(self, data):
        self.current.children.append(data)


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = next((found for found in map(shutil.which, BROWSERS) if found), None)
    if binary is None:
        pytest.skip(f"no Chromium or Chrome binary on PATH (looked for {', '.join(BROWSERS)}); "
                    f".ci/run installs Debian's chromium")
    return binary


@pytest.fixture
def page(tmp_path, chromium):
    """The report of tests/results/support.py's runs, and a way to open it at a URL suffix."""
    path = report(tmp_path)[0]

    def opened(suffix: str = "") -> Node:
        completed = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri() + suffix],
            capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0 and "<body" in completed.stdout, completed.stderr[-2000:]
        return Tree(completed.stdout).root

    return opened


def anchor(run_id: str, step: int | None = None) -> str:
    return "#" + quote(f"run-{run_id}" + (f"-step-{step}" if step is not None else ""), safe="")


def row_of(rows: list[Node], text: str) -> Node:
    (row,) = [row for row in rows if text in row.text]
    return row


def cells(row: Node) -> list[str]:
    return [cell.text.strip() for cell in row.all("td")]


@pytest.mark.slow
def test_the_cells_show_what_the_runs_say(page):
    dom = page()
    assert dom.one("h1", id="title").text == EVIL
    header = dom.one(id="header").text
    for expected in ("0123abcd", "lab-7, 16 CPUs", "GPU: NVIDIA H100", "gpt-4", "local (isolated (bwrap))"):
        assert expected in header
    runs = dom.one(id="runs-table").all("tr", cls="run-row")
    digits = row_of(runs, DIGITS)
    steps = digits.one("td", cls="steps")
    assert steps.text == str(STEPS) and steps.one("a").attrs["href"] == anchor(DIGITS, STEPS)
    assert digits.one("a", cls="open-run").attrs["href"] == anchor(DIGITS)
    assert cells(row_of(runs, "research"))[4:6] == ["FAIL: grader error", "yes"]
    matrix = dom.one(id="matrix")
    labels = [th.text for th in matrix.all("th")]
    assert labels == ["task", "baseline", "reference", "research (gpt-4)"]
    digits_row = row_of(matrix.all("tr"), "digits")
    reference = digits_row.all("td")[labels.index("reference")]
    assert [div.text for div in reference.all("div")] == [
        "100% [21%, 100%]", "+50.0%", "paper's rule: 100% of 1", "n=1"]
    research = digits_row.all("td")[labels.index("research (gpt-4)")]
    assert [div.text for div in research.all("div")][:2] == ["0% [0%, 79%]", "-"]
    metric = cells(row_of(dom.one(id="metrics").all("tr"), "reference"))
    assert metric[3:] == ["0.6000", "1 / 1", "0.9000", "-", "0.9000", "0.9000"]
    assert len(dom.one(id="plots").all("img")) == 5


@pytest.mark.slow
def test_filters_from_the_url_hide_rows_columns_and_count_what_is_left(page):
    failed = page("?outcome=failed")
    runs = failed.one(id="runs-table").all("tr", cls="run-row")
    assert [row.hidden for row in runs] == [False, True, False]  # ordered by node id: diabetes, digits, digits
    assert "showing 2 of 3 runs" in failed.one(id="filter-count").text
    grader = page("?outcome=grader%20error&agent=research%20(gpt-4)")
    assert [row.hidden for row in grader.one(id="runs-table").all("tr", cls="run-row")] == [True, True, False]
    assert [th.text for th in grader.one(id="matrix").all("th") if not th.hidden] == ["task", "research (gpt-4)"]
    diabetes = page("?task=diabetes")
    assert [row.text.startswith("diabetes") for row in diabetes.one(id="matrix").all("tr")[1:] if not row.hidden] == [True]
    assert all("diabetes" in row.text for row in diabetes.one(id="groups").all("tr")[1:] if not row.hidden)


@pytest.mark.slow
def test_a_step_anchor_opens_its_run_at_that_step_with_the_llm_texts_collapsed(page):
    dom = page(anchor(DIGITS, 2))
    assert "display: none" in dom.one(id="summary-view").attrs["style"]
    assert "display: block" in dom.one(id="run-view").attrs["style"]
    steps = dom.one(id="run-steps").all("details", cls="step")
    assert [step.attrs["id"] for step in steps] == [f"run-{DIGITS}-step-{n}" for n in range(1, STEPS + 1)]
    assert "open" in steps[1].attrs and "open" not in steps[0].attrs
    assert EVIL in steps[1].text  # shown as text: the page's own script stayed the only one
    texts = steps[0].all("details", cls="llm-text")
    assert [box.one("pre").text for box in texts] == [PROMPT, COMPLETION]
    assert not any("open" in box.attrs for box in texts)
    curve = dom.one(id="run-curve")
    assert [a.attrs["href"] for a in curve.all("a")] == [anchor(DIGITS, 1), anchor(DIGITS, 2)]
    assert len(dom.all("script")) == 2


@pytest.fixture
def browser(chromium):
    if not Path(CHROMEDRIVER).exists():
        pytest.skip(f"needs chromedriver at {CHROMEDRIVER} (.ci/run installs Debian's chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.slow
def test_clicking_through_the_report(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    path, runs = report(tmp_path)
    browser.get(path.as_uri())
    assert browser.title == EVIL  # escaped in <title>, shown as text
    assert "100.0%" in browser.find_element(By.ID, "agents").text
    images = browser.find_elements(By.CSS_SELECTOR, "#plots img")
    assert len(images) == 5 and all(browser.execute_script("return arguments[0].naturalWidth", img) > 0 for img in images)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.run-row")
    Select(browser.find_element(By.ID, "filter-agent")).select_by_value("baseline")
    assert [row.is_displayed() for row in rows] == [True, False, False]
    Select(browser.find_element(By.ID, "filter-agent")).select_by_value("")
    assert all(row.is_displayed() for row in rows)
    links = browser.find_elements(By.CSS_SELECTOR, "a.open-run")
    assert [link.text for link in links] == [r.run_id for r in sorted(runs, key=lambda r: r.nodeid)]
    next(link for link in links if link.text == DIGITS).click()
    assert browser.find_element(By.ID, "run-view").is_displayed()
    assert not browser.find_element(By.ID, "summary-view").is_displayed()
    steps = browser.find_elements(By.CSS_SELECTOR, "details.step")
    assert len(steps) == STEPS
    assert not steps[1].find_element(By.XPATH, ".//pre[2]").is_displayed()  # closed until clicked
    steps[1].find_element(By.TAG_NAME, "summary").click()
    text = steps[1].text
    assert EVIL in text and "+print(2)" in text
    steps[0].find_element(By.TAG_NAME, "summary").click()
    assert "gpt-4" in steps[0].text and "1000" in steps[0].text
    prompt = steps[0].find_element(By.CSS_SELECTOR, "details.llm-text")
    assert not prompt.find_element(By.TAG_NAME, "pre").is_displayed()
    prompt.find_element(By.TAG_NAME, "summary").click()
    assert "Research Problem: predict the digits." in prompt.text
    assert "error" in steps[2].get_attribute("class")
    assert "0.9" in browser.find_element(By.ID, "run-curve").text
    assert browser.execute_script("return window.pwned === undefined")
    browser.find_element(By.ID, "back").click()
    assert browser.find_element(By.ID, "summary-view").is_displayed()
    browser.back()  # the browser's own back button returns to the run
    assert browser.find_element(By.ID, "run-view").is_displayed()
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


@pytest.mark.slow
def test_the_baseline_the_headline_and_the_papers_rule_are_explained_where_they_are_shown(tmp_path, chromium):
    from pytest_mlab.results.aggregate import aggregate
    from pytest_mlab.results.html import write_report
    from pytest_mlab.results.plots import write_plots
    from tests.results.builders import run

    baseline = dict(agent="baseline", expect="baseline", success=False)
    runs = [run("fathomnet", score=0.0, baseline=1e-10, improvement=-1.0, baseline_pinned=True, tags=["paper"],
                message="fathomnet_score 0 vs baseline 1e-10: -100.0% (pinned)", **baseline),
            run("diabetes", improvement=0.0, tags=["smoke"], **baseline),
            run("fathomnet", "research", llm="claude-v1", tags=["paper"]),
            run("fathomnet", "research", 1, llm="claude-v1", tags=["paper"], end_reason="timeout", success=False,
                passed=False, failure="timeout")]
    path = write_report(tmp_path, runs, write_plots(tmp_path, aggregate(runs)))
    completed = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120)
    dom = Tree(completed.stdout).root
    agents = dom.one(id="agents")
    head = [th.text for th in agents.all("th")]
    baseline_row = cells(row_of(agents.all("tr")[1:], "baseline"))
    research_row = cells(row_of(agents.all("tr")[1:], "research"))
    assert baseline_row[head.index("headline over")] == "1 paper task"
    assert baseline_row[head.index("average success")] == "n/a (baseline)"
    assert research_row[head.index("average success")] == "50.0%"
    assert research_row[head.index("paper's rule")] == "100.0%"  # the time-out dropped
    assert "tagged paper" in dom.one(id="agents-note").text and "cannot succeed" in dom.one(id="agents-note").text
    matrix = dom.one(id="matrix")
    labels = [th.text for th in matrix.all("th")]
    fathomnet = row_of(matrix.all("tr"), "fathomnet").all("td")
    assert [div.text for div in fathomnet[labels.index("baseline")].all("div")] == [
        "baseline: passed 1/1", "pinned", "n=1"]
    assert [div.text for div in fathomnet[labels.index("research (claude-v1)")].all("div")] == [
        "50% [9%, 91%]", "+50.0%", "paper's rule: 100% of 1", "n=2"]
    diabetes = row_of(matrix.all("tr"), "diabetes").all("td")
    assert [div.text for div in diabetes[labels.index("baseline")].all("div")][:2] == ["baseline: passed 1/1", "+0.0%"]
    assert "0% [0%, 79%]" not in matrix.text and "-100" not in dom.one(id="summary-view").text
    groups = dom.one(id="groups")
    group_head = [th.text for th in groups.all("th")]
    research_group = cells(row_of(groups.all("tr")[1:], "research"))
    assert research_group[group_head.index("paper's rule [95% CI]")] == "100.0% [20.7%, 100.0%] of 1"
    runs_table = dom.one(id="runs-table")
    run_head = [th.text for th in runs_table.all("th")]
    timed_out = cells(row_of(runs_table.all("tr", cls="run-row"), "fathomnet[mini-research-s1]"))
    assert timed_out[run_head.index("paper's rule")] == "dropped: timeout"
    starter = cells(row_of(runs_table.all("tr", cls="run-row"), "fathomnet[mini-baseline-s0]"))
    assert starter[run_head.index("improvement")].startswith("pinned")
