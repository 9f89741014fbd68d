"""The DeepSeek V3.2 indexer's paged-logits calls as vLLM 0.34 makes them on SM90, replayed against the float reference
(paged_mqa_reference.py).

What vLLM does (facts from its published source): the kv cache is a pool of blocks of 32 or 64 rows
(get_paged_mqa_page_sizes() on SM90), each row 128 FP8 bytes with the block's float32 scales after its rows. Prompt
tokens (prefill) are scored by the dense op over the request's keys gathered from the cache into one contiguous run
(fp8_mqa_logits with per-token [ks, ke) windows, causal), decode tokens by the paged op: per step its metadata builder
calls get_paged_mqa_logits_metadata(seq_lens, block_size, num_sms), with num_sms // 2 slots for next_n 4 (its bundled
build runs 2-CTA clusters there), and the indexer then calls fp8_fp4_paged_mqa_logits((q_fp8, None), kv_cache, weights,
seq_lens, block_table, schedule_metadata, max_model_len, clean_logits=False); the top-k of each row over its range
follows.

Here an engine model fills a shared block pool through a slot mapping as requests arrive: a prefill step (prompts of
ragged lengths cached at once and scored by the dense op over the gathered keys) and then decode steps that append
next_n tokens per request, growing the block tables from the pool (blocks of finished requests are reused),
rebuilding the metadata every step. Every call's logits (NaN-poisoned output) must match the reference inside each
row's range, and the top-k picks must agree. Skipped without a Hopper GPU.
"""
import random

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
import paged_mqa_reference as ref  # noqa: E402
from mqa_logits_reference import mqa_logits_ref  # noqa: E402

DEV = 'cuda'
HEADS, DIM = 64, 128
MAX_MODEL_LEN = 4096


class Engine:
    """A block pool, per-request block lists and token counts, and a slot-mapping write of new tokens' kv."""

    def __init__(self, block_size, num_blocks, rng):
        self.block_size, self.rng = block_size, rng
        self.cache = torch.zeros(num_blocks, block_size, 1, DIM + 4, dtype=torch.uint8, device=DEV)
        self.free = list(range(num_blocks))
        rng.shuffle(self.free)
        self.blocks, self.lens = {}, {}

    def add(self, req, num_tokens):
        self.blocks[req], self.lens[req] = [], 0
        self.append(req, num_tokens)

    def finish(self, req):
        self.free += self.blocks.pop(req)
        del self.lens[req]

    def append(self, req, num_tokens):
        """Caches num_tokens new tokens of req: each token's row goes to slot block * block_size + offset."""
        start = self.lens[req]
        end = start + num_tokens
        while len(self.blocks[req]) * self.block_size < end:
            self.blocks[req].append(self.free.pop())
        pos = torch.arange(start, end, device=DEV)
        table = torch.tensor(self.blocks[req], device=DEV)
        block, offset = table[pos // self.block_size][:, None], (pos % self.block_size)[:, None]
        codes, scales = ref.quantize_rows(torch.randn(num_tokens, DIM, device=DEV) * (0.5 + self.rng.random()))
        # Rows at bytes [offset * D, (offset + 1) * D) of the block, the scale at block_size * D + 4 * offset.
        flat = self.cache.view(self.cache.shape[0], -1)
        flat[block, offset * DIM + torch.arange(DIM, device=DEV)] = codes.view(torch.uint8)
        flat[block, self.block_size * DIM + offset * 4 + torch.arange(4, device=DEV)] = scales.view(torch.uint8).view(-1, 4)
        self.lens[req] = end

    def gather(self, req):
        """The request's keys as one contiguous run, as vLLM gathers them for prefill: (e4m3 [n, D], float32 [n])."""
        pos = torch.arange(self.lens[req], device=DEV)
        table = torch.tensor(self.blocks[req], device=DEV)
        block, offset = table[pos // self.block_size][:, None], (pos % self.block_size)[:, None]
        flat = self.cache.view(self.cache.shape[0], -1)
        codes = flat[block, offset * DIM + torch.arange(DIM, device=DEV)].contiguous().view(torch.float8_e4m3fn)
        scales = flat[block, self.block_size * DIM + offset * 4 + torch.arange(4, device=DEV)].contiguous().view(torch.float32)
        return codes, scales.view(-1)

    def batch(self, reqs):
        """seq_lens int32 [B] and block_table int32 [B, max_blocks] (padded with stale entries, as vLLM's tables are)."""
        width = max(len(self.blocks[r]) for r in reqs) + 1
        table = torch.full((len(reqs), width), self.cache.shape[0] - 1, dtype=torch.int32)
        for i, r in enumerate(reqs):
            table[i, :len(self.blocks[r])] = torch.tensor(self.blocks[r], dtype=torch.int32)
        lens = torch.tensor([self.lens[r] for r in reqs], dtype=torch.int32)
        return lens.to(DEV), table.to(DEV)


def check_topk(got, want, inside, topk=64):
    """vLLM's next step: the top-k of each row over its range. A pick may differ from the reference's only at a near-tie:
    every position picked from ``got`` must be inside the row and score, by the reference, at least the reference's k-th
    best less a rounding allowance (1e-3 of the row's largest reference score; the logits differ from the reference by
    about 1e-4 of it). Comparing the sorted index lists position by position instead fails on one near-tie swap."""
    got_masked = torch.where(inside, got, torch.full_like(got, float('-inf')))
    k = min(topk, int(inside.sum(1).min()))
    picked = got_masked.topk(k, dim=1).indices
    want_inside = torch.where(inside, want, torch.full_like(want, float('-inf')))
    kth_best = want_inside.topk(k, dim=1).values[:, -1:]
    allowance = 1e-3 * torch.where(inside, want, torch.zeros_like(want)).abs().amax(1, keepdim=True)
    short = kth_best - allowance - want_inside.gather(1, picked)
    assert (short <= 0).all(), f'picks below the k-th best by up to {float(short.max()):.4g} (allowance {allowance.max():.4g})'


def prefill_step(engine, reqs):
    """The prompt tokens' scores: per request, the dense op over its gathered keys, token i seeing keys [0, i]."""
    codes, scales, ks, ke = [], [], [], []
    for r in reqs:
        c, s = engine.gather(r)
        start = sum(len(x) for x in codes)
        codes.append(c)
        scales.append(s)
        ks.append(torch.full((len(c),), start, dtype=torch.int32))
        ke.append(torch.arange(start + 1, start + len(c) + 1, dtype=torch.int32))
    kv, sf = torch.cat(codes), torch.cat(scales)
    ks, ke = torch.cat(ks), torch.cat(ke)
    q = torch.randn(len(ks), HEADS, DIM, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    weights = torch.randn(len(ks), HEADS, device=DEV) * HEADS ** -0.5
    logits = deep_gemm.fp8_mqa_logits(q, (kv, sf), weights, ks.to(DEV), ke.to(DEV), clean_logits=True)
    torch.cuda.synchronize()
    want, written, _ = mqa_logits_ref(q.cpu().float(), kv.cpu().float(), sf.cpu(), weights.cpu(), ks, ke, True)
    got = logits.cpu().double()
    assert torch.isneginf(got[~written]).all() and not torch.isnan(got[written]).any()
    assert calc_diff(got[written], want[written]) < 5e-6
    check_topk(got, want, written)


def indexer_step(engine, reqs, next_n, lens_2d):
    """One indexer call as vLLM makes it, checked against the reference."""
    seq_lens, table = engine.batch(reqs)
    if lens_2d:  # per draft token: token t sees the context up to its own position
        seq_lens = (seq_lens[:, None] - next_n + 1 + torch.arange(next_n, device=DEV, dtype=torch.int32)).contiguous()
    num_sms = deep_gemm.get_num_sms()
    slots = num_sms // 2 if next_n == 4 else num_sms
    meta = deep_gemm.get_paged_mqa_logits_metadata(seq_lens, engine.block_size, slots)
    assert meta.shape == (slots + 1, 2)
    q = torch.randn(len(reqs), next_n, HEADS, DIM, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    weights = torch.randn(len(reqs) * next_n, HEADS, device=DEV) * HEADS ** -0.5
    poison = torch.empty(len(reqs) * next_n, MAX_MODEL_LEN, device=DEV)
    poison.fill_(float('nan'))
    del poison
    logits = deep_gemm.fp8_fp4_paged_mqa_logits((q, None), engine.cache, weights, seq_lens, table, meta, MAX_MODEL_LEN,
                                                clean_logits=False)
    torch.cuda.synchronize()
    want = ref.ref_paged_mqa_logits(q, engine.cache, weights, seq_lens, table, MAX_MODEL_LEN)
    inside = torch.isfinite(want)
    assert inside.any()
    assert not torch.isnan(logits[inside]).any(), 'positions inside a row left unwritten'
    assert torch.isnan(logits[~inside]).all(), 'written outside a row\'s range'
    assert calc_diff(logits[inside], want[inside]) < 5e-6
    check_topk(logits, want, inside)


@pytest.mark.parametrize('block_size', [64, 32])
@pytest.mark.parametrize('next_n', [1, 2, 4])
def test_vllm_indexer_sequence(block_size, next_n):
    rng = random.Random(block_size * 10 + next_n)
    torch.manual_seed(block_size * 10 + next_n)
    engine = Engine(block_size, num_blocks=3 * MAX_MODEL_LEN // block_size, rng=rng)
    reqs = list(range(6))
    # Prefill: ragged prompts (a block boundary, mid-block ends, a long one) cached, their tokens scored.
    for r, n in zip(reqs, [1 + next_n, block_size, block_size + 1, 300, 1000, 2047]):
        engine.add(r, n)
    prefill_step(engine, reqs)
    # Decode: next_n tokens per request per step; a request finishes and a new one arrives (its blocks come from the
    # freed ones); 1-D and 2-D seq_lens alternate.
    for step in range(6):
        for r in reqs:
            engine.append(r, next_n)
        if step == 2:
            engine.finish(reqs[1])
            reqs[1] = 100
            engine.add(100, 77 + next_n)
        indexer_step(engine, reqs, next_n, lens_2d=bool(step % 2) and next_n > 1)
        if step == 2:
            prefill_step(engine, [100])  # the new request's prompt
