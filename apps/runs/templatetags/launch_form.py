"""The launch forms' fieldsets (templates/runs/launch.html, templates/experiments/launch.html)."""

from django import template

register = template.Library()


@register.filter
def fields_named(form, names: str) -> list:
    """The form's bound fields whose names are among the space-separated `names`, in the form's order. A name the
    form lacks is an error, so a renamed field cannot silently drop out of its fieldset."""
    wanted = names.split()
    missing = [name for name in wanted if name not in form.fields]
    if missing:
        raise template.TemplateSyntaxError(f"{type(form).__name__} has no field {', '.join(missing)}")
    return [field for field in form if field.name in wanted]
