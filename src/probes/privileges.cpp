// SPDX-License-Identifier: Apache-2.0
#include "probes/privileges.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tailcause::probes {
namespace {

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

bool effective(const __user_cap_data_struct (&data)[2], int cap) {
  return data[cap / 32].effective & (1u << (cap % 32));
}

}  // namespace

std::vector<std::string> missing_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  // No libcap: one capget(2) call is all this needs.
  if (syscall(SYS_capget, &header, data) != 0) return {"CAP_BPF", "CAP_PERFMON"};
  if (effective(data, CAP_SYS_ADMIN)) return {};
  std::vector<std::string> missing;
  if (!effective(data, CAP_BPF)) missing.push_back("CAP_BPF");
  if (!effective(data, CAP_PERFMON)) missing.push_back("CAP_PERFMON");
  return missing;
}

}  // namespace tailcause::probes
