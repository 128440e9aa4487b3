"""Share links: frozen public comparisons of two turns."""

from django.conf import settings
from django.db import models

from apps.runs.models import Run


class ShareLink(models.Model):
    """A frozen, public comparison of two turns, served at /s/<key>/.

    The key is the first 20 hex digits of sha256 over the snapshot's canonical JSON, so sharing the
    same pair twice gives the same link and a link's content can never change. The snapshot carries
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
        # Immutable by construction: a changed snapshot would no longer match its key.
        if not self._state.adding:
            raise ValueError("a share link never changes after creation; create a new one instead")
        super().save(*args, **kwargs)
