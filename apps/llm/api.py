"""The connection test over the API: `POST /api/endpoints/<id>/test/` with `{"models": [...]}` (optional)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.llm.connection import MAX_MODELS, run_connection_test
from apps.llm.selectors import endpoint_owned_by


class ConnectionTestRequest(serializers.Serializer):
    models = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20,
                                   help_text=f"Model ids to try (at most {MAX_MODELS} are called); default: the "
                                             "endpoint's models, else the first the server lists.")


class EndpointTest(APIView):
    """Run the connection test of one of your endpoints now (about a minute at most) and return its report;
    the outcome is stored on the endpoint (last_test_at, last_test_ok, last_passed_at)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=ConnectionTestRequest, responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        endpoint = endpoint_owned_by(request.user, pk)
        if endpoint is None:
            return Response({"detail": "No such endpoint of yours."}, status=status.HTTP_404_NOT_FOUND)
        data = ConnectionTestRequest(data=request.data)
        data.is_valid(raise_exception=True)
        report = run_connection_test(endpoint, data.validated_data.get("models") or None)
        return Response(report.to_dict())
