"""`python -m colony_web`: the same as `colony-web`."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
