"""Per-user and per-group quota overrides; the logic that applies them is apps/runs/quotas.py."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

LIMIT_HELP = "Empty: this row does not set it (the default from the settings, or another applicable row)."


class Quota(models.Model):
    """Limits for one user or for every member of one group. Where several rows apply to a user (their own
    and their groups'), the most generous value set for each limit wins; a limit no row sets is the
    settings' default (QUOTA_ACTIVE_RUNS, QUOTA_ACTIVE_EXPERIMENTS, QUOTA_PENDING_MANUAL_TURNS)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="quota")
    group = models.OneToOneField(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="quota")
    active_runs = models.PositiveIntegerField(null=True, blank=True, help_text=f"Queued + running runs. {LIMIT_HELP}")
    active_experiments = models.PositiveIntegerField(
        null=True, blank=True, help_text=f"Experiments with a queued or running run. {LIMIT_HELP}")
    pending_manual_turns = models.PositiveIntegerField(
        null=True, blank=True, help_text=f"Manual turns waiting for their evaluation. {LIMIT_HELP}")
    note = models.CharField(max_length=200, blank=True, help_text="Why, for the next admin.")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(user__isnull=False, group__isnull=True)
                           | models.Q(user__isnull=True, group__isnull=False)),
                name="quota_user_xor_group",
            ),
        ]

    def __str__(self) -> str:
        return f"Quota of {self.user or self.group}"
