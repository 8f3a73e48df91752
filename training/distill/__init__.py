"""Expert iteration (`colony-distill`): a search steered by a policy teaches that policy (train.py, config.py)."""
