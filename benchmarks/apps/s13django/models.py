"""The one table S13 queries: 10,000 items (created and filled by `s13django.data`)."""

from django.db import models


class Item(models.Model):
    name = models.CharField(max_length=64)
    category = models.IntegerField()
    price = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
        app_label = "s13django"
        db_table = "s13_item"
