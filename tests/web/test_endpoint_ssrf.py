"""LLM endpoints may not point workers at loopback, private, link-local or metadata addresses (apps/llm/ssrf.py),
unless LLM_ENDPOINT_ALLOWED_HOSTS lists them. Real resolution of literal IPs and "localhost": no network."""

import pytest
from django.urls import reverse

from apps.llm.forms import EndpointForm
from apps.llm.models import LLMEndpoint
from apps.llm.ssrf import UnsafeEndpoint, check_base_url
from apps.runs import execution


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:8000/v1", "127.0.0.1 is a loopback address"),
    ("http://[::1]/v1", "::1 is a loopback address"),
    ("http://localhost:11434/v1", "resolved to"),
    ("http://10.1.2.3/v1", "a private address"),
    ("http://172.16.0.9/v1", "a private address"),
    ("https://192.168.1.20/v1", "a private address"),
    ("http://[fd12:3456::1]/v1", "a private address"),
    ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
    ("http://169.254.10.1/v1", "a link-local address"),
    ("http://[fe80::1]/v1", "a link-local address"),
    ("http://0.0.0.0:8000/v1", "an unspecified address"),
    ("http://[::ffff:127.0.0.1]/v1", "a loopback address"),
    ("http://100.64.0.1/v1", "not a public address"),
])
def test_non_public_addresses_are_refused_naming_the_address_and_the_setting(url, reason):
    with pytest.raises(UnsafeEndpoint, match=reason) as err:
        check_base_url(url, allow=[])
    assert "LLM_ENDPOINT_ALLOWED_HOSTS" in str(err.value)


def test_localhost_is_refused_with_the_address_it_resolved_to():
    with pytest.raises(UnsafeEndpoint, match=r"localhost \(resolved to (127\.0\.0\.1|::1)\) is a loopback address"):
        check_base_url("http://localhost:8000/v1", allow=[])


def test_public_addresses_pass():
    check_base_url("https://8.8.8.8/v1", allow=[])
    check_base_url("https://[2606:4700:4700::1111]/v1", allow=[])


def test_the_allow_list_admits_a_host_name_an_address_or_a_network():
    check_base_url("http://localhost:11434/v1", allow=["localhost"])
    check_base_url("http://127.0.0.1:8000/v1", allow=["127.0.0.1"])
    check_base_url("http://[::1]:8000/v1", allow=["[::1]"])
    check_base_url("http://10.0.5.7/v1", allow=["10.0.5.0/24"])
    with pytest.raises(UnsafeEndpoint):
        check_base_url("http://10.0.6.7/v1", allow=["10.0.5.0/24"])
    with pytest.raises(UnsafeEndpoint):
        check_base_url("http://127.0.0.1/v1", allow=["localhost"])  # the name, not what it resolves to


def test_an_unresolvable_name_is_refused_unless_saving():
    with pytest.raises(UnsafeEndpoint, match="does not resolve"):
        check_base_url("https://llm.invalid/v1", allow=[])
    check_base_url("https://llm.invalid/v1", allow=[], unresolvable_ok=True)


def test_the_default_allow_list_is_the_setting(settings):
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = []
    with pytest.raises(UnsafeEndpoint):
        check_base_url("http://127.0.0.1:9/v1")
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = ["127.0.0.1"]
    check_base_url("http://127.0.0.1:9/v1")


@pytest.mark.django_db
def test_the_endpoint_form_refuses_a_metadata_address(settings, django_user_model):
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = []
    user = django_user_model.objects.create_user("u", password="pw-12345678")
    form = EndpointForm({"name": "meta", "base_url": "http://169.254.169.254/v1", "model_names": ""}, owner=user)
    assert not form.is_valid()
    assert "169.254.169.254 is a cloud metadata address" in form.errors["base_url"][0]
    assert "LLM_ENDPOINT_ALLOWED_HOSTS" in form.errors["base_url"][0]
    form = EndpointForm({"name": "local", "base_url": "http://localhost:11434/v1", "model_names": ""}, owner=user)
    assert not form.is_valid() and "resolved to" in form.errors["base_url"][0]
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = ["localhost"]
    form = EndpointForm({"name": "local", "base_url": "http://localhost:11434/v1", "model_names": ""}, owner=user)
    assert form.is_valid(), form.errors


@pytest.mark.django_db
def test_the_create_view_shows_the_refusal(client, settings, django_user_model):
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = []
    user = django_user_model.objects.create_user("u", password="pw-12345678")
    client.force_login(user)
    response = client.post(reverse("llm:create"), {"name": "x", "base_url": "http://10.0.0.1/v1"})
    assert response.status_code == 200 and "10.0.0.1 is a private address" in response.content.decode()
    assert not LLMEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_worker_checks_again_before_building_the_client(settings, django_user_model):
    """An endpoint saved when allowed (or whose DNS changed since) is refused when the run starts."""
    from apps.catalog.models import Task
    from apps.runs.models import Run

    user = django_user_model.objects.create_user("u", password="pw-12345678")
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9/v1", owner=user)
    run = Run(owner=user, endpoint=endpoint, model="m", task=Task())
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = []
    with pytest.raises(UnsafeEndpoint, match="127.0.0.1 is a loopback address"):
        execution._client(run)
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = ["127.0.0.1"]
    assert execution._client(run).base_url == "http://127.0.0.1:9/v1"
