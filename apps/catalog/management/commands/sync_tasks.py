from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.catalog.services import tasks_sync


class Command(BaseCommand):
    help = "Load task specs from tasks/ into the database (idempotent). Bad specs are reported, not fatal."

    def add_arguments(self, parser):
        parser.add_argument("--dir", type=Path, default=None, help="Tasks folder (default: TASKS_DIR).")
        parser.add_argument("--strict", action="store_true", help="Exit with status 1 if any spec is bad.")

    def handle(self, *args, dir=None, strict=False, **options):
        root = Path(dir or settings.TASKS_DIR)
        if not root.is_dir():
            raise CommandError(f"tasks folder {root} does not exist; pass --dir or set TASKS_DIR")
        report = tasks_sync(root)
        for label in report.created:
            self.stdout.write(f"  created   {label}")
        for label in report.updated:
            self.stdout.write(f"  updated   {label}")
        for label in report.missing:
            self.stdout.write(self.style.WARNING(f"  missing   {label} (in the database, not on disk; kept)"))
        for error in report.errors:
            self.stderr.write(self.style.ERROR(f"  bad spec  {error.path}: [{error.field}] {error.message}"))
        self.stdout.write(
            f"tasks: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {len(report.errors)} bad specs"
        )
        if strict and report.errors:
            raise CommandError(f"{len(report.errors)} bad task spec(s); fix them and run again")
