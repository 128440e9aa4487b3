from rest_framework.permissions import BasePermission


class IsOwner(BasePermission):
    """Writes are the owner's alone; staff may read every run but not act on it."""

    message = "Only the owner of this run may do that."

    def has_object_permission(self, request, view, obj) -> bool:
        return obj.owner_id == request.user.pk
