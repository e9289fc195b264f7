"""S13's one route."""

from django.urls import path

from . import views

urlpatterns = [path("item/<int:pk>", views.item)]
