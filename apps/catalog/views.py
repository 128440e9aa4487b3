from django.shortcuts import get_object_or_404, render

from apps.catalog.markup import code_language, highlight_source, render_markdown
from apps.catalog.models import Task
from apps.catalog.selectors import CatalogFilters, catalog, task_page


def task_list(request):
    """Operators by category, FP32 and BF16 side by side; search and suite/category filters in the URL."""
    return render(request, "catalog/task_list.html",
                  {"catalog": catalog(request.user, CatalogFilters.from_query(request.GET))})


def task_detail(request, pk: int):
    task = get_object_or_404(Task, pk=pk, enabled=True)
    return render(request, "catalog/task_detail.html", {
        "page": task_page(request.user, task),
        "task": task,
        "description": render_markdown(task.description),
        "baseline": highlight_source(task.baseline_source, code_language(task.backend)),
    })
