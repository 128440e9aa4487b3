"""The Content-Security-Policy (kernelweb/settings.py, django-csp) in a real browser: every main page, as
rendered by daphne and enhanced by the front-end bundle (editor, charts, htmx, websockets), loads without a
single CSP violation in Debian's Chromium. Demo data: the h100-12-tasks experiment and its runs."""

import re
import shutil

import pytest

from tests.support.stack import ADMIN_PASSWORD, ROOT, make_stack

pytestmark = pytest.mark.browser
# Reports the browser raises for each violation, whether or not it also logs one to the console.
WATCH = """window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(
    `${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`));"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory, chromium):
    base = tmp_path_factory.mktemp("stack-csp")
    shutil.copytree(ROOT / "tasks", base / "tasks")
    stack = make_stack(base, base / "tasks")
    stack.manage("import_experiment", str(ROOT / "demo" / "experiments" / "h100-12-tasks"), "--public")
    stack.start(worker=False)
    yield stack
    stack.stop()


class Watched:
    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.add_init_script(WATCH)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))

    def _console(self, message):
        if message.type in ("error", "warning") and "Content Security Policy" in message.text:
            self.problems.append(f"console: {message.text}")

    def visit(self, url: str, ready: str = "main") -> None:
        response = self.page.goto(url)
        assert response is not None and response.status == 200, (url, response and response.status)
        assert "default-src 'self'" in response.headers.get("content-security-policy", ""), url
        self.page.wait_for_selector(ready)
        self.page.wait_for_load_state("networkidle")
        self.problems += [f"{url}: {v}" for v in self.page.evaluate("window.__csp")]


def test_the_main_pages_load_without_content_security_policy_violations(browser, stack):
    visitor = Watched(browser)
    visitor.visit(f"{stack.url}/accounts/login/", "input[name=username]")
    visitor.page.fill("input[name=username]", "tester")
    visitor.page.fill("input[name=password]", ADMIN_PASSWORD)
    visitor.page.click("main button[type=submit]")
    visitor.page.wait_for_url(re.compile(r".*/$"))

    run = stack.query("SELECT id FROM runs_run ORDER BY id LIMIT 1")[0][0]
    experiment = stack.query("SELECT id FROM experiments_experiment ORDER BY id LIMIT 1")[0][0]
    visitor.visit(f"{stack.url}/runs/", "main table")
    visitor.visit(f"{stack.url}/runs/{run}/", "#run-charts [data-chart] canvas")  # charts drawn, websocket open
    visitor.visit(f"{stack.url}/runs/{run}/?turn=1.0", ".turn-toolbar")
    visitor.page.click(".tab-bar a[data-tab='edit']")  # the CodeMirror editor
    visitor.page.wait_for_selector("#tab-edit .cm-content")
    visitor.visit(f"{stack.url}/tasks/")
    visitor.visit(f"{stack.url}/runs/launch/", "form.launch-form")
    visitor.visit(f"{stack.url}/experiments/")
    visitor.visit(f"{stack.url}/experiments/{experiment}/", "[data-chart] canvas")
    visitor.visit(f"{stack.url}/showcase/")
    visitor.visit(f"{stack.url}/llm/endpoints/")
    visitor.visit(f"{stack.url}/workers/")
    visitor.visit(f"{stack.url}/admin/", "#content")
    visitor.visit(f"{stack.url}/admin/llm/llmendpoint/add/", "#content form")
    visitor.visit(f"{stack.url}/api/docs/", "#swagger-ui .info")
    visitor.context.close()

    anonymous = Watched(browser)
    anonymous.visit(f"{stack.url}/showcase/")
    anonymous.visit(f"{stack.url}/accounts/login/", "input[name=username]")
    anonymous.context.close()
    problems = visitor.problems + anonymous.problems
    assert problems == [], "\n".join(problems)
