import sys

from django.core.management.base import BaseCommand, CommandError

from apps.fleet.launcher import PlanError, exec_worker, list_gpus, plan_workers, shared_lock_dir, supervise


class Command(BaseCommand):
    help = ("Start one Celery worker per GPU of this host (CUDA_VISIBLE_DEVICES pinned, queues gpu.<model>,gpu); "
            "without a GPU, one worker on the gpu queue. Forwards Ctrl-C/SIGTERM; restarts nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--gpu", type=int, action="append", default=[], metavar="INDEX",
                            help="Only this GPU (nvidia-smi's index); repeatable. Default: every GPU.")
        parser.add_argument("--concurrency", type=int, default=1,
                            help="Runs per GPU at a time (harness runs still take the per-GPU lock). Default 1.")
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument("--dry-run", action="store_true", help="Print the commands and start nothing.")
        parser.add_argument("--exec", action="store_true", dest="exec_",
                            help="Replace this process with the one planned worker (for systemd units).")

    def handle(self, *args, gpu, concurrency, loglevel, dry_run, exec_, **options):
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        gpus, reason = list_gpus()
        try:
            plans = plan_workers(gpus, only=gpu, concurrency=concurrency, loglevel=loglevel,
                                 lock_dir=shared_lock_dir())
        except PlanError as exc:
            raise CommandError(str(exc)) from None
        if not gpus:
            self.stdout.write(self.style.WARNING(
                f"No GPU on this host ({reason}): one worker on the '{plans[0].queues[0]}' queue; it fails "
                "the runs it takes with the no-GPU reason."))
        if exec_ and len(plans) != 1:
            raise CommandError(f"--exec needs exactly one worker, not {len(plans)}: name one GPU with --gpu N")
        if dry_run:
            for plan in plans:
                self.stdout.write(plan.describe())
            return
        self.stdout.flush()
        if exec_:
            exec_worker(plans[0])
        status = supervise(plans, out=self.stdout)
        if status:
            sys.exit(status)
