from django.db.models import Q, QuerySet

from apps.llm.models import LLMEndpoint


def endpoints_for(user) -> QuerySet[LLMEndpoint]:
    """A user's own endpoints plus the shared ones (no owner)."""
    return LLMEndpoint.objects.filter(Q(owner=user) | Q(owner__isnull=True))


def endpoint_owned_by(user, pk: int) -> LLMEndpoint | None:
    """Only the owner edits or deletes an endpoint; shared ones are managed in the admin."""
    return LLMEndpoint.objects.filter(owner=user, pk=pk).first()


def endpoint_test_warning(endpoint: LLMEndpoint | None) -> str:
    """What the launch form says about an endpoint whose connection test never passed ("" when it did)."""
    if endpoint is None or endpoint.last_passed_at is not None:
        return ""
    if endpoint.last_test_at is None:
        return (f"{endpoint.name}: its connection test has never been run; a wrong URL, key or model id "
                "would only show when the run fails (test it on the endpoint's page).")
    return (f"{endpoint.name}: its connection test has never passed (latest: "
            f"{endpoint.last_test_at:%Y-%m-%d %H:%M} UTC, failed); check it on the endpoint's page.")


def model_rows(endpoint: LLMEndpoint) -> list[dict]:
    """Per model set or learned on the endpoint: the window in use and where it comes from, the price in use
    (its own or the shipped defaults') and what the server refuses, for the endpoint page."""
    from apps.llm.services import price_table
    from worker.agents.llm import known_models, match_model

    table = price_table(endpoint)
    rows = []
    for setting in endpoint.model_settings.all():
        known = match_model(known_models(), setting.model)
        if setting.context_window:
            window, source = setting.context_window, "set here"
        elif setting.server_context_window:
            window, source = setting.server_context_window, "server"
        elif known is not None and known.context_window:
            window, source = known.context_window, "shipped default"
        else:
            window, source = None, ""
        rows.append({"model": setting.model, "window": window, "window_source": source,
                     "price": table.price(setting.model), "own_price": setting.has_price,
                     "refused": setting.refused_params, "token_limit_field": setting.token_limit_field})
    return rows
