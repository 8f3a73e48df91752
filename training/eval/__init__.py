"""Evaluation and play: agent specs, `colony-eval` and Elo, game records (`colony-replay`), `colony-play`, plots."""
