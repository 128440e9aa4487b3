"""Query-parameter filters for the list endpoints, applied to querysets the selectors already scoped to
the user. The parameters arrive validated by the *QuerySerializer classes in serializers.py."""

from django.db.models import F, Q, QuerySet

from apps.catalog.models import Task
from apps.runs.models import Run


def tasks_filter(tasks: QuerySet[Task], params: dict) -> QuerySet[Task]:
    exact = {name: params[name] for name in ("backend", "suite", "category", "precision", "operator") if name in params}
    tasks = tasks.filter(**exact)
    if q := params.get("q"):
        tasks = tasks.filter(Q(title__icontains=q) | Q(operator__icontains=q) | Q(description__icontains=q))
    return tasks


# nulls_last everywhere: PostgreSQL and SQLite disagree on where NULL sorts, and unscored runs
# (queued, failed) belong at the end either way. -id breaks ties so pages never overlap.
RUN_ORDERINGS = {
    "-created_at": [F("created_at").desc(), F("id").desc()],
    "created_at": [F("created_at").asc(), F("id").asc()],
    "best_score": [F("best_score").asc(nulls_last=True), F("id").desc()],
    "-best_score": [F("best_score").desc(nulls_last=True), F("id").desc()],
    "cost_usd": [F("cost_usd").asc(), F("id").desc()],
    "-cost_usd": [F("cost_usd").desc(), F("id").desc()],
}


def runs_filter(runs: QuerySet[Run], params: dict, user) -> QuerySet[Run]:
    lookups = {"task_id": params.get("task"), "status": params.get("status"), "task__suite": params.get("suite"),
               "task__category": params.get("category"), "model": params.get("model")}
    runs = runs.filter(**{name: value for name, value in lookups.items() if value is not None})
    if params.get("owner") == "me":
        runs = runs.filter(owner=user)
    return runs.order_by(*RUN_ORDERINGS[params.get("ordering", "-created_at")])
