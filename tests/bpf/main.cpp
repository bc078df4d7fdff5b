// SPDX-License-Identifier: Apache-2.0
// Root test runner. A test may skip only where root is missing: as root (CI), a skip is a
// failure, so `make test` cannot pass with BPF tests silently not run.
#include <gtest/gtest.h>
#include <unistd.h>

#include "probes/bpf_loader.h"

namespace {

class SkipIsFailureAsRoot : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Skipped()) {
      ++skipped_;
      fprintf(stderr, "FAILED (skipped as root): %s.%s\n", info.test_suite_name(), info.name());
    }
  }
  int skipped() const { return skipped_; }

 private:
  int skipped_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tailcause::probes::install_libbpf_logger();
  auto* listener = new SkipIsFailureAsRoot;
  ::testing::UnitTest::GetInstance()->listeners().Append(listener);
  int rc = RUN_ALL_TESTS();
  if (geteuid() == 0 && listener->skipped() > 0) {
    fprintf(stderr, "%d BPF test(s) skipped while running as root: failing\n", listener->skipped());
    rc = 1;
  }
  return rc;
}
