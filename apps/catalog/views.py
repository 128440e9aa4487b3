from django.shortcuts import get_object_or_404, render

from apps.catalog.models import Task
from apps.catalog.selectors import operators_by_category


def task_list(request):
    return render(request, "catalog/task_list.html", {"categories": operators_by_category()})


def task_detail(request, pk: int):
    task = get_object_or_404(Task, pk=pk, enabled=True)
    siblings = Task.objects.filter(suite=task.suite, operator=task.operator).exclude(pk=task.pk)
    return render(request, "catalog/task_detail.html", {"task": task, "siblings": siblings})
