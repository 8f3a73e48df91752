"""Search-based self-play training: `colony-zero` (search with a learned value) and expert iteration (`colony-distill`)."""
