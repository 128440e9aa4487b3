"""The context budget: every agent's prompt kept inside its model's window, by a fixed trimming policy.

Tokens are estimated without any network or tokenizer download: three characters per token, which
over-counts English (about four) and is close for CUDA and Python source, so a prompt judged to fit does
fit; the server's reported usage is what gets stored and priced. Each message adds a few tokens of
chat framing.

The policy is a ladder of `PromptLimits`, tried in order until the prompt plus the reserved answer fits
(`fit`). What every agent keeps longest: its system prompt (role, GPU, rules), the task, and the code it
works on; what goes first (see `LEVELS`):

- Planner: the previous round's plan (shortened, then only whether it failed and why), then the
  Nsight Compute metrics (bottleneck class per size only, then none), then the per-size results.
- Debug: the evidence (compile log, memcheck log, ...) is cut to its head and tail, shorter each step.
- Coder: the plan or diagnosis it implements is shortened only at the last steps.
- Everyone, at the last steps: the code and the task description are cut to head and tail.

The pipeline sends a single round's history (the previous plan), so "older rounds" are the previous
plan and its verdict. A context-length error from the server (its count differs from ours) is answered
by `fit` from the next step down with the window the error states, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from worker.engine.prompttext import LOG_LIMIT

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_text_tokens(text: str) -> int:
    """A conservative token count: three characters per token, rounded up."""
    return -(-len(text) // int(CHARS_PER_TOKEN)) if text else 0


def estimate_prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
    return sum(estimate_text_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD_TOKENS for m in messages) + 3


@dataclass(frozen=True)
class PromptLimits:
    """Characters of each part of an agent's prompt (None: whole)."""

    code: int = 3 * LOG_LIMIT  # the source an agent works on
    log: int = LOG_LIMIT  # the Debug agent's evidence (head and tail kept)
    task: int | None = None  # the task description
    instructions: int | None = None  # the plan or diagnosis the Coder implements
    previous_plan: int | None = None  # the Planner's previous plan; 0 keeps only whether it failed and why
    profile: str = "full"  # "full" | "bottleneck" (class per size, no metrics) | "none"
    results: int | None = None  # the per-size results block
    note: str = ""  # what this step gives up, for the turn's notes


LEVELS: tuple[PromptLimits, ...] = (
    PromptLimits(),
    PromptLimits(log=6000, previous_plan=1500, note="previous plan to 1,500 characters, evidence log to 6,000"),
    PromptLimits(log=3000, previous_plan=400, profile="bottleneck",
                 note="previous plan to 400 characters, profile to the bottleneck class per size, log to 3,000"),
    PromptLimits(log=1500, previous_plan=0, profile="none", results=2000,
                 note="previous plan and profile dropped, results to 2,000 characters, log to 1,500"),
    PromptLimits(code=12000, task=6000, log=800, previous_plan=0, profile="none", results=1200, instructions=8000,
                 note="code to 12,000 characters (head and tail), task to 6,000, log to 800"),
    PromptLimits(code=6000, task=3000, log=400, previous_plan=0, profile="none", results=600, instructions=3000,
                 note="code to 6,000 characters (head and tail), task to 3,000, plan to 3,000, log to 400"),
)


class ContextBudgetError(ValueError):
    """Even the most trimmed prompt does not leave room for an answer in the model's window."""


@dataclass(frozen=True)
class FittedPrompt:
    messages: list[dict[str, str]]
    max_tokens: int
    estimate: int  # estimated prompt tokens
    window: int | None
    level: int  # index into LEVELS

    @property
    def note(self) -> str:
        if self.level == 0 or self.window is None:
            return ""
        return f"prompt trimmed to fit the {self.window:,}-token window: {LEVELS[self.level].note}"


def answer_reserve(window: int, max_tokens: int) -> int:
    """Tokens kept free for the answer: the requested maximum, but at most a quarter of the window."""
    return max(1, min(max_tokens, window // 4))


def margin(window: int) -> int:
    return 32 + window // 50


def fit(
    build: Callable[[PromptLimits], list[dict[str, str]]],
    window: int | None,
    max_tokens: int,
    *,
    start: int = 0,
) -> FittedPrompt:
    """The first step from `start` whose prompt leaves `answer_reserve` tokens free; max_tokens is then
    lowered to what the window leaves. Without a known window, step `start` as is."""
    if window is None:
        messages = build(limits=LEVELS[min(start, len(LEVELS) - 1)])
        return FittedPrompt(messages, max_tokens, estimate_prompt_tokens(messages), None, start)
    reserve = answer_reserve(window, max_tokens)
    estimate = 0
    for level in range(start, len(LEVELS)):
        messages = build(limits=LEVELS[level])
        estimate = estimate_prompt_tokens(messages)
        room = window - estimate - margin(window)
        if room >= reserve:
            return FittedPrompt(messages, min(max_tokens, room), estimate, window, level)
    raise ContextBudgetError(
        f"the prompt needs about {estimate:,} tokens even trimmed as far as the policy goes, and the model's "
        f"window is {window:,} tokens with {reserve:,} kept for the answer; use a model with a larger window "
        "or set the right window for this model on the endpoint's page"
    )
