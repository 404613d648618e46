"""A real Ray cluster for the tier: a head and a second node on this machine (ray's own
`cluster_utils.Cluster`, real raylet processes), shut down after the module."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def ray_cluster():
    """(the cluster, its second node); RAY_ADDRESS set for every command the tests start. One CPU
    on each node, so two workers land one on each."""
    pytest.importorskip("ray", reason="Ray is not installed in this environment: `make test-ray` builds one "
                                      "(.venv-ray) and runs these tests")
    from ray.cluster_utils import Cluster

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    second = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = cluster.address
    try:
        yield cluster, second
    finally:
        if before is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = before
        cluster.shutdown()
