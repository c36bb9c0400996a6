"""The papers' own algorithms live in each model's folder (`models/<name>/baselines.py`).

This package remains so that their old import paths resolve (`bayes_wsc/_moved.py`).
"""
