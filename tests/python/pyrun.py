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


def run_dg(*args: str, **env_overrides) -> subprocess.CompletedProcess:
    """Runs ``python -m deep_gemm ARGS`` from this checkout with the environment plus `env_overrides`."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    env.update(env_overrides)
    return subprocess.run([sys.executable, '-m', 'deep_gemm', *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
