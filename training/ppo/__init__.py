"""Self-play PPO: the trainer (`colony-train`), its loss, opponent pool, reward shaping and throughput bench."""
