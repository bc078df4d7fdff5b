# SPDX-License-Identifier: Apache-2.0
"""The closed loop through the Python binding (real libtailcause_cache.so): a warm-up loader in
Python, and CacheFeedback following scripted daemon verdicts (tests/e2e/test_cache_loop.sh
runs the C++ loop against the real daemon)."""

import collections
import unittest

import tailcause_cache as tc

from vectors import at_cosine, unit

Verdict = collections.namedtuple("Verdict", "state competition miss_ratio lookups")


class FeedbackTest(unittest.TestCase):
    def setUp(self):
        self.cache = tc.VectorCache(64, threshold=0.9, ttl_seconds=60, admission=False)
        self.topics = [unit(1), unit(2)]
        self.batches = []

        def loader(tenant, vectors):
            self.batches.append((tenant, vectors.shape))
            return [b"warm:" + tenant.encode() for _ in range(len(vectors))]

        self.cache.set_loader(loader)
        for i in range(30):  # tenant a asks, never stores: every lookup misses
            self.cache.lookup("a", at_cosine(self.topics[i % 2], 0.95, 100 + i))
        self.cache.insert("b", unit(900), b"x")
        self.verdicts = {}
        self.loop = tc.CacheFeedback(self.cache, source=lambda t, name: self.verdicts.get(t))

    def test_a_breakdown_warms_up_through_the_python_loader(self):
        self.assertEqual(self.cache.tenants(), ["a", "b"])
        self.loop.poll()  # no verdicts: nothing
        self.assertEqual(self.loop.stats()["unanswered"], 2)
        self.assertEqual(self.cache.stats("a")["warmups"], 0)
        self.verdicts["a"] = Verdict("breakdown", 0.2, 1.0, 30)
        self.loop.poll()
        self.assertEqual(self.batches, [("a", (8, 64))])  # two topics, centre + 3 neighbours
        for t in self.topics:
            hit = self.cache.lookup("a", at_cosine(t, 0.97, 7))
            self.assertEqual((hit.result, hit.value), (tc.HIT, b"warm:a"))
        self.loop.poll()  # the same breakdown: once
        stats = self.loop.stats()
        self.assertEqual((stats["warmups"], stats["warmed_entries"], stats["breakdowns"]), (1, 8, 1))

    def test_competition_sets_quotas_and_a_broken_loader_is_kept_not_raised(self):
        base = self.cache.stats("b")["base_quota_bytes"]
        self.verdicts["b"] = Verdict("healthy", 1.0, 1.0, 500)
        self.verdicts["a"] = Verdict("breakdown", 0.0, 1.0, 30)
        self.cache.set_loader(lambda tenant, vectors: 1 / 0)
        self.loop.poll()
        self.assertAlmostEqual(self.cache.stats("b")["quota_bytes"], base / 5, delta=1)  # floor
        self.assertGreater(self.cache.stats("a")["quota_bytes"], base)
        self.assertEqual(self.cache.stats("a")["entries"], 0)
        self.assertIsInstance(self.cache.loader_errors[0], ZeroDivisionError)
        self.cache.set_loader(lambda tenant, vectors: [b"x"])  # wrong count: an error, kept
        self.assertEqual(self.cache.warm_up("a"), 0)
        self.assertIn("1 values for", str(self.cache.loader_errors[-1]))
        self.cache.set_loader(None)
        self.assertEqual(self.cache.warm_up("a"), 0)


if __name__ == "__main__":
    unittest.main()
