# SPDX-License-Identifier: Apache-2.0
"""The Python binding against the real libtailcause_cache.so (TAILCAUSE_CACHE_LIB)."""

import unittest

import numpy as np

import tailcause_cache as tc

from vectors import at_cosine, unit


class BindingTest(unittest.TestCase):
    def setUp(self):
        self.cache = tc.VectorCache(64, threshold=0.9, ttl_seconds=60)

    def test_exact_and_semantic(self):
        v = unit(1)
        self.assertEqual(self.cache.lookup("a", v).result, tc.MISS)
        self.assertEqual(self.cache.insert("a", v, b"docs"), tc.STORED)
        hit = self.cache.lookup("a", v.astype(np.float64) * 3.0)  # same direction, other dtype
        self.assertEqual((hit.result, hit.value), (tc.HIT, b"docs"))
        near = self.cache.lookup("a", at_cosine(v, 0.93, 5))
        self.assertEqual(near.result, tc.HIT)
        self.assertAlmostEqual(near.similarity, 0.93, places=3)
        self.assertEqual(self.cache.lookup("a", at_cosine(v, 0.85, 6)).result, tc.MISS)
        s = self.cache.stats("a")
        self.assertEqual((s["hits"], s["semantic_hits"], s["misses"]), (2, 1, 2))

    def test_bad_input_is_an_error_and_stores_nothing(self):
        v = unit(2)
        v[3] = np.nan
        with self.assertRaisesRegex(tc.CacheError, "NaN"):
            self.cache.insert("a", v, b"x")
        with self.assertRaisesRegex(tc.CacheError, "zero vector"):
            self.cache.lookup("a", np.zeros(64, np.float32))
        with self.assertRaisesRegex(tc.CacheError, "65 dimensions"):
            self.cache.insert("a", unit(3, 65), b"x")
        with self.assertRaisesRegex(tc.CacheError, r"\[0, 1\]"):
            self.cache.set_competition("a", 2.0)
        with self.assertRaises(tc.CacheError):
            tc.VectorCache(0)
        self.cache.insert("a", unit(4), b"ok")
        self.assertEqual(self.cache.stats("a")["entries"], 1)

    def test_version_change_and_quota(self):
        for i in range(4):
            self.cache.insert("a", unit(10 + i), b"x")
        self.cache.set_model_version("v2")
        s = self.cache.stats("a")
        self.assertEqual((s["invalidated"], s["entries"]), (4, 0))
        self.cache.set_competition("a", 1.0)
        self.cache.rebalance()
        s = self.cache.stats("a")
        self.assertEqual(s["quota_bytes"], round(s["base_quota_bytes"] * 0.2))


if __name__ == "__main__":
    unittest.main()
