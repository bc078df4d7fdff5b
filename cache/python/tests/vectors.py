# SPDX-License-Identifier: Apache-2.0
"""Seeded unit vectors for the binding's tests."""

import numpy as np


def unit(seed, dim=64):
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def at_cosine(a, c, seed):
    """A unit vector at exactly cosine `c` from unit vector `a`."""
    b = unit(seed, a.size)
    b = b - np.dot(a, b) * a
    b /= np.linalg.norm(b)
    return (c * a + np.sqrt(1 - c * c) * b).astype(np.float32)
