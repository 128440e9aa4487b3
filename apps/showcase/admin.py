from django.contrib import admin

from apps.showcase.models import ShareLink


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    """Read-only: a link is content-addressed and never changes. Deleting one takes the page down."""

    list_display = ("key", "run", "created_by", "created_at")
    search_fields = ("key",)
    list_select_related = ("run__task", "created_by")
    readonly_fields = ("key", "snapshot", "run", "created_by", "created_at")

    def has_add_permission(self, request):
        return False  # links are made from the run viewer (share_create), never by hand

    def has_change_permission(self, request, obj=None):
        return False
