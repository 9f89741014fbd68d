"""torch.compile(fullgraph=True) over a deep_gemm op on CPU tensors: the graph is traced (no graph break) and the
op's CPU kernel then raises that it needs CUDA. Shared by the ops' torch.compile tests."""
import pytest
import torch


def traced_targets(f, args, match, dynamic=False):
    """Compiles `f` with a backend that records the traced graph, calls it on `args` expecting a RuntimeError
    matching `match`, and returns the call targets of the one graph traced (as strings)."""
    torch._dynamo.reset()
    graphs = []

    def recording_backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend('aot_eager')(gm, example_inputs)

    compiled = torch.compile(f, backend=recording_backend, fullgraph=True, dynamic=dynamic)
    with pytest.raises(RuntimeError, match=match):
        compiled(*args)
    assert len(graphs) == 1, f'{len(graphs)} graphs: a graph break'
    return [str(node.target) for node in graphs[0].graph.nodes if node.op == 'call_function']
