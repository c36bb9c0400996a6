"""Checks of a fitted model against its known failures, one module per check."""
