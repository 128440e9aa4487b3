"""The evaluation engine and agent pipeline: plain Python, no Django (docs/architecture.md, Design principles)."""
