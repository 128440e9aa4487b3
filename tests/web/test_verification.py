"""Verified before published: published best turns are evaluated again with unseen seeds, and the showcase
lists only what a fresh evaluation confirmed (in production), fast enough and not hidden by an admin."""

import dataclasses
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import ShowcasePlacement, Task
from apps.catalog.services import tasks_sync
from apps.experiments.models import Experiment, ExperimentRun
from apps.runs.execution import turn_verify
from apps.runs.models import Run, RunStatus, Turn, TurnKind, TurnVerification, VerificationStatus
from apps.runs.verification import published_runs, verification_request, verify_published
from worker.engine import toolchain
from worker.engine.context import SLOWED_FLAG
from worker.engine.gpu import GpuInfo
from worker.engine.results import Evaluation, Verdict
from worker.engine.timing import SEED_BASE
from worker.engine.verification import Outcome, compare

pytestmark = pytest.mark.django_db
FAST = (Path(settings.BASE_DIR) / "tests" / "gpu_candidates" / "vector_add_fast.cu").read_text()
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc is not installed")


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)
    return Task.objects.get(suite="mskernelbench", operator="vector_add", precision="fp32")


def finished(owner, task, *, public=True, score=2.0, code=FAST, gpu="NVIDIA H100 80GB HBM3"):
    run = Run.objects.create(task=task, owner=owner, is_public=public, status=RunStatus.SUCCEEDED, model="scripted",
                             gpu_name=gpu, best_score=score)
    size = {"params": {"N": 1024}, "complexity": 1024.0, "flags": []}
    baseline = Turn.objects.create(run=run, round_index=0, kind=TurnKind.BASELINE, code=task.baseline_source,
                                   valid=True, score=1.0, verdict="ok")
    best = Turn.objects.create(
        run=run, round_index=1, kind=TurnKind.OPTIMIZE, code=code, valid=True, score=score, verdict="ok",
        parent=baseline, results=[{**size, "correct": True, "baseline": {"mean_ms": 2.0, "cv": 0.01},
                                   "candidate": {"mean_ms": 2.0 / score, "cv": 0.01}, "speedup": score}])
    Run.objects.filter(pk=run.pk).update(best_turn=best)
    run.refresh_from_db()
    return run


def verified(run, status=VerificationStatus.VERIFIED, gpu="NVIDIA H100 80GB HBM3", summary="correct again"):
    """What a GPU worker's turn_verify writes when it finishes (no GPU here to run one)."""
    return TurnVerification.objects.create(turn=run.best_turn, status=status, gpu_name=gpu, seed_base=7,
                                           finished_at=timezone.now(), verdict="ok", summary=summary,
                                           recorded_score=run.best_score, score=run.best_score)


@pytest.fixture
def gpu_present(monkeypatch):
    """The verification job starts only on a GPU worker; a build failure is found before the GPU is used."""
    real = toolchain.detect()
    if real.gpu is None:
        gpu = GpuInfo(index=0, name="Pretended GPU (tests)", uuid="GPU-pretended", compute_capability="9.0",
                      memory_mib=81559, driver="pretended")
        monkeypatch.setattr(toolchain, "detect", lambda: dataclasses.replace(real, gpu=gpu, gpu_reason="",
                                                                             arch=gpu.arch))


# ---- what is published, and asking for verifications ------------------------------------------------------


def test_public_runs_and_runs_of_public_experiments_are_published_private_ones_are_not(library, user):
    public, private, in_experiment = (finished(user, library), finished(user, library, public=False),
                                      finished(user, library, public=False))
    experiment = Experiment.objects.create(name="e", owner=user, model="scripted", is_public=True)
    ExperimentRun.objects.create(experiment=experiment, task=library, run=in_experiment)
    failed = finished(user, library)
    Run.objects.filter(pk=failed.pk).update(status=RunStatus.FAILED)
    assert set(published_runs().values_list("pk", flat=True)) == {public.pk, in_experiment.pk}
    assert private.pk not in published_runs().values_list("pk", flat=True)


def test_a_pass_asks_once_per_published_best_turn_with_seeds_it_never_saw(library, user,
                                                                         django_capture_on_commit_callbacks):
    run = finished(user, library)
    with django_capture_on_commit_callbacks(execute=True):
        report = verify_published()
    assert report.requested == [run.best_turn_id]
    verification = TurnVerification.objects.get()
    assert verification.status == VerificationStatus.PENDING and verification.recorded_score == 2.0
    assert abs(verification.seed_base - SEED_BASE) > 10
    assert verification.dispatched_at is not None  # sent to the run's GPU queue
    assert verify_published().requested == []  # one request per turn, not one per pass


def test_asking_again_while_one_is_on_its_way_returns_that_one(library, user):
    run = finished(user, library)
    first = verification_request(run.best_turn)
    assert verification_request(run.best_turn).pk == first.pk
    assert TurnVerification.objects.count() == 1


def _finished_ago(verification, hours):
    TurnVerification.objects.filter(pk=verification.pk).update(
        finished_at=timezone.now() - timezone.timedelta(hours=hours))


def test_a_verification_that_could_not_decide_is_asked_again_later_a_bounded_number_of_times(library, user,
                                                                                             settings):
    settings.VERIFY_RETRY_AFTER_SECONDS, settings.VERIFY_RETRY_LIMIT = 3600, 2
    run = finished(user, library)
    _finished_ago(verified(run, VerificationStatus.FAILED, summary="the GPU slowed itself down"), hours=0.5)
    assert verify_published().retried == []  # not yet: the GPU may still be hot
    _finished_ago(run.best_turn.verifications.get(), hours=2)
    assert verify_published().retried == [run.best_turn_id]
    assert verify_published().retried == []  # one on its way already
    again = run.best_turn.verifications.get(status=VerificationStatus.PENDING)
    TurnVerification.objects.filter(pk=again.pk).update(status=VerificationStatus.FAILED)
    _finished_ago(again, hours=2)
    assert verify_published().retried == []  # two attempts could not decide: only by hand from now on
    assert run.best_turn.verifications.count() == 2


def test_a_verification_that_disagreed_or_verified_is_not_asked_again_by_itself(library, user):
    for status in (VerificationStatus.DISAGREES, VerificationStatus.VERIFIED):
        run = finished(user, library)
        _finished_ago(verified(run, status), hours=48)
    assert verify_published().retried == []


def test_a_verification_never_delivered_is_sent_by_a_later_pass(library, user):
    run = finished(user, library)
    waiting = verification_request(run.best_turn)  # no commit callback ran: never sent
    TurnVerification.objects.filter(pk=waiting.pk).update(requested_at=timezone.now() - timezone.timedelta(hours=1))
    report = verify_published()
    assert report.resent == [waiting.pk]
    assert TurnVerification.objects.get(pk=waiting.pk).dispatched_at is not None


# ---- the GPU worker's side ----------------------------------------------------------------------------------


def test_without_a_gpu_the_verification_says_it_could_not_run(library, user):
    if toolchain.detect().gpu is not None:
        pytest.skip("this host has a GPU")
    run = finished(user, library)
    verification = verification_request(run.best_turn)
    turn_verify(verification.pk)
    verification.refresh_from_db()
    assert verification.status == VerificationStatus.FAILED and verification.finished_at
    assert verification.summary.startswith("No NVIDIA GPU on worker host")
    event = run.events.filter(type="turn.verified").get()
    assert event.payload["status"] == "failed" and event.payload["round"] == 1


@needs_nvcc
def test_a_record_whose_code_does_not_build_is_contradicted(library, user, gpu_present):
    run = finished(user, library, score=5.0, code=FAST.replace("cudaDeviceSynchronize", "cudaSyncX"))
    verification = verification_request(run.best_turn)
    turn_verify(verification.pk)
    verification.refresh_from_db()
    assert verification.status == VerificationStatus.DISAGREES and verification.verdict == "compile_error"
    assert verification.summary.startswith("the fresh evaluation says compile_error")
    assert verification.recorded_score == 5.0 and verification.score is None


def test_a_redelivered_message_changes_nothing_once_finished(library, user):
    run = finished(user, library)
    done = verified(run)
    turn_verify(done.pk)
    done.refresh_from_db()
    assert done.status == VerificationStatus.VERIFIED and not run.events.filter(type="turn.verified").exists()


# ---- the showcase -----------------------------------------------------------------------------------------------


@pytest.fixture
def production_showcase(settings):
    settings.SHOWCASE_REQUIRE_VERIFIED = True
    settings.SHOWCASE_MIN_SPEEDUP = 1.1


def _showcase() -> str:
    response = Client().get(reverse("showcase:index"))
    assert response.status_code == 200
    return response.content.decode()


def test_only_verified_results_reach_the_production_showcase(library, user, production_showcase):
    run = finished(user, library)
    html = _showcase()
    assert "vector_add" not in html and "1 public result awaiting verification on a GPU worker" in html
    verified(run)
    html = _showcase()
    assert f"verified on NVIDIA H100 80GB HBM3, {timezone.now():%Y-%m-%d}" in html
    page = Client().get(reverse("showcase:operator", args=["mskernelbench", "vector_add", "fp32"]))
    assert page.status_code == 200 and "verified on NVIDIA H100 80GB HBM3" in page.content.decode()


def test_a_contradicted_result_is_never_shown_and_is_counted(library, user, production_showcase, settings):
    run = finished(user, library)
    verified(run, VerificationStatus.DISAGREES, summary="P 1.20× in the fresh run against 2.00× recorded")
    assert "vector_add" not in _showcase() and "1 whose verification disagreed" in _showcase()
    settings.SHOWCASE_REQUIRE_VERIFIED = False
    assert "/showcase/mskernelbench/vector_add/fp32/" not in _showcase()
    assert Client().get(reverse("showcase:operator", args=["mskernelbench", "vector_add", "fp32"])).status_code == 404


def test_in_development_unverified_results_show_labelled_so(library, user, settings):
    settings.SHOWCASE_REQUIRE_VERIFIED = False
    finished(user, library)
    html = _showcase()
    assert "/showcase/mskernelbench/vector_add/fp32/" in html and "awaiting verification on a GPU worker" in html


def test_a_best_turn_below_the_threshold_is_no_result(library, user, production_showcase):
    run = finished(user, library, score=1.04)
    verified(run)
    html = _showcase()
    assert "/showcase/mskernelbench/vector_add/fp32/" not in html and "1 below the 1.10× threshold" in html


def test_admins_hide_and_feature_tasks(library, user, production_showcase):
    dot = Task.objects.get(suite="mskernelbench", operator="dot_product", precision="fp32")
    verified(finished(user, library))
    verified(finished(user, dot))
    html = _showcase()
    assert html.index("/vector_add/fp32/") > html.index("/dot_product/fp32/")  # by category, then operator
    Task.objects.filter(pk=library.pk).update(showcase=ShowcasePlacement.FEATURED)
    html = _showcase()
    assert html.index("/vector_add/fp32/") < html.index("/dot_product/fp32/") and "featured" in html
    Task.objects.filter(pk=library.pk).update(showcase=ShowcasePlacement.HIDDEN)
    assert "/vector_add/fp32/" not in _showcase()


def test_sync_tasks_keeps_an_admins_showcase_placement(library):
    Task.objects.filter(pk=library.pk).update(showcase=ShowcasePlacement.HIDDEN, source_hash="changed")
    tasks_sync(settings.TASKS_DIR)
    assert Task.objects.get(pk=library.pk).showcase == ShowcasePlacement.HIDDEN


# ---- asking by hand --------------------------------------------------------------------------------------------


def test_the_admin_action_asks_for_verifications_of_published_runs_only(library, user, admin_client):
    public, private = finished(user, library), finished(user, library, public=False)
    response = admin_client.post(reverse("admin:runs_run_changelist"),
                                 {"action": "verify_best_turns", "_selected_action": [public.pk, private.pk]},
                                 follow=True)
    assert "1 verification(s) asked for; 1 run(s) skipped: not succeeded or not published" in response.content.decode()
    assert list(TurnVerification.objects.values_list("turn_id", flat=True)) == [public.best_turn_id]


def test_the_command_refuses_runs_that_are_not_published(library, user):
    private = finished(user, library, public=False)
    with pytest.raises(CommandError, match=f"run\\(s\\) {private.pk} not found, not succeeded or not published"):
        call_command("verify_published", "--run", str(private.pk), stdout=StringIO())
    assert not TurnVerification.objects.exists()


def test_the_command_asks_again_when_told(library, user):
    run = finished(user, library)
    verified(run)
    out = StringIO()
    call_command("verify_published", stdout=out)
    assert "requested 0" in out.getvalue()
    call_command("verify_published", "--again", stdout=out)
    assert "asked for 1 verification(s)" in out.getvalue()
    assert run.best_turn.verifications.filter(status=VerificationStatus.PENDING).count() == 1


def test_an_experiment_page_says_how_many_best_turns_were_verified_and_which_disagree(library, user):
    experiment = Experiment.objects.create(name="e", owner=user, model="scripted", is_public=True)
    runs = [finished(user, library, public=False) for _ in range(3)]
    for seed, run in enumerate(runs):
        ExperimentRun.objects.create(experiment=experiment, task=library, seed_index=seed, run=run)
    verified(runs[0])
    verified(runs[1], VerificationStatus.DISAGREES, summary="P 1.20× in the fresh run against 2.00× recorded")
    client = Client()
    client.force_login(user)
    html = client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    assert "1 of 3 verified, 1 awaiting a GPU worker" in html and "1 disagree" in html
    assert f"run {runs[1].pk}</a>: P 1.20× in the fresh run against 2.00× recorded" in html


def test_verifications_travel_with_an_exported_trajectory(library, admin_user):
    import json

    from apps.runs.trajectory_export import trajectory_export
    from apps.runs.trajectory_import import TrajectoryImportError, trajectory_import

    demo = Path(settings.BASE_DIR) / "demo" / "trajectories" / "softmax_fp32_trajectory.json"
    run = trajectory_import(json.loads(demo.read_text()), owner=admin_user, public=True)
    verified(run, summary="correct again with unseen inputs; P 2.02× against 2.00× recorded (+1.0 %)")
    data = trajectory_export(run)
    copy = trajectory_import(data, owner=admin_user, public=True, force=True)
    again = copy.best_turn.verifications.get()
    assert (again.status, again.gpu_name) == ("verified", "NVIDIA H100 80GB HBM3")
    assert again.summary.endswith("(+1.0 %)")
    best = next(t for t in data["turns"] if t["verifications"])
    best["verifications"][0]["status"] = "pending"
    runs_before = Run.objects.count()
    with pytest.raises(TrajectoryImportError, match="a verification needs a finished status"):
        trajectory_import(data, owner=admin_user, force=True)
    assert Run.objects.count() == runs_before  # nothing half-imported


def test_a_verification_that_could_not_run_says_so_briefly_with_the_full_reason_on_hover(library, user, settings):
    settings.SHOWCASE_REQUIRE_VERIFIED = False
    run = finished(user, library)
    reason = ("No NVIDIA GPU on worker host vm (nvidia-smi not found: no NVIDIA driver on this machine): runs need "
              "one to time and profile kernels. Start a Celery worker on a GPU host and launch the run again.")
    verified(run, VerificationStatus.FAILED, summary=reason)
    html = _showcase()
    assert ("could not be verified: No NVIDIA GPU on worker host vm (nvidia-smi not found: no NVIDIA driver on "
            "this…") in html
    assert f'title="{reason}"' in html


def test_every_verification_outcome_of_the_engine_is_a_status_the_database_keeps():
    # turn_verify saves str(agreement.outcome) as the row's status: an outcome the model does not know would be lost.
    assert {str(outcome) for outcome in Outcome} <= set(VerificationStatus.values)


def test_a_verification_the_gpu_slowed_down_shows_could_not_be_verified_not_a_disagreement(library, user, settings):
    settings.SHOWCASE_REQUIRE_VERIFIED = False
    run = finished(user, library)
    fresh = Evaluation(task="vector_add", precision="fp32", verdict=Verdict.OK, score=1.4,
                       gpu="NVIDIA H100 80GB HBM3", flags=(SLOWED_FLAG,))
    agreement = compare("ok", run.best_score, run.gpu_name, fresh)
    verified(run, VerificationStatus(str(agreement.outcome)), summary=agreement.summary)
    html = _showcase()
    assert "could not be verified: the GPU slowed itself down while the fresh run was timed<" in html  # one sentence
    assert "verification disagrees" not in html
