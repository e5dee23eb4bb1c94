"""The suite's xdist scheduling (tests/conftest.py): each group of GROUPED runs on one worker, the other tests are
spread one by one; the scheduler is ours because xdist's loadgroup loses its groups under pytest >= 9.2."""

from types import SimpleNamespace

import conftest
import pytest

pytest.importorskip("xdist")


class _Config:
    option = SimpleNamespace(loadscopereorder=True)

    def __init__(self, dist: str) -> None:
        self.dist = dist

    def getvalue(self, name: str):
        return {"dist": self.dist, "tx": ["2*popen"]}[name]


class _Node:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_group_of_reads_the_file_name():
    assert conftest.group_of("tests/test_validation.py::test_a[x::y]") == "sweeps"
    assert conftest.group_of("tests/test_tile_model.py::test_b") == "sweeps"
    assert conftest.group_of("tests/test_validation_step.py::test_c") == "validation_step"
    other = "tests/test_float8.py::test_d[a@b]"
    assert conftest.group_of(other) == other  # a test of its own, whatever its parameters say
    assert conftest.group_of("tests/sub/test_validation.py::t") == "sweeps"


def test_each_group_goes_to_one_worker_and_the_rest_is_spread():
    sched = conftest.pytest_xdist_make_scheduler(config=_Config("loadgroup"), log=None)
    collection = [
        "tests/test_validation.py::test_1",
        "tests/test_tile_model.py::test_2",
        "tests/test_kernel_choice.py::test_3",
        "tests/test_validation_step.py::test_4",
        "tests/test_validation_step.py::test_5",
    ] + [f"tests/test_other.py::test_{i}" for i in range(8)]
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    done: set[int] = set()
    for _ in range(len(collection)):  # the workers finish what they hold, one at a time, and get more
        for node in nodes:
            for i in [i for i in node.sent if i not in done][:1]:
                done.add(i)
                sched.mark_test_complete(node, i)
    assert done == set(range(len(collection)))
    by_node = [{collection[i] for i in node.sent} for node in nodes]
    assert set().union(*by_node) == set(collection) and not (by_node[0] & by_node[1])
    for group in ("sweeps", "validation_step"):
        members = {n for n in collection if conftest.group_of(n) == group}
        assert sum(1 for s in by_node if s & members) == 1, group  # on one worker
        assert any(members <= s for s in by_node), group
    others = {n for n in collection if "test_other" in n}
    assert all(s & others for s in by_node)  # the ungrouped tests go to both


def test_other_dist_modes_are_xdists():
    assert conftest.pytest_xdist_make_scheduler(config=_Config("load"), log=None) is None
