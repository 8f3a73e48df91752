"""`python -m colony_training.zero` is `colony-zero`."""

from .train import main

raise SystemExit(main())
