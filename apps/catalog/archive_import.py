"""Task import and export for the admin and the import commands: task folders of every format.

Import is two steps. `import_stage_archive` (or `import_stage_directory`, or `import_stage_paths` for the
`import_kernelbench` / `import_taskyaml` commands) unpacks into a private staging folder under VAR_DIR,
refusing anything unsafe (absolute paths, `..`, links, devices, too many files, too many bytes) before a
single byte lands. Staging then turns what users already have into task folders (worker/importers.py):
folders with a `task.yaml` go to `<suite>/<name>/`, loose KernelBench problem files (`<id>_<Name>.py`)
become `kernelbench-l<N>/<name>/` PyTorch tasks; folders with a `spec.toml` stay as they are. The preview
says, per task folder and per file that could not be used, what the spec loader says. `import_commit`
then moves only the folders that load cleanly to TASKS_DIR/<suite>/<op>/ (one rename per folder, the old
one kept until the new one is in place) and syncs just those specs.
A bad upload changes nothing under TASKS_DIR or in the database.

Export writes the selected tasks' folders into a zip with paths `<suite>/<op>/<file>`, relative to
TASKS_DIR: the same layout import reads, so an export re-imports as is. The zip also carries a manifest
(`kernelweb-tasks.json`, the exported folders): a task.yaml folder listed there is already a task folder
and keeps its `<suite>/<name>/` place instead of being filed under the import's default suite, so a round
trip gives back the same tasks (and importing it again changes nothing).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import stat
import tarfile
import time
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings

from apps.catalog.models import Task
from apps.catalog.services import SyncReport, source_hash, tasks_sync_specs
from worker import importers
from worker.engine.taskspec import PRECISIONS, SpecError
from worker.registry import SPEC_FILES, AnySpec, format_of, load_task

MiB = 1024 * 1024
_SUITE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_YAML_SUITE = "cudahercules"
_IGNORED = ("__MACOSX", ".DS_Store")  # what archivers add on their own
MANIFEST = "kernelweb-tasks.json"  # written by tasks_export_zip: the task folders of an export
STAGING_MAX_AGE_S = 24 * 3600


@dataclass(frozen=True)
class ImportLimits:
    archive_bytes: int = 20 * MiB  # the upload itself
    files: int = 1000  # entries in the archive (files and folders)
    total_bytes: int = 64 * MiB  # unpacked, counted while unpacking (a lying header gains nothing)
    file_bytes: int = 16 * MiB

    @property
    def archive_mib(self) -> int:
        return self.archive_bytes // MiB

    @property
    def total_mib(self) -> int:
        return self.total_bytes // MiB


class ImportRejected(ValueError):
    """The whole archive or folder is refused; the message says why, in words for the admin."""


@dataclass(frozen=True)
class ImportItem:
    """One task folder found in the upload."""

    folder: str  # its path inside the archive
    suite: str = ""
    operator: str = ""
    precisions: tuple[str, ...] = ()
    sizes: int = 0
    action: str = ""  # new | update | unchanged, against the database
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def target(self) -> str:
        return f"{self.suite}/{self.operator}" if self.ok else ""


@dataclass(frozen=True)
class StageOptions:
    """How staging reads what is not already a spec.toml folder."""

    suite: str = DEFAULT_YAML_SUITE  # the suite task.yaml folders are filed under
    level: int | None = None  # the KernelBench level of problem files whose folders do not say it
    precisions: tuple[str, ...] = ("fp32",)  # the precisions KernelBench problems are imported in

    def __post_init__(self):
        if not _SUITE.match(self.suite) or self.suite.startswith((".", "_")):
            raise ImportRejected(f"{self.suite!r} cannot be a suite name (letters, digits, '_', '.', '-')")
        if self.level is not None and not 1 <= self.level <= 9:
            raise ImportRejected(f"KernelBench level {self.level} does not exist (1 to 4)")
        if not self.precisions or set(self.precisions) - set(PRECISIONS):
            raise ImportRejected("KernelBench precisions are fp32 and/or bf16")


@dataclass(frozen=True)
class ImportPreview:
    token: str
    source: str  # the upload's file name, or the folder
    items: tuple[ImportItem, ...]
    ignored: tuple[str, ...] = ()  # files outside any task folder

    @property
    def ok_items(self) -> tuple[ImportItem, ...]:
        return tuple(i for i in self.items if i.ok)

    @property
    def bad_items(self) -> tuple[ImportItem, ...]:
        return tuple(i for i in self.items if not i.ok)


@dataclass(frozen=True)
class ImportResult:
    written: tuple[str, ...]  # suite/op folders now under TASKS_DIR
    skipped: tuple[ImportItem, ...]
    report: SyncReport = field(default_factory=SyncReport)


# ---------------------------------------------------------------- staging


def _staging_root() -> Path:
    return Path(settings.VAR_DIR) / "task-imports"


def _staging_dir(token: str) -> Path:
    if not _TOKEN.match(token or ""):
        raise ImportRejected("this import is unknown or has expired; upload the archive again")
    folder = _staging_root() / token
    if not (folder / "files").is_dir():
        raise ImportRejected("this import is unknown or has expired; upload the archive again")
    return folder


def _new_staging() -> tuple[str, Path]:
    root = _staging_root()
    root.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in root.iterdir():  # forgotten previews
        try:
            if now - old.stat().st_mtime > STAGING_MAX_AGE_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
    token = uuid.uuid4().hex
    (root / token / "files").mkdir(parents=True)
    return token, root / token


@contextmanager
def _staging() -> Iterator[tuple[str, Path]]:
    """A fresh staging folder, removed again if unpacking fails; file system errors become ImportRejected."""
    token, folder = _new_staging()
    try:
        yield token, folder
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ImportRejected(f"cannot unpack: {exc.strerror or exc} ({Path(exc.filename or '').name})") from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _safe_relative(name: str) -> PurePosixPath | None:
    """The entry's path inside the archive, or ImportRejected; None for entries to skip."""
    if "\x00" in name:
        raise ImportRejected(f"{name!r}: a NUL byte in a member name (it would be cut short there); "
                             "rename the file and pack the archive again")
    if "\\" in name:
        raise ImportRejected(f"{name!r}: backslashes in paths are not accepted (use an archiver that writes '/')")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ImportRejected(f"{name!r}: absolute paths are not accepted")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if ".." in parts:
        raise ImportRejected(f"{name!r}: '..' in a path (it would write outside the import folder)")
    if not parts or parts[0] in _IGNORED or parts[-1] in _IGNORED:
        return None
    return PurePosixPath(*parts)


class _Writer:
    """Writes entries under `dest`, counting files and bytes against the limits."""

    def __init__(self, dest: Path, limits: ImportLimits):
        self.dest, self.limits = dest, limits
        self.entries = 0
        self.total = 0

    def count(self, name: str) -> None:
        self.entries += 1
        if self.entries > self.limits.files:
            raise ImportRejected(f"more than {self.limits.files} files and folders; split the archive")

    def folder(self, rel: PurePosixPath) -> None:
        (self.dest / rel).mkdir(parents=True, exist_ok=True)

    def file(self, rel: PurePosixPath, stream: IO[bytes]) -> None:
        target = self.dest / rel
        if target.is_dir():
            raise ImportRejected(f"{rel}: appears as a file and as a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with target.open("wb") as out:
            while chunk := stream.read(64 * 1024):
                written += len(chunk)
                self.total += len(chunk)
                if written > self.limits.file_bytes:
                    raise ImportRejected(f"{rel}: larger than {self.limits.file_bytes // MiB} MiB")
                if self.total > self.limits.total_bytes:
                    raise ImportRejected(f"unpacks to more than {self.limits.total_bytes // MiB} MiB")
                out.write(chunk)


def _unpack_zip(upload: IO[bytes], writer: _Writer) -> None:
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ImportRejected(f"not a readable zip archive: {exc}") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > writer.limits.files:
            raise ImportRejected(f"more than {writer.limits.files} files and folders; split the archive")
        for info in infos:
            # zipfile cuts a name at its first NUL byte (info.filename); the name as stored is orig_filename,
            # so "kernel.cu\0../x" is refused by name rather than silently unpacked as "kernel.cu".
            rel = _safe_relative(info.orig_filename)
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archiver wrote permissions only
            if kind == stat.S_IFLNK:
                raise ImportRejected(f"{info.filename!r}: symbolic links are not accepted")
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise ImportRejected(f"{info.filename!r}: only plain files and folders are accepted")
            if info.flag_bits & 0x1:
                raise ImportRejected(f"{info.filename!r}: encrypted entries are not accepted")
            writer.count(info.filename)
            if rel is None:
                continue
            if info.is_dir():
                writer.folder(rel)
                continue
            try:
                with archive.open(info) as stream:
                    writer.file(rel, stream)
            except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
                raise ImportRejected(f"{info.filename!r}: cannot be read: {exc}") from None


def _unpack_tar(upload: IO[bytes], writer: _Writer) -> None:
    try:
        archive = tarfile.open(fileobj=upload, mode="r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ImportRejected(f"not a .zip, .tar.gz or .tar archive ({exc})") from None
    with archive:
        try:
            for member in archive:  # streams: the member list is never built whole
                rel = _safe_relative(member.name)
                if member.issym() or member.islnk():
                    raise ImportRejected(f"{member.name!r}: links are not accepted")
                if not (member.isfile() or member.isdir()):
                    raise ImportRejected(f"{member.name!r}: only plain files and folders are accepted")
                writer.count(member.name)
                if rel is None:
                    continue
                if member.isdir():
                    writer.folder(rel)
                    continue
                if member.size > writer.limits.file_bytes:
                    raise ImportRejected(f"{member.name}: larger than {writer.limits.file_bytes // MiB} MiB")
                stream = archive.extractfile(member)
                writer.file(rel, stream if stream is not None else io.BytesIO())
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ImportRejected(f"the archive is damaged: {exc}") from None


def import_stage_archive(upload: IO[bytes], name: str, size: int, limits: ImportLimits | None = None,
                         options: StageOptions | None = None) -> ImportPreview:
    """Unpack an uploaded .zip / .tar.gz into staging and preview it; ImportRejected leaves nothing behind."""
    limits = limits or ImportLimits()
    if size > limits.archive_bytes:
        raise ImportRejected(
            f"{name} is {size / MiB:.1f} MiB; the limit is {limits.archive_bytes // MiB} MiB per archive"
        )
    with _staging() as (token, folder):
        writer = _Writer(folder / "files", limits)
        upload.seek(0)
        is_zip = zipfile.is_zipfile(upload)
        upload.seek(0)
        (_unpack_zip if is_zip else _unpack_tar)(upload, writer)
        (folder / "source").write_text(name, encoding="utf-8")
        _normalize(folder, options or StageOptions())
    return import_preview(token)


def resolve_tasks_subdir(path: str) -> Path:
    """A folder given by an admin: relative to TASKS_DIR (or absolute inside it), never outside it."""
    root = Path(settings.TASKS_DIR).resolve()
    raw = Path(path.strip())
    candidate = (raw if raw.is_absolute() else root / raw).resolve()
    if candidate != root and root not in candidate.parents:
        raise ImportRejected(f"{path!r} is outside the task folder {root}")
    if not candidate.is_dir():
        raise ImportRejected(f"{path!r} is not a folder under {root}")
    return candidate


def import_stage_directory(path: str, limits: ImportLimits | None = None,
                           options: StageOptions | None = None) -> ImportPreview:
    """Stage a copy of a server-side folder under TASKS_DIR (e.g. one unpacked by hand) for the same preview."""
    source = resolve_tasks_subdir(path)
    return import_stage_paths(source, sorted(source.rglob("*")), str(source), limits, options)


def import_stage_paths(root: Path, paths: Iterable[Path], label: str, limits: ImportLimits | None = None,
                       options: StageOptions | None = None) -> ImportPreview:
    """Stage copies of `paths` (files and folders under `root`, kept at their relative place) for the preview.
    The import commands use it on any folder of the server, with only the files worth importing."""
    limits = limits or ImportLimits()
    with _staging() as (token, folder):
        writer = _Writer(folder / "files", limits)
        for item in paths:
            if item == root:
                continue
            rel = item.relative_to(root)
            if item.is_symlink():
                raise ImportRejected(f"{rel}: symbolic links are not accepted")
            safe = _safe_relative(PurePosixPath(rel).as_posix())
            writer.count(PurePosixPath(rel).as_posix())
            if safe is None:
                continue
            if item.is_dir():
                writer.folder(safe)
            elif item.is_file():
                with item.open("rb") as stream:
                    writer.file(safe, stream)
            else:
                raise ImportRejected(f"{rel}: only plain files and folders are accepted")
        (folder / "source").write_text(label, encoding="utf-8")
        _normalize(folder, options or StageOptions())
    return import_preview(token)


def _normalize(folder: Path, options: StageOptions) -> None:
    """Turn task.yaml folders and loose KernelBench files in staging into `<suite>/<name>/` task folders (the
    originals leave `files/`), and record the ones that could not be used in conversion.json."""
    files = folder / "files"
    exported = _exported_folders(files)
    spec_dirs = [p.parent for p in files.rglob("spec.toml") if p.is_file()]
    # A task.yaml folder that an export lists is a task folder already: it stays at <suite>/<name>/.
    spec_dirs += [d for d in importers.taskyaml_folders(files) if d.relative_to(files).as_posix() in exported]
    yaml_dirs = [d for d in importers.taskyaml_folders(files)
                 if not any(s == d or s in d.parents for s in spec_dirs)]
    task_dirs = spec_dirs + yaml_dirs
    loose_py = [p for p in files.rglob("*.py")
                if p.is_file() and not any(d in p.parents for d in task_dirs) and importers.KB_FILE.match(p.name)]
    if not yaml_dirs and not loose_py:
        return
    converted = folder / "converted"
    yaml_report = importers.convert_taskyaml(
        [(d, d.relative_to(files).as_posix()) for d in yaml_dirs], converted, options.suite)
    kb_report = importers.convert_kernelbench(
        [(p, p.relative_to(files).as_posix()) for p in loose_py], converted, options.level, options.precisions)
    for d in yaml_dirs:
        shutil.rmtree(d, ignore_errors=True)
    for p in loose_py:
        p.unlink(missing_ok=True)
    problems = [{"folder": s.source, "error": s.reason} for s in (*yaml_report.skipped, *kb_report.skipped)]
    for target in (*yaml_report.written, *kb_report.written):
        dest = files / target
        if dest.exists():
            problems.append({"folder": target, "error": "[layout] the upload already has a folder at this place"})
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        (converted / target).rename(dest)
    shutil.rmtree(converted, ignore_errors=True)
    (folder / "conversion.json").write_text(json.dumps(problems), encoding="utf-8")


def _exported_folders(files: Path) -> frozenset[str]:
    """The `<suite>/<op>` folders an export's manifest lists (read, then removed from staging); none without
    one. A manifest that does not parse lists nothing: the folders are then read like any upload."""
    manifest = files / MANIFEST
    if not manifest.is_file():
        return frozenset()
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        folders = data.get("folders", []) if isinstance(data, dict) else []
    except (OSError, UnicodeDecodeError, ValueError):
        folders = []
    manifest.unlink()
    return frozenset(f for f in folders if isinstance(f, str) and len(PurePosixPath(f).parts) == 2
                     and all(_SUITE.match(part) for part in PurePosixPath(f).parts))


# ---------------------------------------------------------------- preview


def _check_folder(files: Path, spec_path: Path) -> tuple[ImportItem, AnySpec | None]:
    folder = spec_path.parent.relative_to(files).as_posix()
    try:
        spec = load_task(spec_path)
    except SpecError as exc:
        return ImportItem(folder, error=f"[{exc.field}] {exc.message}"), None
    item = ImportItem(folder, spec.suite, spec.name, tuple(spec.precisions), len(spec.sizes))
    if not _SUITE.match(spec.suite) or spec.suite.startswith((".", "_")):
        return ImportItem(folder, error=f"[suite] {spec.suite!r} cannot be a folder name under the task folder"), None
    missing = format_of(spec).missing(spec)
    if missing:
        return ImportItem(folder, error=missing), None
    existing = {
        t.precision: t.source_hash
        for t in Task.objects.filter(suite=spec.suite, operator=spec.name).only("precision", "source_hash")
    }
    if not existing:
        action = "new"
    elif all(existing.get(p) == source_hash(spec, p) for p in spec.precisions):
        action = "unchanged"
    else:
        action = "update"
    return ImportItem(item.folder, item.suite, item.operator, item.precisions, item.sizes, action), spec


def _scan(token: str) -> tuple[ImportPreview, dict[str, AnySpec]]:
    folder = _staging_dir(token)
    files = folder / "files"
    specs = sorted(p for name in SPEC_FILES for p in files.rglob(name) if p.is_file())
    task_dirs = [p.parent for p in specs]
    items: list[ImportItem] = []
    loaded: dict[str, AnySpec] = {}
    targets: dict[str, str] = {}
    for spec_path in specs:
        if spec_path.name == "spec.toml" and (spec_path.parent / "task.yaml").is_file():
            items.append(ImportItem(spec_path.parent.relative_to(files).as_posix(),
                                    error="[layout] the folder has both spec.toml and task.yaml: keep one"))
            continue
        if spec_path.name == "task.yaml" and (spec_path.parent / "spec.toml").is_file():
            continue  # reported once, above
        item, spec = _check_folder(files, spec_path)
        if spec is not None and any(d != spec_path.parent and d in spec_path.parents for d in task_dirs):
            item, spec = ImportItem(item.folder, error="[layout] a task folder inside another task folder"), None
        if spec is not None:
            if item.target in targets:
                item = ImportItem(item.folder, error=f"[name] {item.target} also comes from {targets[item.target]}")
                spec = None
            else:
                targets[item.target] = item.folder
                loaded[item.folder] = spec
        items.append(item)
    conversion = folder / "conversion.json"
    if conversion.is_file():
        items += [ImportItem(p["folder"], error=p["error"]) for p in json.loads(conversion.read_text("utf-8"))]
    ignored = tuple(
        p.relative_to(files).as_posix()
        for p in sorted(files.rglob("*"))
        if p.is_file() and not any(d == p.parent or d in p.parents for d in task_dirs)
    )
    source = (folder / "source").read_text(encoding="utf-8") if (folder / "source").exists() else ""
    return ImportPreview(token, source, tuple(items), ignored), loaded


def import_preview(token: str) -> ImportPreview:
    return _scan(token)[0]


def import_discard(token: str) -> None:
    if _TOKEN.match(token or ""):
        shutil.rmtree(_staging_root() / token, ignore_errors=True)


# ---------------------------------------------------------------- commit


def _replace_folder(source: Path, dest: Path, token: str) -> None:
    """Put a copy of `source` at `dest`; an existing `dest` is swapped out only once the copy is complete."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    incoming = dest.parent / f".incoming-{token}-{dest.name}"
    previous = dest.parent / f".previous-{token}-{dest.name}"
    shutil.rmtree(incoming, ignore_errors=True)
    shutil.copytree(source, incoming, symlinks=True)
    if dest.exists() or dest.is_symlink():
        dest.rename(previous)
    try:
        incoming.rename(dest)
    except OSError:
        if previous.exists():
            previous.rename(dest)
        raise
    shutil.rmtree(previous, ignore_errors=True)


def import_commit(token: str) -> ImportResult:
    """Write the folders that pass the preview under TASKS_DIR/<suite>/<op>/ and sync them; skip the rest."""
    preview, specs = _scan(token)
    files = _staging_dir(token) / "files"
    root = Path(settings.TASKS_DIR)
    written: list[str] = []
    synced: list[AnySpec] = []
    for item in preview.ok_items:
        dest = root / item.suite / item.operator
        if root.resolve() not in dest.resolve().parents:  # suite and op are checked names; belt and braces
            raise ImportRejected(f"{item.target} would land outside {root}")
        _replace_folder(files / item.folder, dest, token)
        written.append(item.target)
        synced.append(load_task(dest))
    report = tasks_sync_specs(synced, root)
    import_discard(token)
    return ImportResult(tuple(written), preview.bad_items, report)


# ---------------------------------------------------------------- export


@dataclass(frozen=True)
class ExportResult:
    data: bytes
    folders: tuple[str, ...]
    missing: tuple[str, ...]  # tasks whose folder is not on disk (nothing exported for them)


def _task_folders(tasks: Iterable[Task], root: Path) -> Iterator[tuple[Task, Path | None]]:
    resolved_root = root.resolve()
    for task in tasks:
        if not task.spec_path:
            yield task, None
            continue
        folder = (root / task.spec_path).parent
        ok = folder.is_dir() and resolved_root in folder.resolve().parents
        yield task, folder if ok else None


def tasks_export_zip(tasks: Iterable[Task]) -> ExportResult:
    """A zip of the tasks' folders (both precisions share one), paths relative to TASKS_DIR."""
    root = Path(settings.TASKS_DIR)
    buffer = io.BytesIO()
    folders: dict[str, Path] = {}
    missing: list[str] = []
    for task, folder in _task_folders(tasks, root):
        if folder is None:
            missing.append(str(task))
        else:
            folders.setdefault(folder.relative_to(root).as_posix(), folder)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, json.dumps({"format": "kernelweb-tasks", "version": 1,
                                               "folders": sorted(folders)}, indent=2) + "\n")
        for rel, folder in sorted(folders.items()):
            for path in sorted(folder.rglob("*")):
                if path.is_symlink() or not path.is_file() or path.name.startswith("."):
                    continue
                archive.write(path, f"{rel}/{path.relative_to(folder).as_posix()}")
    return ExportResult(buffer.getvalue(), tuple(sorted(folders)), tuple(missing))
