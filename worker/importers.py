"""Turn the benchmarks users already have into task folders (Django-free; the web app's import and the
`import_kernelbench` / `import_taskyaml` commands call these, then sync what was written).

- KernelBench: problem files `<id>_<Name>.py` (a `Model`, `get_inputs()`, `get_init_inputs()`) from a
  checkout (`KernelBench/level1/...`), a level folder or single files become `kernelbench-l<N>/<name>/`
  folders with a `spec.toml` (backend "pytorch") beside the file, kept verbatim as `model.py`.
- CUDAHercules-style tasks: every folder holding a `task.yaml` is copied whole to `<suite>/<name>/`.

Every file or folder that cannot be used is reported with the reason and skipped; the rest is written.
Writing is idempotent: an unchanged source gives a byte-identical folder, so a re-import changes nothing.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from worker.engine.taskspec import SpecError

# Level 4 names carry Hugging Face model ids (`1_EleutherAI-gpt-neo-2.7B_bs32_sl256.py`): '-' and '.' are part of
# the name, folded to '_' in the task name (task folders and operators are identifiers).
KB_FILE = re.compile(r"^(?P<id>\d+)_(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*?)_*\.py$")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]+")
# A problem that builds a Hugging Face model (KernelBench level 4) needs the `transformers` package and the
# Hub's weights at run time; the PyTorch format evaluates a self-contained Model, so it is skipped, saying so.
_HF_IMPORT = re.compile(r"^\s*(?:from|import)\s+transformers\b", re.M)
HF_REASON = ("builds a Hugging Face model (imports transformers, as KernelBench level 4 does): its weights come "
             "from the Hugging Face Hub when it runs, and KernelWeb's PyTorch tasks must be self-contained "
             "(the evaluation sandbox has no network), so it is not imported")
_LEVEL = re.compile(r"^(?:level|lvl|l)[_-]?(?P<n>\d+)$", re.I)
MAX_NAME = 100  # Task.operator holds 128; KernelBench's longest names are well below


@dataclass(frozen=True)
class Skipped:
    source: str  # the file or folder, relative to what was given
    reason: str


@dataclass(frozen=True)
class ConvertReport:
    written: tuple[str, ...]  # "<suite>/<name>" folders now under the destination
    skipped: tuple[Skipped, ...]


def level_of(path: Path) -> int | None:
    """The KernelBench level a folder name states (`level1`, `level_2`, `L3`), looking up the path."""
    for part in reversed(path.parts):
        if m := _LEVEL.match(part):
            return int(m.group("n"))
    return None


def find_kernelbench(source: Path | str, level: int | None = None) -> list[Path]:
    """The problem files to import from `source`: a KernelBench checkout (its `KernelBench/levelN/`
    folders), the dataset folder itself, one level folder, or one file. `level` keeps only that level's
    folders where the folders say their level."""
    source = Path(source)
    if source.is_file():
        return [source]
    if not source.is_dir():
        return []
    for root in (source / "KernelBench", source):
        levels = sorted(d for d in root.iterdir() if d.is_dir() and _LEVEL.match(d.name)) if root.is_dir() else []
        if levels:
            chosen = [d for d in levels if level is None or level_of(d) == level]
            return [f for d in chosen for f in _py_files(d)]
    return _py_files(source)


def _py_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.is_file() and not p.name.startswith(("_", ".")))


def _name(file: Path) -> str | None:
    m = KB_FILE.match(file.name)
    if not m:
        return None
    name = _NOT_IN_NAME.sub("_", m.group("name")).strip("_")
    return f"{int(m.group('id'))}_{name}"[:MAX_NAME]


def convert_kernelbench(files: list[tuple[Path, str]], dest_root: Path | str, level: int | None = None,
                        precisions: tuple[str, ...] = ("fp32",)) -> ConvertReport:
    """Write one task folder per usable KernelBench problem file under `dest_root/kernelbench-l<N>/`.

    `files`: (path, label to report it by). `level`: the level when the folders do not say it (a
    `levelN` folder in the path wins). Level 1 problems are single operators, so their candidates may not
    fall back on PyTorch compute (forbid_torch_compute); levels 2 and 3 may keep some PyTorch operations."""
    from worker.formats.pytorch.task_writer import kernelbench_category, write_pytorch_task

    dest_root = Path(dest_root)
    written: list[str] = []
    skipped: list[Skipped] = []
    seen: dict[str, str] = {}
    for file, rel in files:
        name = _name(file)
        if name is None:
            skipped.append(Skipped(rel, "not a KernelBench problem file name (<id>_<Name>.py)"))
            continue
        file_level = level_of(file.parent) or level
        if file_level is None:
            skipped.append(Skipped(rel, "the level is unknown: put the files in a folder named levelN or give the "
                                        "level (--level N)"))
            continue
        suite = f"kernelbench-l{file_level}"
        target = f"{suite}/{name}"
        if target in seen:
            skipped.append(Skipped(rel, f"{target} also comes from {seen[target]}"))
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(Skipped(rel, f"cannot be read as UTF-8 text: {exc}"))
            continue
        if _HF_IMPORT.search(text):
            skipped.append(Skipped(rel, HF_REASON))
            continue
        with tempfile.TemporaryDirectory(prefix="kw-kb-") as tmp:
            staged = Path(tmp) / suite / name
            try:
                write_pytorch_task(
                    staged, name=name, suite=suite, model_text=text,
                    category=kernelbench_category(name, file_level), precisions=precisions,
                    provenance=f"KernelBench level {file_level}, problem {name.split('_', 1)[0]} ({file.name})",
                    forbid_torch_compute=file_level == 1,
                )
            except SpecError as exc:
                skipped.append(Skipped(rel, f"[{exc.field}] {exc.message}"))
                continue
            _replace_if_changed(staged, dest_root / suite / name)
        seen[target] = rel
        written.append(target)
    return ConvertReport(tuple(written), tuple(skipped))


def taskyaml_folders(source: Path | str) -> list[Path]:
    """Every folder under `source` (or `source` itself) that holds a task.yaml."""
    return sorted(p.parent for p in Path(source).rglob("task.yaml") if p.is_file())


def convert_taskyaml(folders: list[tuple[Path, str]], dest_root: Path | str,
                     suite: str = "cudahercules") -> ConvertReport:
    """Copy each task.yaml folder ((path, label) pairs) to `dest_root/<suite>/<name>/`, where name is the
    task.yaml's `name`; folders that do not validate are reported and skipped."""
    from worker.formats.make.schema import load_make_spec

    dest_root = Path(dest_root)
    written: list[str] = []
    skipped: list[Skipped] = []
    seen: dict[str, str] = {}
    paths = [f for f, _ in folders]
    for folder, rel in folders:
        if any(other != folder and other in folder.parents for other in paths):
            skipped.append(Skipped(rel, "a task folder inside another task folder"))
            continue
        name = _yaml_name(folder / "task.yaml") or folder.name
        with tempfile.TemporaryDirectory(prefix="kw-yaml-") as tmp:
            staged = Path(tmp) / suite / name
            try:
                shutil.copytree(folder, staged, ignore=shutil.ignore_patterns(".*", "__pycache__"))
                spec = load_make_spec(staged / "task.yaml")
            except SpecError as exc:
                skipped.append(Skipped(rel, f"[{exc.field}] {exc.message}"))
                continue
            except (OSError, shutil.Error) as exc:
                skipped.append(Skipped(rel, f"cannot be copied: {exc}"))
                continue
            target = f"{spec.suite}/{spec.name}"
            if target in seen:
                skipped.append(Skipped(rel, f"{target} also comes from {seen[target]}"))
                continue
            _replace_if_changed(staged, dest_root / suite / name)
        seen[target] = rel
        written.append(target)
    return ConvertReport(tuple(written), tuple(skipped))


def _yaml_name(path: Path) -> str | None:
    """The task.yaml's `name`, when it is a usable folder name (the loader reports every other problem)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and re.match(r"^[A-Za-z0-9][A-Za-z0-9_]*$", name) else None


def _same_tree(a: Path, b: Path) -> bool:
    if not b.is_dir():
        return False
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


def _replace_if_changed(staged: Path, dest: Path) -> None:
    """Put the staged folder at dest (the old one swapped out only once the copy is complete); an identical
    folder is left untouched, so a re-import keeps file times and changes nothing."""
    if _same_tree(staged, dest):
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    incoming = dest.parent / f".incoming-{dest.name}"
    shutil.rmtree(incoming, ignore_errors=True)
    shutil.copytree(staged, incoming)
    if dest.exists():
        previous = dest.parent / f".previous-{dest.name}"
        shutil.rmtree(previous, ignore_errors=True)
        dest.rename(previous)
        incoming.rename(dest)
        shutil.rmtree(previous, ignore_errors=True)
    else:
        incoming.rename(dest)
