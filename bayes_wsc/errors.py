"""Errors and warnings that users are meant to read.

`InputError` carries a one-line message naming the field, value or file at
fault; the CLI prints it without a traceback and exits with status 2.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a missing column, an out-of-range value, an unreadable file."""


class FitWarning(UserWarning):
    """A fit finished but should not be trusted as is (diagnostics, identifiability)."""


class SamplingWarning(FitWarning):
    """Said before a long run starts (NUTS from a start that will make it slow): the command line prints it at
    once, where its other fit warnings wait for the fit's printed diagnostics."""
