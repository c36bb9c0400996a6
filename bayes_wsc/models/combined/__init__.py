"""The combined model: one posterior from hand labels, crowd votes, expert pairs, bag counts and group averages."""

from bayes_wsc._lazy import forward

__getattr__ = forward(__name__)
