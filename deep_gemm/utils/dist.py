"""``torch.distributed`` helpers for multi-GPU tests and benchmarks (one process per GPU)."""

import os
from typing import Optional, Tuple

import torch
import torch.distributed as dist

# This process's rank inside its node, set by init_dist (dist_print's once_in_node needs it).
_local_rank: Optional[int] = None


def init_dist(local_rank: int, num_local_ranks: int) -> Tuple[int, int, 'dist.ProcessGroup']:
    """Joins the NCCL process group of ``num_local_ranks`` processes per node and selects this process's GPU.

    Reads ``MASTER_ADDR`` (default ``127.0.0.1``), ``MASTER_PORT`` (default ``8361``), ``WORLD_SIZE`` (the
    number of nodes, default 1) and ``RANK`` (this node's index, default 0). Returns
    ``(rank, world_size, group)`` of the global group. Also makes ``cuda`` the default torch device."""
    if not 0 <= local_rank < num_local_ranks:
        raise ValueError(f'init_dist: local_rank must be in [0, num_local_ranks); got {local_rank} of {num_local_ranks}')
    addr = os.getenv('MASTER_ADDR', '127.0.0.1')
    port = int(os.getenv('MASTER_PORT', '8361'))
    num_nodes, node_rank = int(os.getenv('WORLD_SIZE', '1')), int(os.getenv('RANK', '0'))
    global _local_rank
    _local_rank = local_rank
    dist.init_process_group(backend='nccl', init_method=f'tcp://{addr}:{port}', world_size=num_nodes * num_local_ranks,
                            rank=node_rank * num_local_ranks + local_rank)
    torch.set_default_device('cuda')
    torch.cuda.set_device(local_rank)
    return dist.get_rank(), dist.get_world_size(), dist.new_group(list(range(dist.get_world_size())))


def uneven_all_gather(tensor: torch.Tensor, dim: int = 0, group: Optional['dist.ProcessGroup'] = None) -> torch.Tensor:
    """All-gathers tensors whose size along ``dim`` differs between ranks (other dims equal) and
    concatenates them along ``dim`` in rank order."""
    world = dist.get_world_size(group)
    size = torch.tensor([tensor.shape[dim]], dtype=torch.int64, device=tensor.device)
    sizes = [torch.empty_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    sizes = [int(s.item()) for s in sizes]
    longest = max(sizes)
    pad_shape = list(tensor.shape)
    pad_shape[dim] = longest - tensor.shape[dim]
    padded = torch.cat([tensor, tensor.new_zeros(pad_shape)], dim=dim).contiguous()
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return torch.cat([g.narrow(dim, 0, s) for g, s in zip(gathered, sizes)], dim=dim)


def dist_print(s: str = '', once_in_node: bool = False) -> None:
    """Prints ``s`` (flushed) on every rank, or only on each node's local rank 0 with ``once_in_node``, then
    waits at a barrier of the default group so that ranks print in step. Needs :func:`init_dist` first."""
    if _local_rank is None:
        raise RuntimeError('dist_print: call deep_gemm.utils.dist.init_dist first (the local rank is not known)')
    if not once_in_node or _local_rank == 0:
        print(s, flush=True)
    dist.barrier()
