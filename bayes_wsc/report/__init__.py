"""Self-contained HTML reports of fits: generic building blocks in `html`, one module per model."""
