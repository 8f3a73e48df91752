"""RLlib (Ray) self-play trainer (`colony-train-rllib`) and its export to project checkpoints."""
