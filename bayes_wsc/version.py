"""The installed package's version, which every fit and report records."""

from __future__ import annotations


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bayes-wsc")
    except PackageNotFoundError:
        return "unknown"
