from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.llm.forms import EndpointForm
from apps.llm.selectors import endpoint_owned_by, endpoints_for


@login_required
def endpoint_list(request):
    return render(request, "llm/endpoint_list.html", {"endpoints": endpoints_for(request.user).select_related("owner")})


def _save(request, form, verb: str):
    try:
        with transaction.atomic():
            endpoint = form.save()
    except IntegrityError:  # a concurrent save with the same name won the race
        form.add_error("name", "You already have an endpoint with this name.")
        return None
    messages.success(request, f"Endpoint {endpoint.name} {verb}.")
    return redirect("llm:list")


@login_required
def endpoint_create(request):
    form = EndpointForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        if response := _save(request, form, "added"):
            return response
    return render(request, "llm/endpoint_form.html", {"form": form, "endpoint": None})


@login_required
def endpoint_edit(request, pk: int):
    endpoint = endpoint_owned_by(request.user, pk)
    if endpoint is None:
        raise Http404("No such endpoint of yours.")
    form = EndpointForm(request.POST or None, instance=endpoint)
    if request.method == "POST" and form.is_valid():
        if response := _save(request, form, "saved"):
            return response
    return render(request, "llm/endpoint_form.html", {"form": form, "endpoint": endpoint})


@login_required
@require_POST
def endpoint_delete(request, pk: int):
    endpoint = endpoint_owned_by(request.user, pk)
    if endpoint is None:
        raise Http404("No such endpoint of yours.")
    endpoint.delete()  # runs keep their history: Run.endpoint is SET_NULL
    messages.info(request, f"Endpoint {endpoint.name} deleted.")
    return redirect("llm:list")
