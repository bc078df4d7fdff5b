# SPDX-License-Identifier: Apache-2.0
# The capabilities the systemd unit keeps (README, "Required capabilities", says why each).
set(TC_CAPS "CAP_BPF CAP_PERFMON CAP_DAC_READ_SEARCH")
