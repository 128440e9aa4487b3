"""How a task's sizes are named on pages: the entry point's parameters, in their declared order."""

from __future__ import annotations


def num_text(value) -> str:
    """`16` for 16.0, the value as it is otherwise."""
    return str(int(value)) if isinstance(value, int | float) and float(value).is_integer() else str(value)


def param_order(task) -> list[str]:
    """The entry point's parameter names in declaration order (Task.params is a JSON list, so it keeps
    its order; size dicts do not: PostgreSQL's jsonb reorders keys)."""
    return [p["name"] for p in task.params or [] if isinstance(p, dict) and "name" in p]


def size_label(params: dict, order=()) -> str:
    """`N=16, C=256`: names in the entry point's order where known, the rest sorted."""
    params = params or {}
    names = [n for n in order if n in params] + sorted(n for n in params if n not in order)
    return ", ".join(f"{name}={num_text(params[name])}" for name in names)
