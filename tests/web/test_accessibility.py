"""Accessibility: axe-core (the npm package of the front-end's devDependencies) in real Chromium on the pages
people use — the viewer with each of its tabs, the runs list, the task catalog, the launch form, an experiment
page and the showcase — finds no serious or critical violation (WCAG 2 A/AA rules and best practices)."""


import pytest

from tests.support.stack import ROOT, make_stack, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
VIEWER_TABS = ("plan", "compile", "results", "profile", "asm", "calls", "edit")


@pytest.fixture(scope="module")
def chromium(chromium):
    if not AXE.is_file():
        pytest.fail(f"{AXE} missing: run `make static/dist/.built` (npm ci and the bundle)")
    return chromium


@pytest.fixture(scope="module")
def stack(tmp_path_factory, chromium):
    stack = make_stack(tmp_path_factory.mktemp("stack-a11y"), ROOT / "tasks")
    stack.manage("import_trajectory", *sorted(str(p) for p in (ROOT / "demo" / "trajectories").glob("*.json")),
                 "--public")
    stack.manage("import_experiment", str(ROOT / "demo" / "experiments" / "h100-12-tasks"), "--public")
    stack.start(worker=False)
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def page(stack, browser):
    # The pages' CSP allows no inline script; the test injects axe itself, so it bypasses the CSP.
    context = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = signed_in_page(context, stack)
    yield page
    context.close()


def serious_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']})).violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.id} (${v.impact}): ${v.nodes.length} × ${v.nodes.slice(0, 3).map(n => n.target.join(' '))
        .join(' | ')}`)""")
    return found


def first_run(stack, operator: str) -> int:
    return stack.query("SELECT r.id FROM runs_run r JOIN catalog_task t ON t.id = r.task_id WHERE t.operator = ? "
                       "AND r.origin LIKE 'import:%' ORDER BY r.id", operator)[0][0]


@pytest.mark.parametrize("path", ["/runs/", "/tasks/", "/runs/launch/", "/experiments/", "/showcase/",
                                  "/showcase/mskernelbench/softmax/fp32/"])
def test_a_page_has_no_serious_accessibility_violation(stack, page, path):
    assert page.goto(stack.url + path).status == 200
    page.wait_for_timeout(300)  # charts and editors draw after load
    assert serious_violations(page) == []


def test_an_experiment_page_has_no_serious_accessibility_violation(stack, page):
    experiment = stack.query("SELECT id FROM experiments_experiment ORDER BY id")[0][0]
    assert page.goto(f"{stack.url}/experiments/{experiment}/").status == 200
    page.wait_for_timeout(300)
    assert serious_violations(page) == []


@pytest.mark.parametrize("operator", ["softmax", "vector_add_make"])
def test_every_tab_of_the_viewer_has_no_serious_accessibility_violation(stack, page, operator):
    assert page.goto(f"{stack.url}/runs/{first_run(stack, operator)}/").status == 200
    page.wait_for_selector(".cm-mergeView, .kw-cv-static", timeout=15000)
    problems = {"code": serious_violations(page)}
    for tab in VIEWER_TABS:
        link = page.locator(f"[data-tab={tab}]")
        if link.count():
            link.first.click()
            page.wait_for_timeout(300)
            problems[tab] = serious_violations(page)
    assert {tab: found for tab, found in problems.items() if found} == {}
