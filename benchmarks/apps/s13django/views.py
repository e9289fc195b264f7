"""S13's view: a primary-key lookup and a small aggregate (100 rows by primary-key range) over
the 10,000-row table, rendered by a small template. `?sleep=S` adds `SELECT pg_sleep(S)` (the
slow request of S13's burst case: a database that takes its time)."""

from django.db import connection
from django.db.models import Avg, Count, Max, Min
from django.shortcuts import render

from .models import Item


def item(request, pk):
    sleep = request.GET.get("sleep")
    if sleep:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_sleep(%s)", [float(sleep)])
    it = Item.objects.get(pk=pk)
    near = Item.objects.filter(pk__range=(pk, pk + 99)).aggregate(
        n=Count("id"), avg=Avg("price"), low=Min("price"), high=Max("price"))
    return render(request, "item.html", {"item": it, "near": near})
