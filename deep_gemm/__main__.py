"""``python -m deep_gemm``: see deep_gemm/cli/__init__.py."""
import sys

from .cli import main

sys.exit(main())
