"""The task catalog and task pages: grouping, best known results, bottleneck class, search, rendering."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from pygments.formatters import HtmlFormatter

from apps.catalog.markup import render_markdown, tex_to_html
from apps.catalog.models import Task
from apps.runs.models import Bottleneck, Profile, Run, Turn, TurnKind

pytestmark = pytest.mark.django_db


def clone(task: Task, **changes) -> Task:
    copy = Task.objects.get(pk=task.pk)
    copy.pk = None
    for name, value in changes.items():
        setattr(copy, name, value)
    copy.save()
    return copy


def profiled_run(task, owner, bottlenecks, **fields) -> Run:
    run = Run.objects.create(task=task, owner=owner, model="m", **fields)
    turn = Turn.objects.create(run=run, round_index=0, kind=TurnKind.BASELINE)
    for i, bottleneck in enumerate(bottlenecks):
        Profile.objects.create(turn=turn, size_index=i, kernel="k", bottleneck=bottleneck)
    return run


def row_of(html: str, operator: str) -> str:
    match = re.search(rf"<tr>\s*<td>{operator}\b.*?</tr>", html, re.S)
    assert match, f"no row for {operator}"
    return match.group(0)


def test_operators_are_grouped_by_category_with_both_precisions_in_one_row(client, task):
    bf16 = clone(task, precision="bf16", entry_point="vadd_bf16")
    clone(task, operator="rsum", entry_point="rsum", category="reduction")
    html = client.get(reverse("catalog:list")).content.decode()
    assert html.index("<h2 id=\"dense_linear_algebra\">Dense linear algebra</h2>") < html.index(">Reduction</h2>")
    row = row_of(html, "vadd")
    assert f'href="/tasks/{task.pk}/">vadd</a>' in row and f'href="/tasks/{bf16.pk}/">vadd_bf16</a>' in row
    assert "—" in row_of(html, "rsum")  # no BF16 variant


def test_each_variant_shows_its_best_known_p_and_baseline_bottleneck(client, task, user):
    bf16 = clone(task, precision="bf16", entry_point="vadd_bf16")
    classes = [Bottleneck.MEMORY_BANDWIDTH, Bottleneck.MEMORY_BANDWIDTH, Bottleneck.COMPUTE, Bottleneck.UNKNOWN]
    best = profiled_run(task, user, classes, best_score=3.25)
    Run.objects.create(task=task, owner=user, model="m", best_score=1.5)
    profiled_run(bf16, user, [Bottleneck.UNKNOWN])
    client.force_login(user)
    row = row_of(client.get(reverse("catalog:list")).content.decode(), "vadd")
    fp32_cell, bf16_cell = row.split('class="variant"')[1:]
    assert "Memory bandwidth bound" in fp32_cell and f'<a href="/runs/{best.pk}/">3.25</a>' in fp32_cell
    assert "bound" not in bf16_cell and "no result yet" in bf16_cell  # only unknown profiles: blank class


def test_a_private_run_of_another_user_is_never_the_best_known(client, task, user, other_user):
    hidden = Run.objects.create(task=task, owner=other_user, model="m", best_score=9.0)
    mine = Run.objects.create(task=task, owner=user, model="m", best_score=2.0)
    client.force_login(user)
    listing = client.get(reverse("catalog:list")).content.decode()
    page = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    for html in (listing, page):
        assert f"/runs/{hidden.pk}/" not in html and "9.00" not in html
        assert f"/runs/{mine.pk}/" in html
    client.logout()
    assert "no result yet" in row_of(client.get(reverse("catalog:list")).content.decode(), "vadd")
    shared = Run.objects.create(task=task, owner=other_user, model="m", best_score=5.0, is_public=True)
    client.force_login(user)
    assert f'<a href="/runs/{shared.pk}/">5.00</a>' in client.get(reverse("catalog:list")).content.decode()


def test_the_catalog_needs_a_bounded_number_of_queries(client, task, user, django_assert_max_num_queries):
    for i in range(12):
        variant = clone(task, operator=f"op{i}", entry_point=f"op{i}", precision=("fp32", "bf16")[i % 2])
        profiled_run(variant, user, [Bottleneck.COMPUTE, Bottleneck.MEMORY_LATENCY], best_score=i + 1.0)
    client.force_login(user)
    with django_assert_max_num_queries(5):  # session, user, facets, tasks with best P, bottlenecks
        html = client.get(reverse("catalog:list")).content.decode()
    assert html.count("Compute bound") == 12


def test_search_and_filters_live_in_the_url(client, task):
    clone(task, operator="rsum", entry_point="rsum", category="reduction", title="Row sum")
    clone(task, operator="gemm", entry_point="gemm", suite="other", description="General matrix multiply")

    def operators(**params):
        html = client.get(reverse("catalog:list"), params).content.decode()
        return re.findall(r"<tr>\s*<td>(\w+)", html)

    assert operators() == ["gemm", "vadd", "rsum"]
    assert operators(q="row sum") == ["rsum"]
    assert operators(q="MATRIX") == ["gemm"]  # description, case-insensitive
    assert operators(suite="other") == ["gemm"]
    assert operators(category="reduction") == ["rsum"]
    assert operators(q="nothing-like-this") == []
    html = client.get(reverse("catalog:list"), {"q": "<b>x", "suite": "other"}).content.decode()
    assert 'value="&lt;b&gt;x"' in html and '<option value="other" selected>' in html


def test_task_page_renders_the_description_as_markdown_with_math(client, task):
    Task.objects.filter(pk=task.pk).update(
        description="Compute **the sum** $C_i = \\sum_{k=0}^{K-1} A_{ik}$ and\n\n$$\\frac{1}{N}\\sqrt{x^2}$$\n\n"
        "Use `$not_math$` or \\$5.")
    html = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    assert "<strong>the sum</strong>" in html
    assert "C<sub>i</sub> = Σ<sub>k=0</sub><sup>K-1</sup> A<sub>ik</sub></span>" in html
    assert '<span class="math display"' in html and "(1)/(N)√(x<sup>2</sup>)" in html
    assert "<code>$not_math$</code>" in html and "or $5." in html
    assert "katex" not in html.lower() and "<math" not in html


class _Markup(HTMLParser):
    """Every tag and attribute of a fragment, as a browser would parse it."""

    def __init__(self, fragment: str):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str]] = []
        self.feed(fragment)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(name, value or "") for name, value in attrs]


@pytest.mark.parametrize(
    "evil",
    [
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        "[click me](javascript:alert(1))",
        '<a href="JaVaScRiPt:alert(1)">x</a>',
        '<a href="&#106;avascript:alert(1)">x</a>',
        '$x" onmouseover="alert(1)$',
        '<span class="math" style="x" onclick="alert(1)">m</span>',
        "<iframe src=//evil.example></iframe><style>body{display:none}</style>",
        '<svg onload="alert(1)"><math><mi>x</mi></math></svg>',
    ],
)
def test_task_descriptions_render_inert(client, task, evil):
    Task.objects.filter(pk=task.pk).update(description=f"Before {evil} after")
    html = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    description = html.split('<div class="task-description">', 1)[1].split("</div>", 1)[0]
    markup = _Markup(description)
    assert set(markup.tags) <= {"p", "a", "span", "sub", "sup", "code", "strong", "em"}, markup.tags
    for name, value in markup.attrs:
        assert name in {"href", "title", "class", "rel"}, name
        assert name != "href" or not value.strip().lower().startswith(("javascript", "data", "vbscript")), value
        assert name != "class" or value in {"math", "math display"}, value
    assert "Before" in description and "after" in description


def test_math_text_is_readable_and_escaped():
    assert tex_to_html(r"\alpha \le \beta_{j}^{2}") == "α ≤ β<sub>j</sub><sup>2</sup>"
    assert tex_to_html(r"\mathrm{softmax}(x)_i = e^{x_i} / \sum_j e^{x_j}") == (
        "softmax(x)<sub>i</sub> = e<sup>x<sub>i</sub></sup> / Σ<sub>j</sub> e<sup>x<sub>j</sub></sup>")
    assert tex_to_html("a < b & c") == "a &lt; b &amp; c"
    assert tex_to_html(r"\{a\}") == "{a}"
    assert str(render_markdown("price $5 and $10")) == "<p>price $5 and $10</p>"


def test_task_page_shows_sizes_with_complexity_and_weight(client, task):
    Task.objects.filter(pk=task.pk).update(complexity="N * log2(N)", sizes=[{"N": 2}, {"N": 8}, {"N": 2**40}])
    html = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    assert "<code>T = N * log2(N)</code>" in html
    assert "<code>N = 2</code>" in html and '<td class="num">2</td>' in html and '<td class="num">24</td>' in html
    assert '<td class="num">4.4e13</td>' in html and "100.0%" in html  # 2^40 * 40 dominates
    Task.objects.filter(pk=task.pk).update(complexity="M * N")
    assert "cannot evaluate" in client.get(reverse("catalog:detail", args=[task.pk])).content.decode()


def test_task_page_highlights_the_baseline_with_line_numbers(client, task):
    Task.objects.filter(pk=task.pk).update(baseline_source='__global__ void k(float* x) {}\n// </pre><script>\n')
    html = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    assert '<div class="task-code"><table class="task-codetable">' in html and 'class="linenos"' in html
    assert '<span class="kt">void</span>' in html and 'href="#L-2">2</a>' in html
    assert "// &lt;/pre&gt;&lt;script&gt;" in html and "<script>\n" not in html
    assert "css/catalog.css" in html


def test_catalog_css_carries_the_pygments_styles_of_the_formatter():
    css = (Path(settings.BASE_DIR) / "static" / "css" / "catalog.css").read_text()
    formatter = HtmlFormatter(cssclass="task-code")
    for rule in formatter.get_background_style_defs(".task-code") + formatter.get_token_style_defs(".task-code"):
        assert rule in css, rule


def test_task_page_links_to_launch_evaluate_best_run_and_recent_runs(client, task, user, other_user):
    profiled_run(task, user, [Bottleneck.COMPUTE], best_score=1.75)
    recent = Run.objects.create(task=task, owner=user, model="newest-model")
    Run.objects.create(task=task, owner=other_user, model="secret-model")
    client.force_login(user)
    html = client.get(reverse("catalog:detail", args=[task.pk])).content.decode()
    assert f'href="/runs/launch/?task={task.pk}">Launch a run</a>' in html
    assert f'href="{reverse("runs:task_evaluate", args=[task.pk])}">Evaluate your own kernel</a>' in html
    assert ">1.750</a>" in html and "Compute bound" in html
    assert f'href="/runs/{recent.pk}/"' in html and "newest-model" in html and "secret-model" not in html
    assert 'href="/runs/?task=vadd&amp;precision=fp32"' in html


def test_a_disabled_task_has_no_page_and_is_not_listed(client, task):
    Task.objects.filter(pk=task.pk).update(enabled=False)
    assert client.get(reverse("catalog:detail", args=[task.pk])).status_code == 404
    assert "vadd" not in client.get(reverse("catalog:list")).content.decode()
