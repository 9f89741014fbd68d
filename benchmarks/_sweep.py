"""Pieces shared by the config sweeps (sweep_fp8_configs.py, sweep_bf16_configs.py): forcing a config
through its DG_*_GEMM_CONFIG variable, and checking one call's output without hanging on a bad variant."""
import os
import time

import torch

import deep_gemm
from deep_gemm.testing import calc_diff


def cfg_str(c):
    """A candidate as its variable's value: None -> 'default', a tuple -> 'a,b,c', a string as is."""
    if c is None or isinstance(c, str):
        return c or 'default'
    return ','.join(str(v) for v in c)


def set_cfg(env, c):
    """Forces candidate `c` through the variable `env` (None: unset, the heuristics choose)."""
    if c is None:
        os.environ.pop(env, None)
    else:
        os.environ[env] = cfg_str(c)
    deep_gemm.reload_settings()  # DG_* values are read once; make the JIT see the new one


def wait_or_die(what, seconds=20.0):
    """Synchronizes, but gives up on a hung kernel (e.g. a pipeline deadlock): report it and exit, so the
    lines printed so far survive and the GPU job ends."""
    ev = torch.cuda.Event()
    ev.record()
    t = time.time()
    while not ev.query():
        if time.time() - t > seconds:
            print(f'HANG: {what} did not finish in {seconds:.0f} s; exiting', flush=True)
            os._exit(3)
        time.sleep(0.001)
    torch.cuda.synchronize()


def checked_diff(call, d, ref, what=''):
    """calc_diff of one call's output `d` (NaN-poisoned first) against `ref`; NaN when an element was left
    unwritten."""
    d.fill_(float('nan'))
    call()
    wait_or_die(what)
    if torch.isnan(d).any():
        return float('nan')
    return float(calc_diff(d.float(), ref))
