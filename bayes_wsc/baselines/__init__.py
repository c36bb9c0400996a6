"""The papers' own algorithms live in each model's folder (`models/<name>/baselines.py`); this package keeps their old paths."""
