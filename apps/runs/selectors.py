"""Reads for runs and their events. Every read that a user triggers goes through
`runs_visible_to`, so ownership is enforced in one place."""

from django.conf import settings
from django.db.models import Q, QuerySet

from apps.runs.models import Profile, Run, RunEvent, Turn


def runs_visible_to(user) -> QuerySet[Run]:
    """Owners see their runs, everyone (anonymous visitors too) sees public runs, staff see all."""
    runs = Run.objects.select_related("task", "owner")
    if not user.is_authenticated:
        return runs.filter(is_public=True)
    if user.is_staff:
        return runs
    return runs.filter(Q(owner=user) | Q(is_public=True))


def run_for_user(user, run_id: int) -> Run | None:
    return runs_visible_to(user).filter(pk=run_id).first()


def events_after(run_id: int, after: int = 0, limit: int = 1000) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])


def turns_visible_to(user) -> QuerySet[Turn]:
    """Turns inherit their run's visibility."""
    return Turn.objects.filter(run__in=runs_visible_to(user)).select_related("run")


def profiles_visible_to(user) -> QuerySet[Profile]:
    return Profile.objects.filter(turn__run__in=runs_visible_to(user))


def run_queue_of(run_id: int) -> str:
    """The queue a run's work goes to; runs from before GPU targeting (queue "") go to the default."""
    queue = Run.objects.filter(pk=run_id).values_list("queue", flat=True).first()
    return queue or settings.KERNELWEB_GPU_QUEUE


def turn_queue_of(turn_id: int) -> str:
    queue = Turn.objects.filter(pk=turn_id).values_list("run__queue", flat=True).first()
    return queue or settings.KERNELWEB_GPU_QUEUE
