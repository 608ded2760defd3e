"""Events on the shape of an output: a release whose width depends on the dataset.

When the draws' shapes differ between the datasets (sample axis removed), no event on values can
compare them; the family ``shape`` (always on) then gives the only candidates: one per shape,
"the output has this shape", seen under one dataset only -- a support violation with the two
shapes as the witness.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.events.core import Candidates, LabelEvent, labelled
from dpharness.verifiers.events.families import Draws, Family, register

__all__ = ["ShapeIs", "SHAPE"]


class ShapeIs(LabelEvent):
    """The output's shape (sample axis removed) is one of ``values``."""

    kinds = ("shape",)

    def contains(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        return np.full(y.shape[0] if y.ndim else 1, tuple(y.shape[1:]) in self.values)

    def describe(self) -> str:
        shapes = " or ".join("a scalar" if not sh else f"a row of {int(np.prod(sh))} coordinates"
                             for sh in self.values)
        return f"{{y is {shapes}}}"


class Shape(Family):
    """Different shapes under the two datasets: one candidate per shape, and no other candidate."""

    name = "shape"
    order = 0
    always = True
    exclusive = True

    def candidates(self, d: Draws) -> list[Candidates]:
        sh1, sh2 = tuple(np.shape(d.y1)[1:]), tuple(np.shape(d.y2)[1:])
        if sh1 == sh2:
            return []
        n1, n2 = int(np.shape(d.y1)[0]), int(np.shape(d.y2)[0])
        return [labelled([n1, 0], [0, n2], "shape", ((sh1,), (sh2,)))]


SHAPE = register(Shape())
