"""The worker's package rules: the engine knows no format, a format knows no other format, files stay small."""

import ast
from pathlib import Path

WORKER = Path(__file__).resolve().parents[2] / "worker"
FORMATS = [p for p in (WORKER / "formats").iterdir() if p.is_dir() and (p / "__init__.py").is_file()]


def imported(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_engine_imports_no_format_agent_or_registry():
    for path in (WORKER / "engine").rglob("*.py"):
        bad = [m for m in imported(path) if m.startswith(("worker.formats", "worker.agents", "worker.registry"))]
        assert not bad, f"{path.name} imports {bad}"


def test_a_format_imports_no_other_format():
    for package in FORMATS:
        for path in package.rglob("*.py"):
            others = [m for m in imported(path)
                      if m.startswith("worker.formats.") and not m.startswith(f"worker.formats.{package.name}.")
                      and m != f"worker.formats.{package.name}"]
            assert not others, f"{package.name}/{path.name} imports {others}"


def test_engine_and_format_files_stay_under_600_lines():
    for path in [*(WORKER / "engine").rglob("*.py"), *(WORKER / "formats").rglob("*.py")]:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 600, f"{path.relative_to(WORKER)} has {lines} lines"
