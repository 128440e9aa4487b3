import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.runs.models import Run
from apps.runs.trajectory_export import trajectory_export


class Command(BaseCommand):
    help = ("Write finished runs as trajectory JSON files, the format `manage.py import_trajectory` reads "
            "(e.g. to load runs made on a GPU host into another installation as demo data).")

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="+", type=int, help="run ids")
        parser.add_argument("--out", required=True, help="folder for <operator>_<precision>_run<id>.json")

    def handle(self, *args, runs, out, **options):
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        found = {run.pk: run for run in Run.objects.filter(pk__in=runs).select_related("task")}
        missing = [str(pk) for pk in runs if pk not in found]
        if missing:
            raise CommandError(f"no run {', '.join(missing)}")
        for pk in runs:
            run = found[pk]
            if run.is_active:
                raise CommandError(f"run {pk} is still {run.status}; export it once it has finished")
            path = folder / f"{run.task.operator}_{run.task.precision}_run{pk}.json"
            path.write_text(json.dumps(trajectory_export(run), indent=1) + "\n", encoding="utf-8")
            self.stdout.write(f"  exported  run {pk} ({run.task.slug}, {run.status}) -> {path}")
