from django.db.models import Q, QuerySet

from apps.llm.models import LLMEndpoint


def endpoints_for(user) -> QuerySet[LLMEndpoint]:
    """A user's own endpoints plus the shared ones (no owner)."""
    return LLMEndpoint.objects.filter(Q(owner=user) | Q(owner__isnull=True))


def endpoint_owned_by(user, pk: int) -> LLMEndpoint | None:
    """Only the owner edits or deletes an endpoint; shared ones are managed in the admin."""
    return LLMEndpoint.objects.filter(owner=user, pk=pk).first()
