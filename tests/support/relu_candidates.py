"""The relu candidates of the KernelBench GPU tests (tests/worker/formats/pytorch/test_kernelbench_eval.py): the
correct one, fixtures/kernelbench/candidates/cuda_relu.py, and the misbehaving ones made from it."""

from pathlib import Path

RELU = Path(__file__).parents[1] / "worker" / "fixtures" / "kernelbench" / "candidates" / "cuda_relu.py"

# The misbehaving ones: cuda_relu.py with another ModelNew.forward (and state of its own in __init__).
# Its extension already holds every kernel they call, so they share its literals and its one build.
RELU_VARIANTS = {
    "uninitialized": ("", "        return self.ops.relu_unwritten(x.contiguous())\n"),
    "wipes_input": ("", "        return self.ops.relu_then_wipe(x.contiguous())\n"),
    "stray_write": ("", "        return self.ops.relu_stray_write(x.contiguous())\n"),
    "side_stream": (
        "",
        "        torch.cuda.synchronize()  # the side stream does not wait for the copy that made x\n"
        "        return self.ops.relu_side_stream(x.contiguous())\n",
    ),
    "lazy_when_timed": (
        "        self.calls = 0\n",
        "        # Correct for its first 5 calls in a process (the checked trials run in a process of their\n"
        "        # own; the timing process makes 3 warm-up calls, then timed calls 0 and 1), then lazy: ReLU\n"
        "        # of the first half only.\n"
        "        self.calls += 1\n"
        "        if self.calls <= 5:\n"
        "            return self.ops.relu_forward(x.contiguous())\n"
        "        out = x.clone()\n"
        "        half = x.numel() // 2\n"
        "        out.view(-1)[:half] = self.ops.relu_forward(x.contiguous().view(-1)[:half].contiguous())\n"
        "        return out\n",
    ),
    "memo_by_address": (
        "        self.memo = {}\n",
        "        # Remembers its result by the input's address: calls on a buffer it has seen return the old result.\n"
        "        key = x.data_ptr()\n"
        "        if key not in self.memo:\n"
        "            self.memo[key] = self.ops.relu_forward(x.contiguous())\n"
        "        return self.memo[key]\n",
    ),
}


def relu_candidate(variant: str | None = None) -> str:
    source = RELU.read_text(encoding="utf-8")
    if variant is None:
        return source
    init, forward = RELU_VARIANTS[variant]
    for line, replacement in (
        ("        self.ops = ops\n", "        self.ops = ops\n" + init),
        ("        return self.ops.relu_forward(x.contiguous())\n", forward),
    ):
        assert source.count(line) == 1, f"{RELU.name} no longer has {line!r} once"
        source = source.replace(line, replacement)
    return source
