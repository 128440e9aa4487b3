from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.catalog.archive_import import DEFAULT_YAML_SUITE, ImportRejected, StageOptions
from apps.catalog.management.importing import stage_and_commit
from worker.importers import taskyaml_folders


class Command(BaseCommand):
    help = ("Import CUDAHercules-style task folders (task.yaml + a solution file + a make-based harness) found "
            "under PATH as tasks of one suite. Idempotent; folders that cannot be used are listed with the reason.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="A folder holding task folders (any depth) or one task folder.")
        parser.add_argument("--suite", default=DEFAULT_YAML_SUITE, help=f"Suite (default {DEFAULT_YAML_SUITE}).")
        parser.add_argument("--dry-run", action="store_true", help="Show what would be imported; write nothing.")

    def handle(self, *args, path: Path, suite: str, dry_run=False, **options):
        if not path.is_dir():
            raise CommandError(f"{path} is not a folder")
        try:
            stage = StageOptions(suite=suite)
        except ImportRejected as exc:
            raise CommandError(str(exc)) from None
        folders = taskyaml_folders(path)
        files = [f for folder in folders for f in sorted(folder.rglob("*"))
                 if not any(part.startswith(".") for part in f.relative_to(folder).parts)]
        root = path.parent if (path / "task.yaml").is_file() else path  # one task folder: keep its name
        stage_and_commit(self, root, folders + files, stage, dry_run)
