// Detaches many uprobe links at once. Closing a uprobe's perf event waits for RCU grace periods
// in the kernel (tens to hundreds of ms each), and libbpf closes a USDT link's uprobes one by one
// and cannot destroy two links of one object from two threads: a daemon stopping with a traced
// agent would sit in D state for seconds. destroy_links() first takes a second reference to
// every perf event of the process, so libbpf's closes only drop a reference (and detach the
// programs); the last references then go in parallel threads, whose grace periods overlap.
#pragma once

#include <vector>

#include "probes/handles.h"

namespace tailcause::probes {

// Destroys `links` (left empty) and waits until their perf events are gone.
void destroy_links(std::vector<LinkHandle>& links);

// Perf event descriptors this process holds (tests check that none outlives a stop).
size_t perf_event_fds();

}  // namespace tailcause::probes
