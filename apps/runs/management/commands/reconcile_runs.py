"""`manage.py reconcile_runs [--every SECONDS]`: the delivery reconciler (apps/runs/reconcile.py) for
deployments without Celery beat: once, or in a loop (a cron job or a systemd timer runs it once). Each pass
also asks for the verification of newly published turns (apps/runs/verification.py), as beat's
`runs.verify_published` does."""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from apps.runs.reconcile import reconcile
from apps.runs.verification import verify_published


class Command(BaseCommand):
    help = ("Send unsent runs, re-send runs whose message was lost, fail runs whose worker stopped beating; "
            "ask for verifications of newly published turns.")

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=0.0,
                            help="Repeat every SECONDS until interrupted (default: once).")

    def handle(self, *args, every: float, **options):
        while True:
            report = reconcile()
            self.stdout.write(f"reconcile: {report}")
            self.stdout.write(f"verify_published: {verify_published()}")
            if every <= 0:
                return
            close_old_connections()
            time.sleep(every)
