"""Public means public: the API root lists what the caller may use, the favicon is served, and anonymous
visitors read public catalog, runs and experiments but never a private one (pages, API, websocket)."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_api_root_lists_the_public_endpoints_for_anonymous_visitors_and_says_how_to_sign_in():
    response = Client().get("/api/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"auth_token", "schema", "docs", "detail"}
    assert data["schema"] == "http://testserver/api/schema/" and "docs/api.md" in data["detail"]


def test_the_api_root_lists_every_endpoint_for_a_signed_in_user(user):
    client = Client()
    client.force_login(user)
    data = client.get("/api/", HTTP_ACCEPT="application/json").json()
    assert "detail" not in data
    assert data["runs"] == "http://testserver/api/runs/" and data["experiments"] == "http://testserver/api/experiments/"
    for name, url in data.items():  # every link exists and answers this user (the token exchange is POST only)
        expected = (405,) if name == "auth_token" else (200, 400)
        accept = "text/html" if name == "docs" else "application/json"  # the Swagger UI is a page
        assert client.get(url, HTTP_ACCEPT=accept).status_code in expected, name


def test_the_api_root_is_browsable_html_in_a_browser():
    response = Client().get("/api/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "KernelWeb API" in html and "/api/schema/" in html


def test_anonymous_api_data_calls_are_refused_and_never_list_private_runs(make_run, user):
    make_run(user)
    make_run(user, is_public=True)
    response = Client().get("/api/runs/")
    assert response.status_code == 401


def test_the_favicon_is_an_svg_linked_from_every_page_and_served_at_favicon_ico():
    client = Client()
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg") and b"<title>KernelWeb</title>" in icon.content
    page = client.get("/tasks/").content.decode()
    assert 'rel="icon"' in page and "favicon" in page and 'type="image/svg+xml"' in page


def test_anonymous_visitors_browse_the_catalog_runs_experiments_and_showcase_without_a_login_prompt(task):
    client = Client()
    for url in ("/tasks/", f"/tasks/{task.pk}/", "/runs/", "/experiments/", "/showcase/"):
        assert client.get(url).status_code == 200, url


def test_a_public_runs_best_result_shows_in_the_catalog_for_anonymous_visitors_a_private_one_does_not(
        task, user, make_run):
    from apps.runs.models import Run

    private, public = make_run(user), make_run(user, is_public=True)
    Run.objects.filter(pk=private.pk).update(best_score=9.87)
    html = Client().get(f"/tasks/{task.pk}/").content.decode()
    assert "9.87" not in html and f"/runs/{private.pk}/" not in html
    Run.objects.filter(pk=public.pk).update(best_score=3.21)
    assert "3.21" in Client().get(f"/tasks/{task.pk}/").content.decode()


def test_a_cancelled_run_says_why_once_in_its_header_and_its_list_row(make_run, user):
    from apps.runs.services import run_transition

    run = make_run(user, is_public=True)
    run_transition(run.pk, "cancelled")
    page = Client().get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-error"' in page and "Cancelled by its owner or an administrator." in page
    assert "Cancelled:" not in page
    listing = Client().get("/runs/").content.decode()
    assert 'class="failure-reason" title="Cancelled by its owner or an administrator."' in listing
