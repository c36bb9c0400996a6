"""The combined model: one posterior from hand labels, crowd votes, expert pairs, bag counts and group averages."""
