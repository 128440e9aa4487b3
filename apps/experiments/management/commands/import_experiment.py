from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.experiments.bundle import experiment_import


class Command(BaseCommand):
    help = "Load an experiment written by `manage.py export_experiment` (its runs, members and configuration)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the exported folder, or its experiment.json")
        parser.add_argument("--owner", help="username owning the experiment and its runs "
                                             "(default: the first superuser)")
        parser.add_argument("--public", action="store_true", help="visible to everyone, anonymous visitors included")
        parser.add_argument("--force", action="store_true", help="import runs again even if already loaded")
        parser.add_argument("--skip-existing", action="store_true",
                            help="do nothing (and succeed) when the experiment's runs are already loaded")

    def handle(self, *args, path, owner=None, public=False, force=False, skip_existing=False, **options):
        User = get_user_model()
        user = (User.objects.filter(username=owner).first() if owner
                else User.objects.filter(is_superuser=True).order_by("pk").first())
        if user is None:
            raise CommandError(f"no user {owner!r}" if owner else "no superuser yet; run `manage.py ensure_admin`")
        try:
            experiment = experiment_import(path, owner=user, public=True if public else None, force=force)
        except ValueError as exc:  # ExperimentBundleError, TrajectoryImportError, a broken trajectory file
            if skip_existing and "already run" in str(exc):
                self.stdout.write(f"  skipped   {path}: already imported ({exc})")
                return
            raise CommandError(str(exc)) from exc
        runs = experiment.members.exclude(run=None).count()
        self.stdout.write(f"  imported  {path} -> experiment {experiment.pk} ({experiment.name}), {runs} runs")
