"""Model prices and known models (`models.json`, an operator's LLM_PRICES_FILE, an endpoint's own prices):
what one LLM call costs. Split from worker/agents/llm.py, which re-exports these names."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODELS_FILE = Path(__file__).with_name("models.json")


@dataclass(frozen=True)
class ModelPrice:
    input_per_m: float  # USD per 1M prompt tokens
    output_per_m: float  # USD per 1M completion tokens
    cached_input_per_m: float | None = None  # USD per 1M cached prompt tokens; None: the input price
    reasoning_per_m: float | None = None  # USD per 1M reasoning tokens; None: the output price

    def cost(self, tokens_in: int, tokens_out: int, cached: int = 0, reasoning: int = 0) -> float:
        """Cached tokens are part of tokens_in and reasoning tokens part of tokens_out (as servers count)."""
        cached = min(max(cached, 0), tokens_in)
        reasoning = min(max(reasoning, 0), tokens_out)
        cached_price = self.input_per_m if self.cached_input_per_m is None else self.cached_input_per_m
        reasoning_price = self.output_per_m if self.reasoning_per_m is None else self.reasoning_per_m
        return ((tokens_in - cached) * self.input_per_m + cached * cached_price
                + (tokens_out - reasoning) * self.output_per_m + reasoning * reasoning_price) / 1_000_000


@dataclass(frozen=True)
class KnownModel:
    """What the shipped data file (models.json) says about a well-known model id."""

    price: ModelPrice | None = None
    context_window: int | None = None
    refuses: frozenset[str] = frozenset()
    token_limit_field: str | None = None


def match_model(table: Mapping[str, Any], model: str) -> Any:
    """The entry for `model`, else for the longest listed id that a dated or provider-prefixed id extends
    ("gpt-4o-2024-08-06", "openai/gpt-4o" -> "gpt-4o"); matching ignores case. None if none."""
    if model in table:
        return table[model]
    lowered = {k.lower(): k for k in table}
    bare = model.rsplit("/", 1)[-1].lower()
    candidates = [m for m in lowered if bare == m or bare.startswith(m + "-")]
    return table[lowered[max(candidates, key=len)]] if candidates else None


@functools.cache
def known_models() -> dict[str, KnownModel]:
    data = json.loads(MODELS_FILE.read_text(encoding="utf-8"))["models"]
    out = {}
    for model, entry in data.items():
        price = _parse_price(entry, f"{MODELS_FILE.name}: {model!r}") if "input" in entry else None
        out[model] = KnownModel(price, entry.get("context_window"), frozenset(entry.get("refuses", ())),
                                entry.get("token_limit_field"))
    return out


def default_prices() -> dict[str, ModelPrice]:
    return {m: k.price for m, k in known_models().items() if k.price is not None}


class PriceTable:
    """Model id -> price. A dated or provider-prefixed id ("gpt-4o-2024-08-06", "openai/gpt-4o")
    falls back to the longest listed id it extends, so a new snapshot is priced like its family."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None):
        self._prices = dict(default_prices() if prices is None else prices)

    @classmethod
    def load(cls, overrides: str | Path | Mapping[str, Any] | None = None) -> PriceTable:
        """The default table updated from a JSON file path or a dict of
        `{"model": {"input": 1.0, "output": 2.0, "cached_input": 0.5, "reasoning": 2.0}}` (the last two
        optional) or `{"model": [1.0, 2.0]}`, USD per 1M tokens."""
        prices = default_prices()
        if overrides is None:
            return cls(prices)
        if isinstance(overrides, (str, Path)):
            path = Path(overrides)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValueError(f"price file {path} does not exist") from None
            except json.JSONDecodeError as exc:
                raise ValueError(f"price file {path} is not valid JSON: {exc}") from None
            where = str(path)
        else:
            data, where = overrides, "price overrides"
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object of model id -> price")
        for model, raw in data.items():
            prices[str(model)] = _parse_price(raw, f"{where}: {model!r}")
        return cls(prices)

    def with_prices(self, prices: Mapping[str, ModelPrice]) -> PriceTable:
        """This table with `prices` (an endpoint's own, say) taking precedence."""
        return PriceTable({**self._prices, **prices})

    def price(self, model: str) -> ModelPrice | None:
        return match_model(self._prices, model)

    def cost(self, model: str, tokens_in: int, tokens_out: int, cached: int = 0, reasoning: int = 0
             ) -> tuple[float, bool]:
        """(USD, priced). An unknown model costs 0 and is reported as unpriced, never guessed."""
        price = self.price(model)
        if price is None:
            return 0.0, False
        return price.cost(tokens_in, tokens_out, cached, reasoning), True

    def as_dict(self) -> dict[str, ModelPrice]:
        return dict(self._prices)


def _parse_price(raw: Any, where: str) -> ModelPrice:
    extra: tuple[Any, Any] = (None, None)
    if isinstance(raw, Mapping):
        values = (raw.get("input"), raw.get("output"))
        extra = (raw.get("cached_input"), raw.get("reasoning"))
    elif isinstance(raw, (list, tuple)) and len(raw) == 2:
        values = (raw[0], raw[1])
    else:
        raise ValueError(f'{where}: expected {{"input": x, "output": y}} or [x, y] in USD per 1M tokens')
    for value in (*values, *(e for e in extra if e is not None)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{where}: prices must be numbers >= 0, got {raw!r}")
    return ModelPrice(float(values[0]), float(values[1]),
                      None if extra[0] is None else float(extra[0]), None if extra[1] is None else float(extra[1]))


DEFAULT_PRICES: dict[str, ModelPrice] = default_prices()
