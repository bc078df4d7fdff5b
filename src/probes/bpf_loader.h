// Small helpers every family's loader uses around libbpf skeletons.
#pragma once

#include <bpf/libbpf.h>

#include <string>

#include "probes/features.h"
#include "probes/probe_family.h"

namespace infertrace::probes {

// Routes libbpf's own messages to the log (debug level) and keeps the last ones, so a load
// failure can say what the verifier said. Idempotent.
void install_libbpf_logger();
std::string last_libbpf_messages();

// Open options for a skeleton: relocate against `features.btf_path` when it is not the
// kernel's own BTF.
bpf_object_open_opts open_options(const Features& features);

// Autoloads the `_btf` flavour of each tracepoint handler when BTF tracepoints work, else the
// `_raw` one (see bpf/common.bpf.h); programs without either suffix are left alone.
void select_tracepoint_flavour(bpf_object* obj, const Features& features);

// Throws ProbeError("<family>: <what>: <strerror(-err)>[: libbpf said ...]") when err < 0.
void check(int err, const char* family, const std::string& what);

// Number of per-CPU copies a per-CPU map value has (libbpf_num_possible_cpus, cached).
int possible_cpus();

}  // namespace infertrace::probes
