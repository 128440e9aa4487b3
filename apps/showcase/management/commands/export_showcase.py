from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from apps.showcase.export import ExportError, showcase_export


class Command(BaseCommand):
    help = "Write the public showcase (index + one page per operator) as static HTML that opens from disk."

    def add_arguments(self, parser):
        parser.add_argument("out_dir", type=Path)
        parser.add_argument("--force", action="store_true",
                            help="write into a non-empty directory (its files are overwritten)")

    def handle(self, *args, out_dir: Path, force: bool = False, **options):
        def progress(cards):
            return tqdm(cards, desc="operator pages", unit="page", file=self.stderr, disable=options["verbosity"] < 1)

        try:
            result = showcase_export(out_dir, force=force, progress=progress)
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        index = (result.out_dir / "index.html").resolve()
        self.stdout.write(self.style.SUCCESS(
            f"Wrote {len(result.pages)} page(s) and {len(result.assets)} asset(s); open {index.as_uri()}"))
