"""Every help text, error message and comment that sends a reader to the README or a document under docs/
points to something that exists: the file, and the section when one is named (a heading or a bold
paragraph lead such as **Security model.**), by anchor (`README.md#configuration`) or by its words
(`docs/evaluation.md, GPU lock`, `README, 'Deployment'`)."""

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("apps/**/*.py"), *ROOT.glob("kernelweb/*.py"),
           *ROOT.glob("worker/**/*.py"), *ROOT.glob("testing/*.py")]
DOC = r"(?P<doc>README(?:\.md)?|docs/[\w./-]+\.md)"
ANCHORED = re.compile(DOC + r"#(?P<anchor>[\w-]+)")
QUOTED = re.compile(DOC + r"[,:]? ?[\"'“](?P<section>[A-Z][^\"'”\n]{1,80})[\"'”]")
WORDED = re.compile(DOC + r"[,:] (?P<section>[A-Z][\w -]{1,80}?)(?=[).;,\n]|$)")


def _document(name: str) -> Path:
    return ROOT / ("README.md" if name.startswith("README") else name)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def sections(path: Path) -> tuple[str, ...]:
    text = path.read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.M)
    leads = re.findall(r"^(?:\d+\. )?\*\*([^*]+?)\.?\*\*", text, flags=re.M)
    return tuple(h.strip().replace("`", "") for h in (*headings, *leads))


def references() -> list[tuple[str, str, str, str]]:
    """(where, document, kind, section) for every reference found."""
    found = []
    for path in SCANNED:
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT).as_posix()
        for m in re.finditer(DOC, text):
            found.append((where, m.group("doc"), "file", ""))
        for m in ANCHORED.finditer(text):
            found.append((where, m.group("doc"), "anchor", m.group("anchor")))
        for m in (*QUOTED.finditer(text), *WORDED.finditer(text)):
            found.append((where, m.group("doc"), "section", m.group("section").strip()))
    return found


def broken(refs) -> list[str]:
    problems = []
    for where, doc, kind, section in refs:
        path = _document(doc)
        if not path.is_file():
            problems.append(f"{where}: {doc} does not exist")
        elif kind == "anchor" and section not in {_slug(s) for s in sections(path)}:
            problems.append(f"{where}: {doc} has no section with the anchor #{section}")
        elif kind == "section" and not any(s.lower().startswith(section.lower()) for s in sections(path)):
            problems.append(f"{where}: {doc} has no section {section!r}")
    return problems


def test_the_scan_finds_the_references_it_is_meant_to_check():
    refs = references()
    kinds = {kind for _, _, kind, _ in refs}
    assert {"file", "section"} <= kinds and len(refs) > 20
    assert ("apps/runs/jobs.py", "README.md", "section", "Deployment") in refs


def test_every_reference_to_the_readme_or_docs_points_to_a_file_and_section_that_exist():
    assert broken(references()) == []


def test_a_reference_to_a_missing_section_or_file_is_reported():
    refs = [("x.py", "README", "section", "GPU workers"), ("x.py", "docs/nope.md", "file", ""),
            ("x.py", "README.md", "anchor", "configuration"), ("x.py", "docs/architecture.md", "section",
                                                                "Security model")]
    assert broken(refs) == ["x.py: README has no section 'GPU workers'", "x.py: docs/nope.md does not exist"]
