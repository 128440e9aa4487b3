"""No import cycles among the modules of apps/ and worker/.

Every import counts, including one inside a function: such an import only hides a cycle from the
interpreter at load time, it does not remove it. The graph is built statically by grimp (nothing is
imported). The layers between packages (apps -> worker.agents -> worker.registry -> worker.formats ->
worker.engine) are import-linter contracts in pyproject.toml (`lint-imports`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One shortest cycle (`a -> b -> ... -> a`) per strongly connected group of modules."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iteratively (no recursion limit to worry about)
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges[node]:
                    groups.append(group)

    for module in edges:
        if module not in index:
            visit(module)
    cycles = []
    for group in groups:
        shortest = None
        for first in sorted(group):
            for second in edges[first]:
                if second in group:
                    back = graph.find_shortest_chain(importer=second, imported=first) or ()
                    cycle = [first, *back] if back else [first, second, first]
                    if shortest is None or len(cycle) < len(shortest):
                        shortest = cycle
        cycles.append(shortest)
    return sorted(cycles)


def _project_graph() -> grimp.ImportGraph:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph("apps", "worker", cache_dir=None)


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_chain():
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]


def test_no_import_cycles_among_apps_and_worker_modules():
    cycles = import_cycles(_project_graph())
    assert not cycles, "import cycles (break each by moving what both sides need into a lower module):\n" + \
        "\n".join("  " + " -> ".join(cycle) for cycle in cycles)


def test_the_web_side_sends_gpu_work_by_name_and_never_imports_the_task_bodies():
    graph = _project_graph()
    web = ["apps.runs.services", "apps.runs.manual", "apps.runs.dispatch", "apps.runs.views", "apps.api.views",
           "apps.experiments.services"]
    reached = [(module, chain) for module in web
               if (chain := graph.find_shortest_chain(importer=module, imported="apps.runs.tasks"))]
    assert not reached, reached
