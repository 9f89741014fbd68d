"""Running Python code in a fresh interpreter, for tests that need a clean process (import-time behaviour,
environment variables read once, or a crash that must fail the test instead of ending the session)."""
import os
import subprocess
import sys
import textwrap


def run_python(code: str, **env_overrides) -> subprocess.CompletedProcess:
    """Runs `code` (dedented) with this interpreter and the environment plus `env_overrides`; output captured."""
    env = dict(os.environ)
    env.update(env_overrides)
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
