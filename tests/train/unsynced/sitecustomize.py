"""A real bug for tests/train/test_distributed.py to catch: imported at start-up of every training
process (PYTHONPATH), it runs each DDP forward under `no_sync`, so the processes never average
their gradients and each updates its copy of the model with its own half of the batch."""

import torch.nn.parallel as _parallel

_forward = _parallel.DistributedDataParallel.forward


def _unsynced(self, *args, **kwargs):
    with self.no_sync():
        return _forward(self, *args, **kwargs)


_parallel.DistributedDataParallel.forward = _unsynced
