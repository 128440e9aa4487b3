import pytest
from django.db import connection
from django.urls import reverse

from apps.llm.crypto import DecryptionError
from apps.llm.models import LLMEndpoint

pytestmark = pytest.mark.django_db
# The admin page's per-model inline (windows and prices), empty, as a browser posts it.
INLINE = {"model_settings-TOTAL_FORMS": "0", "model_settings-INITIAL_FORMS": "0",
          "model_settings-MIN_NUM_FORMS": "0", "model_settings-MAX_NUM_FORMS": "1000"}


def test_api_key_is_encrypted_at_rest_and_readable_back():
    endpoint = LLMEndpoint(name="openai", base_url="https://api.example.com/v1")
    endpoint.set_api_key("sk-secret-123")
    endpoint.save()
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key_encrypted FROM llm_llmendpoint WHERE id = %s", [endpoint.pk])
        stored = cursor.fetchone()[0]
    assert "sk-secret-123" not in stored
    assert LLMEndpoint.objects.get(pk=endpoint.pk).get_api_key() == "sk-secret-123"


def test_a_key_written_with_another_secret_fails_with_advice(settings):
    from apps.llm import crypto

    endpoint = LLMEndpoint(name="x", base_url="https://a.example/v1")
    endpoint.set_api_key("sk-1")
    crypto._fernet.cache_clear()
    settings.FIELD_ENCRYPTION_KEYS = ["ZmDfcTF7_60GrrY167zsiPd67pEvs0aGOv2oasOM1Pg="]
    try:
        with pytest.raises(DecryptionError, match="re-enter the key in the admin"):
            endpoint.get_api_key()
    finally:
        crypto._fernet.cache_clear()


def test_admin_never_echoes_the_stored_key(admin_client):
    response = admin_client.post(
        reverse("admin:llm_llmendpoint_add"),
        {"name": "lab", "base_url": "https://llm.example/v1", "model_names": '["m1"]', "api_key": "sk-visible?",
         **INLINE},
    )
    assert response.status_code == 302
    endpoint = LLMEndpoint.objects.get(name="lab")
    assert endpoint.get_api_key() == "sk-visible?"
    page = admin_client.get(reverse("admin:llm_llmendpoint_change", args=[endpoint.pk])).content.decode()
    assert "sk-visible?" not in page and endpoint.api_key_encrypted not in page


def test_admin_keeps_the_key_when_the_field_is_left_empty(admin_client):
    endpoint = LLMEndpoint(name="lab", base_url="https://llm.example/v1")
    endpoint.set_api_key("sk-keep")
    endpoint.save()
    admin_client.post(
        reverse("admin:llm_llmendpoint_change", args=[endpoint.pk]),
        {"name": "lab2", "base_url": "https://llm.example/v1", "model_names": "[]", "api_key": "", **INLINE},
    )
    endpoint.refresh_from_db()
    assert (endpoint.name, endpoint.get_api_key()) == ("lab2", "sk-keep")


def test_users_add_their_own_endpoint_and_the_key_is_never_shown_back(client, user):
    client.force_login(user)
    response = client.post(reverse("llm:create"), {"name": "mine", "base_url": "https://llm.example/v1",
                                                   "model_names": "gpt-a, gpt-b\ngpt-a", "api_key": "sk-user-42"})
    assert response.status_code == 302
    endpoint = LLMEndpoint.objects.get(name="mine")
    assert (endpoint.owner, endpoint.model_names, endpoint.get_api_key()) == (user, ["gpt-a", "gpt-b"], "sk-user-42")
    for url in (reverse("llm:list"), reverse("llm:edit", args=[endpoint.pk])):
        page = client.get(url).content.decode()
        assert "sk-user-42" not in page and endpoint.api_key_encrypted not in page
    client.post(reverse("llm:edit", args=[endpoint.pk]), {"name": "mine", "base_url": "https://llm.example/v1",
                                                          "model_names": "", "api_key": ""})
    endpoint.refresh_from_db()
    assert endpoint.get_api_key() == "sk-user-42"  # an empty key field keeps the stored key


def test_other_users_cannot_edit_or_delete_an_endpoint_and_shared_ones_are_read_only(client, user, other_user):
    mine = LLMEndpoint.objects.create(name="mine", base_url="https://a.example/v1", owner=user)
    shared = LLMEndpoint.objects.create(name="shared", base_url="https://b.example/v1")
    client.force_login(other_user)
    assert client.get(reverse("llm:edit", args=[mine.pk])).status_code == 404
    assert client.post(reverse("llm:delete", args=[mine.pk])).status_code == 404
    assert client.get(reverse("llm:edit", args=[shared.pk])).status_code == 404
    listing = client.get(reverse("llm:list")).content.decode()
    assert "shared" in listing and "https://a.example" not in listing
    client.force_login(user)
    assert client.post(reverse("llm:delete", args=[mine.pk])).status_code == 302
    assert not LLMEndpoint.objects.filter(pk=mine.pk).exists()


def test_bad_endpoint_input_is_explained_and_nothing_is_saved(client, user):
    LLMEndpoint.objects.create(name="dup", base_url="https://a.example/v1", owner=user)
    client.force_login(user)
    response = client.post(reverse("llm:create"), {"name": "x", "base_url": "not a url", "model_names": "[1, 2]"})
    form = response.context["form"]
    assert set(form.errors) == {"base_url", "model_names"} and "strings only" in form.errors["model_names"][0]
    response = client.post(reverse("llm:create"), {"name": "dup", "base_url": "https://b.example/v1"})
    assert "already have an endpoint with this name" in response.content.decode()
    assert LLMEndpoint.objects.count() == 1


def test_admins_set_prices_and_windows_of_a_shared_endpoint_inline(admin_client):
    from apps.llm.models import EndpointModel

    endpoint = LLMEndpoint.objects.create(name="shared", base_url="https://llm.example/v1")
    response = admin_client.post(reverse("admin:llm_llmendpoint_change", args=[endpoint.pk]), {
        "name": "shared", "base_url": "https://llm.example/v1", "model_names": "[]", "api_key": "", **INLINE,
        "model_settings-TOTAL_FORMS": "1", "model_settings-0-model": "big", "model_settings-0-context_window": "65536",
        "model_settings-0-input_per_m": "1", "model_settings-0-output_per_m": "4"})
    assert response.status_code == 302
    row = EndpointModel.objects.get(endpoint=endpoint)
    assert (row.model, row.context_window, float(row.output_per_m)) == ("big", 65536, 4.0)
