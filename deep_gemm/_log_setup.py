"""Makes the DG_* debug switches visible without any ``logging`` set-up.

The JIT core logs through ``logging.getLogger("deep_gemm")``. Without configuration Python drops records
below WARNING, so ``DG_PRINT_CONFIGS=1`` alone would print nothing. When one of the switches below is set,
this module (run at import) attaches a handler that writes to stderr and, unless the user set one, gives the
``deep_gemm`` logger the level the switch needs. When logging is already configured at import (a handler on
``deep_gemm`` or an ancestor) nothing is changed. The handler also stands aside when a handler is added
later (say ``logging.basicConfig()`` after ``import deep_gemm``), so output is never doubled.
"""
import logging
import os
import sys

# Switch -> the level its records are logged at.
DEBUG_SWITCHES = {
    'DG_JIT_DEBUG': logging.DEBUG,
    'DG_PRINT_CONFIGS': logging.INFO,
    'DG_JIT_PRINT_COMPILER_COMMAND': logging.INFO,
    'DG_JIT_PRINT_LOAD_TIME': logging.INFO,
    'DG_JIT_PTXAS_VERBOSE': logging.INFO,
}

_FALSE_VALUES = ('', '0', 'false', 'no', 'off')


class StderrFallbackHandler(logging.StreamHandler):
    """Writes to stderr only when no other handler on the logger's path would get the record."""

    def __init__(self):
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter('[deep_gemm %(levelname)s] %(message)s'))

    def emit(self, record: logging.LogRecord) -> None:
        if not _others_handle(logging.getLogger(record.name), self):
            self.stream = sys.stderr  # follows a redirected sys.stderr
            super().emit(record)


def _others_handle(logger: logging.Logger, me: logging.Handler) -> bool:
    current = logger
    while current is not None:
        if any(handler is not me for handler in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def requested_level(environ=os.environ):
    """The lowest level any set switch needs, or None when none is set."""
    levels = [level for name, level in DEBUG_SWITCHES.items()
              if environ.get(name, '').strip().lower() not in _FALSE_VALUES]
    return min(levels) if levels else None


def make_debug_output_visible(environ=os.environ) -> bool:
    """Attaches the stderr fallback handler when a debug switch is set; returns whether it did."""
    level = requested_level(environ)
    if level is None:
        return False
    logger = logging.getLogger('deep_gemm')
    if logger.hasHandlers():  # the user configured logging: their handlers and levels decide
        return False
    if logger.level == logging.NOTSET:
        logger.setLevel(level)
    logger.addHandler(StderrFallbackHandler())
    return True
