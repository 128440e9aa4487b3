import pytest

from apps.catalog.models import Task


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def task(db):
    return Task.objects.create(
        suite="testsuite",
        operator="vadd",
        precision="fp32",
        title="Vector add",
        category="dense_linear_algebra",
        description="C = A + B",
        entry_point="vadd",
        interface="void vadd(const float* A, const float* B, float* C, int N)",
        complexity="N",
        sizes=[{"N": 1024}],
        outputs=["C"],
        atol=1e-4,
        rtol=1e-4,
        baseline_source="// baseline",
    )


@pytest.fixture
def make_run(task):
    from apps.runs.services import RunConfig, run_create

    def make(owner, **kwargs):
        return run_create(owner=owner, task=task, config=RunConfig(model="scripted"), dispatch=False, **kwargs)

    return make
