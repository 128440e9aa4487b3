"""A fresh evaluation confirms a recorded result only when it is correct again and P agrees."""

import pytest

from worker.engine.results import Evaluation, SizeResult, TimingStats, Verdict
from worker.engine.verification import Outcome, compare, fresh_options

H100 = "NVIDIA H100 80GB HBM3"


def fresh(verdict=Verdict.OK, score=2.0, gpu=H100, reason=""):
    return Evaluation(task="vector_add", precision="fp32", verdict=verdict, score=score, gpu=gpu, reason=reason)


def test_correct_again_with_p_inside_the_tolerance_is_verified():
    agreement = compare("ok", 2.0, H100, fresh(score=2.1))
    assert agreement.outcome is Outcome.VERIFIED and agreement.verified
    assert agreement.score_ratio == pytest.approx(1.05)
    assert "+5.0 %" in agreement.summary


def test_p_far_from_the_record_disagrees_and_says_by_how_much():
    agreement = compare("ok", 6.0, H100, fresh(score=1.5))
    assert agreement.outcome is Outcome.DISAGREES
    assert "1.50× in the fresh run against 6.00× recorded" in agreement.summary and "-75 %" in agreement.summary


def timing(cv):
    return TimingStats(samples=50, mean_ms=0.01, median_ms=0.01, min_ms=0.009, max_ms=0.02, std_ms=0.01 * cv, cv=cv)


def sized(score, *cvs):
    sizes = tuple(SizeResult(index=i, params={"N": 1024 << (2 * i)}, complexity=1.0, baseline=timing(0.01),
                             candidate=timing(cv)) for i, cv in enumerate(cvs))
    return Evaluation(task="vector_add", precision="fp32", verdict=Verdict.OK, score=score, gpu=H100, sizes=sizes)


def test_a_disagreement_where_the_fresh_times_were_noisy_says_so_and_what_to_do():
    agreement = compare("ok", 3.85, H100, sized(7.05, 0.02, 0.317))
    assert agreement.outcome is Outcome.DISAGREES
    assert "noisy (CV 31.7 % at N=4096)" in agreement.summary and "verify again on an idle GPU" in agreement.summary


def test_a_disagreement_with_steady_times_gets_no_noise_hint():
    agreement = compare("ok", 3.85, H100, sized(7.05, 0.01, 0.02))
    assert agreement.outcome is Outcome.DISAGREES and "noisy" not in agreement.summary


def test_a_candidate_wrong_on_unseen_inputs_disagrees_with_the_reason():
    agreement = compare("ok", 3.0, H100, fresh(Verdict.INCORRECT, None, reason="N=4096: output[17] expected 1 got 0"))
    assert agreement.outcome is Outcome.DISAGREES
    assert agreement.summary == "the fresh evaluation says incorrect: N=4096: output[17] expected 1 got 0"


def test_on_another_gpu_model_only_the_verdict_is_confirmed():
    agreement = compare("ok", 3.0, "NVIDIA H200", fresh(score=9.0))
    assert agreement.verified and not agreement.same_gpu_model
    assert "not compared" in agreement.summary


def test_the_same_model_with_a_note_in_its_name_is_the_same_model():
    assert compare("ok", 2.0, f"{H100} (simulated)", fresh(score=2.0)).same_gpu_model


def test_a_record_that_was_never_valid_cannot_be_verified():
    assert compare("incorrect", None, H100, fresh()).outcome is Outcome.DISAGREES


@pytest.mark.parametrize(("tolerance", "outcome"), [(0.25, Outcome.VERIFIED), (0.15, Outcome.DISAGREES)])
def test_the_tolerance_is_the_callers(tolerance, outcome):
    assert compare("ok", 2.0, H100, fresh(score=2.4), tolerance).outcome is outcome


def test_a_verification_uses_unseen_seeds_times_both_sides_now_and_profiles_for_the_cross_check():
    from worker.engine.context import EvalOptions

    base = EvalOptions(iters=20, profile="none")
    options = fresh_options(424_242, base)
    assert options.seed_base == 424_242 and options.use_baseline_cache is False
    assert options.profile == "filtered"  # the profiler cross-check of the reported times applies
    assert options.iters == 20 and fresh_options(7).profile == "filtered"


def test_a_verification_keeps_the_timing_protocol_of_its_base_options():
    from worker.engine.context import EvalOptions, with_timing_protocol

    queued = with_timing_protocol(EvalOptions(), "queued")
    assert queued.queued_timing is True and fresh_options(7, queued).queued_timing is True
    assert fresh_options(7).queued_timing is False
    with pytest.raises(ValueError, match="timing protocol must be one of"):
        with_timing_protocol(EvalOptions(), "fastest")
