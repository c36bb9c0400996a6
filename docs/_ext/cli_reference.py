"""The command line's parser as the CLI reference page reads it (sphinx-argparse's `:func:`).

The help texts are plain text (`build_model(data, **settings)`, `|x2| < 0.1`); reStructuredText would read
their `*` and `|` as markup, so they are escaped here, on a parser built for the page; `--help` is unchanged.
"""

from __future__ import annotations

import argparse

from bayes_wsc.cli import build_parser

RST_SPECIAL = str.maketrans({"*": r"\*", "|": r"\|", "`": r"\`", "_": r"\_"})


def escape(parser: argparse.ArgumentParser) -> None:
    for text in ("description", "epilog"):
        if getattr(parser, text):
            setattr(parser, text, getattr(parser, text).translate(RST_SPECIAL))
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            action.help = action.help.translate(RST_SPECIAL)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.help:
                    choice.help = choice.help.translate(RST_SPECIAL)
            for sub in action.choices.values():
                escape(sub)


def parser() -> argparse.ArgumentParser:
    built = build_parser()
    escape(built)
    return built
