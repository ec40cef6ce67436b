"""``python -m taguru_ray`` is the ``taguru-ray`` console script."""

import sys

from taguru_ray.cli import main

sys.exit(main())
