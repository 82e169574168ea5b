"""``python -m pyterrier_noise``: the same as the ``pyterrier-noise`` command."""
import sys

from .cli import main

sys.exit(main())
