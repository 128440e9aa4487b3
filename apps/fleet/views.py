from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from apps.fleet.selectors import alive_window, queue_states, worker_rows


@login_required
def worker_list(request):
    """Every registered GPU worker, live ones first; current runs only where the viewer may see them."""
    states = sorted(queue_states().values(), key=lambda s: (not s.live, s.queue))
    return render(request, "fleet/workers.html", {
        "rows": worker_rows(request.user), "queues": states,
        "heartbeat_s": settings.WORKER_HEARTBEAT_SECONDS, "dead_after_s": alive_window().total_seconds(),
    })
