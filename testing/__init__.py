"""Test and demo doubles that tests, bench scripts and demos share (never imported by `worker/` or `apps/`).

The scripted OpenAI-compatible LLM lives here, and the helpers that `tests/` and `bench/` both need.
"""
