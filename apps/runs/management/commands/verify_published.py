"""`manage.py verify_published [--run ID ...] [--again] [--limit N]`: ask GPU workers to verify published
turns (apps/runs/verification.py) once, as Celery beat's `runs.verify_published` does every few minutes."""

from django.core.management.base import BaseCommand, CommandError

from apps.runs.models import Run, Turn
from apps.runs.verification import published_runs, verification_request, verify_published


class Command(BaseCommand):
    help = "Ask for a fresh evaluation (unseen seeds) of every published best turn that has none."

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, action="append", default=[],
                            help="Only these runs (repeatable); they must be published (public or in a public "
                                 "experiment) and succeeded.")
        parser.add_argument("--again", action="store_true",
                            help="Ask again even where a verification exists (e.g. after a driver or harness change).")
        parser.add_argument("--limit", type=int, default=None,
                            help="At most N new requests (default VERIFY_PASS_LIMIT).")

    def handle(self, *args, run: list[int], again: bool, limit: int | None, **options):
        runs = Run.objects.filter(pk__in=run) if run else None
        if run:
            found = set(published_runs().filter(pk__in=run).values_list("pk", flat=True))
            missing = sorted(set(run) - found)
            if missing:
                raise CommandError(f"run(s) {', '.join(map(str, missing))} not found, not succeeded or not "
                                   "published (public, or in a public experiment): nothing to verify")
        if again:
            scope = published_runs() if runs is None else published_runs().filter(pk__in=run)
            turns = Turn.objects.filter(pk__in=scope.values("best_turn")).order_by("run_id")[:limit]
            asked = [verification_request(turn).pk for turn in turns]
            self.stdout.write(f"verify_published: asked for {len(asked)} verification(s)")
            return
        report = verify_published(limit=limit, runs=runs)
        self.stdout.write(f"verify_published: {report}")
