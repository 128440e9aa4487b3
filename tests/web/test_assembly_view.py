"""The PTX/SASS tab: the SASS lexer on real nvdisasm output (nvcc -arch=sm_90 of tests/gpu_candidates), and
the source <-> assembly line mapping as the viewer renders it for a turn of a demo trajectory."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from pygments.token import Error, Text

from apps.catalog.services import tasks_sync
from apps.runs import sass as sass_lexer
from apps.runs import viewer
from apps.runs.models import TurnAssembly
from apps.runs.trajectory_import import trajectory_import
from worker.engine import assembly

CANDIDATES = Path(settings.BASE_DIR) / "tests" / "gpu_candidates"
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories"


@pytest.fixture(scope="module")
def tools():
    cuobjdump, nvdisasm = assembly.tools()
    if not (cuobjdump and nvdisasm and shutil.which("nvcc")):
        pytest.fail("nvcc, cuobjdump and nvdisasm are needed: `make .cuda-libs/.ready` fetches the last two")


def listing_of(tmp_path: Path, source: str, name: str = "candidate") -> assembly.Assembly:
    (tmp_path / f"{name}.cu").write_text(source)
    subprocess.run(["nvcc", "-c", "-O3", "-arch=sm_90", "-lineinfo", f"{name}.cu", "-o", f"{name}.o"],
                   cwd=tmp_path, check=True, capture_output=True)
    return assembly.dump(tmp_path / f"{name}.o")


def tokens(line: str) -> list[tuple[str, str]]:
    return [(str(t), v) for t, v in sass_lexer.SassLexer().get_tokens(line) if v.strip()]


@pytest.mark.parametrize("name", ["softmax_fast", "rms_norm_bf16_fast", "matrix_mul_fast", "prefix_sum_exclusive_scan",
                                  "dot_product_bf16_hfma2_accumulate"])
def test_real_sass_lexes_without_error_or_unknown_tokens(tools, tmp_path, name):
    listing = listing_of(tmp_path, (CANDIDATES / f"{name}.cu").read_text(), name)
    lines = assembly.sass_line_map(listing.sass).lines
    assert len(lines) > 50
    bad = [(line, v) for line in lines for t, v in sass_lexer.SassLexer().get_tokens(line)
           if t in (Error, Text) and v.strip()]
    assert bad == []
    ptx = assembly.ptx_line_map(listing.ptx).lines
    assert [line for line, html in zip(ptx, sass_lexer.highlight_ptx(ptx), strict=True) if 'class="err"' in html] == []


def test_predicates_registers_modifiers_addresses_and_constant_banks_get_their_own_tokens():
    line = "        /*00b0*/               @!P1 LDG.E.64.STRONG.GPU R4, desc[UR6][R2.64+0x10] ;"
    assert tokens(line) == [
        ("Token.Comment.Special", "/*00b0*/"), ("Token.Keyword.Pseudo", "@!P1"), ("Token.Keyword", "LDG"),
        ("Token.Name.Attribute", ".E"), ("Token.Name.Attribute", ".64"), ("Token.Name.Attribute", ".STRONG"),
        ("Token.Name.Attribute", ".GPU"), ("Token.Name.Variable", "R4"), ("Token.Punctuation", ","),
        ("Token.Name.Builtin", "desc"), ("Token.Punctuation", "["), ("Token.Name.Variable", "UR6"),
        ("Token.Punctuation", "]["), ("Token.Name.Variable", "R2"), ("Token.Name.Attribute", ".64"),
        ("Token.Operator", "+"), ("Token.Literal.Number.Hex", "0x10"), ("Token.Punctuation", "]"),
        ("Token.Punctuation", ";")]
    const = tokens("/*0000*/ @PT LDC R1, c[0x0][0x28] ;")
    assert ("Token.Keyword.Pseudo", "@PT") in const and ("Token.Name.Constant", "c") in const
    assert ("Token.Literal.Number.Hex", "0x28") in const
    uniform = tokens("/*0030*/ @!UP0 ULDC.64 UR6, c[0x0][0x208] ;")
    assert uniform[1] == ("Token.Keyword.Pseudo", "@!UP0") and ("Token.Name.Variable", "UR6") in uniform
    barrier = tokens("/*0040*/ BSSY B0, `(.L_x_0) ;")
    assert ("Token.Name.Variable", "B0") in barrier and ("Token.Name.Label", ".L_x_0") in barrier
    abs_reuse = tokens("/*1fe0*/ FSETP.NEU.FTZ.AND P1, PT, |R0|.reuse, +INF , !PT ;")
    assert ("Token.Name.Attribute", ".reuse") in abs_reuse and ("Token.Literal.Number.Float", "+INF") in abs_reuse
    assert ("Token.Operator", "!") in abs_reuse and ("Token.Name.Variable", "PT") in abs_reuse


def test_highlighted_sass_escapes_and_keeps_one_fragment_per_line():
    html = sass_lexer.highlight_sass(["/*0000*/ @P0 EXIT ;", "        Function : _Z1k<int> <b>&", "[R1"])
    assert len(html) == 3 and '<span class="kp">@P0</span>' in html[0] and "&lt;int&gt;" in html[1]
    assert "<b>" not in html[1] and "&lt;b&gt;&amp;" in html[1]
    assert "R1" in html[2]  # an unclosed bracket ends with its line


@pytest.fixture
def softmax_run(db, admin_user, tools, tmp_path):
    """The softmax demo run, its best turn given the listing a real sm_90 build of its own code produces."""
    tasks_sync(settings.TASKS_DIR)
    run = trajectory_import(json.loads((DEMO / "softmax_fp32_trajectory.json").read_text()), owner=admin_user)
    turn = run.best_turn
    listing = listing_of(tmp_path, turn.code)
    TurnAssembly.objects.create(turn=turn, ptx=listing.ptx, sass=listing.sass, note=listing.note)
    return run, turn


def test_source_lines_and_their_instructions_share_a_colour_band(softmax_run):
    run, turn = softmax_run
    view = viewer.assembly_view(turn)
    assert view.mapped and view.kernels and view.resources and "registers" in view.resources[0]
    mapped_sass = {line.source for line in view.sass if line.source is not None}
    mapped_source = {line.source for line in view.source if line.band is not None}
    assert mapped_sass and mapped_sass <= mapped_source | {None}
    for line in view.sass:
        if line.source is not None:
            assert line.band == line.source % viewer.BANDS == view.source[line.source - 1].band
    exp_line = next(n for n, text in enumerate(turn.code.splitlines(), start=1) if "expf(" in text)
    assert any("MUFU" in str(line.html) for line in view.sass if line.source == exp_line)


def test_the_assembly_tab_renders_registers_spills_and_linked_rows(softmax_run, client, admin_user):
    run, turn = softmax_run
    client.force_login(admin_user)
    label = f"{turn.round_index}.{turn.debug_index}"
    html = client.get(reverse("runs:detail", args=[run.pk]) + f"?turn={label}").content.decode()
    panel = html[html.index('id="tab-asm"'):html.index('id="tab-results"')]
    kernel = turn.ptxas["kernels"][0]
    assert f"{kernel['registers']} registers" in panel and "B spill stores" in panel
    assert 'data-asm-view' in panel and 'data-asm="sass"' in panel and 'data-asm="ptx"' in panel
    sources = set(re.findall(r'<tr class="band-\d" data-src="(\d+)"', panel))
    assert len(sources) > 5
    assert '<span class="kp">@P' in panel or '<span class="kp">@!P' in panel  # guards are not errors
    assert 'class="err"' not in panel


def test_a_listing_without_line_markers_says_hovering_does_not_link(softmax_run, client, admin_user):
    run, turn = softmax_run
    TurnAssembly.objects.filter(turn=turn).update(sass="        Function : k\n        /*0000*/  EXIT ;", ptx="")
    client.force_login(admin_user)
    label = f"{turn.round_index}.{turn.debug_index}"
    html = client.get(reverse("runs:detail", args=[run.pk]) + f"?turn={label}").content.decode()
    assert "No source lines in this listing" in html and "data-src=" not in html.split('id="tab-asm"')[1][:20000]
