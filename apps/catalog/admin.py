from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from apps.catalog.archive_import import (
    DEFAULT_YAML_SUITE,
    ImportLimits,
    ImportRejected,
    StageOptions,
    import_commit,
    import_discard,
    import_preview,
    import_stage_archive,
    import_stage_directory,
    tasks_export_zip,
)
from apps.catalog.models import Precision, ShowcasePlacement, Task
from apps.catalog.services import tasks_mark_validation_queued

SESSION_KEY = "catalog_task_imports"  # staging tokens this session may confirm


class TaskImportForm(forms.Form):
    archive = forms.FileField(
        required=False,
        help_text="A .zip or .tar.gz of task folders: <suite>/<op>/spec.toml + sources (C/CUDA or PyTorch), "
        "folders with a task.yaml (CUDAHercules format), or KernelBench problem files (<id>_<Name>.py, e.g. a "
        f"level1/ folder); at most {ImportLimits().archive_mib} MiB.",
    )
    directory = forms.CharField(
        required=False,
        max_length=500,
        help_text="Or a folder on the server, relative to TASKS_DIR (e.g. incoming/batch1).",
    )
    suite = forms.CharField(
        required=False, initial=DEFAULT_YAML_SUITE, max_length=64,
        help_text="The suite task.yaml folders are filed under (spec.toml folders name their own).",
    )
    level = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None,
        choices=[("", "from the folder name (levelN)")] + [(n, f"level {n}") for n in (1, 2, 3, 4)],
        help_text="The KernelBench level of problem files whose folder does not say it (suite kernelbench-l<N>).",
    )
    precisions = forms.MultipleChoiceField(
        required=False, choices=Precision.choices, initial=[Precision.FP32],
        widget=forms.CheckboxSelectMultiple,
        help_text="The precisions KernelBench problems are imported in (BF16 casts inputs and parameters).",
    )

    def clean(self):
        data = super().clean()
        if bool(data.get("archive")) == bool(data.get("directory", "").strip()):
            raise forms.ValidationError("Give either an archive or a folder, not both and not neither.")
        try:
            data["options"] = StageOptions(
                suite=(data.get("suite") or "").strip() or DEFAULT_YAML_SUITE, level=data.get("level"),
                precisions=tuple(data.get("precisions") or ["fp32"]))
        except ImportRejected as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("operator", "precision", "suite", "backend", "category", "complexity", "enabled", "showcase",
                    "validation_verdict", "validated_at", "updated_at")
    list_filter = ("backend", "suite", "category", "precision", "enabled", "showcase", "validation_verdict")
    search_fields = ("operator", "title", "description", "entry_point")
    list_editable = ("enabled", "showcase")
    ordering = ("suite", "operator", "precision")  # FP32 and BF16 of an operator side by side
    readonly_fields = ("source_hash", "created_at", "updated_at", "validated_at", "validation_verdict",
                       "validation_detail")
    actions = ("enable", "disable", "feature", "hide_from_showcase", "showcase_auto", "export_zip",
               "validate_baseline")

    @admin.action(description="Enable selected tasks")
    def enable(self, request, queryset):
        count = queryset.update(enabled=True)
        self.message_user(request, f"{count} task(s) enabled.")

    @admin.action(description="Disable selected tasks (hidden from the catalog and the launch form)")
    def disable(self, request, queryset):
        count = queryset.update(enabled=False)
        self.message_user(request, f"{count} task(s) disabled.")

    @admin.action(description="Showcase: feature selected tasks (listed first, when verified)")
    def feature(self, request, queryset):
        self._place(request, queryset, ShowcasePlacement.FEATURED)

    @admin.action(description="Showcase: hide selected tasks")
    def hide_from_showcase(self, request, queryset):
        self._place(request, queryset, ShowcasePlacement.HIDDEN)

    @admin.action(description="Showcase: list selected tasks automatically")
    def showcase_auto(self, request, queryset):
        self._place(request, queryset, ShowcasePlacement.AUTO)

    def _place(self, request, queryset, placement: str) -> None:
        count = queryset.update(showcase=placement)
        self.message_user(request, f"{count} task(s): showcase placement {ShowcasePlacement(placement).label.lower()}.")

    @admin.action(description="Export selected tasks as a .zip (spec + sources)")
    def export_zip(self, request, queryset):
        result = tasks_export_zip(queryset)
        if not result.folders:
            self.message_user(request, "Nothing to export: the selected tasks have no folder under TASKS_DIR.",
                              messages.ERROR)
            return None
        response = HttpResponse(result.data, content_type="application/zip")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="kernelweb-tasks-{stamp}.zip"'
        response["X-KernelWeb-Missing"] = str(len(result.missing))
        return response

    @admin.action(description="Validate baseline on GPU (baseline vs CPU reference, queued to a GPU worker)")
    def validate_baseline(self, request, queryset):
        from apps.catalog.tasks import validate_task_baseline

        ids = list(queryset.values_list("pk", flat=True))
        tasks_mark_validation_queued(ids)
        for task_id in ids:
            transaction.on_commit(lambda task_id=task_id: validate_task_baseline.delay(task_id))
        self.message_user(request, f"{len(ids)} baseline validation(s) queued; the verdict appears in the list.")

    # ------------------------------------------------------------ import

    def get_urls(self):
        extra = [path("import/", self.admin_site.admin_view(self.import_view), name="catalog_task_import")]
        return extra + super().get_urls()

    def import_view(self, request):
        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": "Import tasks",
                   "limits": ImportLimits()}
        tokens = request.session.get(SESSION_KEY, [])
        step = request.POST.get("step") if request.method == "POST" else None
        if step in ("confirm", "cancel"):
            token = request.POST.get("token", "")
            if token not in tokens:
                self.message_user(request, "This import is unknown or has expired; upload it again.", messages.ERROR)
                return redirect("admin:catalog_task_import")
            request.session[SESSION_KEY] = [t for t in tokens if t != token]
            if step == "cancel":
                import_discard(token)
                self.message_user(request, "Import cancelled; nothing was written.")
                return redirect("admin:catalog_task_import")
            return self._import_confirm(request, token)
        form = TaskImportForm(request.POST or None, request.FILES or None)
        if step == "preview" and form.is_valid():
            try:
                preview = self._stage(form)
            except ImportRejected as exc:
                form.add_error(None, f"Refused: {exc}. Nothing was written.")
            else:
                request.session[SESSION_KEY] = [*tokens[-9:], preview.token]
                return TemplateResponse(request, "admin/catalog/task/import_preview.html",
                                        {**context, "preview": preview, "title": "Import tasks: preview"})
        return TemplateResponse(request, "admin/catalog/task/import.html", {**context, "form": form})

    @staticmethod
    def _stage(form: TaskImportForm):
        upload = form.cleaned_data.get("archive")
        options = form.cleaned_data["options"]
        if upload:
            return import_stage_archive(upload, upload.name, upload.size, options=options)
        return import_stage_directory(form.cleaned_data["directory"], options=options)

    def _import_confirm(self, request, token: str):
        try:
            preview = import_preview(token)
            result = import_commit(token)
        except ImportRejected as exc:
            self.message_user(request, f"Import failed: {exc}.", messages.ERROR)
            return redirect("admin:catalog_task_import")
        report = result.report
        self.message_user(
            request,
            f"Imported {len(result.written)} task folder(s) from {preview.source}: "
            f"{len(report.created)} task(s) created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged.",
        )
        if result.skipped:
            self.message_user(request, "Skipped (not written): " + "; ".join(
                f"{item.folder}: {item.error}" for item in result.skipped), messages.WARNING)
        for error in report.errors:
            self.message_user(request, f"Sync error: {error}", messages.ERROR)
        return redirect(reverse("admin:catalog_task_changelist"))
