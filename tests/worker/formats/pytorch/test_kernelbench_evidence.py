"""The evidence stream between ModelNew's process and the Model's (torch_verdict.py, docs/evaluation.md, "Who
decides the verdict"): what the reader accepts is exactly what the sender wrote, and anything else is the
candidate's failure, never a crash of the reader or a tensor built from a pickle."""

import importlib.util
import io
import json

import pytest
import torch

from worker.formats.pytorch.runner import VERDICT


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("kw_torch_verdict_under_test", VERDICT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stream(harness, *records) -> io.BytesIO:
    buf = io.BytesIO()
    for trial, got, inputs in records:
        harness.send_evidence(buf, trial, got, inputs)
    buf.seek(0)
    return buf


def test_what_the_sender_writes_comes_back_bit_for_bit(harness):
    out = [torch.randn(3, 5), torch.arange(7, dtype=torch.int64), torch.tensor(2.5, dtype=torch.bfloat16), 4.0]
    inputs = [torch.randn(2, 2).t(), torch.zeros(0, 3), "mode"]  # a transposed (non-contiguous) and an empty tensor
    stream = _stream(harness, (0, out, inputs), (1, out[:1], []))
    got, ins = harness.receive_evidence(stream, 0)
    assert [g.dtype for g in got[:3]] == [torch.float32, torch.int64, torch.bfloat16] and got[3] == 4.0
    assert all(torch.equal(a, b) for a, b in zip(got[:3], out[:3], strict=True))
    assert torch.equal(ins[0], inputs[0]) and ins[1].shape == (0, 3) and ins[2] == "mode"
    assert torch.equal(harness.receive_evidence(stream, 1)[0][0], out[0])


def test_a_stream_that_ends_before_a_trial_is_missing_evidence(harness):
    stream = _stream(harness, (0, [torch.ones(4)], []))
    harness.receive_evidence(stream, 0)
    with pytest.raises(harness.EvidenceError) as err:
        harness.receive_evidence(stream, 1)
    assert err.value.kind == "evidence_missing" and "trial 1" in str(err.value)


@pytest.mark.parametrize("head, tail, why", [
    ({"trial": 3, "outputs": [], "inputs": []}, b"", "malformed"),  # another trial's record
    ({"trial": 0, "outputs": [{"dtype": "torch.float32", "shape": [4]}], "inputs": []}, b"\0" * 8, "inside a tensor"),
    ({"trial": 0, "outputs": [{"dtype": "object", "shape": [1]}], "inputs": []}, b"", "valid dtype"),
    ({"trial": 0, "outputs": [{"dtype": "torch.float32", "shape": [-1]}], "inputs": []}, b"", "valid dtype"),
    ({"trial": 0, "outputs": "all", "inputs": []}, b"", "malformed"),
    ({"trial": 0, "outputs": [{"dtype": "torch.float64", "shape": [1 << 40, 1 << 20]}], "inputs": []}, b"",
     "beyond any output"),
])
def test_a_record_that_does_not_match_what_it_claims_is_invalid_evidence(harness, head, tail, why):
    stream = io.BytesIO(json.dumps(head).encode() + b"\n" + tail)
    with pytest.raises(harness.EvidenceError) as err:
        harness.receive_evidence(stream, 0)
    assert err.value.kind == "evidence_invalid" and why in str(err.value)


@pytest.mark.parametrize("line", [b"[" * (1 << 20) + b"]", b"[" * 5000 + b"]" * 5000 + b"\n"],
                         ids=["longer than the limit", "nested past the recursion limit"])
def test_a_header_line_the_reader_cannot_take_whole_is_invalid_evidence(harness, line):
    stream = io.BytesIO(line)
    with pytest.raises(harness.EvidenceError) as err:
        harness.receive_evidence(stream, 0)
    assert err.value.kind == "evidence_invalid"
