"""The sum tree of the lesson's prioritized replay (section 5.1): one array, leaves holding priorities and each
node its children's sum, with its loops compiled by numba. The walk down takes the lesson's `walk_step`."""

import numba
import numpy as np

from .networks import compiled


@numba.njit
def tree_set(tree: np.ndarray, leaves: int, index: np.ndarray, values: np.ndarray) -> None:
    """Write each leaf, then recompute its ancestors from their children, up to the root."""
    for k in range(len(index)):
        node = index[k] + leaves
        tree[node] = values[k]
        node //= 2
        while node >= 1:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node //= 2


@numba.njit
def tree_find(tree: np.ndarray, leaves: int, levels: int, values: np.ndarray, step) -> np.ndarray:
    """For each prefix sum u: walk down from the root, one `step` per level, to a leaf."""
    found = np.empty(len(values), np.int64)
    for k in range(len(values)):
        node, u = 1, values[k]
        for _ in range(levels):
            node, u = step(tree, node, u)
        found[k] = node - leaves
    return found


class SumTree:
    """A complete binary tree in one array: node q has children 2q and 2q + 1, the root is node 1, and the M
    leaves (a power of two >= capacity) are nodes M..2M-1. `step(tree, node, u)` is one step of the walk down."""

    def __init__(self, capacity: int, step):
        self.leaves = 1 << max(0, capacity - 1).bit_length()
        self.levels = self.leaves.bit_length() - 1
        self.tree = np.zeros(2 * self.leaves)
        self.step = step

    def __getitem__(self, index):
        return self.tree[np.asarray(index) + self.leaves]

    def __setitem__(self, index, values):
        index = np.ascontiguousarray(index, dtype=np.int64).reshape(-1)
        values = np.ascontiguousarray(np.broadcast_to(values, index.shape), np.float64)
        if not np.all(values >= 0) or not np.isfinite(values).all():  # a NaN would poison every sum above it
            bad = int(np.flatnonzero(~(values >= 0) | ~np.isfinite(values))[0])
            raise ValueError(
                f"priority {values[bad]} for transition {index[bad]}: a priority is a finite number >= 0 "
                "(a NaN or infinite TD error means the critic diverged)"
            )
        tree_set(self.tree, self.leaves, index, values)

    def total(self) -> float:
        """The sum of all leaves: the root."""
        return self.tree[1]

    def find_prefix_sum(self, values: np.ndarray) -> np.ndarray:
        """For each u in [0, total): the leaf i with sum(p[:i]) <= u < sum(p[:i+1])."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        return tree_find(self.tree, self.leaves, self.levels, values, compiled(self.step))  # compiled once per step
