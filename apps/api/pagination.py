from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """PAGE_SIZE (50) by default; clients may ask for up to 200 per page, never an unbounded list."""

    page_size_query_param = "page_size"
    max_page_size = 200
