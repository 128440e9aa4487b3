"""Writes for LLM endpoints, and the client a run or a connection test uses for one.

`client_for` builds the worker's client with what the endpoint knows: its own prices over the shipped
defaults (and LLM_PRICES_FILE), the windows set on its page (else the server's /models, else the shipped
defaults), the parameters each model refused before; what the client learns is stored back per model.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from apps.llm.models import EndpointModel, LLMEndpoint
from worker.agents.llm import ModelPrice, ModelQuirks, OpenAIChatClient, PriceTable, RetryPolicy

logger = logging.getLogger(__name__)


def _float(value) -> float | None:
    return None if value is None else float(value)


def endpoint_prices(settings_rows: Iterable[EndpointModel]) -> dict[str, ModelPrice]:
    return {
        row.model: ModelPrice(float(row.input_per_m), float(row.output_per_m), _float(row.cached_input_per_m),
                              _float(row.reasoning_per_m))
        for row in settings_rows if row.has_price
    }


def price_table(endpoint: LLMEndpoint | None) -> PriceTable:
    """The endpoint's prices over LLM_PRICES_FILE over the shipped defaults."""
    table = PriceTable.load(settings.LLM_PRICES_FILE or None)
    if endpoint is None or endpoint.pk is None:
        return table
    return table.with_prices(endpoint_prices(endpoint.model_settings.all()))


def client_for(endpoint: LLMEndpoint, model: str, *, timeout_s: float, retry: RetryPolicy | None = None,
               discover_windows: bool = True) -> OpenAIChatClient:
    rows = list(endpoint.model_settings.all())
    windows = {r.model: r.context_window or r.server_context_window for r in rows
               if r.context_window or r.server_context_window}
    quirks = {r.model: ModelQuirks(frozenset(r.refused_params), r.token_limit_field or None) for r in rows
              if r.refused_params or r.token_limit_field}
    return OpenAIChatClient(
        endpoint.base_url, endpoint.get_api_key() or "none", model, timeout_s=timeout_s, retry=retry or RetryPolicy(),
        prices=price_table(endpoint), quirks=quirks, context_windows=windows, discover_windows=discover_windows,
        on_learned=lambda name, learned, note: _remember(endpoint.pk, name, learned),
    )


def _remember(endpoint_id: int | None, model: str, quirks: ModelQuirks) -> None:
    # Called from inside an LLM call: a database hiccup must not cost the answer; the client still knows.
    try:
        record_learned(endpoint_id, model, quirks)
    except DatabaseError:
        logger.warning("could not store what %s refuses on endpoint %s", model, endpoint_id, exc_info=True)


def _row(endpoint_id: int, model: str) -> EndpointModel:
    try:
        with transaction.atomic():
            row, _ = EndpointModel.objects.get_or_create(endpoint_id=endpoint_id, model=model[:200])
    except IntegrityError:  # created meanwhile by a concurrent run of the same endpoint
        row = EndpointModel.objects.get(endpoint_id=endpoint_id, model=model[:200])
    return row


def record_learned(endpoint_id: int | None, model: str, quirks: ModelQuirks) -> None:
    """Remember that `model` on the endpoint refuses these parameters (or wants another token-limit field)."""
    if endpoint_id is None or not LLMEndpoint.objects.filter(pk=endpoint_id).exists():
        return
    row = _row(endpoint_id, model)
    EndpointModel.objects.filter(pk=row.pk).update(
        refused_params=sorted(set(row.refused_params) | set(quirks.refused)),
        token_limit_field=quirks.token_limit_field or row.token_limit_field, learned_at=timezone.now())


def record_server_window(endpoint: LLMEndpoint, model: str, window: int) -> None:
    row = _row(endpoint.pk, model)
    if row.server_context_window != window:
        EndpointModel.objects.filter(pk=row.pk).update(server_context_window=window, learned_at=timezone.now())


def record_test(endpoint: LLMEndpoint, report: dict, ok: bool) -> None:
    now = timezone.now()
    fields = {"last_test_at": now, "last_test_ok": ok, "last_test": report}
    if ok:
        fields["last_passed_at"] = now
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(**fields)
    for name, value in fields.items():
        setattr(endpoint, name, value)
