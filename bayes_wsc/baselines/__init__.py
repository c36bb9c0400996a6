"""The papers own algorithms, kept as baselines and as references for the tests."""
