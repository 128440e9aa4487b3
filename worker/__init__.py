"""The evaluation engine and agent pipeline: plain Python, no Django (DESIGN §2)."""
