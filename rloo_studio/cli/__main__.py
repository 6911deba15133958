"""`python -m rloo_studio.cli`: the `rloo-studio` command."""

import sys

from . import main

sys.exit(main())
