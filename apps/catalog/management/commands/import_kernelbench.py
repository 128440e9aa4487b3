from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.catalog.archive_import import ImportRejected, StageOptions
from apps.catalog.management.importing import stage_and_commit
from worker.engine.taskspec import PRECISIONS
from worker.importers import find_kernelbench


class Command(BaseCommand):
    help = ("Import KernelBench problems (PyTorch Model files) as tasks of suite kernelbench-l<N>, from a KernelBench "
            "checkout, its dataset folder, a level folder or single files. Idempotent; files that cannot be used "
            "are listed with the reason.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="A KernelBench checkout, a levelN folder or a problem file.")
        parser.add_argument("--level", type=int, default=None,
                            help="Import only this level (and the level of files whose folder does not say it).")
        parser.add_argument("--precision", action="append", choices=PRECISIONS, default=None,
                            help="Precision(s) to import each problem in (repeatable; default fp32).")
        parser.add_argument("--dry-run", action="store_true", help="Show what would be imported; write nothing.")

    def handle(self, *args, path: Path, level=None, precision=None, dry_run=False, **options):
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        try:
            stage = StageOptions(level=level, precisions=tuple(dict.fromkeys(precision or ["fp32"])))
        except ImportRejected as exc:
            raise CommandError(str(exc)) from None
        root = path if path.is_dir() else path.parent
        stage_and_commit(self, root, find_kernelbench(path, level), stage, dry_run)
