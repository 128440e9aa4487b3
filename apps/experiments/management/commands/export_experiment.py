from django.core.management.base import BaseCommand, CommandError

from apps.experiments.bundle import ExperimentBundleError, experiment_export
from apps.experiments.models import Experiment


class Command(BaseCommand):
    help = ("Write an experiment into a folder: experiment.json and one trajectory per run, which "
            "`manage.py import_experiment` loads on another installation (e.g. as demo data).")

    def add_arguments(self, parser):
        parser.add_argument("experiment", type=int, help="experiment id")
        parser.add_argument("--out", required=True, help="folder to write (created if missing)")

    def handle(self, *args, experiment, out, **options):
        found = Experiment.objects.filter(pk=experiment).first()
        if found is None:
            raise CommandError(f"no experiment {experiment}")
        try:
            path = experiment_export(found, out)
        except ExperimentBundleError as exc:
            raise CommandError(str(exc)) from exc
        runs = found.members.exclude(run=None).count()
        self.stdout.write(f"  exported  experiment {found.pk} ({found.name}): {runs} runs -> {path}")
