"""Errors of the web view (one line each, for the CLI to print)."""

from __future__ import annotations


class ViewError(Exception):
    """A view that cannot start or a results folder it cannot show."""
