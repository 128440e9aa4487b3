from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.runs.assembly_backfill import assembly_backfill
from apps.runs.presenter import run_outcome
from apps.runs.trajectory_import import trajectory_import
from worker.agents.trajectory import load


class Command(BaseCommand):
    help = "Load trajectories written by `python -m worker optimize` into the database as finished runs."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--owner", help="username owning the runs (default: the first superuser)")
        parser.add_argument("--public", action="store_true", help="visible to everyone, anonymous visitors included")
        parser.add_argument("--force", action="store_true", help="import a file again even if already loaded")
        parser.add_argument("--skip-existing", action="store_true", help="skip files already imported")
        parser.add_argument("--assembly", action="store_true",
                            help="compile C/CUDA turns stored without PTX/SASS again (compile only, no GPU needed; "
                                 "needs nvcc and cuobjdump/nvdisasm: make .cuda-libs/.ready) for the viewer's "
                                 "PTX/SASS tab")

    def handle(self, *args, paths, owner=None, public=False, force=False, skip_existing=False, assembly=False,
               **options):
        User = get_user_model()
        user = (User.objects.filter(username=owner).first() if owner
                else User.objects.filter(is_superuser=True).order_by("pk").first())
        if user is None:
            raise CommandError(f"no user {owner!r}" if owner else "no superuser yet; run `manage.py ensure_admin`")
        failures = 0
        for path in paths:
            try:
                run = trajectory_import(load(path), owner=user, public=public, force=force)
            except ValueError as exc:
                if skip_existing and "already run" in str(exc):
                    self.stdout.write(f"  skipped   {path}: {exc}")
                    continue
                failures += 1
                self.stderr.write(self.style.ERROR(f"  failed    {path}: {exc}"))
                continue
            self.stdout.write(f"  imported  {path} -> run {run.pk} ({imported_summary(run)})")
            if assembly:
                report = assembly_backfill(run)
                self.stdout.write(f"            PTX/SASS listed for {report.listed} turn(s)")
                for reason in report.skipped:
                    self.stdout.write(f"            no listing: {reason}")
        if failures:
            raise CommandError(f"{failures} trajectory file(s) could not be imported")


def imported_summary(run) -> str:
    """The imported run in words, numbers formatted (never a raw float such as 180.45522529100995)."""
    best = run.best_turn
    label = f"{best.round_index}.{best.debug_index}" if best else ""
    return run_outcome(run.status, run.best_score, label, run.turns.count(), run.wall_time_s, run.gpu_name)
