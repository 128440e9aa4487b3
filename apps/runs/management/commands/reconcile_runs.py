"""`manage.py reconcile_runs [--every SECONDS]`: the delivery reconciler (apps/runs/reconcile.py) for
deployments without Celery beat: once, or in a loop (a cron job or a systemd timer runs it once)."""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from apps.runs.reconcile import reconcile


class Command(BaseCommand):
    help = "Send unsent runs, re-send runs whose message was lost, fail runs whose worker stopped beating."

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=0.0,
                            help="Repeat every SECONDS until interrupted (default: once).")

    def handle(self, *args, every: float, **options):
        while True:
            report = reconcile()
            self.stdout.write(f"reconcile: {report}")
            if every <= 0:
                return
            close_old_connections()
            time.sleep(every)
