"""The crowd model (Dawid and Skene 1979): each item's class from the votes of several annotators or
labelling rules, each with a confusion matrix of its own, the classes summed out."""

from bayes_wsc._lazy import forward

__getattr__ = forward(__name__)
