from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.llm.connection import run_connection_test
from apps.llm.forms import ConnectionTestForm, EndpointForm, EndpointModelFormSet
from apps.llm.selectors import endpoint_owned_by, endpoints_for, model_rows


@login_required
def endpoint_list(request):
    return render(request, "llm/endpoint_list.html", {"endpoints": endpoints_for(request.user).select_related("owner")})


def _save(request, form, formset, verb: str):
    try:
        with transaction.atomic():
            endpoint = form.save()
            if formset is not None:
                formset.instance = endpoint
                formset.save()
    except IntegrityError:  # a concurrent save with the same name won the race
        form.add_error("name", "You already have an endpoint with this name.")
        return None
    messages.success(request, f"Endpoint {endpoint.name} {verb}.")
    return redirect("llm:edit", endpoint.pk) if formset is not None else redirect("llm:list")


def _page(request, form, endpoint, formset=None, test_form=None, status=200):
    context = {"form": form, "endpoint": endpoint, "formset": formset}
    if endpoint is not None:
        context.update(test_form=test_form or ConnectionTestForm(endpoint=endpoint), model_rows=model_rows(endpoint),
                       report=endpoint.last_test or None)
    return render(request, "llm/endpoint_form.html", context, status=status)


@login_required
def endpoint_create(request):
    form = EndpointForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        if response := _save(request, form, None, "added"):
            return response
    return _page(request, form, None)


def _owned(request, pk: int):
    endpoint = endpoint_owned_by(request.user, pk)
    if endpoint is None:
        raise Http404("No such endpoint of yours.")
    return endpoint


@login_required
def endpoint_edit(request, pk: int):
    endpoint = _owned(request, pk)
    form = EndpointForm(request.POST or None, instance=endpoint)
    # A post without the formset (a script, an older page) edits the endpoint alone.
    with_models = request.method != "POST" or "models-TOTAL_FORMS" in request.POST
    formset = EndpointModelFormSet(request.POST or None, instance=endpoint, prefix="models") if with_models else None
    if request.method == "POST" and form.is_valid() and (formset is None or formset.is_valid()):
        if response := _save(request, form, formset, "saved"):
            return response
    return _page(request, form, endpoint, formset or EndpointModelFormSet(instance=endpoint, prefix="models"))


@login_required
@require_POST
def endpoint_test(request, pk: int):
    """The connection test, inside this request (apps/llm/connection.py says why that is short enough)."""
    endpoint = _owned(request, pk)
    test_form = ConnectionTestForm(request.POST, endpoint=endpoint)
    if not test_form.is_valid():
        form = EndpointForm(instance=endpoint)
        formset = EndpointModelFormSet(instance=endpoint, prefix="models")
        return _page(request, form, endpoint, formset, test_form, status=400)
    report = run_connection_test(endpoint, test_form.cleaned_data["models"])
    if request.headers.get("HX-Request"):
        return _page(request, EndpointForm(instance=endpoint), endpoint,
                     EndpointModelFormSet(instance=endpoint, prefix="models"))
    (messages.success if report.ok else messages.error)(
        request, f"Connection test {'passed' if report.ok else 'failed'}: see the results below.")
    return redirect(reverse("llm:edit", args=[endpoint.pk]) + "#connection-test")


@login_required
@require_POST
def endpoint_delete(request, pk: int):
    endpoint = _owned(request, pk)
    endpoint.delete()  # runs keep their history: Run.endpoint is SET_NULL
    messages.info(request, f"Endpoint {endpoint.name} deleted.")
    return redirect("llm:list")
