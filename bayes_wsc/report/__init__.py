"""Self-contained HTML reports of fits: generic building blocks in `html`; each model's own in its folder."""
