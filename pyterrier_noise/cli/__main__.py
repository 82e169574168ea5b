"""``python -m pyterrier_noise.cli``: the same as the ``pyterrier-noise`` command."""
import sys

from . import main

sys.exit(main())
