"""The shipped MSKernelBench library (tasks/mskernelbench) as the web app sees it: 50 operators × 2 precisions."""

from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.runs.models import Run

pytestmark = pytest.mark.django_db
TASKS = Path(__file__).parents[2] / "tasks"


@pytest.fixture
def library():
    report = tasks_sync(TASKS)
    assert report.errors == []
    return Task.objects.filter(suite="mskernelbench")


def test_all_fifty_operators_sync_in_both_precisions(library):
    precisions = Counter(library.values_list("operator", flat=True))
    assert len(precisions) == 50 and set(precisions.values()) == {2}
    assert set(library.values_list("precision", flat=True)) == {"fp32", "bf16"}
    assert library.filter(description="").count() == 0


def test_the_catalog_lists_every_operator_and_every_task_page_renders_its_math(client, user, library):
    client.force_login(user)
    catalog = client.get(reverse("catalog:list"), {"suite": "mskernelbench"}).content.decode()
    for operator in set(library.values_list("operator", flat=True)):
        assert operator in catalog
    for task in library:
        page = client.get(reverse("catalog:detail", args=[task.pk]))
        assert page.status_code == 200, task
        assert 'class="math' in page.content.decode(), f"{task} shows no rendered math"


def test_one_launch_can_queue_a_run_on_every_task_of_the_library(client, user, library, monkeypatch):
    from apps.accounts.models import Quota

    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    Quota.objects.create(user=user, active_runs=100)  # the default (QUOTA_ACTIVE_RUNS, 20) is far below a library
    client.force_login(user)
    response = client.post(reverse("runs:launch"), {
        "tasks": list(library.values_list("pk", flat=True)), "model": "gpt-test", "rounds": 1,
        "debug_rounds": 1, "profile_mode": "filtered", "temperature": 0.2})
    assert response.status_code == 302
    assert Run.objects.filter(owner=user).count() == 100
    assert set(Run.objects.values_list("task__precision", flat=True)) == {"fp32", "bf16"}
