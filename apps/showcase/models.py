"""Share links: frozen public comparisons of two turns."""

from django.conf import settings
from django.db import models

from apps.runs.models import Run


class ShareLink(models.Model):
    """A frozen, public comparison of two turns, served at /s/<key>/.

    The key is random (apps/showcase/sharing.py; links made before that keep their content-derived
    keys), and a link's content never changes after creation. The snapshot carries
    everything the page shows, so the link outlives its run (run becomes NULL) and later edits.
    """

    key = models.CharField(max_length=20, unique=True, editable=False)
    snapshot = models.JSONField(editable=False)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="share_links")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="share_links"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_sharelink"  # created when the model lived in apps.runs; the rows stay where they are
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Share {self.key}"

    def save(self, *args, **kwargs):
        # Immutable: whoever holds the link keeps seeing what was shared.
        if not self._state.adding:
            raise ValueError("a share link never changes after creation; create a new one instead")
        super().save(*args, **kwargs)
