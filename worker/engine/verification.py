"""Does a fresh evaluation confirm a recorded one? (docs/evaluation.md, "Verified before published")

A turn that reaches a public page (the showcase, an experiment table) is evaluated again in a fresh
process, with input seeds it has never seen and no cached baseline time. This module decides, from the
recorded result and the fresh one alone, whether the fresh run confirms the record:

- the verdict must be the same (`ok` again): a candidate that was right only for the seeds it was shown,
  or only while nobody was checking, fails here;
- the score P must agree within `tolerance` (relative), when both runs were on the same GPU model; on a
  different model the speedup is not comparable and only the verdict is confirmed (and said so);
- a P outside the tolerance from a fresh run during which the GPU slowed itself down (`SLOWED_FLAG`) decides
  nothing: the verification could not verify, and asks for another at full clock. It never verifies, so a
  candidate that slows the GPU gains nothing by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from worker.engine.context import SLOWED_FLAG, EvalOptions
from worker.engine.results import Evaluation, Verdict
from worker.engine.scoring import CV_REVIEW

# Relative disagreement of P between the record and the fresh run that is still "the same result". Two
# evaluations of one kernel in separate processes agree within a few percent when every size is timed
# above the noise floor (docs/benchmarks.md); 10 % leaves room for that and still catches a faked P.
DEFAULT_TOLERANCE = 0.10


def fresh_options(seed_base: int, base: EvalOptions | None = None) -> EvalOptions:
    """How a verification evaluates: seeds it has never seen, both sides timed now (no cached baseline time),
    and profiled, so the times the candidate's process reports are cross-checked against Nsight Compute's
    kernel durations from a separate process before anything is published."""
    return replace(base or EvalOptions(), seed_base=seed_base, use_baseline_cache=False, profile="filtered")


class Outcome(StrEnum):
    VERIFIED = "verified"
    DISAGREES = "disagrees"
    # Correct again, but the fresh times are not this GPU's own (it slowed itself down while they were taken), so
    # P can neither confirm nor contradict the record. The value is the app's "could not verify" status.
    UNDECIDED = "failed"


@dataclass(frozen=True)
class Agreement:
    outcome: Outcome
    summary: str  # one sentence, shown on the page
    score_ratio: float | None = None  # fresh P / recorded P, when both exist
    same_gpu_model: bool = True

    @property
    def verified(self) -> bool:
        return self.outcome is Outcome.VERIFIED


def gpu_model(name: str) -> str:
    """The GPU model of a device name, without a trailing note such as '(simulated)'."""
    return name.split("(")[0].strip().lower()


def compare(recorded_verdict: str, recorded_score: float | None, recorded_gpu: str, fresh: Evaluation,
            tolerance: float = DEFAULT_TOLERANCE) -> Agreement:
    """Confirm (or not) a recorded result with a fresh evaluation of the same code."""
    if recorded_verdict != Verdict.OK or recorded_score is None:
        return Agreement(Outcome.DISAGREES, f"the record itself is not a valid result ({recorded_verdict})")
    if fresh.verdict != Verdict.OK or fresh.score is None:
        reason = f": {fresh.reason}" if fresh.reason else ""
        return Agreement(Outcome.DISAGREES, f"the fresh evaluation says {fresh.verdict}{reason}")
    ratio = fresh.score / recorded_score if recorded_score > 0 else math.inf
    same_model = bool(fresh.gpu) and gpu_model(fresh.gpu) == gpu_model(recorded_gpu)
    if not same_model:
        return Agreement(Outcome.VERIFIED,
                         f"correct again on {fresh.gpu or 'another GPU'} (P {fresh.score:.2f}×); the recorded "
                         f"P {recorded_score:.2f}× was measured on {recorded_gpu or 'an unnamed GPU'}, so the "
                         f"speedups are not compared", ratio, same_gpu_model=False)
    if abs(ratio - 1) > tolerance:
        if SLOWED_FLAG in fresh.flags:
            return Agreement(Outcome.UNDECIDED,
                             # The first sentence is the page's label (apps/runs/verification.py), the rest its tooltip.
                             f"the GPU slowed itself down while the fresh run was timed. Its P {fresh.score:.2f}× "
                             f"against {recorded_score:.2f}× recorded ({(ratio - 1) * 100:+.0f} %) is not this GPU's "
                             f"own (power cap or heat: the run's notes say when); the code was correct again with "
                             f"unseen inputs: verify again once the GPU runs at its full clock", ratio)
        return Agreement(Outcome.DISAGREES,
                         f"P {fresh.score:.2f}× in the fresh run against {recorded_score:.2f}× recorded "
                         f"({(ratio - 1) * 100:+.0f} %, more than the ±{tolerance * 100:.0f} % allowed)"
                         f"{_noise_hint(fresh)}", ratio)
    return Agreement(Outcome.VERIFIED,
                     f"correct again with unseen inputs; P {fresh.score:.2f}× against {recorded_score:.2f}× "
                     f"recorded ({(ratio - 1) * 100:+.1f} %)", ratio)


def _noise_hint(fresh: Evaluation) -> str:
    """Where the fresh run's own times were noisy, say so: a disagreement there may be the host's speed (calls of
    a few microseconds are mostly launch and synchronize) rather than a different kernel, and the next step is
    another verification on an idle GPU, not a rewrite."""
    worst = max(((max(t.cv for t in (s.baseline, s.candidate) if t is not None), s.label)
                 for s in fresh.sizes if s.baseline is not None or s.candidate is not None), default=None)
    if worst is None or worst[0] <= CV_REVIEW:  # the evaluator's own "CV>5%" flag
        return ""
    return (f"; the fresh run's timing was noisy (CV {worst[0] * 100:.1f} % at {worst[1]}), so P is uncertain "
            f"there: verify again on an idle GPU")
