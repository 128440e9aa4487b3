"""What the import_kernelbench and import_taskyaml commands share: stage the chosen files, print the
preview (every file that cannot be used, with the reason), write what loads, report the sync."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.catalog.archive_import import (
    ImportLimits,
    ImportRejected,
    StageOptions,
    import_commit,
    import_discard,
    import_stage_paths,
)

# A command reads a folder of the server its operator chose: larger than an upload may be.
COMMAND_LIMITS = ImportLimits(archive_bytes=0, files=20_000, total_bytes=1024 * 1024 * 1024)


def stage_and_commit(command: BaseCommand, root: Path, paths: list[Path], options: StageOptions,
                     dry_run: bool) -> None:
    if not paths:
        raise CommandError(f"nothing to import under {root}")
    try:
        preview = import_stage_paths(root, paths, str(root), COMMAND_LIMITS, options)
    except ImportRejected as exc:
        raise CommandError(f"refused: {exc}; nothing was written") from None
    out = command.stdout
    for item in preview.ok_items:
        out.write(f"  {item.action:<9} {item.target} ({', '.join(item.precisions)})")
    for item in preview.bad_items:
        command.stderr.write(command.style.WARNING(f"  skipped   {item.folder}: {item.error}"))
    for path in preview.ignored:
        command.stderr.write(f"  ignored   {path}: in no task folder, not a KernelBench problem file (<id>_<Name>.py)")
    if dry_run or not preview.ok_items:
        import_discard(preview.token)
        if not preview.ok_items:
            raise CommandError(f"none of the {len(preview.items)} item(s) can be imported; see the reasons above")
        out.write(f"dry run: {len(preview.ok_items)} task folder(s) would be written, "
                  f"{len(preview.bad_items)} skipped")
        return
    result = import_commit(preview.token)
    report = result.report
    for error in report.errors:
        command.stderr.write(command.style.ERROR(f"  sync error {error}"))
    out.write(
        f"imported {len(result.written)} task folder(s): {len(report.created)} task(s) created, "
        f"{len(report.updated)} updated, {len(report.unchanged)} unchanged; {len(preview.bad_items)} skipped"
    )
