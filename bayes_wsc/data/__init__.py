"""Data containers: one per kind of coarse supervision, validated once."""
